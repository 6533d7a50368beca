"""benchmarks/learn_noise.py runs in its quick mode and writes its table, JSON and plots.
Times are never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "learn_noise.py"


@pytest.mark.slow
def test_quick_learning_benchmark(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--runs",
            "n1-L1,n8-L2",
            "--output",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads((tmp_path / "learning.json").read_text())
    assert [row["run"] for row in rows] == ["n1-L1", "n8-L2"]
    n1, n8 = rows
    assert n1["utility_over_lp_optimum"] >= 1.0 - 1e-6  # the LP is optimal at that delta
    assert n8["gaussian_delta_certified"] <= n8["delta_certified"]
    assert n8["kl_gaussian_to_learned"] >= 0.0
    table = (tmp_path / "learning.md").read_text()
    assert "| n8-L2 | 8 |" in table and "learned / Gaussian" in table
    for row in rows:
        assert (tmp_path / row["figure"]).read_bytes()[:4] == b"\x89PNG"


def test_unknown_run_is_refused(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "n9", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2 and "unknown runs" in result.stderr
