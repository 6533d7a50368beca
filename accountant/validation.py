"""Argument validation shared by every module (and by ``optimizers``).

Each helper returns the validated (and converted) value or raises
:class:`~accountant.errors.InvalidInputError` with a message that names the
argument and shows the offending value.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from accountant.errors import InvalidInputError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DIRECTIONS",
    "MASS_TOLERANCE",
    "ONE_DIRECTION",
    "Direction",
    "Kind",
    "OneDirection",
    "check_choice",
    "check_direction",
    "check_epsilons",
    "check_finite_real",
    "check_lambda",
    "check_mass_tolerance",
    "check_nonnegative_real",
    "check_one_direction",
    "check_open_fraction",
    "check_pmf",
    "check_positive_int",
    "check_positive_real",
    "check_probability",
    "check_target_delta",
    "directions_of",
    "mass_tolerance_for",
    "shown",
]

#: Largest accepted deviation of a probability mass function's total from 1.
#: Masses are never renormalised silently: beyond this tolerance the input is refused.
MASS_TOLERANCE = 1e-9

#: A query's direction: both, the larger (``"max"``), or one of them.
Direction = Literal["max", "A/B", "B/A"]
#: One direction: losses ``ln A/B`` under ``A`` (``"A/B"``) or ``ln B/A`` under ``B``.
OneDirection = Literal["A/B", "B/A"]
#: The one spelling of the two kinds of delta: approximate DP and probabilistic DP.
Kind = Literal["ADP", "PDP"]

#: The type of the strings :func:`check_choice` chooses among (and so of its result).
Choice = TypeVar("Choice", bound=str)

#: Every direction a query takes: ``"max"`` (both, the larger) or one of :data:`ONE_DIRECTION`.
DIRECTIONS: tuple[Direction, ...] = ("max", "A/B", "B/A")
#: The two single directions: ``"A/B"`` (losses ``ln A/B`` under ``A``) and ``"B/A"``.
ONE_DIRECTION: tuple[OneDirection, OneDirection] = ("A/B", "B/A")


def shown(value: Any) -> str:
    """``repr(value)``, cut to 80 characters for an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_finite_real(name: str, value: Any) -> float:
    """A finite real number (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{name} must be a real number, got {shown(value)}")
    result = float(value)
    if not math.isfinite(result):
        raise InvalidInputError(f"{name} must be finite, got {result!r}")
    return result


def check_positive_real(name: str, value: Any) -> float:
    """A finite real number > 0."""
    result = check_finite_real(name, value)
    if result <= 0.0:
        raise InvalidInputError(f"{name} must be > 0, got {result!r}")
    return result


def check_nonnegative_real(name: str, value: Any) -> float:
    """A finite real number >= 0 (one epsilon, one order lambda)."""
    result = check_finite_real(name, value)
    if result < 0.0:
        raise InvalidInputError(f"{name} must be >= 0, got {result!r}")
    return result


def check_choice(name: str, value: Any, choices: tuple[Choice, ...]) -> Choice:
    """One of the strings ``choices`` (e.g. ``kind`` in ``("ADP", "PDP")``)."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidInputError(f"{name} must be one of {choices}, got {shown(value)}")
    return value


