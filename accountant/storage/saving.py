"""Save any accountant to a file and load it again: :func:`save_accountant`,
:func:`load_accountant`.

A saved accountant is two files. The description (JSON, readable and diffable)::

    {"format": "truncated-noise-accountant/saved-accountant", "format_version": 2,
     "library_version": "0.1.0", "kind": "PrivacyBuckets",
     "settings": {"accuracy": 0.0001, ...},
     "accountant": "PrivacyBuckets(accuracy=0.0001, ...)",
     "history": "128 x ...", "releases": 128,
     "components": [{"type": "WorstCasePair", "parameters": {...}, "times": 128}, ...],
     "sidecar": {"file": "model.npz", "sha256": "..."}, "digest": "..."}

and its ``.npz`` sidecar next to it, holding every array bit-exactly
(:mod:`accountant.storage.sidecar`); parameters refer to its arrays as
``{"array": "array_0"}`` (:mod:`accountant.storage.values`). Loading rebuilds the
accountant by composing each mechanism again, in order, with its count, so the loaded
accountant answers every query bit-identically.

The file is tamper-evident (issue 25): ``digest`` is the sha256 of the canonical JSON of
every other field and of the sidecar's bytes (:mod:`accountant.storage.digest`), and
``accountant`` (the kind and settings), ``history`` and ``releases`` repeat what the
settings and components rebuild. Loading refuses a file whose digest or repeated fields
do not match, naming the field, the saved and the rebuilt value. A file of format
version 1 has neither ``digest`` nor ``accountant``: it loads with an
:class:`UncheckedAccountantWarning` after its ``history`` and ``releases`` are checked.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import attrs

from accountant.buckets.engine import PrivacyBuckets
from accountant.composition import STATE_VERSION, ComposedReleases
from accountant.dpsgd.accountant import DPSGDAccountant
from accountant.errors import InvalidInputError
from accountant.moments.extended_ma import ExtendedMA
from accountant.storage import mechanism_types  # noqa: F401  (registers the types)
from accountant.storage.digest import CHANGED_REMEDY, DIGEST_FIELD, digest_of
from accountant.storage.files import check_path, sidecar_path, write_atomically
from accountant.storage.registry import type_named, type_of
from accountant.storage.sidecar import read_sidecar, sha256_of, sidecar_arrays, sidecar_bytes
from accountant.storage.values import ArrayStore, decode_value, encode_value
from accountant.validation import shown

__all__ = [
    "ACCOUNTANT_KINDS",
    "FIELDS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "SavedAccountant",
    "UncheckedAccountantWarning",
    "load_accountant",
    "save_accountant",
]

#: The ``"format"`` field of every saved accountant: a JSON file without it is not ours.
FORMAT_NAME = "truncated-noise-accountant/saved-accountant"
#: The version of the file layout written; raised whenever a field changes meaning.
#: Version 2 (issue 25) added ``accountant`` and ``digest``; version 1 files still load.
FORMAT_VERSION = 2
_VERSION_1_FIELDS = (
    "format",
    "format_version",
    "library_version",
    "kind",
    "settings",
    "history",
    "releases",
    "components",
    "sidecar",
)
#: The fields of a description, exactly, by the format versions this library reads.
FIELDS: dict[int, tuple[str, ...]] = {
    1: _VERSION_1_FIELDS,
    2: (*_VERSION_1_FIELDS, "accountant", DIGEST_FIELD),
}
#: The accountant classes that can be saved, by the ``"kind"`` written.
ACCOUNTANT_KINDS: dict[str, type[ComposedReleases]] = {
    "DPSGDAccountant": DPSGDAccountant,
    "ExtendedMA": ExtendedMA,
    "PrivacyBuckets": PrivacyBuckets,
}


class UncheckedAccountantWarning(UserWarning):
    """A saved accountant was loaded from a file of format version 1, which records no
    digest: edits made to it after saving cannot be detected (only its ``history`` and
    ``releases`` were checked). Re-saving it writes the current version."""


@attrs.frozen
class SavedAccountant:
    """Where :func:`save_accountant` wrote: the JSON ``description``, the ``.npz``
    ``sidecar``, the sidecar's ``sha256`` and the ``digest`` of both (what the
    description records; keep it elsewhere, e.g. in a training log, to recognise the
    files later)."""

    description: Path
    sidecar: Path
    sha256: str
    digest: str


def _kind_of(accountant: Any) -> str:
    kind = type(accountant).__name__
    if ACCOUNTANT_KINDS.get(kind) is not type(accountant):
        raise InvalidInputError(
            f"accountant must be one of {', '.join(ACCOUNTANT_KINDS)}, got {shown(accountant)}"
        )
    return kind


def _setting_text(value: Any) -> str:
    """A setting as its JSON value (:func:`~accountant.storage.values.encode_value`) reads
    in Python: ``0.0001``, ``8388608``, ``'tight'``, ``inf``."""
    if isinstance(value, dict) and set(value) == {"float"}:
        return str(value["float"])
    return repr(value)


def _accountant_text(accountant: Any) -> str:
    """The ``"accountant"`` field: the kind and its settings as a constructor call, e.g.
    ``"DPSGDAccountant(dimension=5, accuracy=0.0001)"``."""
    settings = encode_value("settings", accountant.state_dict()["settings"], ArrayStore())
    listed = ", ".join(f"{name}={_setting_text(value)}" for name, value in settings.items())
    return f"{type(accountant).__name__}({listed})"


def save_accountant(accountant: Any, path: Any) -> SavedAccountant:
    """Save ``accountant`` (a :class:`~accountant.PrivacyBuckets`, a
    :class:`~accountant.DPSGDAccountant` or an
    :class:`~accountant.ExtendedMA`, composed or not) to the JSON file ``path`` and its
    array sidecar (``model.json`` -> ``model.npz``), with the digest of both.

    An existing file is replaced, atomically: each file is written in full to a temporary
    file and then moved into place. Refuses, before writing anything, an accountant of
    another type and a mechanism of an unregistered type (naming the type)."""
    kind = _kind_of(accountant)
    path = check_path("path", path)
    state = accountant.state_dict()
    store = ArrayStore()
    components = []
    for index, component in enumerate(state["components"]):
        mechanism_type = type_of(component["mechanism"])
        parameters = mechanism_type.to_parameters(component["mechanism"])
        components.append(
            {
                "type": mechanism_type.name,
                "parameters": encode_value(f"component {index}", parameters, store),
                "times": component["times"],
            }
        )
    settings = encode_value("settings", state["settings"], store)
    arrays = sidecar_bytes(store.arrays)
    sidecar = sidecar_path(path)
    description = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": _library_version(),
        "kind": kind,
        "settings": settings,
        "accountant": _accountant_text(accountant),
        "history": accountant.history,
        "releases": accountant.releases,
        "components": components,
        "sidecar": {"file": sidecar.name, "sha256": sha256_of(arrays)},
    }
    description[DIGEST_FIELD] = digest_of(description, arrays)
    text = json.dumps(description, indent=2, allow_nan=False) + "\n"
    write_atomically(sidecar, arrays)
    write_atomically(path, text.encode("utf-8"))
    return SavedAccountant(path, sidecar, description["sidecar"]["sha256"], description["digest"])


def _library_version() -> str:
    import accountant  # the package's public __version__; imported late (no cycle)

    return accountant.__version__


def _changed(detail: str) -> InvalidInputError:
    """The refusal of a description changed after saving, saying what changed."""
    return InvalidInputError(
        f"the description was changed after saving: {detail}; {CHANGED_REMEDY}"
    )


class _StrictJSON:
    """Parse hooks for :func:`json.loads` that note, rather than accept silently, what
    :func:`save_accountant` never writes: a key twice in one object (a reader would see
    one value, the loader the other), a number too large for a float64 (it would read as
    inf) and the constants ``NaN``, ``Infinity``, ``-Infinity`` (not JSON). The notes are
    refused once the file is known to be a saved accountant."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def object_pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in pairs:
            if key in found:
                self.problems.append(f"field {key!r} appears twice in one object")
            found[key] = value
        return found

    def number(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            self.problems.append(f"the number {text} is too large for a float64")
        return value

    def constant(self, name: str) -> float:
        self.problems.append(f"it holds {name}, which is not JSON (saved as a tagged float)")
        return math.nan


def _read_description(path: Path) -> dict[str, Any]:
    """The checked JSON description at ``path``: ours, in a version this library reads,
    with no key written twice and no non-finite number."""
    where = repr(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"cannot load accountant: {where} does not exist") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{where} is not JSON (not UTF-8 text)") from None
    except OSError as exc:
        raise InvalidInputError(f"cannot load accountant: {where} cannot be read ({exc})") from None
    strict = _StrictJSON()
    try:
        description = json.loads(
            text,
            object_pairs_hook=strict.object_pairs,
            parse_float=strict.number,
            parse_constant=strict.constant,
        )
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where} is not JSON ({exc})") from None
    found = description.get("format") if isinstance(description, dict) else None
    if found != FORMAT_NAME:
        raise InvalidInputError(
            f"{where} is not a saved accountant: its format is {shown(found)}, "
            f"expected {FORMAT_NAME!r}"
        )
    version = description.get("format_version")
    if type(version) is int and version > FORMAT_VERSION:
        raise InvalidInputError(
            f"{where} has format version {version}, newer than this library "
            f"({_library_version()}) reads ({FORMAT_VERSION}); upgrade truncated-noise-accountant"
        )
    if type(version) is not int or version not in FIELDS:
        raise InvalidInputError(
            f"{where} has unknown format version {shown(version)} (this library reads "
            f"{', '.join(map(str, FIELDS))})"
        )
    if strict.problems:
        raise InvalidInputError(f"{where}: {_changed(strict.problems[0])}")
    return description


