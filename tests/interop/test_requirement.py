"""dp_accounting is optional: ``import accountant`` works without it, and the interop
package refuses with an ImportError naming the extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Blocks the import of dp_accounting (a None entry in sys.modules makes import fail).
_WITHOUT = "import sys; sys.modules['dp_accounting'] = None; "


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_accountant_imports_without_dp_accounting():
    result = _run("import accountant; print(accountant.PrivacyBuckets.__name__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "PrivacyBuckets"


def test_interop_without_dp_accounting_names_the_extra():
    result = _run("import accountant.interop")
    assert result.returncode != 0
    assert "ImportError" in result.stderr
    assert "truncated-noise-accountant[dp-accounting]" in result.stderr


def test_require_names_the_extra_and_chains_the_cause(monkeypatch):
    pytest.importorskip("dp_accounting")  # the package itself needs it to import
    from accountant.interop import requirement

    monkeypatch.setitem(sys.modules, "dp_accounting", None)
    with pytest.raises(ImportError, match=r"\[dp-accounting\]") as info:
        requirement.require_dp_accounting()
    assert isinstance(info.value.__cause__, ImportError)


def test_require_returns_the_package():
    dp_accounting = pytest.importorskip("dp_accounting")
    from accountant.interop import requirement

    assert requirement.require_dp_accounting() is dp_accounting
