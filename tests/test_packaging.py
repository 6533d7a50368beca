"""Import hygiene: accountant never needs torch; optimizers names the [torch] extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import accountant

ROOT = Path(__file__).resolve().parent.parent
BLOCK_TORCH = "import sys; sys.modules['torch'] = None; "


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_accountant_imports_without_torch():
    result = _python(
        BLOCK_TORCH + "from accountant import ExtendedMA; "
        "import accountant.report.cli, accountant.report.audit; "
        "print(ExtendedMA.__name__)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ExtendedMA"


def test_optimizers_without_torch_names_the_extra():
    result = _python(BLOCK_TORCH + "import optimizers")
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "[torch]" in result.stderr


def test_no_torch_import_anywhere_in_accountant():
    for path in (ROOT / "accountant").rglob("*.py"):
        text = path.read_text()
        assert "import torch" not in text and "from torch" not in text, path


def test_public_names_are_exported_and_documented():
    for name in accountant.__all__:
        obj = getattr(accountant, name)
        if not isinstance(obj, str):
            assert obj.__doc__, f"{name} has no docstring"
