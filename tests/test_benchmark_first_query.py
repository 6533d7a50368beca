"""benchmarks/first_query.py times fresh processes and prints their medians (times are
reported, never asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(runs: str) -> subprocess.CompletedProcess:
    script = str(ROOT / "benchmarks" / "first_query.py")
    return subprocess.run(
        [sys.executable, script, "--runs", runs], capture_output=True, text=True, timeout=300
    )


def test_first_query_script_reports_every_figure():
    result = _run("1")
    assert result.returncode == 0, result.stderr
    for label in ("import accountant", "first query", "warm query", "import + first query"):
        assert label in result.stdout


def test_first_query_script_refuses_no_runs():
    result = _run("0")
    assert result.returncode == 2 and "--runs must be at least 1, got 0" in result.stderr
