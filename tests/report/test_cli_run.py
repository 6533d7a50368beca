"""``accountant audit --run PATH``: a DP-SGD training run described in JSON, audited with
the certified DPSGDAccountant; its segments in either form (objects or Opacus's history
triples); every malformed field refused in one line naming it."""

from __future__ import annotations

import json

import pytest

from accountant import DPSGDAccountant, SubsampledTruncatedGaussian
from accountant.report.run_file import parse_run, run_accountant
from tests.report.test_cli_saved import audit_json, refused

RUN = {
    "dimension": 1000,
    "cut": 8,
    "accuracy": 1e-3,
    "segments": [
        {"noise_multiplier": 1.1, "sampling_rate": 0.2, "steps": 10},
        {"noise_multiplier": 0.9, "sampling_rate": 0.2, "steps": 5, "cut": 9},
    ],
}


def _write(tmp_path, payload, name="run.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_the_run_is_audited_with_the_certified_dpsgd_accountant(capsys, tmp_path):
    report = audit_json(capsys, "--run", _write(tmp_path, RUN), "--epsilon", "1")
    direct = (
        DPSGDAccountant(dimension=1000, accuracy=1e-3)
        .compose(SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.2, cut=8.0), 10)
        .compose(SubsampledTruncatedGaussian(sigma=0.9, sampling_rate=0.2, cut=9.0), 5)
    )
    for side, direction in (("a_over_b", "A/B"), ("b_over_a", "B/A")):
        bounds = direct.delta(1.0, direction)
        adp = report["results"]["privacy_buckets"]["adp"]
        assert adp["lower"][side] == bounds.lower and adp["upper"][side] == bounds.upper
    assert report["query"]["compositions"] == 15
    assert report["mechanism"]["accountant"]["kind"] == "DPSGDAccountant"
    assert report["mechanism"]["accountant"]["settings"]["dimension"] == 1000
    assert report["mechanism"]["upper_bound_dimension"] == 1000
    assert report["results"]["extended_ma"] == {"tight": None, "paper": None}
    assert any("Extended MA rows omitted" in note for note in report["notes"])


def test_opacus_history_triples_are_the_same_run():
    triples = {**RUN, "segments": [[1.1, 0.2, 10], [0.9, 0.2, 5]], "cut": 9}
    objects = {**RUN, "cut": 9, "segments": [{**s, "cut": 9} for s in RUN["segments"]]}
    assert parse_run(triples) == parse_run(objects)
    assert run_accountant(parse_run(triples)).history == run_accountant(parse_run(objects)).history


@pytest.mark.slow
def test_one_coordinate_keeps_the_extended_ma_rows(capsys, tmp_path):
    run = {**RUN, "dimension": 1, "segments": [[1.1, 0.2, 5]]}
    report = audit_json(capsys, "--run", _write(tmp_path, run), "--epsilon", "1")
    assert report["results"]["extended_ma"] is not None


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"dimension": 0}, "dimension must be a positive integer, got 0"),
        ({"cut": -1}, "cut must be > 0, got -1"),
        ({"truncation": "gaussian"}, "truncation must be one of"),
        ({"segments": []}, "segments must be a non-empty list, got []"),
        ({"segments": [[1.1, 2.0, 3]]}, "segments[0].sampling_rate must lie in (0, 1]"),
        ({"segments": [[1.1, 0.1, 2.5]]}, "segments[0].steps must be a positive integer"),
        ({"segments": [[1.1, 0.1]]}, "segments[0] must be an object"),
        ({"segments": [{"noise_multiplier": 1.0, "steps": 2}]}, "segments[0] must have the keys"),
        ({"seed": 3}, "a training run must have the keys"),
        ({"accuracy": 1.5}, "accuracy must lie in (0, 1), got 1.5"),
    ],
)
def test_a_malformed_run_is_refused_naming_the_field(capsys, tmp_path, change, shown):
    err = refused(capsys, "--run", _write(tmp_path, {**RUN, **change}))
    assert len(err.splitlines()) == 1 and shown in err and "run.json" in err


def test_what_the_run_already_says_cannot_be_given_again(capsys, tmp_path):
    path = _write(tmp_path, RUN)
    assert "--sigma cannot be given with --run" in refused(capsys, "--run", path, "--sigma", "2")
    assert "--bits cannot be given with --run" in refused(capsys, "--run", path, "--bits", "48")
    assert "-n/--compositions cannot be given with --run" in refused(
        capsys, "--run", path, "-n", "3"
    )
    assert "--run cannot be given with --accountant" in refused(
        capsys, "--run", path, "--accountant", path
    )
    (tmp_path / "bad.json").write_text("not json", encoding="utf-8")
    assert "is not JSON" in refused(capsys, "--run", str(tmp_path / "bad.json"))
    assert "cannot read the training run" in refused(capsys, "--run", str(tmp_path / "no.json"))
