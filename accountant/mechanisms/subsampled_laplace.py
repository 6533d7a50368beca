"""Poisson-subsampled Laplace noise (dp_accounting's ``PoissonSampledDpEvent(q,
LaplaceDpEvent(b))``), without a grid: the Extended MA's log moments and the PrivacyBuckets
release, bucketed or rounded onto a lattice, from closed-form masses.

One release adds Laplace noise of scale ``b`` to a sum of values of L1 norm at most ``C``
(the clip) that contains the differing record with probability ``q``. As for the
subsampled Gaussian (:mod:`accountant.mechanisms.subsampled_gaussian`) the worst-case pair
(SPEC section 1, add/remove) is::

    A = Lap(0, b),    B = (1 - q) A + q S,    S = Lap(C, b).

**The loss coordinate.** With ``t = C / b`` let ``l = ln a(x)/a(x - C) = (|x - C| - |x|)/b``,
the Laplace mechanism's own loss, in ``[-t, t]``. Where both densities live ``b/a = 1 - q +
q e^(-l) = e^(f(l))`` (``f`` = :func:`~accountant.numerics.subsampled_loss.loss_f`), so

    L_{A/B} = -f(l) = -ln(1 - q + q e^(-l)),        L_{B/A} = f(l),

increasing (decreasing) in ``l``: the pair is a monotone map of ``l``, and ``l`` is all an
outcome says about ``A`` against ``B``. Under ``A``, ``l`` has the atoms ``l = t`` (``x <= 0``,
mass ``1/2``) and ``l = -t`` (``x >= C``, mass ``e^(-t)/2``) and the density
``e^((l - t)/2)/4`` on ``(-t, t)``; under ``S`` the mirror image: atoms ``e^(-t)/2`` at ``t``,
``1/2`` at ``-t``, density ``e^(-(l + t)/2)/4``. So an ``l`` interval ``[l1, l2]`` inside
``(-t, t)`` has

    A-mass  e^((l2 - t)/2) (1 - e^(-(l2 - l1)/2)) / 2,
    S-mass  e^(-(l1 + t)/2) (1 - e^(-(l2 - l1)/2)) / 2,

and ``B = (1 - q) A + q S``. The A/B losses fill ``[L_bot, L_top]``, ``L_top = -f(t)``,
``L_bot = -f(-t)``, both atoms; no outcome is distinguishing (``omega = 0`` both ways).

Log moments (SPEC section 3; ``E_B[(B/A)^lambda] = E_A[(B/A)^(1 + lambda)]``)::

    Gamma_{A/B}(lambda) = ln[ 1/2 e^(lambda L_top) + e^(-t)/2 e^(lambda L_bot)
                              + ∫ e^((l-t)/2)/4 e^(-lambda f(l)) dl ],
    Gamma_{B/A}(lambda) = ln[ 1/2 e^((1+lambda) f(t)) + e^(-t)/2 e^((1+lambda) f(-t))
                              + ∫ e^((l-t)/2)/4 e^((1+lambda) f(l)) dl ]

over ``l`` in ``(-t, t)``, by adaptive Gauss-Legendre in log space with a stated error
(:func:`exponential_tilt_integral`).

**Buckets** (:meth:`SubsampledLaplaceRelease.bucket`): a loss bucket ``(P, P + w]`` maps to the
``l`` interval ``[h(P), h(P + w)]`` (``h`` =
:func:`~accountant.numerics.subsampled_loss.inverse_loss`, with the error bounds of
:func:`~accountant.mechanisms.subsampled_gaussian_masses.edge_ell`);
inside the support its masses come from the lower end and the width ``h(P + w) - h(P) =
ln(1 + e^(h(P + w) - P) (1 - e^(-w)) / q)``, computed with a small relative error, and the
exponential densities turn a translation by ``d`` into a factor ``e^(+-d/2)``; buckets meeting
a support end are computed from the clipped ends with the displacement bound (each end off
by ``d`` moves at most ``d/4`` of mass: no density exceeds ``1/4``). The atoms go to the
buckets of their losses, whose intervals are widened by the atoms' rounding.

**Lattice** (:meth:`SubsampledLaplaceRelease.lattice`): the continuous part split onto the
lattice by the dominating ("connect-the-dots") split that keeps every outcome's A-mass and
B-mass, as :mod:`accountant.buckets.analytic_lattice` does for normal laws
(:mod:`accountant.buckets.lattice_quadrature`): each interval ``[a, b]`` of ``l`` between two
lattice points gives ``m+ = ∫ t p`` to the upper and ``m- = ∫ (1 - t) p`` to the lower one,

    t = (1 - e^-D_a) / (1 - e^-W),      1 - t = e^-D_a (1 - e^-D_b) / (1 - e^-W)

(mirrored, for the B/A release whose loss is ``-L``: ``t = e^-D_b (1 - e^-D_a) / (1 - e^-W)``,
``1 - t = (1 - e^-D_b) / (1 - e^-W)``), ``D_a = c_a - ln(1 + s(a) expm1(-(l - a)))``,
``D_b = c_b + ln(1 + s(b) expm1(b - l))``, ``W = D_a(b)`` (``s(l) = q e^(-l)/(1 - q + q e^(-l))``
= :func:`~accountant.numerics.subsampled_loss.tilt_share`), by 16-point Gauss-Legendre on
panels of half-width ``eta <= 1/8`` with Trefethen's bound (*Approximation Theory and
Approximation Practice*, Thm 19.3: ``E <= (64/15) eta M rho^(-2n-2) / (1 - rho^(-2))`` for
``F`` analytic with ``|F| <= M`` on the disc of radius ``R = rho eta``, here ``rho = 4``). On
that disc (``|Im z| <= 1/2``) ``|s(z)| <= 1.361 e^R s(a)`` (as in
:mod:`accountant.buckets.lattice_quadrature`), so ``|D_a|, |D_b| <= c + (b - a + R) 1.361 e^R
s(a)`` and ``Re D_a, Re D_b >= -R 1.361 e^R s(a) = -sigma``; with ``|1 - e^-D| <= |D|
e^max(0, -Re D)`` and ``1 - e^-W >= W e^(-W/2)``, ``|t|, |1 - t| <= max |D| e^(2 sigma +
W/2) / W``; the density is at most its value at the disc's real ends. The merged masses of
each interval (:mod:`accountant.buckets.merged_lattice`) are its two split masses, and its
B-mass times ``e^(g_K)`` from them through the points' distances from the lattice, as
:func:`~accountant.buckets.analytic_lattice.round_law` gives them.
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs
import numpy as np

from accountant.buckets.analytic_lattice import Atom, LawRounding, lattice_release, split_errors
from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.sources import LossStatistics
from accountant.buckets.tails import TailMoments
from accountant.errors import InvalidInputError
from accountant.mechanisms.subsampled_gaussian_masses import edge_ell
from accountant.numerics.directed import MassLogs, up
from accountant.numerics.floats import TINY, UNIT_ROUNDOFF
from accountant.numerics.lazy import special
from accountant.numerics.norms import euclidean_norm
from accountant.numerics.quadrature import gauss_legendre
from accountant.numerics.subsampled_loss import inverse_loss, loss_f, tilt_share
from accountant.validation import (
    check_lambda,
    check_one_direction,
    check_positive_real,
    check_probability,
)

__all__ = [
    "SubsampledLaplace",
    "SubsampledLaplaceRelease",
    "TiltIntegral",
    "exponential_tilt_integral",
]

U = UNIT_ROUNDOFF
_GL24 = gauss_legendre(24)
_GL16 = gauss_legendre(16)
#: Panels of the lattice quadrature have half-width at most this (so ``R = RHO eta <= 1/2``).
PANEL_HALF_WIDTH = 0.125
#: Disc radius of the lattice quadrature in panel half-widths.
RHO = 4.0
#: ``(64/15) rho^(-2n-2) / (1 - rho^(-2))`` for ``n = 16``, ``rho = 4``.
_TREFETHEN = 64.0 / 15.0 * RHO ** (-34.0) / (1.0 - RHO**-2.0)
#: Relative tolerance of the log-moment quadrature (the adaptive loop stops below it).
_TOLERANCE = 1e-15
_MAX_PANELS = 1 << 12


def _positive_scale(value: float) -> float:
    return check_positive_real("scale", value)


def _positive_clip(value: float) -> float:
    return check_positive_real("clip", value)


def _rate(value: object) -> float:
    q = check_probability("sampling_rate", value)
    if q == 1.0:
        raise InvalidInputError(
            "sampling_rate must lie in (0, 1) (q = 1 is the Laplace mechanism: "
            "accountant.mechanisms.LaplaceMechanism), got 1.0"
        )
    return q


@attrs.frozen
class TiltIntegral:
    """``ln`` of ``I = ∫ e^(v(l)) dl``, the mean of ``f(l)`` under ``e^v / I``, and a bound on the
    relative error of ``I``."""

    log_value: float
    mean_f: float
    relative_error: float


def exponential_tilt_integral(c: float, q: float, t: float) -> TiltIntegral:
    """``∫_{-t}^{t} e^(v(l)) dl`` for ``v(l) = (l - t)/2 - ln 4 + c f(l)`` (module docstring),
    by adaptive composite 24-point Gauss-Legendre in log space.

    ``v' = 1/2 - c s(l)`` and ``v'' = c s (1 - s)``: for ``c <= 0`` (A/B) ``v`` rises to its
    maximum at ``t``; for ``c > 0`` (B/A) it is convex, largest at an end. Panels are graded
    from both ends (the first a quarter of the scale on which ``v`` changes by 1 there, each
    next one twice as wide, at most ``t/8``), then each panel whose 24-point value differs
    from the sum over its halves by more than its share of ``1e-15`` of the integral is
    halved (at most 4096 panels). Stated error: the summed differences and ``16 u`` times the
    largest ``|v| + |c f| + |l|`` among the nodes that carry weight (the rounding of ``v``)."""

    def value(ell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f = loss_f(ell, q)
        return 0.5 * (ell - t) - math.log(4.0) + (c * f if c != 0.0 else 0.0), f

    def scale(ell: float) -> float:
        s = float(tilt_share(ell, q))
        return max(abs(0.5 - c * s), math.sqrt(abs(c) * s * (1.0 - s)), 1e-300)

    edges = [-t]
    for end, sign in ((-t, 1.0), (t, -1.0)):
        size, here = min(0.25 / scale(end), t / 8.0), end
        while sign * (here - 0.0) < 0.0:
            here = here + sign * size
            if sign * here >= 0.0:
                break
            edges.append(here)
            size = min(2.0 * size, t / 8.0)
    grid = np.unique(np.array([*edges, 0.0, t]))
    lo_p, hi_p = grid[:-1], grid[1:]
    coarse = _log_gl(value, lo_p, hi_p)[0]
    for _ in range(60):
        mid = 0.5 * (lo_p + hi_p)
        left, right = _log_gl(value, lo_p, mid), _log_gl(value, mid, hi_p)
        fine = np.logaddexp(left[0], right[0])
        top = float(np.max(fine))
        diff = np.abs(np.exp(fine - top) - np.exp(coarse - top))
        total = float(np.sum(np.exp(fine - top)))
        bad = (diff > 0.1 * _TOLERANCE * total / fine.size) & (mid > lo_p) & (mid < hi_p)
        if float(np.sum(diff)) <= _TOLERANCE * total or fine.size >= _MAX_PANELS or not bad.any():
            break
        keep = ~bad
        lo_p = np.concatenate([lo_p[keep], lo_p[bad], mid[bad]])
        hi_p = np.concatenate([hi_p[keep], mid[bad], hi_p[bad]])
        coarse = np.concatenate([fine[keep], left[0][bad], right[0][bad]])
    log_terms = np.concatenate([left[1], right[1]], axis=1)
    nodes = np.concatenate([left[2], right[2]], axis=1)
    f_values = np.concatenate([left[3], right[3]], axis=1)
    log_value = top + math.log(total)
    weights = np.exp(log_terms - log_value)
    mean_f = float(np.sum(weights * f_values))
    carried = weights > 1e-30
    size = np.abs(nodes[carried]) + abs(c) * np.abs(f_values[carried]) + t + 2.0
    rounding = 16.0 * U * (float(np.max(size, initial=0.0)) + math.log2(weights.size) + 4.0)
    return TiltIntegral(log_value, mean_f, float(np.sum(diff)) / total + rounding)


def _log_gl(value, lo: np.ndarray, hi: np.ndarray):
    """Per panel: ``ln`` of the 24-point Gauss-Legendre integral, and the node terms."""
    half = 0.5 * (hi - lo)
    ell = (0.5 * (lo + hi))[:, None] + half[:, None] * _GL24[0]
    values, f = value(ell)
    with np.errstate(divide="ignore"):
        log_terms = values + np.log(half[:, None] * _GL24[1])
    return special.logsumexp(log_terms, axis=1), log_terms, ell, f


@attrs.frozen
class Geometry:
    """The numbers every computation of one mechanism shares (units of the clip).

    ``t = clip/scale`` (within ``t_error``); ``top = L_top = -f(t)``, ``bottom = L_bot = -f(-t)``
    (A/B losses of the atoms, each within ``loss_error``); ``log_tail = -t`` (``ln`` of twice
    the A-mass of the atom at ``-t``)."""

    t: float
    t_error: float
    q: float
    top: float
    bottom: float
    loss_error: float

    def numerator_atoms(self, direction: str) -> tuple[tuple[float, float], tuple[float, float]]:
        """The atoms' masses ``(at l = t, at l = -t)``, of the numerator and of the
        denominator: A has ``(1/2, e^(-t)/2)``, B ``((1 - q + q e^(-t))/2, ((1 - q) e^(-t) +
        q)/2)``."""
        q, tail = self.q, math.exp(-self.t)
        a = (0.5, 0.5 * tail)
        b = (0.5 * ((1.0 - q) + q * tail), 0.5 * ((1.0 - q) * tail + q))
        return (a, b) if direction == "A/B" else (b, a)

    @property
    def atom_error(self) -> float:
        """Relative error of the atoms' masses (``e^(-t)`` off by ``t_error`` and its own
        rounding, a product and a sum)."""
        return self.t_error + 2.0 * U * (self.t + 4.0)


@attrs.frozen(kw_only=True)
class SubsampledLaplace:
    """Poisson-subsampled Laplace noise of ``scale`` on values of L1 norm at most ``clip``
    (module docstring for the pair, the losses and the formulas).

    ``scale``: the noise scale ``b`` (dp_accounting's ``LaplaceDpEvent(noise_multiplier)``
    with ``clip = 1``). ``sampling_rate``: ``q`` in ``(0, 1)``. ``ExtendedMA`` and
    ``PrivacyBuckets`` take it directly.
    """

    scale: float = attrs.field(converter=_positive_scale)
    sampling_rate: float = attrs.field(converter=_rate)
    clip: float = attrs.field(default=1.0, converter=_positive_clip)
    _cache: dict = attrs.field(factory=dict, init=False, repr=False, eq=False)

    @property
    def description(self) -> str:
        """E.g. ``subsampled Laplace (scale=2, q=0.01), clip 1``."""
        return (
            f"subsampled Laplace (scale={self.scale:g}, q={self.sampling_rate:g}), "
            f"clip {self.clip:g}"
        )

    @property
    def geometry(self) -> Geometry:
        """The shared numbers (:class:`Geometry`)."""
        if "geometry" not in self._cache:
            t = self.clip / self.scale
            q = self.sampling_rate
            t_error = 2.0 * U * t
            top, bottom = (-float(loss_f(v, q)) for v in (t, -t))
            scale = max(abs(top), abs(bottom)) + t + abs(math.log(q)) + 2.0 - math.log1p(-q)
            # loss_f's rounding (SmoothLaw.loss_error's bound) and t's, through |f'| <= 1
            loss_error = 8.0 * U * (scale + 1.0 / (1.0 - q)) + t_error
            self._cache["geometry"] = Geometry(t, t_error, q, top, bottom, loss_error)
        return self._cache["geometry"]

    # -- LogMomentSource ---------------------------------------------------------------

    def distinguishing_mass(self, direction: str) -> float:
        """``omega = 0``: both sides have full support."""
        check_one_direction("direction", direction)
        return 0.0

    def mass_logs(self, direction: str) -> MassLogs:
        """Total mass exactly 1, no distinguishing mass."""
        check_one_direction("direction", direction)
        return MassLogs()

    def max_finite_loss(self, direction: str) -> float:
        """``L_top`` (A/B) or ``-L_bot = ln(1 - q + q e^t)`` (B/A), moved up past their
        rounding."""
        direction = check_one_direction("direction", direction)
        g = self.geometry
        top = g.top if direction == "A/B" else -g.bottom
        return up(top + g.loss_error, 4)

    def _moments(self, lam: float, direction: str) -> tuple[float, float, float]:
        """``(Gamma, dGamma/dlambda, error bound)`` at ``lam``, cached."""
        key = (lam, direction)
        if key in self._cache:
            return self._cache[key]
        g = self.geometry
        c = -lam if direction == "A/B" else 1.0 + lam
        integral = exponential_tilt_integral(c, g.q, g.t)
        sign = -1.0 if direction == "A/B" else 1.0  # the loss is sign * f
        f_top, f_bottom = -g.top, -g.bottom
        logs = [
            integral.log_value,
            -math.log(2.0) + c * f_top,
            -math.log(2.0) - g.t + c * f_bottom,
        ]
        gamma = float(special.logsumexp(logs))
        shares = [math.exp(v - gamma) for v in logs]
        slope = sign * (shares[0] * integral.mean_f + shares[1] * f_top + shares[2] * f_bottom)
        slope = min(slope, self.max_finite_loss(direction))
        relative = min(integral.relative_error, 0.5)
        error = shares[0] * relative / (1.0 - relative) + (shares[1] + shares[2]) * g.atom_error
        # the atoms' exponents c f off by |c| loss_error
        error += (shares[1] + shares[2]) * abs(c) * g.loss_error
        error += 64.0 * U * (abs(gamma) + (lam + 1.0) * abs(slope))
        if len(self._cache) > 4096:
            self._cache.clear()
            self._cache["geometry"] = g
        self._cache[key] = (gamma, slope, error)
        return gamma, slope, error

    def log_moment(self, lam: float, direction: str) -> float:
        """``Gamma_lambda`` in ``direction`` (module docstring)."""
        lam, direction = check_lambda("lam", lam), check_one_direction("direction", direction)
        return self._moments(lam, direction)[0]

    def log_moment_slope(self, lam: float, direction: str) -> float:
        """``dGamma/dlambda = E_w[L]`` under the tilted weights, from the same quadrature."""
        lam, direction = check_lambda("lam", lam), check_one_direction("direction", direction)
        return self._moments(lam, direction)[1]

    def log_moment_error(self, lam: float, direction: str) -> float:
        """A bound on the absolute error of :meth:`log_moment`: the quadrature's stated
        relative error, the atoms' (masses and exponents), and ``64 u (|Gamma| + (lambda + 1)
        |Gamma'|)`` for the rounding of the terms (as the other mechanisms)."""
        lam, direction = check_lambda("lam", lam), check_one_direction("direction", direction)
        return self._moments(lam, direction)[2]

    def bucket_release(self) -> SubsampledLaplaceRelease:
        """The PrivacyBuckets release of one step (no grid)."""
        return SubsampledLaplaceRelease(self)


