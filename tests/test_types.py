"""mypy, configured by ``[tool.mypy]`` in ``pyproject.toml`` (the packages it checks and the
third-party imports without type information), finds no error (issue 28). CI runs it with
the rest of the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mypy  # noqa: F401  (in the test extra: without it this test fails, never skips)
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_finds_no_error():
    done = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    assert done.returncode == 0, f"mypy found errors:\n{done.stdout}\n{done.stderr}"
