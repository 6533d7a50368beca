"""Exact draws from an integer table: outcome ``i`` with probability exactly
``w_i / 2^bits``.

A uniform integer ``u`` in ``[0, 2^bits)`` is the top ``bits`` bits of a uniform 64-bit
word (exact: ``2^64`` is a multiple of ``2^bits``); the outcome is the first ``i`` with
``u < c_i``, ``c`` the integer CDF (``numpy.searchsorted(c, u, side="right")``). There
are ``w_i`` such ``u`` for outcome ``i``, hence the law. No float takes part.

* :func:`secure_indices` takes its words from the operating system's cryptographic
  source (``os.urandom``, what :mod:`secrets` uses): for releases.
* :func:`simulated_indices` takes them from a seeded ``numpy.random.Generator``: the
  same law, reproducible and fast, **not for releases** (the state of a seeded
  generator can be recovered from its outputs).

Timing: the work is one read of ``8 * size`` random bytes and one vectorised binary
search of depth ``ceil(log2(len(c)))`` per draw; it depends on ``size`` and the table
length, and only through memory access patterns of the search on the values drawn.
It is not constant-time code; do not expose per-draw timings to an adversary.
"""

from __future__ import annotations

import os

import numpy as np

from accountant.errors import InvalidInputError
from accountant.validation import check_positive_int

__all__ = ["secure_indices", "simulated_indices", "table_indices"]


def table_indices(cumulative: np.ndarray, words: np.ndarray, bits: int) -> np.ndarray:
    """The outcome of each uniform 64-bit word: ``u = word >> (64 - bits)``, then the first
    ``i`` with ``u < cumulative[i]``."""
    uniform = words >> np.uint64(64 - bits)
    return np.searchsorted(cumulative, uniform, side="right").astype(np.int64)


def secure_indices(cumulative: np.ndarray, bits: int, size: int) -> np.ndarray:
    """``size`` outcomes drawn with ``os.urandom`` (module docstring)."""
    size = check_positive_int("size", size)
    words = np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
    return table_indices(cumulative, words, bits)


def simulated_indices(
    cumulative: np.ndarray, bits: int, size: int, rng: np.random.Generator
) -> np.ndarray:
    """``size`` outcomes drawn with ``rng`` (simulation only: module docstring)."""
    size = check_positive_int("size", size)
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(f"rng must be a numpy.random.Generator, got {rng!r}")
    words = rng.integers(0, np.iinfo(np.uint64).max, size=size, dtype=np.uint64, endpoint=True)
    return table_indices(cumulative, words, bits)