class SubsampledLaplaceRelease:
    """One release of a :class:`SubsampledLaplace` (the directions differ)."""

    def __init__(self, mechanism: SubsampledLaplace):
        self.mechanism = mechanism
        self.description = mechanism.description
        self._g = mechanism.geometry
        self._stats: dict[tuple[str, float], LossStatistics] = {}
        self._lattice_moments: dict = {}  # tail moments of lattice(), kept between passes

    def same_directions(self) -> bool:
        """``False``: A/B and B/A differ (the pair is not symmetric)."""
        return False

    def _weights(self, direction: str) -> tuple[tuple[float, float], tuple[float, float]]:
        """Numerator and denominator weights of the sides (A, S) in ``direction``."""
        q = self._g.q
        if direction == "A/B":
            return (1.0, 0.0), (1.0 - q, q)
        return (1.0 - q, q), (1.0, 0.0)

    # -- statistics -----------------------------------------------------------------------

    def _moments(self, direction: str) -> tuple[float, float]:
        """Mean and variance of the direction loss under the numerator (24-point
        Gauss-Legendre on pieces of ``t/64`` of ``l``, plus the atoms)."""
        g = self._g
        num = self._weights(direction)[0]
        pieces = 64
        step = 2.0 * g.t / pieces
        ell = (-g.t + step * np.arange(pieces)[:, None] + step * (_GL24[0] + 1.0) / 2.0).ravel()
        w = np.tile(0.5 * step * _GL24[1], pieces)
        density = num[0] * np.exp(0.5 * (ell - g.t)) + num[1] * np.exp(-0.5 * (ell + g.t))
        weights = w * density / 4.0
        loss = -loss_f(ell, g.q)
        atoms = g.numerator_atoms(direction)[0]
        weights = np.append(weights, atoms)
        loss = np.append(loss, [g.top, g.bottom])
        if direction == "B/A":
            loss = -loss
        total = float(np.sum(weights))
        mean = float(np.dot(weights, loss)) / total
        return mean, float(np.dot(weights, (loss - mean) ** 2)) / total

    def _range(self, direction: str) -> tuple[float, float]:
        """The whole loss range (the atoms at both ends carry ``>= e^(-t)/2`` each: no
        tail is cut), widened by the atoms' rounding."""
        g = self._g
        low, high = g.bottom - 2.0 * g.loss_error, g.top + 2.0 * g.loss_error
        return (low, high) if direction == "A/B" else (-high, -low)

    def statistics(self, direction: str, tail_mass: float) -> LossStatistics:
        """Mean and variance of the loss (quadrature), the whole loss range, anchor 0, no
        lattice."""
        check_one_direction("direction", direction)
        key = (direction, float(tail_mass))
        if key not in self._stats:
            mean, variance = self._moments(direction)
            low, high = self._range(direction)
            self._stats[key] = LossStatistics(mean, variance, low, high, 0.0, None)
        return self._stats[key]

    # -- buckets --------------------------------------------------------------------------

    def _continuous(self, edges: np.ndarray, d_edges: np.ndarray, width: float):
        """Per side (A, S): masses and absolute error bounds of the continuous part in the
        A/B loss buckets ``[edges[i], edges[i + 1]]`` (ascending; exact edges within
        ``d_edges``)."""
        g = self._g
        q, t = g.q, g.t
        ell, d_ell = edge_ell(edges, d_edges, q)
        p, dp, top_edge, d_top = edges[:-1], d_edges[:-1], edges[1:], d_edges[1:]
        ell_lo, ell_hi, d_lo, d_hi = ell[:-1], ell[1:], d_ell[:-1], d_ell[1:]
        slack = g.loss_error
        interior = (p - dp > g.bottom + slack) & (top_edge + d_top < g.top - slack)
        empty = (top_edge + d_top < g.bottom - slack) | (p - dp > g.top + slack)
        clipped = np.flatnonzero(~interior & ~empty)
        masses = [np.zeros(p.size), np.zeros(p.size)]
        errors = [np.zeros(p.size), np.zeros(p.size)]
        inner = np.flatnonzero(interior)
        if inner.size:
            lo, d_low, hi, d_high = ell_lo[inner], d_lo[inner], ell_hi[inner], d_hi[inner]
            pi = p[inner]
            log_w = math.log(-math.expm1(-width))
            log_q = math.log(q)
            with np.errstate(over="ignore"):
                span = np.logaddexp(0.0, hi - pi + (log_w - log_q))
            # error of the argument of logaddexp, which is the relative error of span
            sizes = np.abs(hi) + np.abs(pi) + (abs(log_w) + abs(log_q) + 3.0)
            eps = d_high + dp[inner] + 4.0 * U * sizes
            factor = -np.expm1(-0.5 * span)
            mass_a = 0.5 * np.exp(0.5 * (lo + span - t)) * factor
            mass_s = 0.5 * np.exp(-0.5 * (lo + t)) * factor
            shift_a = 0.5 * (d_low + eps * span + g.t_error + 4.0 * U * (np.abs(lo) + span + t))
            shift_s = 0.5 * (d_low + g.t_error + 4.0 * U * (np.abs(lo) + t))
            rel_a = (np.expm1(shift_a) + eps + 8.0 * U) * (1.0 + 1e-6)
            rel_s = (np.expm1(shift_s) + eps + 8.0 * U) * (1.0 + 1e-6)
            masses[0][inner], errors[0][inner] = mass_a, rel_a * mass_a
            masses[1][inner], errors[1][inner] = mass_s, rel_s * mass_s
        if clipped.size:
            below = p[clipped] + dp[clipped] < g.bottom - slack
            above = top_edge[clipped] - d_top[clipped] > g.top + slack
            lo = np.where(below, -t, np.clip(ell_lo[clipped], -t, t))
            hi = np.where(above, t, np.clip(ell_hi[clipped], -t, t))
            d_low = np.where(below, g.t_error, np.minimum(d_lo[clipped], 2.0 * t) + g.t_error)
            d_high = np.where(above, g.t_error, np.minimum(d_hi[clipped], 2.0 * t) + g.t_error)
            d_low = np.where(np.isfinite(d_low), d_low, 2.0 * t)
            d_high = np.where(np.isfinite(d_high), d_high, 2.0 * t)
            span = np.maximum(hi - lo, 0.0)
            factor = -np.expm1(-0.5 * span)
            mass_a = 0.5 * np.exp(0.5 * (hi - t)) * factor
            mass_s = 0.5 * np.exp(-0.5 * (lo + t)) * factor
            # displacement: each end off by d moves at most d/4 (densities <= 1/4)
            moved = 0.25 * (d_low + d_high)
            rounding = 16.0 * U + 4.0 * U * (np.abs(lo) + np.abs(hi) + t)
            for side, mass in ((0, mass_a), (1, mass_s)):
                masses[side][clipped] = mass
                errors[side][clipped] = moved + rounding * mass
        return list(zip(masses, errors, strict=True))

    def bucket(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """Buckets ``J`` holding the losses in ``(anchor + (J-1) width, anchor + J width]``
        over the whole loss range (nothing is lost)."""
        stats = self.statistics(direction, tail_mass)
        first = math.ceil((Fraction(stats.low) - Fraction(anchor)) / Fraction(width))
        last = max(first, math.ceil((Fraction(stats.high) - Fraction(anchor)) / Fraction(width)))
        if last - first + 1 > max_buckets:
            raise BucketBudgetError(last - first + 1)
        edges = anchor + np.arange(first - 1, last + 1, dtype=np.float64) * width
        d_edges = 4.0 * U * (abs(anchor) + np.abs(edges) + width)
        flip = direction == "B/A"
        ab_edges, ab_d = (-edges[::-1], d_edges[::-1]) if flip else (edges, d_edges)
        sides = self._continuous(ab_edges, ab_d, width)
        masses, errors = [], []
        for weights in self._weights(direction):
            mass = weights[0] * sides[0][0] + weights[1] * sides[1][0]
            error = weights[0] * sides[0][1] + weights[1] * sides[1][1] + 4.0 * U * mass
            masses.append(mass[::-1].copy() if flip else mass)
            errors.append(error[::-1].copy() if flip else error)
        g = self._g
        atoms = g.numerator_atoms(direction)
        sign = 1.0 if direction == "A/B" else -1.0
        lost = 0.0
        for position, loss in enumerate((g.top, g.bottom)):
            j = math.ceil((Fraction(sign * loss) - Fraction(anchor)) / Fraction(width)) - first
            pair = (atoms[0][position], atoms[1][position])
            if not 0 <= j < masses[0].size:  # pragma: no cover - the range holds both atoms
                lost += pair[0] * (1.0 + g.atom_error) + TINY
                continue
            for side in (0, 1):
                masses[side][j] += pair[side]
                errors[side][j] += (g.atom_error + 4.0 * U) * pair[side]
        relative = split_errors(masses, errors)
        absolute = []
        for mass, error in zip(masses, errors, strict=True):
            excess = np.maximum(error - relative * np.maximum(mass - error, 0.0), 0.0)
            absolute.append(excess + np.where(mass < TINY, TINY, 0.0))
        # the atoms' losses are known within loss_error: every bucket interval is widened
        pad = 4.0 * U * (abs(anchor) + width) + 1.01 * g.loss_error
        bucketed = BucketedPLD(
            width=width,
            first_index=first,
            mass_a=masses[0],
            mass_b=masses[1],
            offset_low=anchor - width - pad,
            offset_high=anchor + pad,
            mass_logs=self.mechanism.mass_logs(direction),
            lost_a=lost,
            relative_error=relative + 2.0 * U,
            error_a=1.01 * float(euclidean_norm(absolute[0])),
            error_b=1.01 * float(euclidean_norm(absolute[1])),
        )
        return attrs.evolve(bucketed, tail_moments=((TailMoments.of(bucketed), 1),))

    # -- lattice --------------------------------------------------------------------------

    def lattice(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """The release rounded onto the lattice ``anchor + J width`` over the whole loss
        range by the dominating split, keeping A- and B-masses
        (:mod:`accountant.buckets.analytic_lattice`, with the split masses of
        :class:`ExponentialSplit`)."""
        stats = self.statistics(direction, tail_mass)
        g = self._g
        numerator = self._weights(direction)[0]
        part = ExponentialSplit(g, numerator)
        masses = g.numerator_atoms(direction)[0]
        atoms = [
            Atom(loss, mass, g.atom_error + 2.0 * U, g.loss_error)
            for loss, mass in zip((g.top, g.bottom), masses, strict=True)
        ]
        logs = self.mechanism.mass_logs(direction)
        return lattice_release(
            part, atoms, direction, width, anchor, stats, logs, max_buckets, self._lattice_moments
        )


class ExponentialSplit:
    """The continuous part of a subsampled Laplace release in the A/B loss scale: ``l`` in
    ``(-t, t)`` with the numerator density ``p(l) = (w_A e^((l - t)/2) + w_S e^(-(l + t)/2))/4``
    and the loss ``L(l) = -f(l)``; :meth:`round_onto` splits it onto a lattice (module
    docstring), as :class:`~accountant.buckets.analytic_lattice.NormalPart` does for normal
    laws."""

    def __init__(self, geometry: Geometry, weights: tuple[float, float]):
        self.g = geometry
        self.weights = weights
        self.q = geometry.q
        self.logit = math.log(geometry.q) - math.log1p(-geometry.q)
        # the float ends stay this far inside the true ones
        self.support_error = 2.0 * geometry.t_error

    def loss(self, ell: np.ndarray) -> np.ndarray:
        return -loss_f(ell, self.q)

    def loss_error(self, ell: np.ndarray, loss: np.ndarray) -> np.ndarray:
        """A bound on ``|L(l) - loss(l)|`` (as
        :meth:`~accountant.buckets.lattice_quadrature.SmoothLaw.loss_error`)."""
        q = self.q
        scale = np.abs(loss) + np.abs(ell) + abs(math.log(q)) + 2.0 - math.log1p(-q)
        if q > 0.5:
            return 8.0 * U * scale
        return 8.0 * U * (scale + 1.0 / (1.0 - q))

    def density(self, ell: np.ndarray) -> np.ndarray:
        t = self.g.t
        w_a, w_s = self.weights
        return 0.25 * (w_a * np.exp(0.5 * (ell - t)) + w_s * np.exp(-0.5 * (ell + t)))

    def round_onto(
        self, anchor: float, k0: int, k1: int, width: float, mirrored: bool = False
    ) -> LawRounding:
        """The dominating split of the continuous part onto ``anchor + K width``,
        ``K = k0 .. k1`` (``mirrored``: in the scale ``-L`` of the B/A release): the
        interval ends are ``x_K = h(g_K)`` clipped to the support (which they stop
        ``support_error`` inside), each interval split between ``P = L(x_K) - c`` and ``Q =
        L(x_{K+1}) + c'`` (``c, c' > 0`` only at a clipped end, keeping ``P``, ``Q`` next to
        their lattice points), the drift measured from the floats, and the merged masses (as
        :func:`~accountant.buckets.analytic_lattice.round_law`)."""
        t = self.g.t
        scaled = np.arange(k0, k1 + 1, dtype=np.float64) * width
        points = anchor + scaled
        point_error = 2.0 * U * (np.abs(scaled) + np.abs(points))
        low = math.nextafter(-t + self.support_error, math.inf)
        high = math.nextafter(t - self.support_error, -math.inf)
        with np.errstate(invalid="ignore"):
            raw = np.maximum.accumulate(inverse_loss(points, self.q))
        below, above = raw < low, raw > high
        ends = np.clip(raw, low, high)
        loss = self.loss(ends)
        diff = loss - points
        miss = (self.loss_error(ends, loss) + point_error + U * np.abs(diff)) * (1.0 + 1e-9)
        c_lo = np.where(below, np.maximum(diff, 0.0), 0.0)
        c_hi = np.where(above, np.maximum(-diff, 0.0), 0.0)
        used = np.flatnonzero(ends[1:] > ends[:-1])
        plus, minus, err_plus, err_minus = self.interval_masses(
            ends[used], ends[used + 1], c_lo[used], c_hi[used + 1], mirrored
        )
        masses, errors = np.zeros(points.size), np.zeros(points.size)
        masses[used] += minus
        masses[used + 1] += plus
        errors[used] += err_minus
        errors[used + 1] += err_plus
        drift = 0.0
        merged, merged_c = np.zeros(points.size), np.zeros(points.size)
        merged_errors, merged_c_errors = np.zeros(points.size), np.zeros(points.size)
        c_relative = 0.0
        if used.size:
            low_gap = diff[used] - c_lo[used]  # P_K - g_K
            high_gap = diff[used + 1] + c_hi[used + 1]  # Q_K - g_{K+1}
            left = np.abs(low_gap) + miss[used]
            right = np.abs(high_gap) + miss[used + 1]
            drift = float(max(np.max(left), np.max(right)))
            # merged: A = m- + m+, C = e^{g_K - P_K} m- + e^{g_K - Q_K} m+ (mirrored:
            # e^{P_K - g_{K+1}} m- + e^{Q_K - g_{K+1}} m+), the exponents within the points'
            # miss and a few ulps of their size (as round_law)
            merged[used] = minus + plus
            merged_errors[used] = err_minus + err_plus
            if mirrored:
                down_factor, up_factor = np.exp(low_gap - width), np.exp(high_gap)
            else:
                down_factor, up_factor = np.exp(-low_gap), np.exp(-(width + high_gap))
            merged_c[used] = down_factor * minus + up_factor * plus
            merged_c_errors[used] = down_factor * err_minus + up_factor * err_plus
            exponent = float(max(np.max(miss[used]), np.max(miss[used + 1])))
            gaps = float(max(np.max(np.abs(low_gap)), np.max(np.abs(high_gap))))
            exponent += 4.0 * U * (width + gaps)
            c_relative = math.expm1(1.01 * exponent) + 4.0 * U
        return LawRounding(
            masses,
            errors,
            drift,
            ends,
            c_lo,
            c_hi,
            merged,
            merged_c,
            merged_errors,
            merged_c_errors,
            c_relative,
        )

    def lost_beyond(self, rounded: LawRounding) -> float:
        """The numerator mass of ``[-t, low end]`` and ``[high end, t]`` (closed form, ends
        moved outwards by ``support_error``), times ``1 + 1e-6``."""
        t = self.g.t
        total = 0.0
        for a, b in (
            (-t - self.support_error, rounded.low_end),
            (rounded.high_end, t + self.support_error),
        ):
            if b > a:
                w_a, w_s = self.weights
                span = -math.expm1(-0.5 * (b - a))
                total += 0.5 * w_a * math.exp(0.5 * (b - t)) * span
                total += 0.5 * w_s * math.exp(-0.5 * (a + t)) * span
        return total * (1.0 + 1e-6) + TINY

    def interval_masses(
        self,
        lo: np.ndarray,
        hi: np.ndarray,
        c_lo: np.ndarray,
        c_hi: np.ndarray,
        mirrored: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(m+, m-, err+, err-)`` of the dominating split of the intervals ``[lo, hi]``
        between ``P = L(lo) - c_lo`` and ``Q = L(hi) + c_hi`` (module docstring; ``mirrored``:
        in the scale ``-L``); the errors are absolute bounds.

        Each interval is cut into equal panels of half-width at most
        :data:`PANEL_HALF_WIDTH`, each integrated by 16-point Gauss-Legendre with nodes
        placed by their offset from the nearer interval end (so ``l - a`` and ``b - l`` keep a
        relative error of a few ``u``). Quadrature error per panel: Trefethen's bound with
        ``M`` from the module docstring. Rounding (relative): ``D`` (``e_D = e^W (err_s +
        4u) + 4u``, ``err_s = 4u (|logit q| + |l| + 2)``) through the weights (``-expm1(-D)``
        has condition at most 1, ``exp(-D)`` turns it into ``D e_D <= W e_D``: ``e_D (1 +
        W)``), ``W`` (the same plus the low part of ``b - a``) through ``-expm1(-W)``, the
        density (``u (|l| + t + 8)``), the weights' own operations (``16 u``) and the sums
        (``32 u``)."""
        if lo.size == 0:
            return (np.zeros(0),) * 4
        q, t = self.q, self.g.t
        delta = hi - lo
        delta_low = (hi - delta) - lo  # hi - lo = delta + delta_low, to rounding (two-sum)
        s_lo, s_hi = tilt_share(lo, q), tilt_share(hi, q)
        width = -np.log1p(s_lo * np.expm1(-delta)) + c_lo + c_hi
        panels = np.maximum(1, np.ceil(delta / (2.0 * PANEL_HALF_WIDTH))).astype(np.int64)
        plus, minus = np.zeros(lo.size), np.zeros(lo.size)
        quad = np.zeros(lo.size)
        nodes, gl_w = _GL16
        for count in np.unique(panels):
            chosen = np.flatnonzero(panels == count)
            a, b = lo[chosen], hi[chosen]
            step = delta[chosen] / count
            half = 0.5 * step
            k = np.arange(count, dtype=np.float64)
            # offsets of the nodes from a and from b: (interval, panel, node)
            from_a = (k[None, :, None] * step[:, None, None]) + half[:, None, None] * (1.0 + nodes)
            from_b = delta[chosen][:, None, None] - from_a
            left = from_a <= from_b
            ell = np.where(left, a[:, None, None] + from_a, b[:, None, None] - from_b)
            tau_a = np.where(left, from_a, (b - a)[:, None, None] - from_b)
            tau_b = np.where(left, (b - a)[:, None, None] - from_a, from_b)
            d_a = c_lo[chosen][:, None, None] - np.log1p(
                s_lo[chosen][:, None, None] * np.expm1(-tau_a)
            )
            d_b = c_hi[chosen][:, None, None] + np.log1p(
                s_hi[chosen][:, None, None] * np.expm1(tau_b)
            )
            up, down = -np.expm1(-d_a), -np.expm1(-d_b)
            if mirrored:
                up = up * np.exp(-d_b)
            else:
                down = down * np.exp(-d_a)
            weight = self.density(ell) * (half[:, None, None] * gl_w)
            w_inv = 1.0 / -np.expm1(-width[chosen])
            plus[chosen] = np.sum(weight * up, axis=(1, 2)) * w_inv
            minus[chosen] = np.sum(weight * down, axis=(1, 2)) * w_inv
            # Trefethen's bound per panel: |F| <= p_max (|D| max) e^(2 sigma + W/2) / W on the
            # disc (module docstring)
            radius = RHO * half
            mid = a[:, None] + (k[None, :] + 0.5) * step[:, None]
            p_max = np.maximum(
                self.density(mid - radius[:, None]), self.density(mid + radius[:, None])
            )
            d_max = (
                np.maximum(c_lo[chosen], c_hi[chosen])
                + (delta[chosen] + radius) * 1.361 * np.exp(radius) * s_lo[chosen]
            )
            sigma = radius * 1.361 * np.exp(radius) * s_lo[chosen]
            growth = np.exp(2.0 * sigma + 0.5 * width[chosen]) / width[chosen]
            bound = _TREFETHEN * half * np.sum(p_max, axis=1) * d_max * growth
            quad[chosen] = bound * 1.01
        ell_max = np.maximum(np.abs(lo), np.abs(hi))
        err_s = 4.0 * U * (abs(self.logit) + ell_max + 2.0)
        with np.errstate(over="ignore"):
            e_d = np.exp(np.minimum(width, 700.0)) * (err_s + 4.0 * U) + 4.0 * U
        e_w = e_d + np.abs(delta_low) * s_lo / width + 3.0 * U
        e_density = U * (ell_max + t + 8.0) + self.g.t_error
        relative = (e_d * (1.0 + width) + e_w + e_density + 48.0 * U) * (1.0 + 1e-6)
        return plus, minus, relative * plus + quad + TINY, relative * minus + quad + TINY
