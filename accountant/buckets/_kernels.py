"""numba kernels of the PrivacyBuckets engine: pure functions on arrays.

Each kernel has a slow numpy oracle in ``tests/buckets/test_kernels.py``.
``cache=True`` keeps compilation out of later processes; no ``fastmath`` (it would
reorder sums and break inf/NaN handling). numba is imported, and each kernel compiled or
loaded from its cache, at the kernel's first call (:func:`accountant.numerics.lazy.njit`).
"""

from __future__ import annotations

import math

import numpy as np

from accountant.numerics.floats import SMALLEST_NORMAL, UNIT_ROUNDOFF
from accountant.numerics.lazy import njit

__all__ = [
    "adp_scan",
    "bucket_indices",
    "bucket_sums",
    "direct_convolve",
    "log_moment_generating",
    "pdp_scan",
]


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


#: A lattice is coarsened for ``lambda`` while ``lambda * step`` stays below this: moving
#: mass by at most one coarse step keeping its mean raises ``ln E e^{lambda L}`` by at most
#: ``(lambda * step)^2 / 8 <= 1e-8`` (Hoeffding's lemma).
_COARSE_REACH = 2.8e-4
#: A sum stops once a bound on everything it has not yet added is below this fraction of it.
_STOP_FRACTION = 2.0**-60
_U = UNIT_ROUNDOFF
_RESCALE = 2.0**500
_LOG_RESCALE = 500.0 * 0.6931471805599453


