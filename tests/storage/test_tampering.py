"""A saved accountant is tamper-evident (issue 25): an edit to its description or its
sidecar after saving is refused in one line naming what changed, never loaded as another
accountant; a file of the old format version 1 (no digest) loads with a warning."""

from __future__ import annotations

import hashlib
import io
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accountant
from accountant import (
    DPSGDAccountant,
    ExtendedMA,
    InvalidInputError,
    PrivacyBuckets,
    load_accountant,
    mechanisms,
    save_accountant,
)
from accountant.report.cli import main
from accountant.storage import FORMAT_VERSION, UncheckedAccountantWarning
from tests.storage.cases import small_pair

STEP = mechanisms.SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.01, cut=3.0)


@pytest.fixture
def dpsgd(tmp_path) -> Path:
    """The accountant of issue 25: 10 DP-SGD steps on 5 coordinates."""
    accountant = DPSGDAccountant(dimension=5).compose(STEP, 10)
    return save_accountant(accountant, tmp_path / "s.json").description


@pytest.fixture
def buckets(tmp_path) -> Path:
    """A PrivacyBuckets with a pair (arrays in the sidecar) and an analytic mechanism."""
    accountant = (
        PrivacyBuckets(accuracy=1e-2)
        .compose(small_pair(), 3)
        .compose(mechanisms.GaussianMechanism(3.0), 2)
    )
    return save_accountant(accountant, tmp_path / "b.json").description


def edit(path: Path, change) -> Path:
    """Apply ``change(description)`` to the JSON at ``path`` and write it back."""
    description = json.loads(path.read_text())
    change(description)
    path.write_text(json.dumps(description, indent=2))
    return path


def refused(path: Path, *expected: str) -> str:
    """The one-line refusal of loading ``path``, which names it and contains ``expected``."""
    with pytest.raises(InvalidInputError) as caught:
        load_accountant(path)
    message = str(caught.value)
    assert "\n" not in message
    assert repr(str(path)) in message
    for text in expected:
        assert text in message, message
    return message


