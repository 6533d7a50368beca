"""``accountant sample``: values exactly on the audited grid, from os.urandom by default,
reproducible only in the clearly named simulation mode; every bad option refused in one
line before any work."""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest
from scipy import stats

import accountant.report.audit as audit_module
from accountant import noise
from accountant.noise.quantised import QuantisedNoise, quantise
from accountant.report.cli import build_parser, main
from accountant.report.cli_noise import PMF_FILE_FORMATS

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
        (["-n", "3", "--bits", "54"], "--bits must lie in [8, 53], got 54"),
        (["-n", "3", "--bits", "7"], "--bits must lie in [8, 53], got 7"),
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


# issue 25: what sample draws, audit --bits audits, bit for bit; the note says how

NEARLY_SYMMETRIC = "1e-16\n0.25\n0.5\n0.24999999999999990\n0\n"  # the pmf


@pytest.mark.parametrize(
    "options",
    [
        SMALL,
        ["--family", "staircase", "--sensitivity", "2", "--bound", "10", "--step", "0.5"],
        ["--family", "truncated-laplace", "--scale", "0.3", "--bound", "0.9", "--step", "0.1"],
        ["--family", "file", "--pmf-file", "{tmp}/p.txt", "--step", "1"],
    ],
    ids=["gaussian", "staircase", "decimal-step", "pmf-file"],
)
def test_the_audit_the_note_names_audits_exactly_the_law_drawn(
    capsys, monkeypatch, tmp_path, options
):
    (tmp_path / "p.txt").write_text(NEARLY_SYMMETRIC)
    options = [o.replace("{tmp}", str(tmp_path)) for o in options]
    drawn, audited = [], []
    draw, audit_additive = QuantisedNoise.draw, audit_module.audit_additive

    def spy_draw(self, size):
        drawn.append(self.noise)
        return draw(self, size)

    def spy_audit(chosen, *args, **kwargs):
        audited.append(chosen)
        return audit_additive(chosen, *args, **kwargs)

    monkeypatch.setattr(QuantisedNoise, "draw", spy_draw)
    monkeypatch.setattr(audit_module, "audit_additive", spy_audit)
    _, err = sampled(capsys, *options, "-n", "3", "--bits", "48")
    command = shlex.split(err.split("audit exactly this law with: ")[1].split(" (and ")[0])
    assert command[:2] == ["accountant", "audit"] and command[-2:] == ["--bits", "48"]
    assert main([*command[1:], "-n", "2", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    (law,), (seen,) = drawn, audited
    assert np.array_equal(seen.pmf, law.pmf) and seen.pmf.dtype == law.pmf.dtype
    assert (seen.step, seen.start) == (law.step, law.start)
    assert np.array_equal(seen.grid, law.grid)
    assert "quantised to 48 bits" in payload["mechanism"]["description"]
    assert payload["mechanism"]["settings"]["bits"] == 48


def test_the_pmf_file_formats_are_in_the_help_of_both_commands():
    parser = build_parser(commands=())
    (commands,) = [a.choices for a in parser._actions if isinstance(a.choices, dict)]
    for command in ("sample", "audit"):
        assert PMF_FILE_FORMATS in commands[command].description
    assert "two-column" in PMF_FILE_FORMATS and ".npz" in PMF_FILE_FORMATS
