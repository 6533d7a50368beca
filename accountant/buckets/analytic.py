"""Analytic mechanisms as PrivacyBuckets releases: bucket masses under A and B from CDFs,
with no noise grid (SPEC section 2). The releases can also be rounded onto a lattice,
keeping the mean (``lattice``, :mod:`accountant.buckets.analytic_lattice`), which the engine
does from many releases on.

``A`` is the noise centred at 0, ``B`` the noise centred at ``s``, ``L(x) = ln a(x)/b(x)``.
Each family maps a loss ``l`` to a coordinate ``alpha l + beta`` per side (A or B) in
which the side's mass is a known function of an interval:

* Gaussian, ``mu = s/sigma``: ``L = mu^2/2 + mu Y`` with ``Y = -x/sigma`` standard normal
  under A, and ``L = mu Y' - mu^2/2`` with ``Y' = (s - x)/sigma`` standard normal under B,
  so ``alpha = 1/mu``, ``beta = -mu/2`` (A) or ``+mu/2`` (B) and the masses are normal
  masses. Truncation to ``[-r, r]`` restricts ``Y`` to ``[-rho, rho - mu]`` and ``Y'`` to
  ``[mu - rho, rho]`` (``rho = r/sigma``: the finite-loss outcomes ``[s-r, r]``), each
  divided by ``Z = Phi(rho) - Phi(-rho)``.
* Laplace, ``t = s/b``, coordinate = loss: ``L = t`` for ``x <= 0`` and ``L = -t`` for
  ``x >= s`` (point masses), ``L = (s - 2x)/b`` in between, where A and B have the loss
  densities ``e^((L - t)/2)/(4Z)`` and ``e^(-(L + t)/2)/(4Z)``: a loss interval
  ``(l1, l2]`` has A-mass ``e^((l2 - t)/2)(1 - e^(-(l2 - l1)/2))/(2Z)`` and B-mass
  ``e^(-(l1 + t)/2)(1 - e^(-(l2 - l1)/2))/(2Z)``. Truncation to ``[-r, r]``
  (``Z = 1 - e^(-r/b)``) clips the middle to ``[max(0, s-r), min(s, r)]`` and scales the
  point masses by ``1 - e^(-(r-s)/b)`` (none for ``s >= r``).

Both noises are symmetric: the reflection ``x -> s - x`` swaps A and B and maps ``L`` to
``-L``, so the B/A loss distribution under B equals the A/B one under A
(:meth:`_AnalyticRelease.same_directions`). Outcomes only A can produce are
distinguishing (``omega`` from the mechanism); those only B can produce never occur
under A and are left out.

Error model (:mod:`accountant.buckets.bucketed`): each stored mass is within
``relative_error`` of the exact mass of the exact real bucket
``(anchor + (J-1) width, anchor + J width]``. Masses come from a bucket's lower edge and
its width (never as a difference of two CDF values), in log space. The arguments carry
rounding of at most ``delta`` (:meth:`_AnalyticRelease._rounding`): a translation of the
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
from typing import Any

import attrs
import numpy as np
from scipy.special import log_ndtr

from accountant.buckets.analytic_lattice import gaussian_law, lattice_release
from accountant.buckets.bucketed import UNIT_ROUNDOFF, BucketBudgetError, BucketedPLD
from accountant.buckets.dpsgd import SubsampledGaussianRelease, release_of
from accountant.buckets.laplace_lattice import laplace_parts
from accountant.buckets.sources import LossStatistics
from accountant.buckets.tails import TailMoments
from accountant.gauss_numerics import (
    gl_moments,
    log1mexp,
    log1mexp_scalar,
    log_gauss_mass,
    log_gauss_mass_scalar,
    logsumexp_scalar,
)
from accountant.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    TruncatedGaussianMechanism,
    TruncatedLaplaceMechanism,
)
from accountant.validation import check_one_direction

__all__ = ["BASE_ERROR", "analytic_release"]

U = UNIT_ROUNDOFF
#: Relative error of the log-space mass routines on given float arguments beyond the
#: ``O(u z^2)`` of large normal arguments (erfcx, erf, quadrature, and ``exp`` of log-masses
#: down to ``ln`` of widths ~1e-40), with margin over the mpmath sweeps in the tests.
BASE_ERROR = 256.0 * U
#: Any float mass below the normal range (``2^-1022``) is within this of the truth.
_TINY = 2.3e-308
_LOG_TINY = math.log(2.2250738585072014e-308)
#: Unbounded (Gaussian) tails are cut at no less than this A-mass.
MIN_TAIL = 1e-300
#: Relative slack on the cut tail masses (their routines are far more accurate).
LOST_SLACK = 1e-6
#: A tail cut that would keep all but this fraction of a bounded loss range is skipped.
SNAP = 1e-6


def analytic_release(mechanism: Any) -> _AnalyticRelease | SubsampledGaussianRelease | None:
    """A release source for an analytic mechanism, or ``None`` if it is not one."""
    if (subsampled := release_of(mechanism)) is not None:
        return subsampled
    if isinstance(mechanism, GaussianMechanism):
        return _GaussianRelease(mechanism, math.inf)
    if isinstance(mechanism, TruncatedGaussianMechanism):
        return _GaussianRelease(mechanism, mechanism.bound)
    if isinstance(mechanism, LaplaceMechanism):
        return _LaplaceRelease(mechanism, math.inf)
    if isinstance(mechanism, TruncatedLaplaceMechanism):
        return _LaplaceRelease(mechanism, mechanism.bound)
    return None


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


class _AnalyticRelease:
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
            return self._log_tail(float(b if a is None else a), below=a is None)
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
        abs_a = np.where(log_a < _LOG_TINY, _TINY, 0.0)
        abs_b = np.where(log_b < _LOG_TINY, _TINY, 0.0)
        low_edge = Fraction(anchor) + (first - 1) * Fraction(width)
        high_edge = Fraction(anchor) + last * Fraction(width)
        cuts = [self._log_between(None, low_edge, "A"), self._log_between(high_edge, None, "A")]
        for loss, log_pa, log_pb in self._points:
            j = math.ceil((loss - Fraction(anchor)) / Fraction(width)) - first
            if 0 <= j < mass_a.size:
                mass_a[j] += math.exp(log_pa)
                mass_b[j] += math.exp(log_pb)
                abs_a[j] += _TINY if log_pa < _LOG_TINY else 0.0
                abs_b[j] += _TINY if log_pb < _LOG_TINY else 0.0
            else:
                cuts.append(log_pa)
        lost = math.fsum(math.exp(c) * (1.0 + LOST_SLACK) + _TINY for c in cuts if c > -math.inf)
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
            error_a=1.01 * float(np.linalg.norm(abs_a)),
            error_b=1.01 * float(np.linalg.norm(abs_b)),
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
        keeping the mean (:mod:`accountant.buckets.analytic_lattice`; both directions alike)."""
        stats = self.statistics(direction, tail_mass)
        part, atoms = self._lattice_parts()
        logs = self.mechanism.mass_logs("A/B")
        return lattice_release(
            part, atoms, "A/B", width, anchor, stats, logs, max_buckets, self._lattice_moments
        )


