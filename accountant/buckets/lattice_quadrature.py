"""Split masses of a smooth loss law over lattice intervals, by Gauss-Legendre quadrature with
a certified error (for :mod:`accountant.buckets.analytic_lattice`).

The law: a variable ``l`` with the numerator density (per unit ``l``)

    p(l) = sum_s w_s phi(l/mu + o_s) / (mu Z),     o_A = -mu/2,  o_S = +mu/2,

on a support ``[l_lo, l_hi]``, and the A/B loss ``L(l) = -ln(1 - q + q e^(-l))`` (``L = l`` for
``q = 1``: the Gaussian mechanism), increasing with slope ``s(l) = 1/(1 + (1-q)/q e^l)`` in
``(0, 1]`` (:mod:`accountant.numerics.subsampled_loss`).

**The dominating split** ("connect the dots", Doroshenko et al. 2022). An interval ``[a, b]``
of ``l`` whose outcomes are split between two points ``P <= L <= Q`` (``W = Q - P``,
``D_a = L - P``, ``D_b = Q - L``, ``D_a + D_b = W``) gives ``Q`` the mass ``m+ = int t p``
and ``P`` the mass ``m- = int (1 - t) p`` with

    t     = (1 - e^-D_a) / (1 - e^-W)          = -expm1(-D_a) / -expm1(-W),
    1 - t = e^-D_a (1 - e^-D_b) / (1 - e^-W)   = exp(-D_a) (-expm1(-D_b)) / -expm1(-W),

so that ``(1 - t) e^-P + t e^-Q = e^-L``: every outcome keeps its A-mass and its B-mass
``e^-L p`` (the release's B-masses ``m e^-g`` are those of the outcomes but for the points'
distance from the lattice). *Mirrored* (the law of the B/A numerator ``B = (1 - q) A + q S``,
whose release loss is ``-L``) the kept B-mass is ``int e^L p`` and the split is the same in
the scale ``-L``: ``D_a`` and ``D_b`` swap roles,

    t = e^-D_b (1 - e^-D_a) / (1 - e^-W),      1 - t = (1 - e^-D_b) / (1 - e^-W).

With ``P = L(a) - c_a`` and ``Q = L(b) + c_b`` (``c >= 0`` given), the offsets are computed as
positive quantities with small relative error, never as differences of near-equal numbers:

    D_a = c_a - ln(1 + s(a) expm1(-(l - a))),
    D_b = c_b + ln(1 + s(b) expm1(b - l))           (``l - a`` and ``b - l``, q < 1),

and so are the weights: ``-expm1(-D)`` has condition at most 1 in ``D``, ``exp(-D_a)`` turns a
relative error ``e`` of ``D_a <= W`` into at most ``W e``. Nodes in the left half of an
interval are placed by their offset from ``a``, the others by their offset from ``b``, so
both offsets keep a relative error of a few ``u``.

Quadrature error (Trefethen, *Approximation Theory and Approximation Practice*, Thm 19.3):
if ``F`` is analytic in the disc of radius ``R`` around the centre of a panel of half-width
``eta`` and ``|F| <= M`` there, ``n``-point Gauss-Legendre is within

    E = (64/15) eta M rho^(-2n-2) / (1 - rho^-2),     rho = R / eta

(the Bernstein ellipse of parameter ``R/eta`` lies in that disc). Bounds used for ``M``:
``|phi(y + z)| <= phi(max(0, |y| - r)) e^(r^2/2)`` for ``|z| <= r``; for ``q < 1`` and
``R <= 1`` (so ``|Im l| <= 1``, ``cos(Im l) >= 0.54``), ``|s(z)| <= s(Re z)/sqrt(cos(Im z))
<= 1.361 e^R s(a)`` on the disc (``Re z >= a - R``), and ``L`` is analytic there
(``Re(1 - q + q e^-l) > 0``). So ``|L(z) - L(x)| <= reach s(a)`` for the point ``x`` of the
panel nearest ``z`` (the segment ``[x, z]`` lies in the disc), ``reach = 1.361 R e^R`` (for
``q = 1``: ``reach = R``, ``s = 1``). As ``D_a(x), D_b(x)`` lie in ``[0, W]``, on the disc

    |D_a|, |D_b| <= W (1 + slope),   Re D_a, Re D_b >= -W slope,     W slope = reach s(a);

with ``|1 - e^-D| = |int_0^1 D e^(-sD) ds| <= |D| e^max(0, -Re D)``, ``|e^-D_a| <= e^(W slope)``
and ``1 - e^-W = 2 e^(-W/2) sinh(W/2) >= W e^(-W/2)`` (``W`` real)

    |t| <= (1 + slope) e^(W slope + W/2),     |1 - t| <= (1 + slope) e^(2 W slope + W/2)

(mirrored: the same two bounds, swapped), and ``M`` is the density bound times
``1.01 (1 + slope) e^(2 W slope + W/2)`` (``1.01``: the rounding of ``W``). Panels are
chosen with ``R = min(mu / (max |y| + 1), 1)``, for ``q < 1`` also ``R <= 1/(3.7 s(a))`` (so
``W slope <= 1``: ``R`` for ``q = 1``, ``<= 1.361 e R s(a)`` for ``q < 1``; ``e^(2 W slope) <=
e^2``), and ``rho >= RHO``; the order ``n`` per panel from ``rho``.

Rounding, relative (each a generous multiple of the few ulps of the step). Per interval:
``D`` (``e_D = e^W (err_s + 4u) + 4u``, ``err_s = 4u(|logit q| + |l| + 2)`` from ``expit``; the
condition of ``log1p`` at ``-(1 - e^-D)`` is ``<= e^D <= e^W``), ``W`` (``e_W``: the same,
and the low part of ``b - a``), the weights (``-expm1(-D)``: ``e_D``; ``exp(-D_a)``:
``W e_D``; so ``e_D (1 + W)`` in all), the normalisation ``-expm1(-W)`` (``e_W``), ``ln Z``,
the weights' own operations (``expm1`` twice, ``exp``, a product, a division: ``16u``) and the sums
(``order + 16`` ulps within a panel; panels are added with compensation,
``2u + panels u^2``). Per panel, on its share of the masses: the density (``y`` off by
``dy = 3u(|l|/mu + |y| + mu + 1)``: ``dy (|y| + 1)``; ``exp``: ``u(y^2 + 2 |ln Z| + 8)``) and
the node placement: a node off by ``8u`` of its offset ``tau`` from the nearer interval end
moves ``D_a`` and ``D_b`` by at most ``8u max(2, tau + 1)`` relatively (``D_a`` is concave
in its offset; ``|(ln s)'| <= 1`` gives ``D_b'/D_b <= 1/(1 - e^-tau)``), the weights by
``(1 + W)`` times that, and the density by ``8u tau |y| / mu``. Panels where every side's
``|y| >= 41`` are not integrated: their mass (below ``1e-360``) counts as the absolute error
:data:`TINY`.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets import vector_kernels
from accountant.buckets._lattice_kernel import gl_tables, split_kernel
from accountant.numerics.floats import TINY, UNIT_ROUNDOFF
from accountant.numerics.lazy import special
from accountant.numerics.subsampled_loss import LOG_FORM_FROM, inverse_loss, loss_f

__all__ = ["RHO", "TINY", "SmoothLaw", "interval_masses", "two_difference"]

U = UNIT_ROUNDOFF
#: Panels have a disc radius at least this many half-widths.
RHO = 4.0
#: Panels beyond this ``|y|`` on every side are negligible.
DEAD_Y = 41.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)


@attrs.frozen
class SmoothLaw:
    """The numerator law of one direction in the A/B loss scale (module note).

    ``support``: float ends of the ``l`` range (finite); ``support_error``: how far the true
    ends may lie from them; ``norm_error``: absolute error of ``log_norm = ln Z``."""

    mu: float
    q: float
    weights: tuple[float, float]
    log_norm: float
    norm_error: float
    support: tuple[float, float]
    support_error: float

    @property
    def offsets(self) -> tuple[float, float]:
        """``(o_A, o_S)``."""
        return -0.5 * self.mu, 0.5 * self.mu

    @property
    def logit(self) -> float:
        """``ln(q / (1 - q))`` (``s(l) = expit(logit - l)``)."""
        return math.log(self.q) - math.log1p(-self.q)

    def loss(self, ell: np.ndarray) -> np.ndarray:
        """``L(l)`` in floats."""
        return np.asarray(ell, dtype=np.float64).copy() if self.q == 1.0 else -loss_f(ell, self.q)

    def loss_error(self, ell: np.ndarray, loss: np.ndarray) -> np.ndarray:
        """A bound on ``|L(l) - loss(l)|``: ``log1p`` of ``q expm1(-l)`` (a few ulps, condition
        ``<= 1/(1-q)``), or ``-l + ln q + log1p(...)`` far below; for ``q >``
        :data:`~accountant.numerics.subsampled_loss.LOG_FORM_FROM`, ``logaddexp`` of
        ``ln(1 - q)`` and ``ln q - l`` (a few ulps of their magnitudes)."""
        if self.q == 1.0:
            return np.zeros_like(loss)
        scale = np.abs(loss) + np.abs(ell) + abs(math.log(self.q)) + 2.0 - math.log1p(-self.q)
        if self.q > LOG_FORM_FROM:  # logaddexp(ln(1 - q), ln q - l): a few ulps of its terms
            return 8.0 * U * scale
        return 8.0 * U * (scale + 1.0 / (1.0 - self.q))

    def inverse(self, loss: np.ndarray) -> np.ndarray:
        """``l`` with ``L(l)`` near ``loss`` (``inf`` beyond the top): any value is sound, its
        miss is measured afterwards."""
        return (
            np.asarray(loss, dtype=np.float64).copy()
            if self.q == 1.0
            else inverse_loss(loss, self.q)
        )

    def share(self, ell: np.ndarray) -> np.ndarray:
        """``s(l)``."""
        if self.q == 1.0:
            return np.ones_like(ell)
        return special.expit(self.logit - ell)

    def density_bound(self, y_abs: list[np.ndarray], radius: np.ndarray) -> np.ndarray:
        """A bound on ``|p|`` within ``radius`` (in ``y``) of points whose per-side ``|y|`` are
        ``y_abs``."""
        total = np.zeros_like(radius)
        for weight, y in zip(self.weights, y_abs, strict=True):
            if weight > 0.0:
                gap = np.maximum(y - radius, 0.0)
                total += weight * np.exp(0.5 * (radius * radius - gap * gap) - self.log_norm)
        return total / (_SQRT_2PI * self.mu) * (1.0 + 64.0 * U + 2.0 * self.norm_error)

    def side_y(self, ell: np.ndarray) -> list[np.ndarray]:
        """``y = l/mu + o`` per side."""
        return [ell / self.mu + o for o in self.offsets]

    def density(self, ell: np.ndarray) -> np.ndarray:
        """``p(l)``."""
        total = np.zeros_like(ell)
        for weight, y in zip(self.weights, self.side_y(ell), strict=True):
            if weight > 0.0:
                total += weight * np.exp(-0.5 * y * y - self.log_norm)
        return total / (_SQRT_2PI * self.mu)


def two_difference(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(d, e)`` with ``hi - lo = d + e`` exactly (Knuth's two-sum)."""
    d = hi - lo
    virtual = d - hi
    e = (hi - (d - virtual)) + (-lo - virtual)
    return d, e


