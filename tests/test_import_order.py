"""Every module of ``accountant`` can be the first one a process imports.

``accountant`` loads its public names on first use (PEP 562), so no package ``__init__``
fixes an import order that would hide a cycle (``buckets.lattice_quadrature`` importing
``mechanisms`` while ``mechanisms`` import ``buckets`` did, until the subsampled loss moved
to ``numerics``). Each module is imported alone in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "accountant"


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue  # runs the command line
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _first_import(module: str) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    return module, done.stderr.strip().splitlines()[-1] if done.returncode else ""


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_process():
    modules = _modules()
    assert len(modules) > 100 and "accountant.buckets.engine" in modules
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = {m: error for m, error in pool.map(_first_import, modules) if error}
    assert not failures, failures


def test_import_accountant_loads_no_numerical_module():
    code = (
        "import sys, accountant; "
        "print(sorted(m for m in sys.modules if m.startswith(('numpy', 'accountant.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    code = "import accountant; print(accountant.PrivacyBuckets.__name__, accountant.noise.uniform)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("PrivacyBuckets <function uniform")
