"""Certified tail cuts by Chernoff bounds on the bucketed single releases.

If a single release is represented by bucket A-masses ``x_j`` whose losses are at
most ``hi_j`` and at least ``lo_j``, the ``k``-fold composition of that representation
has, for every ``lambda > 0``::

    A-mass{L > t} <= exp(k M_hi(lambda) - lambda t),   M_hi(lambda) = ln sum_j x_j e^{lambda hi_j}
    A-mass{L < t} <= exp(k M_lo(lambda) + lambda t),   M_lo(lambda) = ln sum_j x_j e^{-lambda lo_j}

(Markov's inequality on ``e^{+-lambda L}``; heterogeneous compositions add the
``k M``). Buckets lying wholly beyond the window where these bounds reach
``tail_mass`` are cut and ``tail_mass`` per cut side is counted as lost. Unlike
cutting by computed masses, this does not depend on FFT round-off in the tails.
Any lambda gives a valid bound, so a fixed grid of lambdas is sound.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import attrs
import numpy as np

from accountant.buckets import _kernels, vector_kernels
from accountant.numerics.floats import UNIT_ROUNDOFF

if TYPE_CHECKING:
    from accountant.buckets.bucketed import BucketedPLD

__all__ = ["TailMoments", "chernoff_window", "estimated_log_mgf"]

LAMBDA_GRID = np.geomspace(1e-3, 1e7, 121)
#: Every :data:`CHORD_STRIDE`-th lambda of the grid (both ends included) is summed; the
#: lambdas between take the chord of their neighbours (:func:`_chords`).
CHORD_STRIDE = 3
COMPUTED_LAMBDAS = LAMBDA_GRID[::CHORD_STRIDE]
# each grid lambda's summed neighbours (left <= lambda <= right) and its chord weights
_SUMMED = np.arange(LAMBDA_GRID.size) % CHORD_STRIDE == 0
_LEFT = np.minimum(np.arange(LAMBDA_GRID.size) // CHORD_STRIDE, COMPUTED_LAMBDAS.size - 1)
_RIGHT = np.minimum(_LEFT + 1, COMPUTED_LAMBDAS.size - 1)
_MOVE = np.where(
    _RIGHT > _LEFT,
    (LAMBDA_GRID - COMPUTED_LAMBDAS[_LEFT])
    / (COMPUTED_LAMBDAS[_RIGHT] - COMPUTED_LAMBDAS[_LEFT]).clip(min=1e-300),
    0.0,
)
_STAY = 1.0 - _MOVE


def _chords(computed: np.ndarray) -> np.ndarray:
    """Upper bounds on ``ln sum_j x_j e^{+-lambda s_j}`` at every lambda of
    :data:`LAMBDA_GRID` from upper bounds at :data:`COMPUTED_LAMBDAS`: a log-moment-generating
    function is convex in ``lambda`` (Hoelder), so it lies below every chord, and the chord
    of upper bounds lies above that chord. The chord's value at ``lambda = (1 - t) a + t b``
    is ``(1 - t) f(a) + t f(b)``; ``t`` and ``1 - t`` are computed within ``4u`` each and the
    two products and the sum round by ``3u`` of ``|f(a)| + |f(b)|``, so ``8u (|f(a)| +
    |f(b)|)`` is added; where an end is not finite, the larger end
    (``+inf`` stays an upper bound, both ``-inf``: no mass)."""
    low, high = computed[_LEFT], computed[_RIGHT]
    with np.errstate(invalid="ignore"):
        chord = _STAY * low + _MOVE * high
        chord += 8.0 * UNIT_ROUNDOFF * (np.abs(low) + np.abs(high))
    chord[_SUMMED] = computed
    if not np.isfinite(computed).all():
        between = ~_SUMMED & ~(np.isfinite(low) & np.isfinite(high))
        chord[between] = np.maximum(low, high)[between]
    return chord


@attrs.frozen(eq=False)
class TailMoments:
    """``M_hi`` and ``M_lo`` of one bucketed release on :data:`LAMBDA_GRID`."""

    log_mgf_high: np.ndarray
    log_mgf_low: np.ndarray

    @classmethod
    def of(cls, pld: BucketedPLD) -> TailMoments:
        """From a bucketed single release. Its stored masses may fall short of the true
        ones by the relative error ``rho`` and the absolute errors, which are added.

        Bucket ``j``'s edges are ``lo_0 + j w`` and ``hi_0 + j w`` up to their rounding
        (``delta``, measured): ``sum_j x_j e^{lambda hi_j} <= e^{lambda (hi_0 + delta)}
        sum_j x_j e^{lambda w j}``, a polynomial in ``e^{lambda w}`` that Horner's rule sums
        in ``e^{-lambda w} <= 1`` (:func:`~accountant.buckets._kernels.lattice_log_mgf`),
        and likewise below."""
        high, low = _log_mgfs(pld, upward=True, downward=True)
        assert high is not None and low is not None  # both asked for
        return cls(high, low)

    @staticmethod
    def lower_of(pld: BucketedPLD) -> np.ndarray:
        """``M_lo`` alone, as :meth:`of` computes it (half the work)."""
        low = _log_mgfs(pld, upward=False, downward=True)[1]
        assert low is not None  # asked for
        return low


def _log_mgfs(
    pld: BucketedPLD, upward: bool, downward: bool
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(M_hi, M_lo)`` of :meth:`TailMoments.of`, each only if asked for (else ``None``)."""
    low_edges, high_edges = pld.edges()
    if not (pld.mass_a > 0.0).any():
        empty = np.full(LAMBDA_GRID.size, -math.inf)
        return (empty if upward else None), (empty if downward else None)
    steps = np.arange(pld.size) * pld.width
    size = float(np.max(np.abs(high_edges))) + float(np.max(np.abs(low_edges)))
    rounding = 8.0 * UNIT_ROUNDOFF * (size + pld.width * pld.size)
    # scaled by a power of two (exactly) so that the kernel's underflow allowance is
    # negligible against the sums even where the tail buckets hold ~1e-300
    shift = 500 - math.frexp(float(np.max(pld.mass_a)))[1]
    scaled = np.ldexp(pld.mass_a, shift)
    unscale = shift * math.log(2.0)
    margin = math.log1p(2.0 * pld.relative_error) + 4.0 * UNIT_ROUNDOFF * (1.0 + abs(unscale))
    small = vector_kernels.runs_numpy(int(np.count_nonzero(scaled)), vector_kernels.LOG_MGF_POINTS)
    log_mgf = vector_kernels.lattice_log_mgf if small else _kernels.lattice_log_mgf
    # absolute errors e_j (|e|_2 <= error_a): sum_j |e_j| e^{lambda h_j}
    # <= sqrt(K) error_a e^{lambda max h}
    log_error = math.log(pld.error_a * math.sqrt(pld.size)) if pld.error_a > 0.0 else None
    mgf_high = mgf_low = None
    if upward:
        top = float(np.max(high_edges - (high_edges[0] + steps))) + rounding
        summed = _chords(log_mgf(scaled, COMPUTED_LAMBDAS, pld.width, True)) - unscale
        mgf_high = summed + LAMBDA_GRID * (float(high_edges[0]) + top) + margin
        if log_error is not None:
            mgf_high = np.logaddexp(mgf_high, log_error + LAMBDA_GRID * float(high_edges.max()))
    if downward:
        bottom = float(np.max((low_edges[0] + steps) - low_edges)) + rounding
        summed = _chords(log_mgf(scaled, COMPUTED_LAMBDAS, pld.width, False)) - unscale
        mgf_low = summed - LAMBDA_GRID * (float(low_edges[0]) - bottom) + margin
        if log_error is not None:
            mgf_low = np.logaddexp(mgf_low, log_error - LAMBDA_GRID * float(low_edges.min()))
    return mgf_high, mgf_low


