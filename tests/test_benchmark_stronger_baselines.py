"""benchmarks/stronger_baselines.py compares a stored learned noise with the Gaussian,
Laplace and staircase baselines and says why a family cannot reach it. Times are never
asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "stronger_baselines.py"


def test_one_run_against_every_family(tmp_path):
    output = tmp_path / "baselines.md"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "n1-L1", "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    text = output.read_text()
    (row,) = [line for line in text.splitlines() if line.startswith("| n1-L1 ")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    learned, gaussian, laplace, stair, strongest, ratio = cells[2:]
    assert gaussian == "-" and "n1-L1, Gaussian: target_delta=" in text
    assert float(stair) < float(laplace) and strongest == "staircase"
    assert abs(float(ratio) - float(learned) / float(stair)) < 1e-4


def test_an_unknown_run_is_refused():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "n2-L9"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "n2-L9" in result.stderr