def check_positive_int(name: str, value: Any) -> int:
    """An integer >= 1 (numpy integers accepted; floats, bools and strings refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be a positive integer, got {shown(value)}")
    result = int(value)
    if result < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {result!r}")
    return result


def check_probability(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """A probability in (0, 1], or [0, 1] with ``allow_zero``."""
    result = check_finite_real(name, value)
    low_ok = result >= 0.0 if allow_zero else result > 0.0
    if not (low_ok and result <= 1.0):
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise InvalidInputError(f"{name} must lie in {interval}, got {result!r}")
    return result


def check_open_fraction(name: str, value: Any) -> float:
    """A real number in (0, 1): an accuracy, a tolerance."""
    result = check_positive_real(name, value)
    if result >= 1.0:
        raise InvalidInputError(f"{name} must lie in (0, 1), got {result!r}")
    return result


def check_target_delta(name: str, value: Any) -> float:
    """A target delta in (0, 1)."""
    result = check_finite_real(name, value)
    if not 0.0 < result < 1.0:
        raise InvalidInputError(f"{name} must lie in (0, 1), got {result!r}")
    return result


def check_epsilons(name: str, value: Any) -> np.ndarray:
    """One or many epsilons, each finite and >= 0; returned as a float64 array."""
    import numpy as np  # not at module level: the CLI parser loads this module

    if isinstance(value, bool | str | bytes):
        raise InvalidInputError(
            f"{name} must be a number or an array of numbers, got {shown(value)}"
        )
    try:
        kind = np.asarray(value).dtype.kind
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{name} must be a number or an array of numbers, got {shown(value)}"
        ) from exc
    if kind not in "fiu":  # numpy would coerce strings, bools and objects silently
        raise InvalidInputError(
            f"{name} must be a number or an array of numbers, got {shown(value)}"
        )
    if array.size == 0:
        raise InvalidInputError(f"{name} must not be empty")
    bad = ~np.isfinite(array) | (array < 0.0)
    if bad.any():
        first = array.reshape(-1)[np.flatnonzero(bad.reshape(-1))[0]]
        raise InvalidInputError(f"{name} must be finite and >= 0, got {float(first)!r}")
    return array


def check_direction(name: str, value: Any) -> Direction:
    """One of ``"max"`` (both directions, the larger), ``"A/B"`` or ``"B/A"``."""
    if value not in DIRECTIONS:
        raise InvalidInputError(f"{name} must be one of {DIRECTIONS}, got {shown(value)}")
    return cast(Direction, str(value))  # one of DIRECTIONS: checked above


def check_one_direction(name: str, value: Any) -> OneDirection:
    """``"A/B"`` or ``"B/A"`` (a single direction: ``"max"`` is refused)."""
    if value not in ONE_DIRECTION:
        raise InvalidInputError(f"{name} must be 'A/B' or 'B/A', got {shown(value)}")
    return cast(OneDirection, str(value))  # one of ONE_DIRECTION: checked above


def directions_of(direction: Direction) -> tuple[OneDirection, ...]:
    """The single directions a ``direction`` (``"A/B"``, ``"B/A"`` or ``"max"``) covers."""
    return ONE_DIRECTION if direction == "max" else (direction,)


def check_lambda(name: str, value: Any) -> float:
    """A finite order ``lambda >= 0`` of a moment."""
    return check_nonnegative_real(name, value)


def mass_tolerance_for(value: Any, tolerance: float = MASS_TOLERANCE) -> float:
    """The sum check's tolerance for an array ``value``: ``tolerance`` for float64 and
    integers; for a narrower float (float32, float16), whose entries carry a relative
    rounding of up to its unit roundoff ``u`` each and whose normalisation summed ``size``
    of them, at least ``(size + 1) u``: float32 input normalised in float32 is accepted."""
    import numpy as np  # not at module level: the CLI parser loads this module

    dtype = getattr(value, "dtype", None)  # lists of Python floats are float64
    if not isinstance(dtype, np.dtype) or dtype.kind != "f" or dtype.itemsize >= 8:
        return tolerance
    unit_roundoff = float(np.finfo(dtype).eps) / 2.0
    return max(tolerance, (np.size(value) + 1) * unit_roundoff)


def check_mass_tolerance(name: str, value: Any) -> float:
    """A tolerance for the sum of a pmf: finite, in ``[0, 1e-2]``."""
    result = check_finite_real(name, value)
    if not 0.0 <= result <= 1e-2:
        raise InvalidInputError(f"{name} must lie in [0, 0.01], got {result!r}")
    return result


def check_pmf(name: str, value: Any, *, tolerance: float = MASS_TOLERANCE) -> np.ndarray:
    """A probability mass function: a non-empty 1-D float array of finite, non-negative
    entries summing to 1 within ``tolerance`` (within ``(size + 1) u`` for float32 or
    float16 input of unit roundoff ``u``). Never renormalised: float32 entries are widened
    to float64 exactly, and those values are what is accounted.

    Returns a read-only float64 copy.
    """
    import numpy as np  # not at module level: the CLI parser loads this module

    if isinstance(value, str | bytes):
        raise InvalidInputError(f"{name} must be an array of probabilities, got {shown(value)}")
    try:
        array = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{name} must be an array of probabilities, got {shown(value)}"
        ) from exc
    if np.asarray(value).dtype.kind not in "fiu":
        raise InvalidInputError(
            f"{name} must have a numeric dtype, got dtype {np.asarray(value).dtype}"
        )
    if array.ndim != 1:
        raise InvalidInputError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise InvalidInputError(f"{name} must not be empty")
    if not np.isfinite(array).all():
        index = int(np.flatnonzero(~np.isfinite(array))[0])
        raise InvalidInputError(
            f"{name} must be finite, got {float(array[index])!r} at index {index}"
        )
    if (array < 0.0).any():
        index = int(np.flatnonzero(array < 0.0)[0])
        raise InvalidInputError(
            f"{name} must be non-negative, got {float(array[index])!r} at index {index}"
        )
    tolerance = mass_tolerance_for(value, tolerance)
    total = math.fsum(array.tolist())
    if abs(total - 1.0) > tolerance:
        raise InvalidInputError(
            f"{name} must sum to 1 (tolerance {tolerance:g}), got sum {total!r}; "
            "normalise it yourself if that is intended"
        )
    array.setflags(write=False)
    return array
