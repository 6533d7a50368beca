"""benchmarks/sampling.py reports the samplers' throughput (figures are printed, never
asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*arguments: str) -> subprocess.CompletedProcess:
    script = str(ROOT / "benchmarks" / "sampling.py")
    return subprocess.run(
        [sys.executable, script, *arguments], capture_output=True, text=True, timeout=300
    )


def test_sampling_benchmark_reports_both_tables():
    result = _run("--draws", "2000", "--repeats", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "secure draws/s" in lines[0] and "release/s" in lines[0]
    for table, line in zip(("2,001 points", "60,001 points"), lines[1:], strict=True):
        assert line.split()[:2] == table.split()
        assert all(float(value) > 0 for value in line.split()[2:])


def test_sampling_benchmark_refuses_no_draws():
    result = _run("--draws", "0")
    assert result.returncode == 2 and "--draws and --repeats must be at least 1" in result.stderr
