"""benchmarks/dpsgd_coordinates.py runs and prints a certified bracket that contains the
one-dimensional pair's upper bound at a far cut, and "not certified" at a close one.
Times are never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "dpsgd_coordinates.py"


def _rows(*args: str) -> list[list[str]]:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return [line.split() for line in result.stdout.splitlines()[2:]]


def test_far_cut_is_certified_and_close_cut_is_not():
    (row,) = _rows("--dimension", "1000000", "--cut", "10")
    steps, _, tau, lower, upper, one, _ = row
    assert steps == "80" and float(tau) < 1e-12
    assert float(lower) <= float(one) <= float(upper) * (1 + 1e-12)
    (row,) = _rows("--dimension", "1000000", "--cut", "8")
    assert "not" in row and "certified" in row