def _check_fields(description: dict[str, Any], version: int) -> None:
    """Refuse a description without exactly the fields of its format ``version``."""
    expected = FIELDS[version]
    for name in expected:
        if name not in description:
            raise _changed(f"field {name!r} is missing")
    for name in description:
        if name not in expected:
            raise _changed(
                f"unknown field {name!r} (format version {version} has exactly the fields "
                f"{', '.join(expected)})"
            )


def _field(description: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = description.get(name)
    if not isinstance(value, kind):
        raise InvalidInputError(f"field {name!r} is missing or malformed, got {shown(value)}")
    return value


def _mismatch(description: dict[str, Any], accountant: Any) -> tuple[str, Any, Any] | None:
    """The first field the description repeats that differs from what the rebuilt
    ``accountant`` has: ``(field, saved, rebuilt)``, or ``None``. Checked: ``releases``,
    ``history`` and, from format version 2, ``accountant`` (the kind and settings)."""
    rebuilt = {"releases": accountant.releases, "history": accountant.history}
    if "accountant" in description:
        rebuilt["accountant"] = _accountant_text(accountant)
    for name, value in rebuilt.items():
        saved = description[name]
        if type(saved) is not type(value) or saved != value:
            return name, saved, value
    return None


def load_accountant(path: Any) -> Any:
    """The accountant saved at ``path`` by :func:`save_accountant`, rebuilt by composing
    every mechanism again with its count: it answers every query bit-identically and has
    the same history.

    Refuses, with one line naming ``path`` and what is wrong: a missing file, a file that
    is not JSON, JSON that is not a saved accountant, a format version this library does
    not read, a missing or changed (sha256 mismatch) sidecar, an unknown accountant kind
    or mechanism type, parameters the mechanism refuses, and any edit after saving: a
    missing or unknown field, a field written twice, a field the description repeats
    (``releases``, ``history``, ``accountant``) that differs from what the file rebuilds
    (naming the field, the saved and the rebuilt value), and a digest that does not match
    the description and sidecar. A file of format version 1 (no digest) loads with an
    :class:`UncheckedAccountantWarning` saying how to re-save it."""
    path = check_path("path", path)
    description = _read_description(path)
    version = description["format_version"]
    try:
        accountant = _checked_accountant(path, description, version)
    except InvalidInputError as exc:
        if str(exc).startswith(repr(str(path))):
            raise
        raise InvalidInputError(f"{str(path)!r}: {exc}") from None
    if version == 1:
        warnings.warn(
            f"{str(path)!r} has format version 1, which records no digest, so it cannot be "
            "checked for edits made after saving (only its history and releases were "
            f"checked); if it is as saved, re-save it in format version {FORMAT_VERSION} "
            f"with save_accountant(load_accountant({str(path)!r}), {str(path)!r})",
            UncheckedAccountantWarning,
            stacklevel=2,
        )
    return accountant


def _checked_accountant(path: Path, description: dict[str, Any], version: int) -> Any:
    """The accountant ``description`` (of format ``version``) rebuilds, after every check
    of :func:`load_accountant`."""
    _check_fields(description, version)
    sidecar = _field(description, "sidecar", dict)
    name, sha256 = sidecar.get("file"), sidecar.get("sha256")
    if (
        set(sidecar) != {"file", "sha256"}
        or not isinstance(name, str)
        or Path(name).name != name
        or not isinstance(sha256, str)
    ):
        raise InvalidInputError(f"field 'sidecar' is malformed, got {shown(sidecar)}")
    sidecar_file = path.with_name(name)
    content = read_sidecar(sidecar_file, path, sha256)
    recorded = description.get(DIGEST_FIELD)
    digest = None if version == 1 else digest_of(description, content)
    try:
        accountant = _rebuild(description, sidecar_arrays(content, sidecar_file, path))
    except InvalidInputError as exc:
        if digest == recorded:
            raise
        raise _changed(str(exc)) from None
    mismatch = _mismatch(description, accountant)
    if mismatch is not None:
        field, saved, rebuilt = mismatch
        what = " (the kind and settings)" if field == "accountant" else ""
        detail = (
            f"field {field!r}{what} records {saved!r}, the accountant rebuilt from it has "
            f"{rebuilt!r}"
        )
        if digest != recorded:
            raise _changed(detail)
        raise InvalidInputError(
            f"{detail}, although the digest matches: the file was edited and its digest "
            "recomputed, or written by a library that describes accountants differently "
            f"(library_version {description['library_version']!r}); {CHANGED_REMEDY}"
        )
    if digest != recorded:
        raise InvalidInputError(
            "the description or its sidecar was changed after saving (the digest recomputed "
            f"from both is {digest}, the description records {shown(recorded)}); "
            f"{CHANGED_REMEDY}"
        )
    return accountant


def _rebuild(description: dict[str, Any], arrays: dict[str, Any]) -> Any:
    """The accountant of ``description`` with the sidecar's ``arrays``: built from its
    settings, then every component composed again in order."""
    kind = _field(description, "kind", str)
    if kind not in ACCOUNTANT_KINDS:
        raise InvalidInputError(
            f"unknown accountant kind {kind!r} (known: {', '.join(ACCOUNTANT_KINDS)})"
        )
    store = ArrayStore(arrays)
    state = {
        "kind": kind,
        "version": STATE_VERSION,
        "settings": decode_value("settings", _field(description, "settings", dict), store),
        "components": [
            _component(index, entry, store)
            for index, entry in enumerate(_field(description, "components", list))
        ],
    }
    return ACCOUNTANT_KINDS[kind].from_state_dict(state)


def _component(index: int, entry: Any, store: ArrayStore) -> dict[str, Any]:
    """``{"mechanism", "times"}`` of the saved component ``entry``."""
    if not isinstance(entry, dict) or set(entry) != {"type", "parameters", "times"}:
        raise InvalidInputError(
            f"component {index} must have exactly the fields type, parameters and times, "
            f"got {shown(entry)}"
        )
    mechanism_type = type_named(entry["type"])
    parameters = decode_value(f"component {index}", entry["parameters"], store)
    if not isinstance(parameters, dict):
        raise InvalidInputError(f"component {index}: parameters must be an object")
    try:
        mechanism = mechanism_type.from_parameters(parameters)
    except (TypeError, KeyError) as exc:
        raise InvalidInputError(
            f"component {index} ({mechanism_type.name}): parameters do not fit ({exc})"
        ) from None
    except InvalidInputError as exc:
        raise InvalidInputError(f"component {index} ({mechanism_type.name}): {exc}") from None
    return {"mechanism": mechanism, "times": entry["times"]}
