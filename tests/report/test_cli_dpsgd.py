"""DP-SGD on the command line (issue 25, B): ``accountant audit --noise-multiplier S
--sampling-rate Q --steps N --cut K --dimension D`` audits the grid-free mechanism with the
certified DPSGDAccountant, bit for bit the library's numbers; every one-dimensional DP-SGD
result says, in its table and its JSON, that its upper bound holds for a 1-coordinate
model only; options a mode would ignore are refused in one line."""

from __future__ import annotations

import json
import shlex

import jsonschema
import pytest

from accountant import DPSGDAccountant, PrivacyBuckets, SubsampledTruncatedGaussian, noise
from accountant.pairs.worst_case import WorstCasePair
from accountant.report.audit import audit_pairs, one_coordinate_note
from accountant.report.cli import main
from tests.report.test_audit_json import schema

GRID = ["--sigma", "2", "--bound", "6", "--step", "0.5"]
#: A small grid-free run (about a second): 2 steps, 5 coordinates, cut at 3 sigma.
GRID_FREE = [
    "--noise-multiplier",
    "1",
    "--sampling-rate",
    "0.1",
    "--steps",
    "2",
    "--cut",
    "3",
    "--dimension",
    "5",
]
ONE_COORDINATE = "upper bound for a 1-coordinate model only; for d > 1 coordinates it is a lower"


