"""The constants of float64 (IEEE 754 binary64) that the rounding-error bounds are
written in; defined here once and imported everywhere else (numba kernels read them as
module globals, that is as compile-time constants)."""

from __future__ import annotations

__all__ = ["SMALLEST_NORMAL", "TINY", "UNIT_ROUNDOFF"]

#: The unit roundoff ``u``: a rounded operation on normal floats errs by at most ``u``
#: relatively (half the machine epsilon ``2^-52``).
UNIT_ROUNDOFF = 2.0**-53
#: The smallest positive normal float, ``2^-1022``; below it relative bounds fail.
SMALLEST_NORMAL = 2.0**-1022
#: A float just above :data:`SMALLEST_NORMAL`: any mass below the normal range, or never
#: computed because negligible, errs by at most this.
TINY = 2.3e-308
