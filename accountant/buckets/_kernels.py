"""numba kernels of the PrivacyBuckets engine: pure functions on arrays.

Each kernel has a slow numpy oracle in ``tests/buckets/test_kernels.py``.
``cache=True`` keeps compilation out of later processes; no ``fastmath`` (it would
reorder sums and break inf/NaN handling).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "adp_scan",
    "bucket_indices",
    "bucket_sums",
    "direct_convolve",
    "log_moment_generating",
    "pdp_scan",
]


@numba.njit(cache=True, nogil=True)
def direct_convolve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``z[k] = sum_i x[i] y[k - i]``, skipping zero entries of ``x`` (sparse releases).

    Every product and sum is of non-negative numbers, so each entry carries a relative
    rounding error of at most ``(min(len(x), len(y)) + 1) * u``.
    """
    out = np.zeros(x.size + y.size - 1)
    for i in range(x.size):
        xi = x[i]
        if xi == 0.0:
            continue
        for k in range(y.size):
            out[i + k] += xi * y[k]
    return out


@numba.njit(cache=True, nogil=True)
def adp_scan(
    mass_a: np.ndarray,
    mass_b: np.ndarray,
    lower_edges: np.ndarray,
    upper_edges: np.ndarray,
    eps: float,
) -> tuple[float, float, float, float, int, float]:
    """Certified ADP terms of bucketed losses at ``eps`` (SPEC section 2).

    Bucket ``k`` holds outcomes whose losses surely lie in
    ``[lower_edges[k], upper_edges[k]]``. Returns
    ``(upper_sum, upper_a_only, lower_sum, counted_a, counted, lower_a_only)``:

    * ``upper_sum``: buckets surely above eps give ``A - e^eps B`` exactly, straddling
      buckets ``A (1 - e^{eps - upper edge})``;
    * ``upper_a_only``: the same with ``A (1 - e^{eps - upper edge})`` everywhere (no B);
    * ``lower_sum``: ``max(0, A - e^eps B)`` over buckets whose upper edge exceeds eps;
    * ``counted_a``: the A-mass of those buckets, and ``counted`` their number;
    * ``lower_a_only``: ``A (1 - e^{eps - lower edge})`` over buckets whose lower edge is at
      least eps (no B, so no ``e^eps``-scaled B error in the lower bound).
    """
    scale = np.exp(eps)
    upper_sum = 0.0
    upper_a_only = 0.0
    lower_sum = 0.0
    counted_a = 0.0
    counted = 0
    lower_a_only = 0.0
    for k in range(mass_a.size):
        high = upper_edges[k]
        if high <= eps:
            continue
        a = mass_a[k]
        b = mass_b[k]
        a_part = a * -np.expm1(eps - high)
        upper_a_only += a_part
        # For eps > ~709.78, e^eps is inf and inf * 0 would be NaN (a NaN difference would
        # silently drop a surely-above bucket from upper_sum); A - e^eps * 0 is exactly A.
        difference = a - scale * b if b > 0.0 else a
        low = lower_edges[k]
        if low >= eps:
            upper_sum += difference if difference > 0.0 else 0.0
            lower_a_only += a * -np.expm1(eps - low)
        else:
            upper_sum += a_part
        if difference > 0.0:
            lower_sum += difference
        counted_a += a
        counted += 1
    return upper_sum, upper_a_only, lower_sum, counted_a, counted, lower_a_only


@numba.njit(cache=True, nogil=True)
def pdp_scan(
    mass_a: np.ndarray, lower_edges: np.ndarray, upper_edges: np.ndarray, eps: float
) -> tuple[float, float, int]:
    """PDP terms: ``(A-mass of buckets possibly above eps, A-mass surely above eps,
    number of buckets possibly above eps)``."""
    possibly = 0.0
    surely = 0.0
    counted = 0
    for k in range(mass_a.size):
        if upper_edges[k] > eps:
            possibly += mass_a[k]
            counted += 1
            if lower_edges[k] > eps:
                surely += mass_a[k]
    return possibly, surely, counted


