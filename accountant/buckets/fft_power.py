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

Wrap-around: mass beyond the ``N`` points folds onto them. The caller
(:mod:`accountant.buckets.rounded_plan`) chooses ``N`` to hold the composition's Chernoff
window, outside which each tail holds at most ``tail_mass``; that mass is both lost (it
counts in every upper bound) and misplaced (an error of at most ``2 tail_mass`` in total,
added to the error norm).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import scipy.fft

__all__ = ["FFT_CONSTANT", "PoweredSpectrum", "power_spectrum"]

#: ``c`` in the componentwise FFT error bound ``c u (log2 N + 1) |x|_1``.
FFT_CONSTANT = 8.0
_U = 2.0**-53


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


def power_spectrum(parts: Iterable[tuple], size: int) -> PoweredSpectrum:
    """The circular convolution of ``n_i`` copies of each non-negative array ``x_i`` of
    ``parts = [(x_i, n_i)]`` or ``[(x_i, n_i, E_i)]``, over ``size`` points, with a certified
    entry error. ``E_i`` bounds the 1-norm of an absolute error of ``x_i`` itself (what the
    result is certified against is the convolution of the arrays ``x_i`` corrected by it):
    it moves every spectrum component by at most ``E_i``, as the FFT's own error does."""
    depth = math.log2(size) + 1.0
    log_magnitude = np.zeros(size // 2 + 1)
    phase = np.zeros(size // 2 + 1)
    slope = np.zeros(size // 2 + 1)  # sum_i n_i e_i / (|X_i| + e_i)
    rounding = np.zeros(size // 2 + 1)  # sum_i n_i (|ln|X_i|| + pi)
    log_upper = np.zeros(size // 2 + 1)  # ln prod (|X_i| + e_i)^{n_i}
    for values, times, *given in parts:
        spectrum = scipy.fft.rfft(values, size)
        error = FFT_CONSTANT * _U * depth * float(np.sum(values))
        error = (error + (given[0] if given else 0.0)) * (1.0 + 4.0 * _U)
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