@njit(cache=True, nogil=True)
def _spread_halve(mass: np.ndarray) -> np.ndarray:
    """The masses on every other lattice point, each odd point's mass split in halves onto
    its two neighbours (its mean kept): ``out[g] = m[2g] + m[2g - 1] / 2 + m[2g + 1] / 2``."""
    out = np.zeros(mass.size // 2 + 1)
    for j in range(mass.size):
        if j % 2 == 0:
            out[j // 2] += mass[j]
        else:
            half = 0.5 * mass[j]
            out[j // 2] += half
            out[j // 2 + 1] += half
    return out


@njit(cache=True, nogil=True)
def _falling_sum(mass: np.ndarray, rest: np.ndarray, t: float, floor: float) -> float:
    """``ln`` of an upper bound on ``sum_i mass[i] t^i`` (``0 < t <= 1``, non-negative
    masses), adding terms in order until ``t^{i+1} rest[i]`` (``rest[i] >= sum_{k > i}
    mass[k]``) is below :data:`_STOP_FRACTION` of the sum, then that bound. Running power
    and sum are rescaled by ``2^500`` (exactly) before the power underflows; ``floor`` is an
    allowance (in the input's units) for masses lost to underflow before the call."""
    total = floor
    power = 1.0
    rescales = 0
    lost = 0
    for i in range(mass.size):
        total += mass[i] * power
        lost += 1
        # checked every 16 terms (a cheaper loop) and before each rescaling (which the
        # check keeps from overflowing: an unfinished sum is below 2^60 rest t^i)
        if i + 1 < mass.size and (i % 16 == 15 or power * t < 1.0 / _RESCALE):
            tail = power * t * rest[i]
            if tail <= _STOP_FRACTION * total:
                total += tail * (1.0 + 4.0 * _U)
                break
        power *= t
        if power < 1.0 / _RESCALE:
            total += lost * SMALLEST_NORMAL  # products that underflowed at this scale
            lost = 0
            total *= _RESCALE
            power *= _RESCALE
            rescales += 1
    total += lost * SMALLEST_NORMAL
    # the logarithm, the rounded 500 ln 2 and the sums below each round by u relative
    log_total, log_scale = math.log(total), -rescales * _LOG_RESCALE
    return log_total + log_scale + 4.0 * _U * (abs(log_total) + abs(log_scale) + 1.0)


@njit(cache=True, nogil=True)
def _falling_sum_of_logs(mass: np.ndarray, rest: np.ndarray, log_t: float) -> float:
    """:func:`_falling_sum` when ``t = e^{log_t}`` would underflow: terms added as
    logarithms (the sum stops once ``ln rest[i] + (i + 1) log_t`` is 42 below it). Each
    logarithm and log-sum rounds by a few ``u`` of its magnitude: ``8 u`` times the largest
    magnitude met, per term added, is added."""
    total = -math.inf
    largest = 1.0
    added = 0
    for i in range(mass.size):
        if mass[i] > 0.0:
            term = math.log(mass[i]) + i * log_t
            largest = max(largest, abs(term))
            added += 1
            if total == -math.inf:
                total = term
            else:
                high, low = max(total, term), min(total, term)
                total = high + math.log1p(math.exp(low - high))
        if i + 1 < mass.size and rest[i] > 0.0:
            tail = math.log(rest[i]) + (i + 1) * log_t
            if total > -math.inf and tail <= total - 42.0:
                total = total + math.log1p(math.exp(tail - total))
                added += 1
                break
        elif i + 1 < mass.size and rest[i] == 0.0:
            break
    if total == -math.inf:
        return math.log(SMALLEST_NORMAL)
    return total + 8.0 * _U * (added + 1) * largest


@njit(cache=True, nogil=True)
def _rests(ordered: np.ndarray) -> np.ndarray:
    """``rest[i]``: an upper bound on ``sum_{k > i} ordered[k]`` (sequential sums of
    non-negative terms, rounded up)."""
    size = ordered.size
    rest = np.zeros(size)
    grow = 1.0 + 1.01 * (size + 2) * _U
    running = 0.0
    for i in range(size - 1, 0, -1):
        running += ordered[i]
        rest[i - 1] = running * grow
    return rest


@njit(cache=True, nogil=True)
def lattice_log_mgf(mass: np.ndarray, lambdas: np.ndarray, step: float, upward: bool) -> np.ndarray:
    """``out[k] >= ln sum_j mass[j] e^{+-lambdas[k] step j}`` (``+`` if ``upward``) for
    non-negative masses on the lattice ``j = 0 .. J``.

    Upward, ``e^{lambda step J} sum_j mass[J - j] t^j``; downward ``sum_j mass[j] t^j``,
    ``t = e^{-lambda step} <= 1`` (:func:`_falling_sum`: no overflow, and a sum stops early
    once the rest is negligible, so large ``lambda`` reads a few buckets). For small
    ``lambda`` the masses are first spread onto a lattice ``2^r`` times coarser keeping their
    means (:func:`_spread_halve`, ``r`` levels), which by convexity of ``e^{lambda L}`` only
    raises the sum, by a factor of at most ``e^{(lambda step 2^r)^2 / 8}``, with
    ``lambda step 2^r <=`` :data:`_COARSE_REACH`. Rounding: ``p = t^i`` by ``i``
    multiplications from a ``t`` within one rounding, products and sums of non-negative
    terms, ``r`` levels of two additions: the sum is scaled by ``(1 + 3.01 (n + 2) u)(1 +
    2.02 (r + 1) u)`` (``n`` the lattice's size); ``J + 1`` times the smallest normal number
    covers products lost to underflow at each scale and ``2 r J`` times it halvings lost;
    ``4 u`` times the magnitudes of the logarithm, the rescaling and the shift covers their
    rounding."""
    out = np.empty(lambdas.size)
    levels = [mass[::-1].copy() if upward else mass.copy()]  # in summation order
    rests = [_rests(levels[0])]
    for k in range(lambdas.size):
        reach = lambdas[k] * step
        level = 0
        while reach * 2.0 ** (level + 1) <= _COARSE_REACH and levels[level].size > 2:
            level += 1
            if level == len(levels):
                # halving commutes with reversal up to which end the odd point lies at:
                # spread in lattice order, then put back in summation order
                natural = levels[level - 1][::-1].copy() if upward else levels[level - 1]
                coarser = _spread_halve(natural)
                levels.append(coarser[::-1].copy() if upward else coarser)
                rests.append(_rests(levels[level]))
        ordered = levels[level]
        coarse = step * 2.0**level
        floor = 2.0 * level * mass.size * SMALLEST_NORMAL
        if lambdas[k] * coarse < 600.0:
            t = math.exp(-lambdas[k] * coarse)
            value = _falling_sum(ordered, rests[level], t, floor)
        else:  # t would underflow
            value = _falling_sum_of_logs(ordered, rests[level], -lambdas[k] * coarse)
        value += math.log1p(3.01 * (ordered.size + 2) * _U) + math.log1p(2.02 * (level + 1) * _U)
        if upward:
            shift = lambdas[k] * coarse * (ordered.size - 1)
            value += shift + 4.0 * _U * (abs(shift) + abs(value))
        out[k] = value
    return out
