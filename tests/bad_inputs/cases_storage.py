"""Bad-input cases for saving and loading accountants: bad arguments, and files edited
after saving (issue 25), each refused naming the field that changed and its value (the
refusals of a foreign, corrupt or newer file are tested with the files in
``tests/storage``)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from accountant import (
    DPSGDAccountant,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
    load_accountant,
    save_accountant,
)
from tests.bad_inputs.catalogue import PAIR, case, each

NOT_PATHS = [(5, "got 5"), (None, "got None"), (b"a.json", "got b'a.json'")]

STORAGE_CASES = [
    *each(
        "save_accountant",
        "accountant",
        lambda v: save_accountant(v, "unused.json"),
        [("x", "got 'x'"), (None, "got None"), (PrivacyBuckets, "got <class")],
    ),
    *each("save_accountant", "path", lambda v: save_accountant(PrivacyBuckets(), v), NOT_PATHS),
    case(
        "save_accountant",
        "path",
        "nodir' does not exist",
        lambda tmp: save_accountant(PrivacyBuckets(), tmp / "nodir" / "saved.json"),
    ),
    *each("load_accountant", "path", load_accountant, NOT_PATHS),
]


def _saved(directory: Path) -> Path:
    """The accountant of issue 25 (10 DP-SGD steps on 5 coordinates), saved."""
    step = SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.01, cut=3.0)
    accountant = DPSGDAccountant(dimension=5).compose(step, 10)
    return save_accountant(accountant, directory / "saved.json").description


def _tampered(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], Any]:
    """Save, apply ``change`` to the description, and load it."""

    def call(directory: Path) -> Any:
        path = _saved(directory)
        description = json.loads(path.read_text())
        change(description)
        path.write_text(json.dumps(description, indent=2))
        return load_accountant(path)

    return call


def _moved_masses(directory: Path) -> Any:
    """A pair's masses moved in the sidecar after saving."""
    path = save_accountant(PrivacyBuckets().compose(PAIR, 3), directory / "pair.json").description
    with np.load(path.with_suffix(".npz")) as archive:
        arrays = {key: archive[key] for key in archive.files}
    arrays["array_0"] = np.roll(arrays["array_0"], 1)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.with_suffix(".npz").write_bytes(buffer.getvalue())
    return load_accountant(path)


def _component(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["components"][0]["parameters"].update(changes)


# (the field the message names, how it shows the change, the edit)
EDITS = [
    (
        "releases",
        "records 10, the accountant rebuilt from it has 1",
        lambda d: d["components"][0].update(times=1),
    ),
    ("history", "no cut", _component(cut={"float": "inf"})),
    ("history", "sigma=5", _component(sigma=5.0)),
    (
        "accountant",
        "DPSGDAccountant(dimension=1, accuracy=0.0001)",
        lambda d: d["settings"].update(dimension=1),
    ),
    ("accountant", "accuracy=0.5", lambda d: d["settings"].update(accuracy=0.5)),
    ("releases", "records 11", lambda d: d.update(releases=11)),
    ("history", "records 'edited'", lambda d: d.update(history="edited")),
    ("history", "field 'history' is missing", lambda d: d.pop("history")),
    ("note", "unknown field 'note'", lambda d: d.update(note="audited")),
    ("digest", "records '" + "0" * 64 + "'", lambda d: d.update(digest="0" * 64)),
]

STORAGE_CASES += [
    *[
        case("load_accountant", field, shown, _tampered(edit), tag=f"edited {shown}")
        for field, shown, edit in EDITS
    ],
    case("load_accountant", "sidecar", "changed after saving", _moved_masses, tag="moved masses"),
]