@numba.njit(cache=True, nogil=True)
def log_moment_generating(
    log_mass: np.ndarray, losses: np.ndarray, lambdas: np.ndarray
) -> np.ndarray:
    """``out[k] = ln sum_j exp(log_mass[j] + lambdas[k] * losses[j])`` (a stable logsumexp
    per lambda; ``-inf`` for empty input)."""
    out = np.empty(lambdas.size)
    for k in range(lambdas.size):
        lam = lambdas[k]
        largest = -np.inf
        for j in range(log_mass.size):
            value = log_mass[j] + lam * losses[j]
            if value > largest:
                largest = value
        if largest == -np.inf:
            out[k] = -np.inf
            continue
        total = 0.0
        for j in range(log_mass.size):
            total += np.exp(log_mass[j] + lam * losses[j] - largest)
        out[k] = largest + np.log(total)
    return out


@numba.njit(cache=True, nogil=True)
def bucket_indices(losses: np.ndarray, anchor: float, width: float, snap: float) -> np.ndarray:
    """Bucket index of each loss: ``ceil((L - anchor) / width)``, or the nearest integer
    when the position lies within ``snap`` of it (lattice points on bucket edges)."""
    index = np.empty(losses.size, dtype=np.int64)
    for k in range(losses.size):
        position = (losses[k] - anchor) / width
        nearest = np.round(position)
        if abs(position - nearest) <= snap:
            index[k] = np.int64(nearest)
        else:
            index[k] = np.int64(np.ceil(position))
    return index


@numba.njit(cache=True, nogil=True)
def bucket_sums(
    index: np.ndarray, first: int, count: int, mass_a: np.ndarray, mass_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-bucket sums of the A- and B-masses of outcomes with bucket ``index``, and the
    largest number of outcomes in one bucket (for the summation error bound)."""
    sums_a = np.zeros(count)
    sums_b = np.zeros(count)
    terms = np.zeros(count, dtype=np.int64)
    for k in range(index.size):
        slot = index[k] - first
        sums_a[slot] += mass_a[k]
        sums_b[slot] += mass_b[k]
        terms[slot] += 1
    most = 0
    for slot in range(count):
        if terms[slot] > most:
            most = terms[slot]
    return sums_a, sums_b, most


@numba.njit(cache=True, nogil=True)
def lattice_log_mgf(mass: np.ndarray, lambdas: np.ndarray, step: float, upward: bool) -> np.ndarray:
    """``out[k] = ln sum_j mass[j] e^{+-lambdas[k] step j}`` (``+`` if ``upward``) for
    non-negative masses on the lattice ``j = 0 .. J``, by Horner's rule in ``t = e^{-lambda
    step} <= 1`` (no overflow): upward, ``z^J sum_j mass[j] t^{J - j}``; downward, ``sum_j
    mass[j] t^j``, each rounded up: non-negative terms keep the sum within ``(1 + u)^{3 (J +
    2)}`` of its value, relative, and terms that underflow lose at most ``(J + 1)`` times the
    smallest normal number."""
    out = np.empty(lambdas.size)
    top = mass.size - 1
    for k in range(lambdas.size):
        t = np.exp(-lambdas[k] * step)
        total = 0.0
        if upward:
            for j in range(mass.size):
                total = total * t + mass[j]
        else:
            for j in range(top, -1, -1):
                total = total * t + mass[j]
        # Horner's rounding (non-negative terms), then what underflow may have lost
        total = total * (1.0 + 3.01 * (top + 2) * 1.1102230246251565e-16)
        total += (top + 1) * 2.2250738585072014e-308
        if upward:
            out[k] = np.log(total) + lambdas[k] * step * top
        else:
            out[k] = np.log(total)
    return out
