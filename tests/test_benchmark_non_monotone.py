"""benchmarks/non_monotone.py learns a non-monotone noise over every shift and checks it
against exact deltas and the LP optima (a few epochs here; times are never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "non_monotone.py"


@pytest.mark.slow
def test_one_short_run_is_certified_over_every_shift(tmp_path):
    output = tmp_path / "non-monotone.json"
    arguments = ["--runs", "n1/symmetric-cold", "--epochs", "5", "--output", str(output)]
    subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    record = json.loads(output.read_text())
    (row,) = record["runs"]
    assert row["all_shifts"] and "every shift 1..20" in row["description"]
    # the exact worst delta over the 20 shifts never exceeds the certified one
    assert row["delta_exact_all_shifts"] <= row["delta_certified"]
    assert row["delta_certified"] <= row["delta_exact_all_shifts"] * 1.01
    # at its own delta, no noise beats the all-shift LP optimum, which beats the monotone one
    assert row["lp_all_shifts_utility"] <= row["lp_monotone_utility"]
    assert row["lp_all_shifts_utility"] <= row["utility_l1"] * (1 + 1e-9)
    lp = record["lp_at_target_0.0503"]
    assert lp["lp_all_shifts_utility"] == pytest.approx(1.882936, abs=2e-6)
    assert lp["lp_monotone_utility"] == pytest.approx(1.883918, abs=2e-6)


def test_an_unknown_run_is_refused():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "n3/nothing"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "n3/nothing" in result.stderr
