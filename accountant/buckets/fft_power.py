"""Composing rounded releases at once: one FFT per release, powers, one inverse FFT.

Releases rounded onto one lattice of width ``w`` (:mod:`accountant.buckets.rounding`)
compose by convolving their A-masses; ``n_i`` releases of each, all at once, are

    y = irfft( prod_i rfft(x_i, N)^{n_i} , N ),

a circular convolution over ``N`` lattice points. That costs two FFTs per distinct release
however large ``n_i`` is, where repeated squaring costs ``2 log2 n`` convolutions.

Certified errors, per entry of ``y`` (an absolute bound ``e_out`` on every entry):

* each rfft output is within ``e_i = c u (log2 N + 1) |x_i|_1`` of the exact DFT
  (componentwise, as for any FFT whose outputs are sums of inputs times unit-modulus
  twiddles along a tree of depth ``log2 N``; ``c = FFT_CONSTANT``, a hundred times what
  long-double references show, see the tests);
* a product of powers moves by at most ``sum_i n_i e_i / (|X_i| + e_i) * prod_i (|X_i| +
  e_i)^{n_i}`` (the derivative of ``prod z_i^{n_i}`` along the segments), plus its own
  rounding, ``4 |Y| u (sum_i n_i (|ln |X_i|| + pi) + 8)`` through the polar form;
* the inverse FFT of the perturbed spectrum is off by at most ``(1/N) |dY|_1`` from the
  exact one, and adds ``c u (log2 N + 1) |Y|_1 / N`` of its own (both over the full
  spectrum, which the half spectrum gives with its interior counted twice).

Wrap-around: mass beyond the ``N`` points folds onto them. The caller chooses ``N`` to hold
the composition's Chernoff window, outside which each tail holds at most ``tail_mass``;
that mass is both lost (it counts in every upper bound) and misplaced (an error of at most
``2 tail_mass`` in total, added to the error norm).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import attrs
import numpy as np
import scipy.fft

from accountant._directed import MassLogs
from accountant.buckets.bucketed import BucketedPLD, merge_tail_moments
from accountant.buckets.tails import chernoff_window

__all__ = ["FFT_CONSTANT", "PoweredSpectrum", "compose_rounded", "power_spectrum"]

#: ``c`` in the componentwise FFT error bound ``c u (log2 N + 1) |x|_1``.
FFT_CONSTANT = 8.0
_U = 2.0**-53


@attrs.frozen
class _Summary:
    """What the composition needs of a release once its masses are in the spectrum."""

    width: float
    first_index: int
    size: int
    offset_low: float
    offset_high: float
    tail_moments: tuple
    mass_logs: MassLogs
    lost_a: float
    relative_error: float
    error_a: float
    releases: int
    hoeffding_variance: float
    hoeffding_drift: float


def _summary(single: BucketedPLD) -> _Summary:
    return _Summary(
        single.width,
        single.first_index,
        single.size,
        single.offset_low,
        single.offset_high,
        single.tail_moments,
        single.mass_logs,
        single.lost_a,
        single.relative_error,
        single.error_a,
        single.releases,
        single.hoeffding_variance,
        single.hoeffding_drift,
    )


class PoweredSpectrum:
    """``y`` (length ``N``, clipped at 0: never further from the true non-negative masses)
    and ``entry_error``, a bound on ``|y_k - exact_k|`` for every ``k``."""

    __slots__ = ("entry_error", "masses")

    def __init__(self, masses: np.ndarray, entry_error: float):
        self.masses, self.entry_error = masses, entry_error


def _full_sum(half: np.ndarray, size: int) -> float:
    """``sum_k |Z_k|`` over the full spectrum of length ``size`` from its rfft half."""
    interior = half[1:-1] if size % 2 == 0 else half[1:]
    edges = abs(half[0]) + (abs(half[-1]) if size % 2 == 0 else 0.0)
    return float(edges + 2.0 * np.sum(np.abs(interior)))


def power_spectrum(parts: Iterable[tuple[np.ndarray, int]], size: int) -> PoweredSpectrum:
    """The circular convolution of ``n_i`` copies of each non-negative array ``x_i`` of
    ``parts = [(x_i, n_i)]``, over ``size`` points, with a certified entry error."""
    depth = math.log2(size) + 1.0
    log_magnitude = np.zeros(size // 2 + 1)
    phase = np.zeros(size // 2 + 1)
    slope = np.zeros(size // 2 + 1)  # sum_i n_i e_i / (|X_i| + e_i)
    rounding = np.zeros(size // 2 + 1)  # sum_i n_i (|ln|X_i|| + pi)
    log_upper = np.zeros(size // 2 + 1)  # ln prod (|X_i| + e_i)^{n_i}
    for values, times in parts:
        spectrum = scipy.fft.rfft(values, size)
        error = FFT_CONSTANT * _U * depth * float(np.sum(values))
        magnitude = np.abs(spectrum)
        with np.errstate(divide="ignore"):
            logs = np.log(magnitude)
        log_magnitude += times * logs
        phase += times * np.angle(spectrum)
        reach = magnitude + error  # 0 only for an all-zero release, whose powers are 0
        slope += times * np.divide(error, reach, out=np.zeros_like(reach), where=reach > 0.0)
        rounding += times * (np.abs(np.where(np.isfinite(logs), logs, 0.0)) + math.pi)
        with np.errstate(divide="ignore"):
            log_upper += times * np.log(reach)
    with np.errstate(under="ignore"):
        result = np.exp(log_magnitude) * np.exp(1j * phase)
        moved = slope * np.exp(log_upper)
    own = np.abs(result) * 4.0 * _U * (rounding + 8.0)
    masses = scipy.fft.irfft(result, size)
    inverse = FFT_CONSTANT * _U * depth * _full_sum(np.abs(result) + moved + own, size) / size
    entry_error = (_full_sum(moved + own, size) / size + inverse) * (1.0 + 1e-12)
    return PoweredSpectrum(np.maximum(masses, 0.0), entry_error)


def compose_rounded(
    make: Callable[[int], BucketedPLD], counts: list[int], tail_mass: float, max_buckets: int
) -> BucketedPLD | None:
    """``counts[i]`` releases of each rounded single release ``make(i)`` (same lattice
    width), composed by :func:`power_spectrum` over the Chernoff window of the composition.
    ``make`` is called twice per release, never holding more than one release's arrays: a
    first pass for the window, a second for the spectra (a thousand distinct releases
    would otherwise hold gigabytes). ``None`` when this does not apply (an unbounded
    window, one wider than ``max_buckets / 2``, or releases with an absolute error of
    their own): the caller then composes pair by pair."""
    summaries = []
    for index, times in enumerate(counts):
        single = make(index)
        summaries.append((_summary(single), times))
    width = summaries[0][0].width
    moments: tuple = ()
    for index, (single, times) in enumerate(summaries):
        counted = tuple((m, c * times) for m, c in single.tail_moments)
        moments = counted if index == 0 else merge_tail_moments(moments, counted)
    if any(s.error_a > 0.0 or s.width != width for s, _ in summaries):
        return None
    first = sum(times * s.first_index for s, times in summaries)
    last = sum(times * (s.first_index + s.size - 1) for s, times in summaries)
    offset_low = sum(times * s.offset_low for s, times in summaries)
    offset_high = sum(times * s.offset_high for s, times in summaries)
    low, high = chernoff_window(moments, tail_mass)
    start = max(first, math.floor((low - offset_high) / width) - 1) if math.isfinite(low) else first
    stop = min(last, math.ceil((high - offset_low) / width) + 1) if math.isfinite(high) else last
    if stop - start + 1 > max_buckets // 2:
        return None
    cut_low, cut_high = start > first, stop < last
    size = scipy.fft.next_fast_len(stop - start + 1, real=True)
    parts = ((make(index).mass_a, times) for index, times in enumerate(counts))
    powered = power_spectrum(parts, size)
    singles = summaries
    # entry k of the circular result holds composed index first + k (mod size)
    window = np.roll(powered.masses, first - start)[: stop - start + 1]
    folded = tail_mass * (cut_low + cut_high)  # mass outside the window, folded onto it
    error = (powered.entry_error * math.sqrt(window.size) + folded) * (1.0 + 1e-12)
    # every entry: its own rounding, or the folded mass if all of it landed there
    entry = (powered.entry_error + folded) * (1.0 + 1e-12)
    points = (start + np.arange(window.size)) * width + 0.5 * (offset_low + offset_high)
    with np.errstate(divide="ignore", over="ignore"):
        mass_b = np.minimum(np.exp(np.log(window) - points), 1e300)
    relative = math.expm1(1.01 * sum(times * s.relative_error for s, times in singles))
    logs = MassLogs()
    for single, times in singles:
        logs = logs + single.mass_logs.times(times)
    lost = sum(times * s.lost_a for s, times in singles) + folded
    return BucketedPLD(
        width=width,
        first_index=start,
        mass_a=window,
        mass_b=mass_b,
        offset_low=offset_low,
        offset_high=offset_high,
        mass_logs=logs,
        lost_a=lost * (1.0 + 4.0 * _U * (len(singles) + 2)),
        relative_error=relative,
        error_a=error,
        entry_error=entry,
        error_b=math.inf,  # B is A e^{-g} on the lattice: the A-only bounds are exact
        releases=sum(times * s.releases for s, times in singles),
        tail_moments=moments,
        hoeffding_variance=sum(times * s.hoeffding_variance for s, times in singles),
        hoeffding_drift=sum(times * s.hoeffding_drift for s, times in singles) * (1 + 1e-12),
    )