class _GaussianRelease(_AnalyticRelease):
    """(Truncated) Gaussian: coordinates ``Y = l/mu - mu/2`` (A), ``Y' = l/mu + mu/2`` (B)."""

    def __init__(self, mechanism: Any, bound: float):
        super().__init__(mechanism)
        s, sigma = Fraction(mechanism.sensitivity), Fraction(mechanism.sigma)
        self._mu = mechanism.sensitivity / mechanism.sigma
        self._bound = bound
        self._alpha = sigma / s
        self._beta = {"A": -s / (2 * sigma), "B": s / (2 * sigma)}
        if math.isinf(bound):
            self._support = {"A": (None, None), "B": (None, None)}
            self._log_z = 0.0
        else:
            r = Fraction(bound)
            self._support = {"A": (-r / sigma, (r - s) / sigma), "B": ((s - r) / sigma, r / sigma)}
            rho = bound / mechanism.sigma
            self._log_z = log_gauss_mass_scalar(-rho, rho, 2.0 * rho)
        top = mechanism.max_finite_loss("A/B")
        centre, mu = 0.5 * self._mu**2, self._mu
        self._bracket = (max(-top, centre - 40.0 * mu), min(top, centre + 40.0 * mu))
        self._points = []

    def _lattice_parts(self) -> tuple:
        return gaussian_law(self.mechanism, self._bound, self._log_z), []

    def _log_interval(self, lo, hi, width, side: str) -> np.ndarray:
        return log_gauss_mass(lo, hi, width) - self._log_z

    def _log_tail(self, bound: float, below: bool) -> float:
        return float(log_ndtr(bound if below else -bound)) - self._log_z

    def _moments(self) -> tuple[float, float]:
        mu = self._mu
        lo, hi = self._support["A"]
        if lo is None:
            return 0.5 * mu * mu, mu * mu
        lo, hi = float(lo), float(hi)
        peak = min(max(0.0, lo), hi)
        _, mean, variance = gl_moments(
            max(lo, peak - 40.0), min(hi, peak + 40.0), lambda y: -0.5 * y * y, 0.5
        )
        return 0.5 * mu * mu + mu * mean, mu * mu * variance

    def _zmax(self, largest: float, width: float) -> float:
        return (largest + width) / self._mu + 0.5 * self._mu

    def _rounding(self, largest: float, width: float, anchor: float) -> float:
        mu = self._mu
        return 16.0 * U * (self._zmax(largest, width) + mu + (abs(anchor) + width) / mu + 1.0)

    def _relative_error(self, largest: float, width: float, delta: float) -> float:
        # A translation by delta scales a normal mass by at most e^(delta z_max) (1.01 delta
        # z_max); the width's rounding (2u) changes it by 2u (1 + 2 z_max^2) at most, and
        # log_gauss_mass adds BASE_ERROR + 16 u z_max^2 (its test): both below
        # 2 delta (z_max + 1) >= 32 u (z_max + 1)^2.
        return 3.0 * delta * (self._zmax(largest, width) + 1.0) + BASE_ERROR