def canonical_digest(description: dict[str, Any], sidecar: bytes) -> str:
    """The digest as the guide documents it, written out independently of the library."""
    rest = {k: v for k, v in description.items() if k != "digest"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii") + b"\n" + sidecar).hexdigest()


# ---------------------------------------------------------------------------------------
# the edits of the issue


def test_fewer_times_is_refused_naming_the_releases(dpsgd):
    edit(dpsgd, lambda d: d["components"][0].update(times=1))
    message = refused(dpsgd, "changed after saving", "field 'releases' records 10", "has 1")
    assert "save the accountant again" in message


def test_a_cut_made_infinite_is_refused_naming_the_history(dpsgd):
    edit(dpsgd, lambda d: d["components"][0]["parameters"].update(cut={"float": "inf"}))
    refused(dpsgd, "changed after saving", "field 'history' records", "cut 3 sigma", "no cut")


def test_another_sigma_is_refused_naming_the_history(dpsgd):
    edit(dpsgd, lambda d: d["components"][0]["parameters"].update(sigma=5.0))
    refused(dpsgd, "field 'history' records", "sigma=1.1", "sigma=5")


def test_another_dimension_is_refused_naming_the_settings(dpsgd):
    edit(dpsgd, lambda d: d["settings"].update(dimension=1))
    refused(
        dpsgd,
        "changed after saving",
        "field 'accountant' (the kind and settings) records",
        "dimension=5",
        "dimension=1",
    )


@pytest.mark.parametrize(
    ("setting", "value", "saved", "rebuilt"),
    [
        ("accuracy", 0.02, "accuracy=0.01", "accuracy=0.02"),
        ("max_buckets", 4096, "max_buckets=8388608", "max_buckets=4096"),
    ],
)
def test_other_settings_are_refused_naming_them(buckets, setting, value, saved, rebuilt):
    edit(buckets, lambda d: d["settings"].update({setting: value}))
    refused(buckets, "field 'accountant' (the kind and settings) records", saved, rebuilt)


def test_another_conversion_of_an_extended_ma_is_refused(tmp_path):
    path = save_accountant(ExtendedMA().compose(small_pair(), 2), tmp_path / "m.json").description
    edit(path, lambda d: d["settings"].update(conversion="paper"))
    refused(
        path,
        "field 'accountant' (the kind and settings) records",
        "conversion='tight'",
        "conversion='paper'",
    )


def test_edited_releases_and_history_fields_are_refused_naming_them(dpsgd):
    edit(dpsgd, lambda d: d.update(releases=11))
    refused(dpsgd, "field 'releases' records 11", "has 10")
    edit(dpsgd, lambda d: d.update(releases=10, history="10 x something milder"))
    refused(dpsgd, "field 'history' records '10 x something milder'", "sigma=1.1")


def test_a_pairs_masses_changed_in_the_sidecar_are_refused(buckets):
    sidecar = buckets.with_suffix(".npz")
    with np.load(sidecar) as archive:
        arrays = {key: archive[key] for key in archive.files}
    a = arrays["array_0"]
    arrays["array_0"] = np.roll(a, 1)  # the same masses, moved: still a valid pair
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    sidecar.write_bytes(buffer.getvalue())
    refused(buckets, "sidecar", "b.npz", "changed after saving")
    # the sidecar's sha256 made to match too: the digest still tells
    new = hashlib.sha256(buffer.getvalue()).hexdigest()
    edit(buckets, lambda d: d["sidecar"].update(sha256=new))
    refused(buckets, "the description or its sidecar was changed after saving", "digest")


def test_a_removed_field_is_refused_naming_it(dpsgd):
    for name in ("history", "releases", "accountant", "digest"):
        original = dpsgd.read_text()
        edit(dpsgd, lambda d, n=name: d.pop(n))
        refused(dpsgd, f"field {name!r} is missing", "changed after saving")
        dpsgd.write_text(original)
    assert load_accountant(dpsgd).dimension == 5


def test_an_added_field_is_refused_naming_it(dpsgd):
    edit(dpsgd, lambda d: d.update(note="audited"))
    refused(dpsgd, "unknown field 'note'", "changed after saving")


def test_an_edited_digest_is_refused(dpsgd):
    edit(dpsgd, lambda d: d.update(digest="0" * 64))
    refused(dpsgd, "the description or its sidecar was changed after saving", "0" * 64)


def test_a_field_written_twice_is_refused(dpsgd):
    text = dpsgd.read_text().replace('"releases": 10,', '"releases": 1000,\n  "releases": 10,')
    dpsgd.write_text(text)
    refused(dpsgd, "'releases' appears twice")


@pytest.mark.parametrize(
    ("written", "shown"),
    [("NaN", "it holds NaN"), ("-Infinity", "it holds -Infinity"), ("1e999", "number 1e999")],
)
def test_a_number_json_cannot_hold_is_refused(dpsgd, written, shown):
    text = dpsgd.read_text().replace('"cut": 3.0', f'"cut": {written}')
    dpsgd.write_text(text)
    refused(dpsgd, "changed after saving", shown)


def test_a_foreign_file_is_refused_as_foreign_before_its_keys_are(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"format": "other", "a": NaN, "a": 1}')
    refused(path, "is not a saved accountant")


def test_a_forged_digest_over_consistent_edits_is_not_a_signature(dpsgd):
    """The digest detects edits; it does not authenticate (anyone can recompute it). An
    edit that repeats itself in every redundant field and recomputes the digest loads."""
    sidecar = dpsgd.with_suffix(".npz").read_bytes()
    description = json.loads(dpsgd.read_text())
    assert description["digest"] == canonical_digest(description, sidecar)
    description["components"][0]["times"] = 1
    description["releases"] = 1
    description["history"] = description["history"].replace("10 x", "1 x", 1)
    description["digest"] = canonical_digest(description, sidecar)
    dpsgd.write_text(json.dumps(description))
    assert load_accountant(dpsgd).releases == 1


def test_a_recomputed_digest_does_not_hide_an_inconsistent_field(dpsgd):
    sidecar = dpsgd.with_suffix(".npz").read_bytes()
    description = json.loads(dpsgd.read_text())
    description["components"][0]["times"] = 1
    description["digest"] = canonical_digest(description, sidecar)
    dpsgd.write_text(json.dumps(description))
    message = refused(dpsgd, "field 'releases' records 10", "has 1", "although the digest matches")
    assert f"library_version {accountant.__version__!r}" in message


# ---------------------------------------------------------------------------------------
# what is not an edit


def test_layout_and_key_order_are_not_edits(dpsgd):
    description = json.loads(dpsgd.read_text())
    reordered = dict(reversed(list(description.items())))
    dpsgd.write_text(json.dumps(reordered, indent=7))
    loaded = load_accountant(dpsgd)
    assert loaded.dimension == 5 and loaded.releases == 10


def test_the_format_is_version_2_with_the_settings_and_the_digest(dpsgd):
    description = json.loads(dpsgd.read_text())
    assert FORMAT_VERSION == 2 == description["format_version"]
    assert description["accountant"] == "DPSGDAccountant(dimension=5, accuracy=0.0001)"
    sidecar = dpsgd.with_suffix(".npz").read_bytes()
    assert description["digest"] == canonical_digest(description, sidecar)


def test_the_returned_record_holds_the_digest(tmp_path):
    saved = save_accountant(ExtendedMA(), tmp_path / "e.json")
    assert saved.digest == json.loads(saved.description.read_text())["digest"]


# ---------------------------------------------------------------------------------------
# files of format version 1 (no digest)


def as_version_1(path: Path) -> Path:
    """``path`` rewritten as format version 1 wrote it: no ``accountant``, no ``digest``."""

    def change(description):
        del description["accountant"], description["digest"]
        description["format_version"] = 1

    return edit(path, change)


def test_a_version_1_file_loads_with_a_warning_saying_how_to_resave(dpsgd):
    as_version_1(dpsgd)
    with pytest.warns(UncheckedAccountantWarning) as caught:
        loaded = load_accountant(dpsgd)
    assert loaded.dimension == 5 and loaded.releases == 10
    (record,) = caught
    message = str(record.message)
    assert "\n" not in message and repr(str(dpsgd)) in message
    assert "format version 1" in message and "cannot be checked for edits" in message
    assert "save_accountant(load_accountant(" in message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncheckedAccountantWarning)
        save_accountant(load_accountant(dpsgd), dpsgd)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_accountant(dpsgd).releases == 10  # re-saved: version 2, no warning


