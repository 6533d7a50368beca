"""``accountant calibrate`` (issue 12): the table and ``--json`` (validated by the shipped
schema) agree with the library, bad values exit 2 with one line naming the option,
progress shows on a terminal only, and notes are ``note:`` lines."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import math
import re
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

import accountant.buckets.progress as progress_module
import accountant.learning.calibration_search as search_module
from accountant import calibrate_noise_multiplier, calibrate_shuffled_noise_multiplier
from accountant.learning.calibration_results import CALIBRATION_SCHEMA_VERSION
from accountant.report import cli_calibrate
from accountant.report.cli import build_parser, main
from accountant.report.cli_calibrate import OPTIONS, in_options
from tests.learning.test_calibration import SMALL, _WideBuckets

ARGS = ["--epsilon", "1", "--delta", "1e-5", "--sampling-rate", "0.05", "--steps", "100"]
ARGS += ["--dimension", "1", "--cut", "8"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(argv: list[str], stderr: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def schema() -> dict:
    text = resources.files("accountant").joinpath("schemas/calibrate.schema.json").read_text()
    return json.loads(text)


@pytest.fixture(scope="module")
def library():
    return calibrate_noise_multiplier(**SMALL)


@pytest.fixture(scope="module")
def payload() -> dict:
    status, out, err = _run(["calibrate", *ARGS, "--json"])
    assert status == 0 and err == "", err
    return json.loads(out)


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["properties"]["schema_version"] == {"const": CALIBRATION_SCHEMA_VERSION}


def test_json_validates_and_matches_the_library(payload, library):
    jsonschema.validate(payload, schema())
    result = payload["result"]
    assert result["sigma"] == library.sigma and result["sigma_low"] == library.sigma_low
    assert result["delta_upper"] == library.delta_upper <= 1e-5
    assert result["converged"] is True and result["evaluations"] == len(payload["points"])
    assert payload["target"] == {"epsilon": 1.0, "delta": 1e-5, "tolerance": 1e-3}
    assert payload["mechanism"]["truncation"] == "renormalised"
    assert payload["seconds"] > 0.0


def test_the_key_tree_is_stable(payload):
    assert set(payload) == {
        "schema_version",
        "mechanism",
        "target",
        "result",
        "points",
        "notes",
        "seconds",
    }
    assert set(payload["mechanism"]) == {
        "description",
        "sampling_rate",
        "steps",
        "dimension",
        "cut",
        "clip",
        "truncation",
    }
    assert set(payload["result"]) == {
        "sigma",
        "delta_lower",
        "delta_upper",
        "sigma_low",
        "sigma_low_delta_lower",
        "relative_bracket",
        "converged",
        "evaluations",
    }
    assert set(payload["points"][0]) == {
        "sigma",
        "lower",
        "upper",
        "accuracy",
        "achieved_accuracy",
    }


def test_the_table_shows_the_certified_answer(library):
    status, out, err = _run(["calibrate", *ARGS])
    assert status == 0 and err == "", err
    assert re.search(rf"sigma \(noise multiplier\) +{library.sigma:.6g}\n", out), out
    assert re.search(rf"sigma_low \(certified to fail\) +{library.sigma_low:.6g}\n", out)
    assert "<= 1e-05" in out and "(tolerance 0.001)" in out
    assert "noise multiplier for eps = 1, delta = 1e-05 after 100 steps" in out
    assert "NOT within" not in out and "(computed in " in out
    assert max(len(line) for line in out.splitlines()) <= 90


def test_no_cut_and_clamped_are_passed_on(payload):
    status, out, _ = _run(["calibrate", *ARGS[:-2], "--cut", "inf", "--json"])
    uncut = json.loads(out)
    assert status == 0 and uncut["mechanism"]["cut"] == "inf"
    jsonschema.validate(uncut, schema())
    status, out, _ = _run(["calibrate", *ARGS[:-1], "6", "--truncation", "clamped", "--json"])
    clamped = json.loads(out)
    assert status == 0 and clamped["mechanism"]["truncation"] == "clamped"
    assert clamped["result"]["sigma"] != payload["result"]["sigma"]


def test_top_level_help_lists_calibrate(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0 and "calibrate" in capsys.readouterr().out


BAD = [
    (["--epsilon", "0"], "--epsilon must be > 0, got 0.0"),
    (["--epsilon", "nan"], "--epsilon must be finite, got nan"),
    (["--delta", "1"], "--delta must lie in (0, 1), got 1.0"),
    (["--sampling-rate", "1.5"], "--sampling-rate must lie in (0, 1], got 1.5"),
    (["--steps", "0"], "--steps must be a positive integer, got 0"),
    (["--steps", "1e3"], "--steps: invalid int value: '1e3'"),
    (["--cut", "-1"], "--cut must be > 0, got -1.0"),
    (["--cut", "nan"], "--cut must be finite, got nan"),
    (["--tolerance", "1"], "--tolerance must lie in (0, 1), got 1.0"),
    (["--accuracy", "0"], "--accuracy must be > 0, got 0.0"),
    (["--max-sigma", "0"], "--max-sigma must be > 0, got 0.0"),
    (["--max-evaluations", "0"], "--max-evaluations must be a positive integer, got 0"),
    (["--max-evaluations", "1"], "--max-evaluations must be at least 2, got 1"),
    (["--max-evaluations", "2.5"], "--max-evaluations: invalid int value: '2.5'"),
    (["--truncation", "clipped"], "--truncation: invalid choice: 'clipped'"),
]


@pytest.mark.parametrize(("change", "needle"), BAD, ids=[" ".join(c) for c, _ in BAD])
def test_bad_values_exit_2_with_one_line_naming_the_option(change, needle):
    flag = change[0]
    argv = list(ARGS)
    if flag in argv:
        argv[argv.index(flag) + 1] = change[1]
    else:
        argv += change
    status, out, err = _run(["calibrate", *argv])
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("accountant: error: "), err
    assert needle in err, err


def test_a_missing_option_and_an_unreachable_target_are_one_line():
    status, _, err = _run(["calibrate", *ARGS[:-2]])
    assert status == 2 and "--cut" in err and len(err.strip().splitlines()) == 1
    status, _, err = _run(["calibrate", *ARGS, "--max-sigma", "1.5"])
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "--max-sigma 1.5" in err and "certified delta is [" in err
    assert "max_sigma" not in err and "delta=" not in err


def test_progress_is_drawn_on_a_terminal_only(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(progress_module, "DELAY", 0.0)
    monkeypatch.setattr(progress_module, "MIN_INTERVAL", 0.0)  # every step drawn
    status, _, err = _run(["calibrate", *ARGS], _Terminal())
    assert status == 0 and "calibrating sigma" in err and "sigma 2.1" in err
    status, _, err = _run(["calibrate", *ARGS], io.StringIO())
    assert status == 0 and err == ""


def test_a_missed_tolerance_is_a_note_line(monkeypatch):
    monkeypatch.setattr(search_module, "DPSGDAccountant", _WideBuckets)
    status, out, err = _run(["calibrate", *ARGS])
    assert status == 0 and err == ""
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "not within tolerance" in notes[0] and "memory budget" in notes[0]
    assert "NOT within the tolerance (sigma is still certified)" in out
    assert "Warning" not in out and ".py:" not in out
    status, out, err = _run(["calibrate", *ARGS, "--json"])
    payload = json.loads(out)
    jsonschema.validate(payload, schema())
    assert payload["result"]["converged"] is False and len(payload["notes"]) == 1
    assert err.strip() == "note: " + payload["notes"][0]


def test_a_real_process_runs_calibrate():
    result = subprocess.run(
        [sys.executable, "-m", "accountant", "calibrate", *ARGS, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    jsonschema.validate(json.loads(result.stdout), schema())


# -- remedies a user of the command can follow (issue 25) -------------------------------

MNIST = ["--epsilon", "3", "--delta", "1e-5", "--sampling-rate", "0.0042667"]
MNIST += ["--steps", "14062", "--dimension", "1000000"]


def test_the_search_defaults_are_the_librarys():
    args = build_parser(commands=()).parse_args(["calibrate", *ARGS])
    parameters = inspect.signature(calibrate_noise_multiplier).parameters
    arguments = cli_calibrate._arguments(args)
    for name in ("max_evaluations", "max_sigma", "tolerance", "accuracy", "truncation"):
        assert arguments[name] == parameters[name].default, name
    shuffled = build_parser(commands=()).parse_args(["calibrate", *SHUFFLED])
    sampler_parameters = inspect.signature(calibrate_shuffled_noise_multiplier).parameters
    arguments = cli_calibrate._sampler_arguments(shuffled)
    for name in ("max_sigma", "tolerance", "neighbours"):
        assert arguments[name] == sampler_parameters[name].default, name
    assert "accuracy" not in arguments  # (the library's default)


def test_every_library_keyword_said_in_options_is_an_option_of_the_command():
    options = {
        option
        for action in build_parser(commands=())
        ._subparsers._group_actions[0]
        .choices["calibrate"]
        ._actions
        for option in action.option_strings
    }
    parameters = set(inspect.signature(calibrate_noise_multiplier).parameters)
    parameters |= set(inspect.signature(calibrate_shuffled_noise_multiplier).parameters)
    assert set(OPTIONS.values()) <= options
    assert set(OPTIONS) <= parameters


def test_library_keywords_are_said_as_options():
    message = (
        "the budget of max_evaluations=20 queries ran out; raise max_evaluations "
        "(max_sigma=1e+04, sampling_rate=0.1, cut=8.0, search_accuracy=0.05, "
        "max_buckets=8388608; a larger cut, a finer accuracy)"
    )
    assert in_options(message) == (
        "the budget of --max-evaluations 20 queries ran out; raise --max-evaluations "
        "(--max-sigma 1e+04, --sampling-rate 0.1, --cut 8.0, search_accuracy=0.05, "
        "max_buckets=8388608; a larger cut, a finer accuracy)"
    )


def test_a_budget_that_runs_out_is_an_option_and_its_note_names_it(monkeypatch):
    start = search_module.steps_.RootEstimate(x=math.log(4.0), slope=-30.0, bracket=None)
    monkeypatch.setattr(search_module.steps_, "gdp_start", lambda *args: start)
    status, out, err = _run(["calibrate", *ARGS, "--max-evaluations", "2"])
    assert status == 0 and err == "", err
    assert "PrivacyBuckets queries         2\n" in out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "NOT within the tolerance" in out
    assert "--max-evaluations 2 queries ran out; raise --max-evaluations" in notes[0]
    assert "max_evaluations" not in out
    status, out, err = _run(["calibrate", *ARGS, "--max-evaluations", "2", "--json"])
    payload = json.loads(out)
    jsonschema.validate(payload, schema())
    assert payload["result"]["evaluations"] == 2 and "raise --max-evaluations" in err
    assert payload["notes"] == [err.strip().removeprefix("note: ")]


@pytest.fixture
def no_queries(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("PrivacyBuckets was queried")

    monkeypatch.setattr(search_module, "DPSGDAccountant", refuse)


def test_a_cut_too_close_for_the_dimension_is_refused_at_once_in_options(no_queries):
    """The example the help showed before issue 25: cut 8 on 10^6 x 14062 coordinates."""
    status, out, err = _run(["calibrate", *MNIST, "--cut", "8"])
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("accountant: error: no noise multiplier meets --delta 1e-05 ")
    assert "--cut 8.0 on --dimension 1000000 coordinates" in err and "tau=1.75e-05" in err
    assert re.search(r"only with --cut 8\.\d\d or more, and --cut 8\.\d\d leaves 50%", err)
    assert "cut=" not in err and "max_evaluations" not in err


SHUFFLED = ["--epsilon", "2", "--delta", "1e-5", "--sampler", "shuffle"]
SHUFFLED += ["--batch-size", "16", "--dataset-size", "64", "--epochs", "3"]


def test_an_epoch_sampler_is_calibrated_as_the_library_does():
    status, out, err = _run(["calibrate", *SHUFFLED, "--neighbours", "replace-one"])
    assert status == 0 and err == "", err
    found = calibrate_shuffled_noise_multiplier(
        epsilon=2.0,
        delta=1e-5,
        batch_size=16,
        dataset_size=64,
        epochs=3,
        neighbours="replace-one",
    )
    assert f"sigma (noise multiplier)    {found.sigma:.6g}" in out
    assert f"{found.upper:.6g} <= 2" in out and f"{found.poisson_sigma:.6g}" in out
    assert "3 shuffle epochs (12 steps, replace-one" in out


def test_an_epoch_sampler_with_cut_noise_is_calibrated_as_the_library_does():
    argv = ["--cut", "7", "--dimension", "1000", "--truncation", "clamped"]
    status, out, err = _run(["calibrate", *SHUFFLED, *argv])
    assert status == 0 and err == "", err
    found = calibrate_shuffled_noise_multiplier(
        epsilon=2.0,
        delta=1e-5,
        batch_size=16,
        dataset_size=64,
        epochs=3,
        cut=7.0,
        dimension=1000,
        truncation="clamped",
    )
    gaussian = calibrate_shuffled_noise_multiplier(
        epsilon=2.0, delta=1e-5, batch_size=16, dataset_size=64, epochs=3
    )
    assert f"sigma (noise multiplier)    {found.sigma:.6g}" in out
    assert found.sigma >= gaussian.sigma and found.upper <= 2.0  # escapes cost, if anything
    assert "coupled with noise cut at +-7 sigma per coordinate (clamped)" in out
    assert "coordinates per step        1000" in out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    # a caveat of the Poisson accountant's search is said of it, not of the sampler's sigma
    assert all(line.startswith("note: the Poisson") for line in notes if "sigma=" in line)


def test_an_epoch_sampler_in_json_follows_its_schema_and_the_library():
    status, out, err = _run(["calibrate", *SHUFFLED, "--neighbours", "replace-one", "--json"])
    assert status == 0, err
    payload = json.loads(out)
    text = resources.files("accountant").joinpath("schemas/calibrate-sampler.schema.json")
    jsonschema.validate(payload, json.loads(text.read_text()))
    found = calibrate_shuffled_noise_multiplier(
        epsilon=2.0, delta=1e-5, batch_size=16, dataset_size=64, epochs=3, neighbours="replace-one"
    )
    expected = found.to_dict(payload["seconds"], tuple(payload["notes"]))
    assert payload == json.loads(json.dumps(expected))  # every field, as the library says
    assert payload["run"]["cut"] == "inf" and payload["run"]["sampler"] == "shuffle"
    assert payload["result"]["lower"] <= payload["result"]["upper"] <= 2.0
    assert payload["seconds"] > 0.0 and err == "".join(f"note: {n}\n" for n in payload["notes"])


SAMPLER_BAD = [
    (["--steps", "10"], "--steps is not used with --sampler shuffle"),
    (["--cut", "8"], "--dimension must be given with a finite --cut (--cut 8)"),
    (["--cut", "8", "--dimension", "0"], "--dimension must be a positive integer, got 0"),
    (["--max-evaluations", "5"], "--max-evaluations is not used with --sampler shuffle"),
    (["--batch-size", "0"], "--batch-size must be a positive integer, got 0"),
    (["--batch-size", "65"], "--batch-size must be at most --dataset-size 64, got 65"),
    (["--epochs", "-1"], "--epochs must be a positive integer, got -1"),
    (["--neighbours", "swap"], "--neighbours: invalid choice: 'swap'"),
]


@pytest.mark.parametrize(
    ("change", "needle"), SAMPLER_BAD, ids=[" ".join(c) for c, _ in SAMPLER_BAD]
)
def test_an_option_the_sampler_does_not_use_or_a_bad_value_is_one_line(change, needle):
    argv = list(SHUFFLED)
    if change[0] in argv and len(change) > 1:
        argv[argv.index(change[0]) + 1] = change[1]
    else:
        argv += change
    status, out, err = _run(["calibrate", *argv])
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err, err


def test_poisson_options_are_refused_with_an_epoch_option_and_needed_without_one():
    status, _, err = _run(["calibrate", *ARGS, "--epochs", "3"])
    assert status == 2 and "--epochs is not used with --sampler poisson" in err
    status, _, err = _run(["calibrate", *SHUFFLED[:6], "--dataset-size", "64", "--epochs", "3"])
    assert status == 2 and "--batch-size is required with --sampler shuffle" in err
