"""Scalars and arrays inside a saved accountant's JSON description.

JSON numbers carry every finite float exactly (Python writes the shortest text that reads
back to the same float64). What JSON cannot hold is tagged: a non-finite float is
``{"float": "inf"}`` (or ``"-inf"``, ``"nan"``), and an array is ``{"array": key}``, a
reference to an entry of the ``.npz`` sidecar (:mod:`accountant.storage.sidecar`), so that
arrays never pass through text.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from accountant.errors import InvalidInputError
from accountant.validation import shown

__all__ = ["ArrayStore", "decode_value", "encode_value"]

_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class ArrayStore:
    """The arrays of one saved accountant, by key (``"array_0"``, ``"array_1"``, ...)."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None) -> None:
        self.arrays: dict[str, np.ndarray] = dict(arrays or {})

    def put(self, array: np.ndarray) -> dict[str, str]:
        """Keep ``array`` as it is stored (no copy, no conversion); returns its reference."""
        key = f"array_{len(self.arrays)}"
        self.arrays[key] = np.asarray(array)
        return {"array": key}

    def get(self, reference: dict[str, Any]) -> np.ndarray:
        """The array a reference from :meth:`put` names; refuses an unknown key."""
        key = reference["array"]
        if not isinstance(key, str) or key not in self.arrays:
            raise InvalidInputError(
                f"the description refers to array {shown(key)}, which the sidecar does not hold"
            )
        return self.arrays[key]


def encode_value(name: str, value: Any, store: ArrayStore) -> Any:
    """``value`` as JSON: ``None``, bools, ints, strings and finite floats as they are,
    non-finite floats tagged, arrays put into ``store``, lists/tuples and dicts of
    these recursively. Anything else is refused, naming ``name``."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number):
            return number
        return {"float": "nan" if math.isnan(number) else ("inf" if number > 0 else "-inf")}
    if isinstance(value, np.ndarray):
        return store.put(value)
    if isinstance(value, list | tuple):
        return [encode_value(f"{name}[{i}]", v, store) for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        if set(value) in ({"float"}, {"array"}):
            raise InvalidInputError(f"{name} must not be a dict with the reserved key {value!r}")
        return {k: encode_value(f"{name}.{k}", v, store) for k, v in value.items()}
    raise InvalidInputError(
        f"{name} cannot be saved: {type(value).__name__} values are not supported, "
        f"got {shown(value)}"
    )


def decode_value(name: str, value: Any, store: ArrayStore) -> Any:
    """The inverse of :func:`encode_value` (lists come back as lists)."""
    if isinstance(value, list):
        return [decode_value(f"{name}[{i}]", v, store) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if set(value) == {"array"}:
        return store.get(value)
    if set(value) == {"float"}:
        if value["float"] not in _NON_FINITE:
            raise InvalidInputError(
                f"{name} must be a float tagged 'inf', '-inf' or 'nan', got {shown(value)}"
            )
        return _NON_FINITE[value["float"]]
    return {k: decode_value(f"{name}.{k}", v, store) for k, v in value.items()}
