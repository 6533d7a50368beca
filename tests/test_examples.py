"""Every script in examples/ runs (in its fast setting) and prints its numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(
    p
    for p in (Path(__file__).resolve().parent.parent / "examples").glob("*.py")
    if not p.name.startswith("_")  # shared support modules, not examples
)


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_fast(script, tmp_path):
    result = subprocess.run(
        [sys.executable, str(script), "--fast"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**__import__("os").environ, "PYTHONPATH": str(script.parent.parent)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
