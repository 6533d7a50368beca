"""``accountant audit`` never ignores an option (issue 11, items 3, 9, 10): options the
chosen family would not use are errors, a pmf file carries its grid or needs --step, the
help shows each default once, and negative values are refused by name."""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import pytest

from accountant import ExtendedMA, WorstCasePair, noise
from accountant.report.cli import build_parser, main
from accountant.report.cli_audit import DEFAULTS, FAMILY_OPTIONS

SMALL = ["-n", "2"]
PMF = np.array([0.1, 0.2, 0.4, 0.2, 0.1])


def error_of(capsys, *args: str) -> str:
    """The one stderr line of a run that must exit 2."""
    assert main(["audit", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("accountant: error: ")
    return lines[0]


def audit_json(capsys, *args: str) -> dict:
    assert main(["audit", *args, *SMALL, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def pmf_only(tmp_path):
    path = tmp_path / "pmf.npy"
    np.save(path, PMF)
    return str(path)


IGNORED = [
    (["--pmf-file", "{pmf}"], "--pmf-file does not apply to --family truncated-gaussian"),
    (["--family", "file", "--pmf-file", "{pmf}", "--step", "1", "--sigma", "2"], "--sigma"),
    (["--family", "file", "--pmf-file", "{pmf}", "--step", "1", "--bound", "2"], "--bound"),
    (["--family", "file", "--pmf-file", "{pmf}", "--step", "1", "--gamma", "0.5"], "--gamma"),
    (["--start", "-1"], "--start does not apply to --family truncated-gaussian"),
    (["--scale", "2"], "--scale does not apply to --family truncated-gaussian (the default)"),
    (["--stair-epsilon", "1"], "--stair-epsilon does not apply"),
    (["--gamma", "0.5"], "--gamma does not apply"),
    (["--family", "truncated-laplace", "--sigma", "2"], "--sigma"),
    (["--family", "staircase", "--scale", "2"], "--scale"),
    (["--family", "uniform", "--sigma", "2"], "--sigma does not apply to --family uniform"),
    (["--family", "uniform", "--start", "0"], "--start"),
]


@pytest.mark.parametrize(("args", "needle"), IGNORED, ids=[" ".join(a) for a, _ in IGNORED])
def test_an_option_the_family_would_ignore_is_an_error(args, needle, capsys, pmf_only):
    line = error_of(capsys, *[a.replace("{pmf}", pmf_only) for a in args], *SMALL)
    assert needle in line and "ignore" in line


def test_every_noise_option_is_used_by_some_family_and_has_its_default():
    used = {dest for options in FAMILY_OPTIONS.values() for dest in options}
    assert used == {
        "sigma",
        "scale",
        "stair_epsilon",
        "gamma",
        "bound",
        "step",
        "pmf_file",
        "start",
    }
    assert DEFAULTS["family"] in FAMILY_OPTIONS


def test_a_pmf_without_its_grid_needs_step(capsys, pmf_only):
    line = error_of(capsys, "--family", "file", "--pmf-file", pmf_only)
    assert "--step is needed" in line and pmf_only in line


def test_a_pmf_only_file_uses_step_and_start(capsys, pmf_only):
    payload = audit_json(capsys, "--family", "file", "--pmf-file", pmf_only, "--step", "1")
    pair = WorstCasePair.additive(noise.from_array(PMF, 1.0), 1.0)
    expected = ExtendedMA().compose(pair, times=2).delta(0.3).upper
    assert payload["results"]["extended_ma"]["tight"]["reported"] == pytest.approx(expected)
    assert payload["mechanism"]["settings"] == {
        "family": "file",
        "pmf_file": pmf_only,
        "step": 1.0,
        "start": None,
        "bits": None,
        "sensitivity": 1.0,
        "sampling_rate": None,
    }


def _grid_files(directory) -> dict[str, str]:
    x = np.arange(-2, 3) * 0.25
    files = {
        "txt": directory / "grid.txt",
        "csv": directory / "grid.csv",
        "npz": directory / "grid.npz",
        "npy": directory / "grid.npy",
    }
    np.savetxt(files["txt"], np.column_stack([x, PMF]), header="x p")
    np.savetxt(files["csv"], np.column_stack([x, PMF]), delimiter=",")
    np.savez(files["npz"], x=x, pmf=PMF)
    np.save(files["npy"], np.column_stack([x, PMF]))
    return {kind: str(path) for kind, path in files.items()}


@pytest.mark.parametrize("kind", ["txt", "csv", "npz", "npy"])
def test_a_file_with_its_grid_needs_no_step(kind, capsys, tmp_path):
    path = _grid_files(tmp_path)[kind]
    payload = audit_json(capsys, "--family", "file", "--pmf-file", path, "--sensitivity", "0.5")
    pair = WorstCasePair.additive(noise.from_array(PMF, 0.25), 0.5)
    expected = ExtendedMA().compose(pair, times=2).delta(0.3).upper
    assert payload["results"]["extended_ma"]["tight"]["reported"] == pytest.approx(expected)
    assert "step 0.25, start -0.5; grid from the file" in payload["mechanism"]["description"]
    # agreeing --step and --start are accepted
    same = audit_json(
        capsys,
        *("--family", "file", "--pmf-file", path, "--sensitivity", "0.5"),
        *("--step", "0.25", "--start", "-0.5"),
    )
    tight = same["results"]["extended_ma"]["tight"]["reported"]
    assert tight == payload["results"]["extended_ma"]["tight"]["reported"]


def test_a_grid_that_disagrees_with_step_or_start_is_an_error(capsys, tmp_path):
    path = _grid_files(tmp_path)["npz"]
    line = error_of(capsys, "--family", "file", "--pmf-file", path, "--step", "0.5")
    assert "--step 0.5 disagrees with the grid" in line and "0.25" in line
    line = error_of(capsys, "--family", "file", "--pmf-file", path, "--start", "0")
    assert "--start 0.0 disagrees" in line and "-0.5" in line


def test_a_grid_that_is_not_equidistant_names_the_index(capsys, tmp_path):
    path = tmp_path / "bent.txt"
    x = np.array([-0.5, -0.25, 0.0, 0.3, 0.5])
    np.savetxt(path, np.column_stack([x, PMF]))
    line = error_of(capsys, "--family", "file", "--pmf-file", str(path))
    assert "not equidistant" in line and "x[3] = 0.3" in line and "bent.txt" in line


def test_an_npz_with_unknown_arrays_is_refused(capsys, tmp_path):
    path = tmp_path / "extra.npz"
    np.savez(path, x=np.arange(5.0), pmf=PMF, weights=PMF)
    line = error_of(capsys, "--family", "file", "--pmf-file", str(path))
    assert "'pmf' and optionally 'x'" in line and "weights" in line


def test_an_even_pmf_without_start_asks_for_start(capsys, tmp_path):
    path = tmp_path / "even.txt"
    np.savetxt(path, np.array([0.25, 0.25, 0.25, 0.25]))
    line = error_of(capsys, "--family", "file", "--pmf-file", str(path), "--step", "1")
    assert "even length 4" in line and "--start" in line


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--target-delta", "-1e-5"], "--target-delta must lie in (0, 1), got -1e-05"),
        (["--target-delta", "-1E-5"], "--target-delta must lie in (0, 1), got -1e-05"),
        (["--epsilon", "-0.5"], "--epsilon must be finite and >= 0, got -0.5"),
        (["--epsilon", "-inf"], "--epsilon must be finite, got -inf"),
        (["--sigma", "-2e1"], "--sigma must be > 0, got -20.0"),
        (["--sampling-rate", "-.5"], "--sampling-rate must lie in (0, 1], got -0.5"),
        (["-n", "-3"], "-n/--compositions must be a positive integer, got -3"),
    ],
)
def test_negative_values_are_parsed_and_refused_by_name(args, needle, capsys):
    assert needle in error_of(capsys, *args)


def _help(capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(["audit", "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def _audit_actions() -> dict[str, argparse.Action]:
    parser = build_parser(commands=())
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    audit = subparsers.choices["audit"]
    return {a.option_strings[-1]: a for a in audit._actions if a.option_strings}


def test_help_shows_each_default_once_and_no_markup(capsys):
    text = _help(capsys)
    flat = " ".join(text.split())
    assert "(default: None)" not in flat
    assert not re.search(r"\(default[^)]*\)\s*\(default", flat)  # no doubled default
    assert "``" not in text and ":func:" not in text and ":class:" not in text
    actions = _audit_actions()
    for option, default in [
        ("--sigma", "100"),
        ("--scale", "100"),
        ("--stair-epsilon", "0.3"),
        ("--bound", "500"),
        ("--step", "0.5"),
        ("--sensitivity", "1"),
        ("--compositions", "128"),
        ("--epsilon", "0.3"),
        ("--direction", "max"),
        ("--family", "truncated-gaussian"),
    ]:
        help_text = actions[option].help
        assert help_text.count("default") == 1, (option, help_text)
        assert f"(default: {default}" in help_text, (option, help_text)
        assert f"{option} " in flat
    for option, action in actions.items():
        assert action.help, f"{option} has no help"
        assert "%(default)" not in action.help
    for needle in ("two-column", ".npz", "equidistant", "needs --step"):
        assert needle in flat