def test_a_version_1_file_still_has_its_redundant_fields_checked(dpsgd):
    as_version_1(dpsgd)
    edit(dpsgd, lambda d: d["components"][0].update(times=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncheckedAccountantWarning)
        refused(dpsgd, "field 'releases' records 10", "has 1")


def test_a_version_1_file_with_version_2_fields_is_refused(dpsgd):
    edit(dpsgd, lambda d: d.update(format_version=1))
    refused(dpsgd, "unknown field")


# ---------------------------------------------------------------------------------------
# the command line


def test_the_cli_refuses_a_tampered_file_in_one_line(dpsgd, capsys):
    edit(dpsgd, lambda d: d["components"][0].update(times=1))
    assert main(["audit", "--accountant", str(dpsgd)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("accountant: error: ")
    assert "field 'releases' records 10" in line and "changed after saving" in line


def test_the_cli_notes_a_version_1_file_in_one_line(tmp_path, capsys):
    accountant = ExtendedMA().compose(mechanisms.GaussianMechanism(3.0), 2)
    path = as_version_1(save_accountant(accountant, tmp_path / "m.json").description)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncheckedAccountantWarning)
        assert main(["audit", "--accountant", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["query"]["compositions"] == 2
    notes = [line for line in captured.err.splitlines() if "format version 1" in line]
    assert len(notes) == 1 and notes[0].startswith("note: ")