def audit_json(capsys, *args: str) -> dict:
    assert main(["audit", *args, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    jsonschema.validate(payload, schema())
    return payload


def audit_table(capsys, *args: str) -> str:
    assert main(["audit", *args]) == 0
    return capsys.readouterr().out


def refused(capsys, *args: str) -> str:
    assert main(["audit", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    assert lines[0].startswith("accountant: error: ") and "Traceback" not in captured.err
    return lines[0]


def test_the_grid_free_audit_is_the_library_call_to_the_last_bit(capsys):
    report = audit_json(capsys, *GRID_FREE, "--epsilon", "0.5")
    step = SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.1, cut=3.0)
    direct = DPSGDAccountant(dimension=5).compose(step, 2)
    adp = report["results"]["privacy_buckets"]["adp"]
    for side, direction in (("a_over_b", "A/B"), ("b_over_a", "B/A")):
        bounds = direct.delta(0.5, direction)
        assert adp["lower"][side] == bounds.lower and adp["upper"][side] == bounds.upper
    mechanism = report["mechanism"]
    assert mechanism["upper_bound_dimension"] == 5
    assert mechanism["accountant"]["kind"] == "DPSGDAccountant"
    assert mechanism["description"] == direct.history
    assert mechanism["settings"] == {
        "noise_multiplier": 1.0,
        "sampling_rate": 0.1,
        "steps": 2,
        "cut": 3.0,
        "dimension": 5,
        "truncation": "renormalised",
        "clip": 1.0,
    }
    assert report["query"]["compositions"] == 2
    assert not any(ONE_COORDINATE in note for note in report["notes"])


@pytest.mark.slow
def test_steps_and_compositions_are_one_count(capsys):
    args = [a if a != "--steps" else "-n" for a in GRID_FREE]
    by_n = audit_json(capsys, *args, "--epsilon", "0.5", "--truncation", "clamped")
    step = SubsampledTruncatedGaussian(
        sigma=1.0, sampling_rate=0.1, cut=3.0, clip=1.0, truncation="clamped"
    )
    upper = DPSGDAccountant(dimension=5).compose(step, 2).delta(0.5).upper
    assert by_n["results"]["privacy_buckets"]["adp"]["upper"]["reported"] == upper
    assert by_n["mechanism"]["settings"]["truncation"] == "clamped"


def test_the_one_dimensional_grid_pair_says_it_bounds_one_coordinate(capsys):
    args = [*GRID, "--sampling-rate", "0.1", "-n", "4"]
    payload = audit_json(capsys, *args)
    assert payload["mechanism"]["upper_bound_dimension"] == 1
    expected = one_coordinate_note("--noise-multiplier 2 --sampling-rate 0.1 --steps 4 --cut 3")
    assert payload["notes"][0] == expected
    table = audit_table(capsys, *args)
    flat = " ".join(table.split())
    assert f"note: {ONE_COORDINATE}" in flat and "--steps 4 --cut 3 --dimension D" in flat
    # --steps counts the same releases as -n for the DP-SGD pair
    again = audit_json(capsys, *GRID, "--sampling-rate", "0.1", "--steps", "4")
    assert again["results"] == payload["results"]


def test_the_note_names_a_grid_free_audit_that_runs(capsys):
    payload = audit_json(capsys, *GRID, "--sampling-rate", "0.1", "-n", "4")
    command = payload["notes"][0].split("— use ")[1].replace("--dimension D", "--dimension 1")
    report = audit_json(capsys, *shlex.split(command), "--epsilon", "0.5")
    assert report["mechanism"]["settings"]["noise_multiplier"] == 2.0
    assert report["mechanism"]["settings"]["cut"] == 3.0
    assert report["mechanism"]["upper_bound_dimension"] == 1
    assert report["notes"][0].startswith(ONE_COORDINATE)


def test_additive_noise_and_uncut_noise_carry_no_dimension(capsys):
    additive = audit_json(capsys, *GRID, "-n", "2")
    assert additive["mechanism"]["upper_bound_dimension"] is None
    assert not any(ONE_COORDINATE in note for note in additive["notes"])
    uncut = audit_json(
        capsys, "--noise-multiplier", "1", "--sampling-rate", "0.5", "--steps", "1", "--cut", "inf"
    )
    assert uncut["mechanism"]["upper_bound_dimension"] is None
    assert uncut["mechanism"]["settings"]["cut"] == "inf"
    assert not any(ONE_COORDINATE in note for note in uncut["notes"])


def test_the_python_report_of_a_dp_sgd_pair_says_it_too():
    pair = WorstCasePair.subsampled(noise.truncated_gaussian(2.0, 6.0, 0.5), 0.1, 1.0)
    report = audit_pairs(pair, 3)
    assert report.mechanism.upper_bound_dimension == 1
    assert report.notes[0] == one_coordinate_note()
    assert report.to_dict()["mechanism"]["upper_bound_dimension"] == 1
    additive = audit_pairs(WorstCasePair.additive(noise.truncated_gaussian(2.0, 6.0, 0.5), 1.0), 3)
    assert additive.mechanism.upper_bound_dimension is None


def test_a_saved_one_dimensional_dp_sgd_accountant_says_it_too(capsys, tmp_path):
    path = str(tmp_path / "dpsgd.json")
    pair = WorstCasePair.subsampled(noise.truncated_gaussian(2.0, 6.0, 0.5), 0.1, 1.0)
    from accountant import save_accountant

    save_accountant(PrivacyBuckets().compose(pair, 3), path)
    payload = audit_json(capsys, "--accountant", path)
    assert payload["mechanism"]["upper_bound_dimension"] == 1
    assert payload["notes"][0] == one_coordinate_note()


GRID_FREE_REFUSALS = [
    ([*GRID_FREE, "--sigma", "2"], "--sigma does not apply to --noise-multiplier"),
    ([*GRID_FREE, "--family", "uniform"], "--family does not apply to --noise-multiplier"),
    ([*GRID_FREE, "--bits", "48"], "--bits does not apply to --noise-multiplier"),
    ([*GRID_FREE, "--sensitivity", "1"], "the clipping norm is --clip"),
    ([*GRID_FREE, "--plot", "x.png"], "--plot does not apply to --noise-multiplier"),
    ([*GRID_FREE, "-n", "2"], "give one of -n/--compositions and --steps"),
    (GRID_FREE[:2] + GRID_FREE[4:], "--noise-multiplier needs --sampling-rate"),
    (GRID_FREE[:4] + GRID_FREE[6:], "--noise-multiplier needs --steps"),
    (GRID_FREE[:6] + GRID_FREE[8:], "--noise-multiplier needs --cut"),
    (GRID_FREE[:8], "--dimension must be given with a finite --cut (--cut 3)"),
    ([*GRID, "--cut", "3"], "--cut applies only to the grid-free DP-SGD audit"),
    ([*GRID, "--sampling-rate", "0.1", "--dimension", "5"], "--dimension applies only"),
    ([*GRID, "--truncation", "clamped"], "--truncation applies only"),
    ([*GRID, "--clip", "2"], "--clip applies only"),
    ([*GRID, "--steps", "3"], "--steps counts DP-SGD steps"),
]


@pytest.mark.parametrize(
    ("args", "needle"), GRID_FREE_REFUSALS, ids=[n for _, n in GRID_FREE_REFUSALS]
)
def test_an_option_the_mode_would_ignore_or_needs_is_named_in_one_line(capsys, args, needle):
    assert needle in refused(capsys, *args)


def test_what_a_run_file_says_cannot_be_given_as_grid_free_options(capsys, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"dimension": 5, "cut": 3, "segments": [[1.0, 0.1, 2]]}))
    line = refused(capsys, "--run", str(path), "--noise-multiplier", "1")
    assert "--noise-multiplier cannot be given with --run" in line
    assert "--dimension cannot be given with --run" in refused(
        capsys, "--run", str(path), "--dimension", "5"
    )


def test_the_truncations_offered_are_the_mechanism_s():
    import accountant.report.cli_audit as cli_audit
    from accountant.mechanisms.subsampled_gaussian import TRUNCATIONS

    assert cli_audit._TRUNCATIONS == TRUNCATIONS  # spelt out so that --help imports no mechanism