def _d_left(tau: np.ndarray, share: np.ndarray, q: float) -> np.ndarray:
    """``L(a + tau) - L(a) = -log1p(s(a) expm1(-tau))``."""
    if q == 1.0:
        return tau
    return -np.log1p(share * np.expm1(-tau))


def _d_right(tau: np.ndarray, share: np.ndarray, q: float) -> np.ndarray:
    """``L(b) - L(b - tau) = log1p(s(b) expm1(tau))`` (``tau + ln s + log1p(...)`` past 600)."""
    if q == 1.0:
        return tau
    with np.errstate(over="ignore"):
        out = np.log1p(share * np.expm1(np.minimum(tau, 600.0)))
    far = tau > 600.0
    if far.any():
        t, s = tau[far], share[far]
        out[far] = t + np.log(s) + np.log1p((1.0 - s) / s * np.exp(-t))
    return out


def interval_masses(
    law: SmoothLaw,
    lo: np.ndarray,
    hi: np.ndarray,
    c_lo: np.ndarray,
    c_hi: np.ndarray,
    mirrored: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(m+, m-, err+, err-)`` of the dominating split of the intervals ``[lo, hi]``
    (``lo < hi``, finite) between ``P = L(lo) - c_lo`` and ``Q = L(hi) + c_hi`` (module note;
    ``mirrored``: the law of the B/A numerator, whose release loss is ``-L``, split in that
    scale); ``m+`` goes to ``Q``, ``m-`` to ``P``; the errors are absolute bounds. Each
    interval is cut into equal panels of half-width at most ``R / RHO`` for the radius
    ``R = min(mu / (max |y| + 1), cap)`` of its farthest point (``|y|`` capped at
    ``DEAD_Y + 1``; ``cap`` = :func:`~accountant.buckets._lattice_kernel.radius_cap`; the
    panels themselves may take a larger ``R`` up to ``cap``), and integrated by
    :func:`split_kernel`."""
    q, mu = law.q, law.mu
    if lo.size == 0:
        return (np.zeros(0),) * 4
    delta, delta_low = two_difference(hi, lo)
    s_lo, s_hi = law.share(lo), law.share(hi)
    width = _d_left(delta, s_lo, q) + c_lo + c_hi  # W (the low part of b - a in its error)
    live = [
        (a, b)
        for a, b, w in zip(law.side_y(lo), law.side_y(hi), law.weights, strict=True)
        if w > 0.0
    ]
    y_max = np.max([np.maximum(np.abs(a), np.abs(b)) for a, b in live], 0)
    y_near = np.min(
        [np.where(a * b <= 0.0, 0.0, np.minimum(np.abs(a), np.abs(b))) for a, b in live], 0
    )
    if q == 1.0:
        cap = np.ones_like(s_lo)
    else:  # radius_cap: R <= 1, and 1.361 e R s(a) <= 1
        with np.errstate(divide="ignore"):
            cap = np.where(3.7 * s_lo <= 1.0, 1.0, 1.0 / (3.7 * s_lo))
    radius = np.minimum(mu / (np.minimum(y_max, DEAD_Y + 1.0) + 1.0), cap)
    panels = np.maximum(1.0, np.ceil(delta * RHO / (2.0 * radius)))
    panels = np.where(y_near >= DEAD_Y, 0, panels).astype(np.int64)
    law_numbers = (q, mu, *law.weights, law.log_norm, law.norm_error, float(mirrored))
    kernel = (
        vector_kernels.split_masses
        if vector_kernels.runs_numpy(lo.size, vector_kernels.SPLIT_INTERVALS)
        else split_kernel
    )
    plus, minus, err_plus, err_minus, quad, order = kernel(
        lo,
        hi,
        delta,
        delta_low,
        s_lo,
        s_hi,
        c_lo,
        c_hi,
        width,
        radius,
        panels,
        law_numbers,
        *gl_tables(),
    )
    relative = _relative(law, lo, hi, delta_low, s_lo, width, order, panels)
    return plus, minus, relative * plus + err_plus + quad, relative * minus + err_minus + quad


def _relative(law, lo, hi, delta_low, s_lo, width, order, panels) -> np.ndarray:
    """The relative rounding bound of an interval's two masses shared by all its panels:
    ``D`` through the weights (``e_D (1 + W)``), ``W`` through the normalisation, ``ln Z``,
    the weights' own operations (``16u``), the products and the sums (``order + 16`` ulps
    within a panel, ``2u + panels u^2`` across them); the density's and the node placement's
    are the kernel's, per panel (module note)."""
    if law.q == 1.0:
        e_d = e_w = 4.0 * U
    else:
        ell = np.maximum(np.abs(lo), np.abs(hi))
        err_s = 4.0 * U * (abs(law.logit) + ell + 2.0)
        with np.errstate(over="ignore"):  # an absurdly wide lattice: an infinite bound
            e_d = np.exp(width) * (err_s + 4.0 * U) + 4.0 * U
        e_w = e_d + np.abs(delta_low) * s_lo / width + 3.0 * U
    sums = (order + 16.0 + panels * U) * U
    weights = e_d * (1.0 + width) + e_w + 16.0 * U
    return (weights + 2.0 * law.norm_error + sums) * (1.0 + 1e-6)
