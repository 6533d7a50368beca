"""benchmarks/samplers.py: the table of docs/guide/samplers.md is the one its JSON renders,
the JSON is the realistic run of issue 27 and its rows are consistent, and the script runs
(on a small run, into a temporary directory)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import samplers  # noqa: E402

RESULTS = json.loads((ROOT / "docs" / "guide" / samplers.JSON_NAME).read_text("utf-8"))


def _rows(name: str, neighbours: str) -> list[float]:
    (row,) = [r for r in RESULTS["rows"] if r["sampler"] == name and r["neighbours"] == neighbours]
    return row["eps"]


def test_the_page_holds_the_table_of_the_json():
    page = samplers.PAGE.read_text(encoding="utf-8")
    start = page.index(samplers.BEGIN) + len(samplers.BEGIN)
    assert page[start : page.index(samplers.END)].strip() == samplers.render_table(RESULTS)


def test_the_json_is_the_realistic_run():
    assert RESULTS["script"] == "benchmarks/samplers.py"
    assert RESULTS["run"] == {
        "sigma": 1.1,
        "batch_size": 256,
        "dataset_size": 60000,
        "epochs": 10,
        "delta": 1e-5,
        "batches_per_epoch": 235,
        "last_batch_size": 96,
        "steps": 2350,
    }


def test_the_rows_are_consistent():
    for row in RESULTS["rows"]:
        low, high = row["eps"]
        assert 0.0 < low <= high
    for neighbours in ("add-remove", "replace-one"):
        shuffled = _rows("shuffled epochs", neighbours)
        # the same bracket for both samplers (same proof, same explicit pair)
        assert _rows("balls-and-bins", neighbours) == shuffled
        # the upper bound is the deterministic epochs' Gaussian
        assert shuffled[1] == pytest.approx(
            _rows("deterministic epochs (fixed order)", neighbours)[1], rel=1e-3
        )
    # replace-one moves a batch sum twice as far: every bound grows
    assert _rows("shuffled epochs", "replace-one")[0] >= _rows("shuffled epochs", "add-remove")[0]


def test_the_script_writes_a_small_run(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "samplers.py"),
            "--dataset-size",
            "40",
            "--batch-size",
            "16",
            "--epochs",
            "2",
            "--delta",
            "1e-3",
            "--output-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    written = json.loads((tmp_path / samplers.JSON_NAME).read_text("utf-8"))
    assert written["run"]["batches_per_epoch"] == 3 and written["run"]["last_batch_size"] == 8
    assert len(written["rows"]) == 8
    assert samplers.render_table(written) in result.stdout