def estimated_log_mgf(weights: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """``ln sum_j w_j e^{lambda l_j}`` on :data:`LAMBDA_GRID` for positive weights ``w_j``
    (summed at :data:`COMPUTED_LAMBDAS`, chords between, :func:`_chords`): the log-moment
    generating function of a release's loss given as nodes, for estimates that choose
    widths (not a certified bound: the nodes are a quadrature's)."""
    logs = np.log(weights)
    exponents = logs[None, :] + COMPUTED_LAMBDAS[:, None] * losses[None, :]
    top = np.max(exponents, axis=1)
    computed = top + np.log(np.sum(np.exp(exponents - top[:, None]), axis=1))
    return _chords(computed)


def chernoff_window(
    moments: tuple[tuple[TailMoments, int], ...], tail_mass: float
) -> tuple[float, float]:
    """``(t_lo, t_hi)``: the composed A-mass below ``t_lo`` and above ``t_hi`` is each at
    most ``tail_mass``. ``(-inf, inf)`` when no bound reaches it."""
    if not moments or tail_mass <= 0.0:
        return -math.inf, math.inf
    high = sum(count * m.log_mgf_high for m, count in moments)
    low = sum(count * m.log_mgf_low for m, count in moments)
    log_tail = math.log(tail_mass)
    with np.errstate(invalid="ignore"):
        t_high = np.min(np.where(np.isfinite(high), (high - log_tail) / LAMBDA_GRID, np.inf))
        t_low = np.max(np.where(np.isfinite(low), (log_tail - low) / LAMBDA_GRID, -np.inf))
    return float(t_low), float(t_high)
