"""``accountant sample``: values exactly on the audited grid, from os.urandom by default,
reproducible only in the clearly named simulation mode; every bad option refused in one
line before any work."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from accountant import noise
from accountant.noise.quantised import quantise
from accountant.report.cli import main

SMALL = ["--sigma", "2", "--bound", "6", "--step", "0.5"]


def sampled(capsys, *args: str) -> tuple[np.ndarray, str]:
    assert main(["sample", *args]) == 0
    captured = capsys.readouterr()
    values = np.array([float(line) for line in captured.out.split()])
    return values, captured.err


def refused(capsys, *args: str) -> str:
    assert main(["sample", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    return captured.err


def test_secure_values_lie_exactly_on_the_grid_inside_the_support(capsys):
    values, err = sampled(capsys, *SMALL, "-n", "2000")
    grid = noise.truncated_gaussian(2.0, 6.0, 0.5).grid
    assert values.size == 2000 and np.isin(values, grid).all()
    assert "drawn from os.urandom" in err and "quantised to 48 bits" in err
    assert len(set(values.tolist())) > 10  # not a constant


def test_a_simulation_is_reproducible_and_is_the_quantised_law(capsys):
    first, err = sampled(capsys, *SMALL, "-n", "50000", "--simulate", "--seed", "7")
    again, _ = sampled(capsys, *SMALL, "-n", "50000", "--simulate", "--seed", "7")
    assert "NOT for a release" in err
    np.testing.assert_array_equal(first, again)
    quantised = quantise(noise.truncated_gaussian(2.0, 6.0, 0.5), bits=48)
    np.testing.assert_array_equal(first, quantised.simulate(50000, np.random.default_rng(7)))
    grid = quantised.original.grid
    counts = np.array([(first == x).sum() for x in grid])
    expected = quantised.weights / 2.0**48 * first.size
    keep = expected > 5
    chi2 = ((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4


@pytest.mark.parametrize("suffix", [".npy", ".txt"])
def test_values_written_to_a_file(capsys, tmp_path, suffix):
    path = tmp_path / f"noise{suffix}"
    args = [*SMALL, "-n", "100", "--simulate", "--seed", "3"]
    printed, _ = sampled(capsys, *args)
    assert main(["sample", *args, "--output", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and f"written to {path}" in captured.err
    read = np.load(path) if suffix == ".npy" else np.loadtxt(path)
    np.testing.assert_array_equal(read, printed)


def test_a_pmf_file_and_the_staircase_are_sampled(capsys, tmp_path):
    pmf = tmp_path / "p.txt"
    pmf.write_text("-1 0.25\n0 0.5\n1 0.25\n")
    values, _ = sampled(capsys, "--family", "file", "--pmf-file", str(pmf), "-n", "500")
    assert set(values.tolist()) <= {-1.0, 0.0, 1.0}
    values, _ = sampled(
        capsys, "--family", "staircase", "--sensitivity", "2", "--bound", "10", "-n", "200"
    )
    assert np.abs(values).max() <= 10.0


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["-n", "3", "--seed", "1"], "--seed applies only to --simulate"),
        (["-n", "3", "--simulate"], "--simulate needs --seed"),
        (["-n", "0"], "-n/--count must be a positive integer, got 0"),
        (["-n", "3", "--bits", "54"], "--bits must be at most 53, got 54"),
        (["-n", "3", "--bits", "0"], "--bits must be a positive integer, got 0"),
        (["-n", "3", "--sensitivity", "2"], "--sensitivity does not apply to --family"),
        (["-n", "3", "--scale", "2"], "--scale does not apply to --family truncated-gaussian"),
        (["-n", "3", "--output", "x.csv"], "--output must name a .npy or .txt file"),
        (["-n", "3", "--sigma", "-1"], "--sigma must be > 0, got -1.0"),
        (["--sigma", "2"], "-n/--count"),
    ],
)
def test_bad_options_are_refused_in_one_line(capsys, args, shown):
    assert shown in refused(capsys, *args)
