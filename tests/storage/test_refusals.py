"""What a saved accountant refuses, each in one line naming the path and the problem."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs
import pytest

from accountant import (
    ExtendedMA,
    InvalidInputError,
    PrivacyBuckets,
    load_accountant,
    mechanisms,
    save_accountant,
)
from accountant.storage import files
from tests.storage.cases import small_pair


@pytest.fixture
def saved(tmp_path) -> Path:
    accountant = (
        ExtendedMA()
        .compose(small_pair(), 4)
        .compose(mechanisms.TruncatedGaussianMechanism(2.0, 10.0, 1.0), 2)
    )
    return save_accountant(accountant, tmp_path / "model.json").description


def edited(path: Path, **changes) -> Path:
    description = json.loads(path.read_text())
    description.update(changes)
    path.write_text(json.dumps(description))
    return path


def refused(path, match: str) -> str:
    with pytest.raises(InvalidInputError, match=match) as caught:
        load_accountant(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_missing_file(tmp_path):
    message = refused(tmp_path / "absent.json", "does not exist")
    assert "absent.json" in message


def test_a_file_that_is_not_json(tmp_path):
    (tmp_path / "notes.json").write_text("accounted: yes\n")
    assert "notes.json" in refused(tmp_path / "notes.json", "is not JSON")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    refused(tmp_path / "binary.json", "binary.json.* is not JSON")


@pytest.mark.parametrize("content", [{"format": "something else"}, {"kind": "ExtendedMA"}, [1, 2]])
def test_json_that_is_not_a_saved_accountant(tmp_path, content):
    (tmp_path / "other.json").write_text(json.dumps(content))
    refused(tmp_path / "other.json", r"other.json.* is not a saved accountant")


def test_a_newer_format_version(saved):
    refused(edited(saved, format_version=3), "model.json.* format version 3, newer than")


@pytest.mark.parametrize("version", [0, "1", None, True, 2.0, [2]])
def test_an_unknown_format_version(saved, version):
    refused(edited(saved, format_version=version), "model.json.* unknown format version")


def test_a_missing_sidecar(saved):
    saved.with_suffix(".npz").unlink()
    refused(saved, r"model.json.*sidecar .*model.npz.* is missing")


def test_a_changed_sidecar(saved, tmp_path):
    other = save_accountant(ExtendedMA().compose(small_pair(3.0), 4), tmp_path / "other.json")
    os.replace(other.sidecar, saved.with_suffix(".npz"))
    refused(saved, r"model.json.*sidecar .*model.npz.* is corrupt: its sha256 is [0-9a-f]{64}")


def test_a_sidecar_cut_short(saved):
    sidecar = saved.with_suffix(".npz")
    sidecar.write_bytes(sidecar.read_bytes()[:-10])
    refused(saved, "is corrupt")


def test_an_unknown_mechanism_type(saved):
    description = json.loads(saved.read_text())
    description["components"][1]["type"] = "RenyiGaussian"
    saved.write_text(json.dumps(description))
    refused(saved, "model.json.* unknown mechanism type 'RenyiGaussian'")


def test_an_unknown_accountant_kind(saved):
    refused(edited(saved, kind="RenyiAccountant"), "model.json.* unknown accountant kind")


def test_parameters_the_mechanism_refuses(saved):
    description = json.loads(saved.read_text())
    description["components"][1]["parameters"]["sigma"] = -1.0
    saved.write_text(json.dumps(description))
    refused(saved, r"model.json.* component 1 \(TruncatedGaussianMechanism\): sigma must be > 0")
    description["components"][1]["parameters"] = {"width": 3.0}
    saved.write_text(json.dumps(description))
    refused(saved, r"component 1 \(TruncatedGaussianMechanism\): parameters do not fit")


def test_a_missing_field(saved):
    description = json.loads(saved.read_text())
    del description["components"]
    saved.write_text(json.dumps(description))
    refused(saved, "model.json.* changed after saving: field 'components' is missing")


def test_a_sidecar_outside_the_directory_is_not_followed(saved):
    description = json.loads(saved.read_text())
    description["sidecar"]["file"] = "../elsewhere.npz"
    saved.write_text(json.dumps(description))
    refused(saved, "field 'sidecar' is malformed")


@attrs.frozen
class _OwnGaussian(mechanisms.TruncatedGaussianMechanism):
    """A subclass: composable, but its type is not registered."""


def test_saving_a_mechanism_of_an_unregistered_type(tmp_path):
    accountant = PrivacyBuckets().compose(_OwnGaussian(2.0, 10.0, 1.0), 2)
    with pytest.raises(InvalidInputError, match=r"cannot save a mechanism of type .*_OwnGaussian"):
        save_accountant(accountant, tmp_path / "own.json")
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


@pytest.mark.parametrize("path", [3, None, b"bytes.json", ["a.json"]])
def test_a_path_that_is_not_a_path(path, tmp_path):
    with pytest.raises(InvalidInputError, match=r"path must be a str or os\.PathLike, got"):
        save_accountant(ExtendedMA(), path)
    with pytest.raises(InvalidInputError, match=r"path must be a str or os\.PathLike, got"):
        load_accountant(path)


@pytest.mark.parametrize("accountant", ["ExtendedMA", ExtendedMA, small_pair(), None])
def test_an_accountant_that_is_not_an_accountant(accountant, tmp_path):
    with pytest.raises(
        InvalidInputError,
        match="accountant must be one of DPSGDAccountant, ExtendedMA, PrivacyBuckets, got",
    ):
        save_accountant(accountant, tmp_path / "a.json")


def test_a_directory_that_does_not_exist(tmp_path):
    with pytest.raises(InvalidInputError, match=r"directory .*missing.* does not exist"):
        save_accountant(ExtendedMA(), tmp_path / "missing" / "a.json")


def test_overwriting_replaces_both_files(tmp_path):
    path = tmp_path / "checkpoint.json"
    save_accountant(ExtendedMA().compose(small_pair(), 1), path)
    save_accountant(ExtendedMA().compose(small_pair(3.0), 7), path)
    assert load_accountant(path).releases == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json", "checkpoint.npz"]


def test_a_crash_while_writing_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.json"
    save_accountant(ExtendedMA().compose(small_pair(), 1), path)
    before = path.read_bytes()

    def crash(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        save_accountant(ExtendedMA().compose(small_pair(3.0), 7), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json", "checkpoint.npz"]
    monkeypatch.undo()
    assert load_accountant(path).releases == 1


def test_a_name_without_json_suffix_gets_an_appended_sidecar(tmp_path):
    saved = save_accountant(ExtendedMA(), str(tmp_path / "checkpoint"))
    assert saved.sidecar.name == "checkpoint.npz"
    assert load_accountant(tmp_path / "checkpoint").history == "nothing"
