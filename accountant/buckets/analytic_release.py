"""The common part of analytic mechanisms as PrivacyBuckets releases: bucket masses
under A and B from CDFs, with no noise grid (SPEC section 2). The releases can also be
split onto a lattice (``lattice``,
:mod:`accountant.buckets.analytic_lattice`), which the engine does from many releases on.

``A`` is the noise centred at 0, ``B`` the noise centred at ``s``, ``L(x) = ln a(x)/b(x)``.
Each family maps a loss ``l`` to a coordinate ``alpha l + beta`` per side (A or B) in
which the side's mass is a known function of an interval. The families
(:mod:`accountant.mechanisms.gaussian`, :mod:`accountant.mechanisms.laplace`) subclass
:class:`AnalyticRelease` with their maps and masses; a mechanism hands the engine its
release through ``bucket_release()``.

The noises are symmetric: the reflection ``x -> s - x`` swaps A and B and maps ``L`` to
``-L``, so the B/A loss distribution under B equals the A/B one under A
(:meth:`AnalyticRelease.same_directions`). Outcomes only A can produce are
distinguishing (``omega`` from the mechanism); those only B can produce never occur
under A and are left out.

Error model (:mod:`accountant.buckets.bucketed`): each stored mass is within
``relative_error`` of the exact mass of the exact real bucket
``(anchor + (J-1) width, anchor + J width]``. Masses come from a bucket's lower edge and
its width (never as a difference of two CDF values), in log space. The arguments carry
rounding of at most ``delta`` (:meth:`AnalyticRelease._rounding`): a translation of the
interval, which changes a normal mass by a factor of at most ``e^(delta z_max)``, a
Laplace mass by ``e^(delta/2)``; the width is exact to a few ulp. Buckets that meet a
support edge, the cut tails and the point masses are computed from exact rational
arguments (:class:`fractions.Fraction`; every float is a rational), so slivers at edges
keep a small relative error too. On top comes the routines' own error
(:data:`BASE_ERROR`, checked against mpmath at 50 digits in
``tests/buckets/test_analytic.py``). Masses below the normal float range count as
absolute error (``error_a``, ``error_b``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from accountant.buckets.analytic_lattice import lattice_release
from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.sources import LossStatistics
from accountant.buckets.tails import TailMoments
from accountant.numerics.floats import SMALLEST_NORMAL, TINY, UNIT_ROUNDOFF
from accountant.numerics.gaussian import logsumexp_scalar
from accountant.numerics.norms import euclidean_norm
from accountant.validation import check_one_direction

__all__ = ["BASE_ERROR", "LOST_SLACK", "MIN_TAIL", "SNAP", "AnalyticRelease", "U"]

U = UNIT_ROUNDOFF
#: Relative error of the log-space mass routines on given float arguments beyond the
#: ``O(u z^2)`` of large normal arguments (erfcx, erf, quadrature, and ``exp`` of log-masses
#: down to ``ln`` of widths ~1e-40), with margin over the mpmath sweeps in the tests.
BASE_ERROR = 256.0 * U
_LOG_TINY = math.log(SMALLEST_NORMAL)
#: Unbounded (Gaussian) tails are cut at no less than this A-mass.
MIN_TAIL = 1e-300
#: Relative slack on the cut tail masses (their routines are far more accurate).
LOST_SLACK = 1e-6
#: A tail cut that would keep all but this fraction of a bounded loss range is skipped.
SNAP = 1e-6


def _log_sum(values: list[float]) -> float:
    """``ln sum e^v`` of log-masses, ``-inf`` when every mass is 0."""
    finite = [v for v in values if v > -math.inf]
    return logsumexp_scalar(finite) if finite else -math.inf


def _bisect(holds, lo: float, hi: float) -> tuple[float, float]:
    """``(last, first)``: where the monotone predicate ``holds`` on ``[lo, hi]`` turns from
    true (at ``last``) to false (at ``first``), to rounding; ``(lo, lo)`` if it is false
    everywhere, ``(hi, hi)`` if true everywhere."""
    if not holds(lo):
        return lo, lo
    if holds(hi):
        return hi, hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return lo, hi


class AnalyticRelease:
    """One release of an analytic mechanism (both directions, identical by symmetry).

    Subclasses set ``_alpha`` and ``_beta[side]`` (exact coordinate map), ``_support[side]``
    (exact coordinate interval of the finite-loss outcomes, ``None`` for unbounded),
    ``_bracket`` (a finite loss interval holding all but ``< MIN_TAIL`` of the A-mass)
    and ``_points`` (``(exact loss, ln A-mass, ln B-mass)``), and implement
    ``_log_interval``, ``_log_tail``, ``_moments``, ``_rounding``, ``_relative_error`` and
    ``_lattice_parts`` (the continuous part and atoms of :meth:`lattice`).
    """

    _alpha: Fraction
    _beta: dict[str, Fraction]
    _support: dict[str, tuple[Fraction | None, Fraction | None]]
    _bracket: tuple[float, float]
    _points: list[tuple[Fraction, float, float]]

    if TYPE_CHECKING:  # what every subclass implements (class docstring)

        def _log_interval(
            self, lo: np.ndarray, hi: np.ndarray, width: np.ndarray, side: str
        ) -> np.ndarray: ...
        def _log_tail(self, bound: float, below: bool) -> float: ...
        def _moments(self) -> tuple[float, float]: ...
        def _rounding(self, largest: float, width: float, anchor: float) -> float: ...
        def _relative_error(self, largest: float, width: float, delta: float) -> float: ...
        def _lattice_parts(self) -> tuple: ...

    def __init__(self, mechanism: Any):
        self.mechanism = mechanism
        self.description = mechanism.description
        self._lattice_moments: dict = {}  # tail moments of lattice(), kept between passes
        self._stats: dict[float, LossStatistics] = {}

    def same_directions(self) -> bool:
        """``True``: ``x -> s - x`` maps the A/B release onto the B/A one."""
        return True

    # -- masses of loss intervals ----------------------------------------------------------

    def _coordinate(self, loss: Fraction | None, side: str, upper: bool) -> Fraction | None:
        """The exact coordinate of ``loss`` clipped to the support (``None``: unbounded)."""
        lo, hi = self._support[side]
        value = None if loss is None else self._alpha * loss + self._beta[side]
        if upper:
            return hi if value is None or (hi is not None and value > hi) else value
        return lo if value is None or (lo is not None and value < lo) else value

    def _log_between(self, lo: Fraction | None, hi: Fraction | None, side: str) -> float:
        """``ln`` mass under ``side`` of the continuous losses in ``(lo, hi]`` (``None``:
        unbounded), from exact clipped coordinates."""
        a = self._coordinate(lo, side, upper=False)
        b = self._coordinate(hi, side, upper=True)
        if a is not None and b is not None and b <= a:
            return -math.inf
        if a is None and b is None:
            return self._log_tail(math.inf, below=True)
        if a is None or b is None:
            edge = b if a is None else a
            assert edge is not None  # not both None: returned above
            return self._log_tail(float(edge), below=a is None)
        one = np.ones(1)
        return float(
            self._log_interval(float(a) * one, float(b) * one, float(b - a) * one, side)[0]
        )

    def _log_below(self, level: float) -> float:
        """``ln`` A-mass of the finite losses ``<= level``."""
        exact = Fraction(level)
        terms = [self._log_between(None, exact, "A")]
        return _log_sum(terms + [a for p, a, _ in self._points if p <= exact])

    def _log_above(self, level: float) -> float:
        """``ln`` A-mass of the finite losses ``> level``."""
        exact = Fraction(level)
        terms = [self._log_between(exact, None, "A")]
        return _log_sum(terms + [a for p, a, _ in self._points if p > exact])

    # -- statistics ----------------------------------------------------------------------

    def _range(self, tail_mass: float) -> tuple[float, float]:
        """``[low, high]`` with at most ``tail_mass`` of A-mass below and above."""
        log_tail = math.log(max(tail_mass, MIN_TAIL))
        lo, hi = self._bracket
        low = _bisect(lambda x: self._log_below(x) <= log_tail, lo, hi)[0]
        high = _bisect(lambda x: self._log_above(x) > log_tail, lo, hi)[1]
        if self._bounded and low - lo <= SNAP * (hi - lo):
            low = lo
        if self._bounded and hi - high <= SNAP * (hi - lo):
            high = hi
        return low, max(low, high)

    @property
    def _bounded(self) -> bool:
        return all(v is not None for v in self._support["A"])

    def statistics(self, direction: str, tail_mass: float) -> LossStatistics:
        """Mean and variance of the loss under the normalised finite part of A (closed form
        or quadrature), the tail-cut range, anchor 0, no lattice."""
        check_one_direction("direction", direction)
        key = float(tail_mass)
        if key not in self._stats:
            mean, variance = self._moments()
            low, high = self._range(key)
            self._stats[key] = LossStatistics(mean, variance, low, high, 0.0, None)
        return self._stats[key]

    # -- buckets -------------------------------------------------------------------------

    def _bucket_masses(self, edges: np.ndarray, width: float, anchor: float, first: int, side):
        """``ln`` masses of the continuous losses per bucket: vectorised from float
        arguments inside the support, exactly clipped where a bucket meets its edge."""
        delta = self._rounding(max(abs(edges[0]), abs(edges[-1])), width, anchor)
        alpha = float(self._alpha)
        lo = edges[:-1] * alpha + float(self._beta[side])
        h = width * alpha
        s_lo, s_hi = (
            sign * math.inf if v is None else float(v)
            for v, sign in zip(self._support[side], (-1.0, 1.0), strict=True)
        )
        exact = (lo < s_lo + 4.0 * delta) | (lo + h > s_hi - 4.0 * delta)
        log_m = np.empty(lo.size)
        inner = ~exact
        span = np.full(int(np.count_nonzero(inner)), h)
        log_m[inner] = self._log_interval(lo[inner], lo[inner] + h, span, side)
        step = Fraction(width)
        for i in np.flatnonzero(exact):
            edge = Fraction(anchor) + (first - 1 + int(i)) * step
            log_m[i] = self._log_between(edge, edge + step, side)
        return log_m, delta

    def bucket(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """Buckets ``J`` holding the losses in ``(anchor + (J-1) width, anchor + J width]``
        over the range of :meth:`statistics`; the A-mass beyond it goes to ``lost_a``."""
        stats = self.statistics(direction, tail_mass)
        first = math.ceil((Fraction(stats.low) - Fraction(anchor)) / Fraction(width))
        last = max(first, math.ceil((Fraction(stats.high) - Fraction(anchor)) / Fraction(width)))
        if last - first + 1 > max_buckets:
            raise BucketBudgetError(last - first + 1)
        edges = anchor + np.arange(first - 1, last + 1, dtype=np.float64) * width
        log_a, delta = self._bucket_masses(edges, width, anchor, first, "A")
        log_b, _ = self._bucket_masses(edges, width, anchor, first, "B")
        mass_a, mass_b = np.exp(log_a), np.exp(log_b)
        abs_a = np.where(log_a < _LOG_TINY, TINY, 0.0)
        abs_b = np.where(log_b < _LOG_TINY, TINY, 0.0)
        low_edge = Fraction(anchor) + (first - 1) * Fraction(width)
        high_edge = Fraction(anchor) + last * Fraction(width)
        cuts = [self._log_between(None, low_edge, "A"), self._log_between(high_edge, None, "A")]
        for loss, log_pa, log_pb in self._points:
            j = math.ceil((loss - Fraction(anchor)) / Fraction(width)) - first
            if 0 <= j < mass_a.size:
                mass_a[j] += math.exp(log_pa)
                mass_b[j] += math.exp(log_pb)
                abs_a[j] += TINY if log_pa < _LOG_TINY else 0.0
                abs_b[j] += TINY if log_pb < _LOG_TINY else 0.0
            else:
                cuts.append(log_pa)
        lost = math.fsum(math.exp(c) * (1.0 + LOST_SLACK) + TINY for c in cuts if c > -math.inf)
        pad = 4.0 * U * (abs(anchor) + width)
        largest = max(abs(edges[0]), abs(edges[-1]))
        bucketed = BucketedPLD(
            width=width,
            first_index=first,
            mass_a=mass_a,
            mass_b=mass_b,
            offset_low=anchor - width - pad,
            offset_high=anchor + pad,
            mass_logs=self.mechanism.mass_logs("A/B"),
            lost_a=lost,
            # + 2u: a point mass added to a continuous one
            relative_error=self._relative_error(largest, width, delta) + 2.0 * U,
            error_a=1.01 * float(euclidean_norm(abs_a)),
            error_b=1.01 * float(euclidean_norm(abs_b)),
        )
        # Chernoff moments of the bucketed A-masses, for certified tail cuts in composition
        return attrs.evolve(bucketed, tail_moments=((TailMoments.of(bucketed), 1),))

    def lattice(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """The release rounded onto ``anchor + J width`` over the range of :meth:`statistics`,
        by the dominating split, with its merged counterpart
        (:mod:`accountant.buckets.analytic_lattice`; both directions alike)."""
        stats = self.statistics(direction, tail_mass)
        part, atoms = self._lattice_parts()
        logs = self.mechanism.mass_logs("A/B")
        return lattice_release(
            part, atoms, "A/B", width, anchor, stats, logs, max_buckets, self._lattice_moments
        )
