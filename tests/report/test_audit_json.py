"""``accountant audit --json`` has a stable, documented schema (issue 11, item 9): the
output validates against the JSON Schema shipped in the package, for delta and eps
queries, additive and DP-SGD pairs, each direction, and several shifts; the key tree is
pinned here so that a renamed key fails a test."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from accountant import noise
from accountant.report.audit import audit_additive
from accountant.report.audit_results import SCHEMA_VERSION
from accountant.report.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--sigma", "2", "--bound", "6", "--step", "0.5", "-n", "4"]


def schema() -> dict:
    text = resources.files("accountant").joinpath("schemas/audit.schema.json").read_text()
    return json.loads(text)


def audit_json(capsys, *args: str) -> dict:
    assert main(["audit", *args, "--json"]) == 0
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    jsonschema.validate(payload, schema())
    return payload


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


@pytest.mark.parametrize("direction", ["max", "A/B", "B/A"])
def test_a_delta_query_validates(direction, capsys):
    payload = audit_json(capsys, *SMALL, "--direction", direction)
    assert payload["schema_version"] == SCHEMA_VERSION
    assert payload["query"]["quantity"] == "delta" and payload["query"]["direction"] == direction
    tight = payload["results"]["extended_ma"]["tight"]
    assert tight["lambda"]["reported"] in (tight["lambda"]["a_over_b"], tight["lambda"]["b_over_a"])


@pytest.mark.parametrize("direction", ["max", "A/B", "B/A"])
def test_an_eps_query_validates(direction, capsys):
    payload = audit_json(capsys, *SMALL, "--target-delta", "0.05", "--direction", direction)
    assert payload["query"]["quantity"] == "epsilon"
    assert payload["query"]["target_delta"] == 0.05 and payload["query"]["epsilon"] is None
    assert payload["results"]["extended_ma"]["tight"]["lambda"] is None
    adp = payload["results"]["privacy_buckets"]["adp"]
    assert adp["lower"]["reported"] <= adp["upper"]["reported"]


@pytest.mark.parametrize("query", [["--epsilon", "0.5"], ["--target-delta", "0.01"]])
def test_a_dp_sgd_audit_validates_in_each_direction(query, capsys):
    for direction in ("A/B", "B/A"):
        payload = audit_json(
            capsys, *SMALL, "--sampling-rate", "0.1", *query, "--direction", direction
        )
        omega = payload["results"]["distinguishing_mass"]["composed"]
        assert omega["a_over_b"] == 0.0 < omega["b_over_a"]  # only B/A has such events
        assert omega["reported"] == omega["a_over_b" if direction == "A/B" else "b_over_a"]


def test_an_unreachable_direction_that_was_not_asked_for_is_inf_with_a_note(capsys):
    # B/A's composed distinguishing mass after 4 releases is 1.35e-3 > the target
    args = [*SMALL, "--sampling-rate", "0.1", "--target-delta", "1e-3", "--direction", "A/B"]
    payload = audit_json(capsys, *args)
    tight = payload["results"]["extended_ma"]["tight"]
    assert tight["b_over_a"] == "inf" and isinstance(tight["a_over_b"], float)
    assert tight["reported"] == tight["a_over_b"]
    assert payload["results"]["privacy_buckets"]["adp"]["upper"]["b_over_a"] == "inf"
    (note,) = [n for n in payload["notes"] if n.startswith("direction B/A (not requested)")]
    assert "after n = 4 releases, 0.001354" in note


def test_several_shifts_validate_without_privacy_buckets(capsys, tmp_path):
    path = tmp_path / "dip.npy"
    np.save(path, np.array([0.1, 0.3, 0.1, 0.2, 0.3]))
    payload = audit_json(capsys, "--family", "file", "--pmf-file", str(path), "--step", "0.5")
    assert payload["results"]["privacy_buckets"] is None
    assert payload["mechanism"]["pairs"] == 2


def test_the_python_report_validates_with_null_settings():
    report = audit_additive(noise.truncated_laplace(2.0, 6.0, 0.5), 1.0, times=3, epsilon=0.4)
    payload = json.loads(json.dumps(report.to_dict()))
    jsonschema.validate(payload, schema())
    assert payload["mechanism"]["settings"] is None and payload["seconds"] is None


def _key_paths(value, prefix: str = "") -> set[str]:
    if not isinstance(value, dict):
        return set()
    paths = set()
    for key, item in value.items():
        path = f"{prefix}.{key}" if prefix else key
        paths.add(path)
        paths |= _key_paths(item, path)
    return paths


DIRECTIONAL = ("a_over_b", "b_over_a", "reported")


def _expected_keys() -> set[str]:
    expected = {"schema_version", "mechanism", "query", "results", "notes", "seconds"}
    expected |= {
        f"mechanism.{k}"
        for k in (
            "description",
            "shifts",
            "pairs",
            "settings",
            "accountant",
            "upper_bound_dimension",
        )
    }
    expected |= {f"mechanism.settings.{k}" for k in ("family", "sigma", "bound", "step")}
    expected |= {"mechanism.settings.sensitivity", "mechanism.settings.sampling_rate"}
    expected.add("mechanism.settings.bits")
    expected |= {
        f"query.{k}" for k in ("quantity", "compositions", "epsilon", "target_delta", "direction")
    }
    groups = {
        "results.distinguishing_mass": ("one_release", "composed"),
        "results.exact": ("adp", "pdp"),
        "results.extended_ma": ("tight", "paper"),
    }
    for group, members in groups.items():
        expected.add(group)
        for member in members:
            expected.add(f"{group}.{member}")
            expected |= {f"{group}.{member}.{k}" for k in DIRECTIONAL}
    expected.add("results")
    for conversion in ("tight", "paper"):
        path = f"results.extended_ma.{conversion}.lambda"
        expected |= {path, *(f"{path}.{k}" for k in DIRECTIONAL)}
    expected.add("results.privacy_buckets")
    for kind in ("adp", "pdp"):
        expected.add(f"results.privacy_buckets.{kind}")
        for side in ("lower", "upper"):
            path = f"results.privacy_buckets.{kind}.{side}"
            expected |= {path, *(f"{path}.{k}" for k in DIRECTIONAL)}
    return expected


def test_the_key_tree_is_stable(capsys):
    payload = audit_json(capsys, *SMALL)
    assert _key_paths(payload) == _expected_keys()


def test_the_docs_list_every_key():
    text = (ROOT / "docs" / "guide" / "auditing.md").read_text()
    section = text[text.index("## The JSON report") :]
    for key in (
        "schema_version",
        "mechanism",
        "settings",
        "query",
        "quantity",
        "results",
        "upper_bound_dimension",
        "distinguishing_mass",
        "one_release",
        "composed",
        "exact",
        "extended_ma",
        "lambda",
        "privacy_buckets",
        "a_over_b",
        "b_over_a",
        "reported",
        "notes",
        "seconds",
        "audit.schema.json",
    ):
        assert key in section, key
