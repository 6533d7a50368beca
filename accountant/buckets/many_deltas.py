"""``PrivacyBuckets.epsilon`` for a vector of target deltas.

Every target is answered from the same composed distributions (compositions are cached
per bucket width, so the second and later targets compose nothing new); the result holds
arrays, and the accuracy warnings of the single queries become one warning that says at
how many targets, and how far, the accuracy was missed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import attrs
import numpy as np

from accountant.errors import CertificationWarning, InvalidInputError
from accountant.results import EpsilonBounds
from accountant.validation import check_target_delta

__all__ = ["epsilon_for_many"]


def _targets(deltas: object) -> np.ndarray:
    try:
        values = np.asarray(deltas, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"delta must be a number or an array of numbers, got {deltas!r}"
        ) from exc
    if values.size == 0:
        raise InvalidInputError("delta must not be empty")
    for value in values.reshape(-1):
        check_target_delta("delta", float(value))
    return values


def epsilon_for_many(
    deltas: object, single: Callable[[float], EpsilonBounds], accuracy: float
) -> EpsilonBounds:
    """``single(delta)`` for every entry of ``deltas`` (any shape), gathered into one
    :class:`EpsilonBounds` of arrays of that shape."""
    targets = _targets(deltas)
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CertificationWarning)
        for target in targets.reshape(-1):
            results.append(single(float(target)))
    missed = [w for w in caught if issubclass(w.category, CertificationWarning)]
    for other in (w for w in caught if not issubclass(w.category, CertificationWarning)):
        warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    lower = np.array([r.lower for r in results]).reshape(targets.shape)
    upper = np.array([r.upper for r in results]).reshape(targets.shape)
    if missed:
        relative = np.where(upper > 0.0, (upper - lower) / np.where(upper > 0, upper, 1.0), 0.0)
        warnings.warn(
            f"PrivacyBuckets reached a relative eps bracket of up to {float(relative.max()):.3g}, "
            f"not the requested accuracy {accuracy:g}, at {len(missed)} of {targets.size} "
            f"deltas (bounds still certified); first: {missed[0].message}",
            CertificationWarning,
            stacklevel=3,
        )
    first = results[0]
    return attrs.evolve(
        first,
        lower=lower,
        upper=upper,
        delta=targets,
        bucket_width=max(r.bucket_width for r in results),
    )
