"""``accountant audit --save PATH`` and ``accountant audit --accountant PATH``: an audited
accountant saved, and audited again later from its file alone."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import numpy as np
import pytest

from accountant import (
    ExtendedMA,
    PrivacyBuckets,
    WorstCasePair,
    load_accountant,
    mechanisms,
    noise,
    privacy_loss_distribution,
    save_accountant,
)
from accountant.report.cli import main

SMALL = ["--sigma", "2", "--bound", "6", "--step", "0.5", "-n", "4", "--epsilon", "1"]


def audit_json(capsys, *args: str) -> dict:
    assert main(["audit", *args, "--json"]) == 0, capsys.readouterr().err
    payload = json.loads(capsys.readouterr().out)
    schema = resources.files("accountant").joinpath("schemas/audit.schema.json").read_text()
    jsonschema.validate(payload, json.loads(schema))
    return payload


def refused(capsys, *args: str) -> str:
    assert main(["audit", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err.strip()


def test_save_then_audit_the_saved_accountant_gives_the_same_brackets(capsys, tmp_path):
    path = str(tmp_path / "audited.json")
    first = audit_json(capsys, *SMALL, "--save", path)
    assert any(note.startswith("saved the audited PrivacyBuckets") for note in first["notes"])
    saved = load_accountant(path)
    assert isinstance(saved, PrivacyBuckets) and saved.releases == 4

    again = audit_json(capsys, "--accountant", path, "--epsilon", "1")
    assert again["results"]["privacy_buckets"] == first["results"]["privacy_buckets"]
    assert again["results"]["extended_ma"] == first["results"]["extended_ma"]
    composed = again["results"]["distinguishing_mass"]["composed"]
    assert composed == first["results"]["distinguishing_mass"]["composed"]
    assert again["results"]["distinguishing_mass"]["one_release"] is None
    assert again["results"]["exact"] == {"adp": None, "pdp": None}
    assert again["query"]["compositions"] == 4
    assert again["mechanism"]["settings"] is None
    assert again["mechanism"]["accountant"] == {
        "path": path,
        "kind": "PrivacyBuckets",
        "settings": saved.state_dict()["settings"],
        "history": saved.history,
    }
    assert again["mechanism"]["description"] == saved.history
    assert first["mechanism"]["accountant"] is None


def test_a_saved_heterogeneous_accountant_reports_its_own_answers(capsys, tmp_path):
    pair = WorstCasePair.additive(noise.truncated_gaussian(2.0, 6.0, 0.5), 1.0)
    gaussian = mechanisms.TruncatedGaussianMechanism(2.0, 6.0, 1.0)
    accountant = PrivacyBuckets(accuracy=1e-3).compose(pair, 3).compose(gaussian, 2)
    path = tmp_path / "mixed.json"
    save_accountant(accountant, path)
    payload = audit_json(capsys, "--accountant", str(path), "--epsilon", "0.5")
    upper = payload["results"]["privacy_buckets"]["adp"]["upper"]
    assert upper["a_over_b"] == accountant.delta(0.5, "A/B").upper
    assert upper["b_over_a"] == accountant.delta(0.5, "B/A").upper
    tight = ExtendedMA().compose(pair, 3).compose(gaussian, 2)
    assert payload["results"]["extended_ma"]["tight"]["reported"] == tight.delta(0.5).upper
    assert payload["query"]["compositions"] == 5
    assert payload["mechanism"]["pairs"] == 2


def test_a_saved_extended_ma_has_no_buckets_rows_and_answers_an_eps_query(capsys, tmp_path):
    pair = WorstCasePair.additive(noise.truncated_gaussian(2.0, 6.0, 0.5), 1.0)
    accountant = ExtendedMA(conversion="paper").compose(pair, 6)
    path = tmp_path / "moments.json"
    save_accountant(accountant, path)
    payload = audit_json(capsys, "--accountant", str(path), "--target-delta", "0.1")
    assert payload["results"]["privacy_buckets"] is None
    assert any("PrivacyBuckets rows omitted" in note for note in payload["notes"])
    paper = payload["results"]["extended_ma"]["paper"]
    assert paper["reported"] == accountant.epsilon(0.1).upper
    assert payload["query"]["quantity"] == "epsilon"


def test_a_component_the_extended_ma_does_not_take_omits_its_rows(capsys, tmp_path):
    pair = WorstCasePair.additive(noise.truncated_gaussian(2.0, 6.0, 0.5), 1.0)
    accountant = PrivacyBuckets(accuracy=1e-3).compose(privacy_loss_distribution(pair), 3)
    save_accountant(accountant, tmp_path / "pld.json")
    payload = audit_json(capsys, "--accountant", str(tmp_path / "pld.json"))
    assert payload["results"]["extended_ma"] == {"tight": None, "paper": None}
    assert any(note.startswith("Extended MA rows omitted") for note in payload["notes"])
    assert payload["results"]["privacy_buckets"]["adp"]["upper"]["reported"] == (
        accountant.delta(0.3).upper
    )


def test_the_table_of_a_saved_accountant_leaves_out_one_release_rows(capsys, tmp_path):
    path = str(tmp_path / "audited.json")
    assert main(["audit", *SMALL, "--save", path]) == 0
    capsys.readouterr()
    assert main(["audit", "--accountant", path]) == 0
    out = capsys.readouterr().out
    assert "saved PrivacyBuckets accountant" in out
    assert "PrivacyBuckets ADP delta upper, n = 4" in out
    assert "one release" not in out.split("note:")[0]


def test_non_monotone_noise_saves_the_extended_ma_over_every_shift(capsys, tmp_path):
    pmf = tmp_path / "pmf.npy"
    np.save(pmf, np.array([0.1, 0.2, 0.3, 0.25, 0.15]))
    path = str(tmp_path / "shifts.json")
    args = ["--family", "file", "--pmf-file", str(pmf), "--step", "1", "--sensitivity", "2"]
    first = audit_json(capsys, *args, "-n", "3", "--save", path)
    assert any("saved the audited ExtendedMA" in note for note in first["notes"])
    saved = load_accountant(path)
    assert isinstance(saved, ExtendedMA) and saved.history.startswith("3 x worst case over 2")
    again = audit_json(capsys, "--accountant", path, "--epsilon", "0.3")
    assert again["results"]["extended_ma"] == first["results"]["extended_ma"]


@pytest.mark.parametrize(
    ("option", "flag"),
    [
        (["--family", "truncated-laplace"], "--family"),
        (["--sigma", "3"], "--sigma"),
        (["--scale", "3"], "--scale"),
        (["--stair-epsilon", "0.3"], "--stair-epsilon"),
        (["--gamma", "0.5"], "--gamma"),
        (["--bound", "10"], "--bound"),
        (["--step", "1"], "--step"),
        (["--pmf-file", "p.npy"], "--pmf-file"),
        (["--start", "0"], "--start"),
        (["--sensitivity", "1"], "--sensitivity"),
        (["--sampling-rate", "0.1"], "--sampling-rate"),
        (["-n", "5"], "-n/--compositions"),
        (["--compositions", "128"], "-n/--compositions"),
    ],
)
def test_options_that_say_what_is_composed_are_refused_with_accountant(
    capsys, tmp_path, option, flag
):
    path = tmp_path / "a.json"
    save_accountant(ExtendedMA().compose(mechanisms.GaussianMechanism(2.0), 3), path)
    message = refused(capsys, "--accountant", str(path), *option)
    assert f"{flag} cannot be given with --accountant" in message
    assert str(path) in message


def test_plot_is_refused_with_accountant(capsys, tmp_path):
    path = tmp_path / "a.json"
    save_accountant(ExtendedMA().compose(mechanisms.GaussianMechanism(2.0), 3), path)
    message = refused(capsys, "--accountant", str(path), "--plot", str(tmp_path / "p.png"))
    assert "--plot does not apply to --accountant" in message


def test_a_missing_or_foreign_accountant_file_is_one_line(capsys, tmp_path):
    message = refused(capsys, "--accountant", str(tmp_path / "absent.json"))
    assert "absent.json' does not exist" in message and "\n" not in message
    (tmp_path / "other.json").write_text('{"format": "other"}')
    assert "is not a saved accountant" in refused(
        capsys, "--accountant", str(tmp_path / "other.json")
    )


def test_an_empty_saved_accountant_is_refused(capsys, tmp_path):
    save_accountant(PrivacyBuckets(), tmp_path / "empty.json")
    message = refused(capsys, "--accountant", str(tmp_path / "empty.json"))
    assert "composed nothing: there is nothing to audit" in message


def test_save_to_a_missing_directory_is_refused_before_any_work(capsys, tmp_path):
    message = refused(capsys, *SMALL, "--save", str(tmp_path / "missing" / "a.json"))
    assert message.startswith("accountant: error: --save")
    assert not (tmp_path / "missing").exists()


def test_a_target_below_the_composed_floor_is_refused_for_a_saved_accountant(capsys, tmp_path):
    pair = WorstCasePair.additive(noise.truncated_gaussian(2.0, 6.0, 0.5), 1.0)
    save_accountant(ExtendedMA().compose(pair, 6), tmp_path / "m.json")
    message = refused(capsys, "--accountant", str(tmp_path / "m.json"), "--target-delta", "0.01")
    assert "below the distinguishing mass after n = 6 releases" in message
    assert "one release" not in message
