"""Exception and warning types of the accountant.

Every error caused by what the caller passed in subclasses :class:`ValueError`,
so ``except ValueError`` keeps working for code that does not know this
library. Messages always name the offending argument and its value.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "AccountantError",
    "CertificationWarning",
    "InfeasibleTargetError",
    "InvalidInputError",
    "ShiftInvarianceWarning",
    "warnings_said_of",
]


class AccountantError(Exception):
    """Base class of every exception raised on purpose by this library."""


class InvalidInputError(AccountantError, ValueError):
    """An argument is malformed: NaN, infinite, negative mass, wrong length, ..."""


class InfeasibleTargetError(AccountantError, ValueError):
    """A requested target (e.g. a delta for which an epsilon is sought) cannot be met.

    Typical cause: the target delta is at or below the probability of the
    distinguishing events, which no epsilon can hide.
    """


class CertificationWarning(UserWarning):
    """A result holds, but not with the accuracy that was asked for."""


class ShiftInvarianceWarning(UserWarning):
    """The noise is not symmetric and monotone, so the full-sensitivity shift alone
    does not bound smaller shifts (paper, Theorem "Shift Invariance")."""


@contextmanager
def warnings_said_of(subject: str, stacklevel: int = 4) -> Iterator[None]:
    """Re-issue every warning raised inside the block prefixed with ``subject``, the figure
    it is about (e.g. a Poisson figure computed beside a sampler's bound), so that a
    caveat of a side figure is not read as one of the main result. Same categories; the
    block's own result is unchanged."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for caveat in caught:
        warnings.warn(f"{subject}: {caveat.message}", caveat.category, stacklevel=stacklevel)
