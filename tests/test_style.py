"""The code base stays ruff-clean and its modules small."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["accountant", "optimizers", "tests", "examples", "benchmarks"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff")
    if ruff is None:  # the [test] extra installs ruff; its absence is a broken setup
        pytest.fail("ruff is not installed; install the [test] extra")
    existing = [s for s in SOURCES if (ROOT / s).exists()]
    return subprocess.run([ruff, *args, *existing], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint_is_clean():
    result = _ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = _ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
