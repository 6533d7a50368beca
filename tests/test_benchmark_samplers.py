"""benchmarks/samplers.py: the table of docs/guide/samplers.md is the one its JSON renders,
the JSON is the realistic run of issue 27 and its rows are consistent, its per-epoch curves
end at the table and grow with the epochs, the figure draws exactly those curves and the
page shows it, and the script runs (on a small run, into a temporary directory)."""

from __future__ import annotations

import itertools
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


PNG = b"\x89PNG\r\n\x1a\n"


def test_the_curves_end_at_the_table():
    curves = RESULTS["curves"]
    assert curves["epochs"] == list(range(1, RESULTS["run"]["epochs"] + 1))
    assert len(curves["series"]) == len(RESULTS["rows"])
    for series, row in zip(curves["series"], RESULTS["rows"], strict=True):
        assert [series[k] for k in ("sampler", "neighbours", "kind")] == [
            row[k] for k in ("sampler", "neighbours", "kind")
        ]
        assert len(series["eps"]) == len(curves["epochs"])
        # the last epoch is the table's run: the same calls, the same figures
        assert series["eps"][-1] == pytest.approx(row["eps"], rel=1e-9)


def test_the_curves_grow_with_the_epochs():
    for series in RESULTS["curves"]["series"]:
        uppers = [high for _, high in series["eps"]]
        assert all(0.0 < low <= high for low, high in series["eps"]), series["sampler"]
        # certified upper bounds: a further epoch never lowers them
        assert all(a <= b for a, b in itertools.pairwise(uppers)), series["sampler"]
    # the shuffled upper bound is the deterministic epochs' Gaussian at every epoch
    by = {(s["sampler"], s["neighbours"]): s["eps"] for s in RESULTS["curves"]["series"]}
    for neighbours in ("add-remove", "replace-one"):
        shuffled = by["shuffled epochs", neighbours]
        deterministic = by["deterministic epochs (fixed order)", neighbours]
        for (_, high), (_, exact) in zip(shuffled, deterministic, strict=True):
            assert high == pytest.approx(exact, rel=1e-3)


def test_the_figure_draws_the_json_curves(tmp_path):
    path = tmp_path / samplers.FIGURE_NAME
    drawn = samplers.draw_figure(RESULTS, path)
    assert path.read_bytes()[:8] == PNG
    epochs = [float(k) for k in RESULTS["curves"]["epochs"]]
    by = {(s["sampler"], s["neighbours"]): s["eps"] for s in RESULTS["curves"]["series"]}
    upper_only = {samplers.POISSON, samplers.FIXED, samplers.DETERMINISTIC}
    expected = {}
    for (sampler, neighbours), eps in by.items():
        if sampler == samplers.BALLS and eps == by[samplers.SHUFFLED, neighbours]:
            continue  # the same bracket as shuffling: drawn once
        ends = ("upper",) if sampler in upper_only else ("lower", "upper")
        for end in ends:
            column = 0 if end == "lower" else 1
            expected[samplers.curve_id(sampler, neighbours, end)] = (
                epochs,
                [pair[column] for pair in eps],
            )
    assert drawn == expected


def test_the_page_shows_the_committed_figure():
    figure = ROOT / "docs" / "figures" / samplers.FIGURE_NAME
    assert figure == samplers.FIGURE
    assert figure.read_bytes()[:8] == PNG
    assert f"](../figures/{samplers.FIGURE_NAME})" in samplers.PAGE.read_text(encoding="utf-8")


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
    assert written["curves"]["epochs"] == [1, 2]
    assert (tmp_path / samplers.FIGURE_NAME).read_bytes()[:8] == PNG
    assert samplers.render_table(written) in result.stdout
