"""The precisions a quantised noise table may take (no array code: the command line's
options read them without loading numpy)."""

from __future__ import annotations

__all__ = ["DEFAULT_BITS", "MAX_BITS", "MIN_BITS"]

#: Default precision: probabilities are multiples of 2^-48 (about 3.6e-15).
DEFAULT_BITS = 48
#: Largest precision for which every ``w_i / 2^bits`` is a float64 exactly.
MAX_BITS = 53
#: Smallest precision accepted (a coarser table would mostly measure itself).
MIN_BITS = 8
