"""Save any accountant to a file and load it again: :func:`save_accountant`,
:func:`load_accountant`.

A saved accountant is two files. The description (JSON, readable and diffable)::

    {"format": "truncated-noise-accountant/saved-accountant", "format_version": 1,
     "library_version": "0.1.0", "kind": "PrivacyBuckets",
     "settings": {"accuracy": 0.0001, ...}, "history": "128 x ...", "releases": 128,
     "components": [{"type": "WorstCasePair", "parameters": {...}, "times": 128}, ...],
     "sidecar": {"file": "model.npz", "sha256": "..."}}

and its ``.npz`` sidecar next to it, holding every array bit-exactly
(:mod:`accountant.storage.sidecar`); parameters refer to its arrays as
``{"array": "array_0"}`` (:mod:`accountant.storage.values`). Loading rebuilds the
accountant by composing each mechanism again, in order, with its count, so the loaded
accountant answers every query bit-identically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from accountant.buckets.engine import PrivacyBuckets
from accountant.composition import STATE_VERSION
from accountant.dpsgd.accountant import DPSGDAccountant
from accountant.errors import InvalidInputError
from accountant.moments.extended_ma import ExtendedMA
from accountant.storage import mechanism_types  # noqa: F401  (registers the types)
from accountant.storage.files import check_path, sidecar_path, write_atomically
from accountant.storage.registry import type_named, type_of
from accountant.storage.sidecar import read_sidecar, sha256_of, sidecar_bytes
from accountant.storage.values import ArrayStore, decode_value, encode_value
from accountant.validation import shown

__all__ = [
    "ACCOUNTANT_KINDS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "SavedAccountant",
    "load_accountant",
    "save_accountant",
]

#: The ``"format"`` field of every saved accountant: a JSON file without it is not ours.
FORMAT_NAME = "truncated-noise-accountant/saved-accountant"
#: The version of the file layout written; raised whenever a field changes meaning.
FORMAT_VERSION = 1
#: The accountant classes that can be saved, by the ``"kind"`` written.
ACCOUNTANT_KINDS: dict[str, type] = {
    "DPSGDAccountant": DPSGDAccountant,
    "ExtendedMA": ExtendedMA,
    "PrivacyBuckets": PrivacyBuckets,
}


@attrs.frozen
class SavedAccountant:
    """Where :func:`save_accountant` wrote: the JSON ``description``, the ``.npz``
    ``sidecar`` and the sidecar's ``sha256`` recorded in the description."""

    description: Path
    sidecar: Path
    sha256: str


def _kind_of(accountant: Any) -> str:
    kind = type(accountant).__name__
    if ACCOUNTANT_KINDS.get(kind) is not type(accountant):
        raise InvalidInputError(
            f"accountant must be one of {', '.join(ACCOUNTANT_KINDS)}, got {shown(accountant)}"
        )
    return kind


def save_accountant(accountant: Any, path: Any) -> SavedAccountant:
    """Save ``accountant`` (a :class:`~accountant.PrivacyBuckets`, a
    :class:`~accountant.DPSGDAccountant` or an
    :class:`~accountant.ExtendedMA`, composed or not) to the JSON file ``path`` and its
    array sidecar (``model.json`` -> ``model.npz``).

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
    arrays = sidecar_bytes(store.arrays)
    sidecar = sidecar_path(path)
    description = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": _library_version(),
        "kind": kind,
        "settings": encode_value("settings", state["settings"], store),
        "history": accountant.history,
        "releases": accountant.releases,
        "components": components,
        "sidecar": {"file": sidecar.name, "sha256": sha256_of(arrays)},
    }
    text = json.dumps(description, indent=2, allow_nan=False) + "\n"
    write_atomically(sidecar, arrays)
    write_atomically(path, text.encode("utf-8"))
    return SavedAccountant(path, sidecar, description["sidecar"]["sha256"])


def _library_version() -> str:
    import accountant  # the package's public __version__; imported late (no cycle)

    return accountant.__version__


def _read_description(path: Path) -> dict[str, Any]:
    """The checked JSON description at ``path``: ours, in a version this library reads."""
    where = repr(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"cannot load accountant: {where} does not exist") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{where} is not JSON (not UTF-8 text)") from None
    except OSError as exc:
        raise InvalidInputError(f"cannot load accountant: {where} cannot be read ({exc})") from None
    try:
        description = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where} is not JSON ({exc})") from None
    found = description.get("format") if isinstance(description, dict) else None
    if found != FORMAT_NAME:
        raise InvalidInputError(
            f"{where} is not a saved accountant: its format is {shown(found)}, "
            f"expected {FORMAT_NAME!r}"
        )
    version = description.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise InvalidInputError(
            f"{where} has format version {version}, newer than this library "
            f"({_library_version()}) reads ({FORMAT_VERSION}); upgrade truncated-noise-accountant"
        )
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise InvalidInputError(
            f"{where} has unknown format version {shown(version)} (this library reads "
            f"{FORMAT_VERSION})"
        )
    return description


def _field(description: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = description.get(name)
    if not isinstance(value, kind):
        raise InvalidInputError(f"field {name!r} is missing or malformed, got {shown(value)}")
    return value


def load_accountant(path: Any) -> Any:
    """The accountant saved at ``path`` by :func:`save_accountant`, rebuilt by composing
    every mechanism again with its count: it answers every query bit-identically and has
    the same history.

    Refuses, with one line naming ``path`` and what is wrong: a missing file, a file that
    is not JSON, JSON that is not a saved accountant, a format version this library does
    not read, a missing or corrupt (sha256 mismatch) sidecar, an unknown accountant kind
    or mechanism type, and parameters the mechanism refuses."""
    path = check_path("path", path)
    description = _read_description(path)
    try:
        kind = _field(description, "kind", str)
        if kind not in ACCOUNTANT_KINDS:
            raise InvalidInputError(
                f"unknown accountant kind {kind!r} (known: {', '.join(ACCOUNTANT_KINDS)})"
            )
        sidecar = _field(description, "sidecar", dict)
        name, sha256 = sidecar.get("file"), sidecar.get("sha256")
        if not isinstance(name, str) or Path(name).name != name or not isinstance(sha256, str):
            raise InvalidInputError(f"field 'sidecar' is malformed, got {shown(sidecar)}")
        store = ArrayStore(read_sidecar(path.with_name(name), path, sha256))
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
    except InvalidInputError as exc:
        if str(exc).startswith(repr(str(path))):
            raise
        raise InvalidInputError(f"{str(path)!r}: {exc}") from None


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
