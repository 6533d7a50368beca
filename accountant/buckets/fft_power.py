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
  rounding: computed by binary powering and multiplication (no logarithms), it is a product
  of ``N = sum_i n_i`` factors whose unfolded multiplication tree has ``N - 1`` nodes, each
  moving it by a relative ``sqrt(5) u`` at most (Brent, Percival and Zimmermann 2007), so
  ``|Y| ((1 + sqrt(5) u)^N - 1)``, plus the smallest normal number for underflow;
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

from accountant.buckets import vector_kernels
from accountant.numerics.floats import SMALLEST_NORMAL, UNIT_ROUNDOFF
from accountant.numerics.lazy import fft, njit

__all__ = ["FFT_CONSTANT", "PoweredSpectrum", "power_spectrum"]

#: ``c`` in the componentwise FFT error bound ``c u (log2 N + 1) |x|_1``.
FFT_CONSTANT = 8.0
_U = UNIT_ROUNDOFF
#: Relative error of one complex multiplication, in units of ``u``: ``sqrt(5)``, rounded up
#: (with room for the subnormal parts of a product).
_COMPLEX_PRODUCT = 2.25
#: Below this a product may have gone through underflow on its way.
_SMALL = 2.0**-1000


class PoweredSpectrum:
    """``y`` (length ``N``, clipped at 0: never further from the true non-negative masses)
    and ``entry_error``, a bound on ``|y_k - exact_k|`` for every ``k``."""

    __slots__ = ("entry_error", "masses")

    def __init__(self, masses: np.ndarray, entry_error: float):
        # None once a caller has taken what it needs (to free the array)
        self.masses: np.ndarray | None = masses
        self.entry_error = entry_error


def _full_sum(half: np.ndarray, size: int) -> float:
    """``sum_k |Z_k|`` over the full spectrum of length ``size`` from its rfft half."""
    interior = half[1:-1] if size % 2 == 0 else half[1:]
    edges = abs(half[0]) + (abs(half[-1]) if size % 2 == 0 else 0.0)
    return float(edges + 2.0 * np.sum(np.abs(interior)))


@njit(cache=True, nogil=True)
def _accumulate_power(
    spectrum: np.ndarray,
    times: int,
    error: float,
    product: np.ndarray,
    upper: np.ndarray,
    slope: np.ndarray,
) -> None:
    """``product *= spectrum**times`` and ``upper *= (|spectrum| + error)**times`` (binary
    powering, no logarithms), ``slope += times error / (|spectrum| + error)``, entrywise."""
    for k in range(spectrum.size):
        base = spectrum[k]
        reach = abs(base) + error
        if reach > 0.0:
            slope[k] += times * error / reach
        power = 1.0 + 0.0j
        bound = 1.0
        remaining = times
        while remaining:
            if remaining & 1:
                power *= base
                bound *= reach
            remaining >>= 1
            if remaining:
                base *= base
                reach *= reach
        product[k] *= power
        upper[k] *= bound


def power_spectrum(parts: Iterable[tuple], size: int) -> PoweredSpectrum:
    """The circular convolution of ``n_i`` copies of each non-negative array ``x_i`` of
    ``parts = [(x_i, n_i)]`` or ``[(x_i, n_i, E_i)]``, over ``size`` points, with a certified
    entry error. ``E_i`` bounds the 1-norm of an absolute error of ``x_i`` itself (what the
    result is certified against is the convolution of the arrays ``x_i`` corrected by it):
    it moves every spectrum component by at most ``E_i``, as the FFT's own error does."""
    depth = math.log2(size) + 1.0
    product = np.ones(size // 2 + 1, dtype=np.complex128)
    upper = np.ones(size // 2 + 1)  # prod (|X_i| + e_i)^{n_i}
    slope = np.zeros(size // 2 + 1)  # sum_i n_i e_i / (|X_i| + e_i)
    factors = 0  # N = sum_i n_i: the products above have N - 1 (+1) multiplications
    releases = 0
    for values, times, *given in parts:
        spectrum = fft.rfft(values, size)
        error = FFT_CONSTANT * _U * depth * float(np.sum(values))
        error = (error + (given[0] if given else 0.0)) * (1.0 + 4.0 * _U)
        power = (
            vector_kernels.accumulate_power
            if spectrum.size * int(times).bit_length() <= vector_kernels.POWER_WORK
            else _accumulate_power
        )
        power(spectrum, int(times), error, product, upper, slope)
        factors += int(times)
        releases += 1
    # every multiplication of the (unfolded) product tree moves it by a relative
    # (1 + sqrt(5) u); the real bound is rounded up the same way; underflow costs at most
    # the smallest normal number per component
    growth = math.expm1(factors * math.log1p(_COMPLEX_PRODUCT * _U)) * (1.0 + 8.0 * _U)
    # (in place where it can be: at 10^6 steps these arrays hold millions of entries)
    magnitude = np.abs(product)
    own = np.where((magnitude < _SMALL) & (upper > 0.0), SMALLEST_NORMAL, 0.0)
    own += magnitude * growth
    moved = np.multiply(upper, math.exp(2.0 * _U * (factors + releases + 8)), out=upper)
    moved += SMALLEST_NORMAL
    moved *= slope
    del slope
    moved += own  # moved + own
    del own
    moved_sum = _full_sum(moved, size)
    moved += magnitude  # magnitude + moved + own
    del magnitude
    inverse = FFT_CONSTANT * _U * depth * _full_sum(moved, size) / size
    del moved, upper
    entry_error = (moved_sum / size + inverse) * (1.0 + 1e-12)
    masses = fft.irfft(product, size)
    del product
    return PoweredSpectrum(np.maximum(masses, 0.0, out=masses), entry_error)
