"""Exception and warning types of the accountant.

Every error caused by what the caller passed in subclasses :class:`ValueError`,
so ``except ValueError`` keeps working for code that does not know this
library. Messages always name the offending argument and its value.
"""

from __future__ import annotations

__all__ = [
    "AccountantError",
    "CertificationWarning",
    "InfeasibleTargetError",
    "InvalidInputError",
    "ShiftInvarianceWarning",
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