class _LaplaceRelease(_AnalyticRelease):
    """(Truncated) Laplace: the coordinate is the loss itself on both sides."""

    def __init__(self, mechanism: Any, bound: float):
        super().__init__(mechanism)
        s, b = Fraction(mechanism.sensitivity), Fraction(mechanism.scale)
        self._t = mechanism.sensitivity / mechanism.scale
        self._alpha = Fraction(1)
        self._beta = {"A": Fraction(0), "B": Fraction(0)}
        # the middle x in [max(0, s - r), min(s, r)] has losses within +-top
        top = s / b
        if math.isfinite(bound) and s > 2 * Fraction(bound) - s:
            top = (2 * Fraction(bound) - s) / b
        self._support = {"A": (-top, top), "B": (-top, top)}
        self._bracket = (-float(top), float(top))
        self._log_2z = math.log(2.0)
        if math.isfinite(bound):
            self._log_2z += log1mexp_scalar(-bound / mechanism.scale)
        self._points = []
        if mechanism.sensitivity < bound:  # x <= 0 (loss t) and x >= s (loss -t)
            log_side = -self._log_2z
            if math.isfinite(bound):
                log_side += log1mexp_scalar(-(bound - mechanism.sensitivity) / mechanism.scale)
            t = self._t
            self._points = [(s / b, log_side, log_side - t), (-s / b, log_side - t, log_side)]

    def _lattice_parts(self) -> tuple:
        return laplace_parts(self)

    def _log_interval(self, lo, hi, width, side: str) -> np.ndarray:
        log_span = log1mexp(-0.5 * width) - self._log_2z
        return log_span + (0.5 * (hi - self._t) if side == "A" else -0.5 * (lo + self._t))

    def _log_tail(self, bound: float, below: bool) -> float:  # pragma: no cover - bounded
        raise AssertionError("Laplace losses are bounded")

    def _moments(self) -> tuple[float, float]:
        top = self._bracket[1]
        log_density = -math.log(2.0) - self._log_2z - 0.5 * self._t
        mass, mean, variance = gl_moments(
            max(-top, top - 200.0), top, lambda x: 0.5 * x + log_density, 1.0
        )
        parts = [(mass, mean, variance)] + [
            (math.exp(a), float(p), 0.0) for p, a, _ in self._points
        ]
        total = math.fsum(m for m, _, _ in parts)
        mean = math.fsum(m * x for m, x, _ in parts) / total
        variance = math.fsum(m * (v + (x - mean) ** 2) for m, x, v in parts) / total
        return mean, variance

    def _rounding(self, largest: float, width: float, anchor: float) -> float:
        return 8.0 * U * (largest + self._t + abs(anchor) + width + 1.0)

    def _relative_error(self, largest: float, width: float, delta: float) -> float:
        # the exponents (hi - t)/2 and -(lo + t)/2 are off by at most delta/2
        return 2.0 * delta + BASE_ERROR
