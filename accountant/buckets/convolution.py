"""Composition of bucketed PLDs: the A-masses convolve and the B-masses convolve
(SPEC section 2), with every rounding error bounded and carried along.

Small or sparse inputs use the direct numba kernel (relative error only); large
ones use real FFTs of power-of-two length (scipy.fft). For the FFT path the round-off
of each output entry is bounded in Euclidean norm by

    FFT_ERROR_CONSTANT * u * (log2 N + 1) * (|x|_1 |y|_2 + |x|_2 |y|_1),

a deliberately generous form of the classical bound for Cooley-Tukey FFTs
(Higham, *Accuracy and Stability of Numerical Algorithms*, Thm. 24.2: relative
2-norm error ``<= log2 N * eta / (1 - log2 N * eta)`` per transform, ``eta ~ 5u``)
applied to the forward transforms, the pointwise product and the inverse.
Negative round-off is clipped to 0, which only moves entries towards the truth.
"""

from __future__ import annotations

import math
import os

import attrs
import numpy as np

from accountant.buckets._kernels import direct_convolve
from accountant.buckets.bucketed import (
    BucketedPLD,
    cut_to_chernoff_window,
    merge_tail_moments,
)
from accountant.buckets.coarsen import coarsen, coarsen_to
from accountant.buckets.merged_lattice import MergedLattice
from accountant.buckets.progress import tick
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.lazy import fft

__all__ = ["FFT_ERROR_CONSTANT", "compose_pair", "compose_power"]

FFT_ERROR_CONSTANT = 16.0
#: Direct convolution is used while (non-zeros of x) * len(y) stays below this many
#: multiply-adds, or below the cost of the FFT it replaces.
DIRECT_BUDGET = 4_000_000


def _fft_convolve(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """``x * y`` by real FFT of power-of-two length, and the 2-norm bound of its error."""
    length = x.size + y.size - 1
    size = 1 << max(1, (length - 1).bit_length())
    workers = os.cpu_count() or 1
    product = fft.rfft(x, size, workers=workers) * fft.rfft(y, size, workers=workers)
    result = fft.irfft(product, size, workers=workers)[:length]
    np.maximum(result, 0.0, out=result)
    norms = np.sum(x) * math.sqrt(np.dot(y, y)) + math.sqrt(np.dot(x, x)) * np.sum(y)
    bound = FFT_ERROR_CONSTANT * UNIT_ROUNDOFF * (math.log2(size) + 1.0) * norms
    return result, float(bound)


def _convolve(x: np.ndarray, y: np.ndarray, force_direct: bool) -> tuple[np.ndarray, float, float]:
    """``(x * y, relative rounding, absolute 2-norm rounding)``."""
    if np.count_nonzero(x) > np.count_nonzero(y):
        x, y = y, x
    nonzero = int(np.count_nonzero(x))
    length = x.size + y.size - 1
    fft_cost = 12.0 * length * math.log2(max(length, 2))
    if force_direct or nonzero * y.size <= max(DIRECT_BUDGET, fft_cost):
        return direct_convolve(x, y), 1.01 * (min(nonzero, y.size) + 2) * UNIT_ROUNDOFF, 0.0
    result, bound = _fft_convolve(x, y)
    return result, 0.0, bound


def compose_pair(
    x: BucketedPLD,
    y: BucketedPLD,
    tail_mass: float,
    force_direct: bool = False,
    max_size: int | None = None,
) -> BucketedPLD:
    """The bucketed PLD of one release of ``x`` followed by one of ``y``. Different widths
    (power-of-two multiples after coarsening) are first coarsened to the larger; a result
    longer than ``max_size`` buckets is coarsened until it fits.

    Indices and offsets add; the mass logs ``T`` and ``D`` add; the lost mass becomes
    ``lx F_y + ly F_x - lx ly`` (outcomes with a lost component and no distinguishing one;
    ``F`` the finite A-mass). Errors: relative parts add
    (``rx + ry + rx ry`` plus the new rounding), absolute parts propagate as
    ``|e_x * y|_2 <= |e_x|_2 |y|_1`` (Young's inequality).
    """
    x, y = coarsen_to(x, y.width), coarsen_to(y, x.width)
    if not math.isclose(x.width, y.width, rel_tol=1e-9):
        raise ValueError(f"bucket widths differ: {x.width!r} and {y.width!r}")
    mass_a, rel_a, abs_a = _convolve(x.mass_a, y.mass_a, force_direct)
    mass_b, rel_b, abs_b = _convolve(x.mass_b, y.mass_b, force_direct)
    fresh = max(rel_a, rel_b)
    relative = x.relative_error + y.relative_error + x.relative_error * y.relative_error
    relative = relative + fresh * (1.0 + relative)
    growth = 1.0 + relative
    error_a = (
        growth * (x.error_a * (1.0 + y.relative_error) + float(np.sum(x.mass_a)) * y.error_a)
        + abs_a
    )
    error_b = (
        growth * (x.error_b * (1.0 + y.relative_error) + float(np.sum(x.mass_b)) * y.error_b)
        + abs_b
    )
    lost = x.lost_a * y.finite_mass + y.lost_a * x.finite_mass - x.lost_a * y.lost_a
    composed = BucketedPLD(
        width=x.width,
        first_index=x.first_index + y.first_index,
        mass_a=mass_a,
        mass_b=mass_b,
        offset_low=x.offset_low + y.offset_low,
        offset_high=x.offset_high + y.offset_high,
        mass_logs=x.mass_logs + y.mass_logs,
        lost_a=max(0.0, lost) * (1.0 + 8.0 * UNIT_ROUNDOFF),
        relative_error=relative,
        error_a=error_a,
        error_b=error_b,
        releases=x.releases + y.releases,
        tail_moments=merge_tail_moments(x.tail_moments, y.tail_moments),
        hoeffding_variance=(x.hoeffding_variance + y.hoeffding_variance) * (1.0 + UNIT_ROUNDOFF),
        hoeffding_drift=(x.hoeffding_drift + y.hoeffding_drift) * (1.0 + UNIT_ROUNDOFF),
    )
    composed = cut_to_chernoff_window(composed, tail_mass)
    while max_size is not None and composed.size > max_size:
        composed = coarsen(composed)
    if x.dominated is not None and y.dominated is not None:
        # rounded releases: their merged counterparts compose as bucketed distributions
        merged = compose_pair(x.dominated.a, y.dominated.a, tail_mass, force_direct, max_size)
        composed = attrs.evolve(composed, dominated=MergedLattice(merged))
    return composed


def compose_power(
    pld: BucketedPLD,
    times: int,
    tail_mass: float,
    force_direct: bool = False,
    max_size: int | None = None,
) -> BucketedPLD:
    """``times`` releases of ``pld`` by binary exponentiation (``O(log times)`` convolutions);
    any positive integer, not only powers of two."""
    result: BucketedPLD | None = None
    power = pld
    remaining = times
    done, power_count = 0, 1  # releases in result and in power
    while True:
        if remaining & 1:
            result = (
                power
                if result is None
                else compose_pair(result, power, tail_mass, force_direct, max_size)
            )
            done += power_count
            tick(f"{done} of {times} releases")
        remaining >>= 1
        if not remaining:
            break
        power = compose_pair(power, power, tail_mass, force_direct, max_size)
        power_count *= 2
        tick(f"{done} of {times} releases, squared to {power_count}")
    assert result is not None
    return attrs.evolve(result, releases=pld.releases * times)
