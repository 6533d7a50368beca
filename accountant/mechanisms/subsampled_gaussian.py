"""The mechanism DP-SGD runs: Poisson-subsampled Gaussian noise cut at ``+-k sigma``, without
a grid.

One release adds noise of standard deviation ``sigma C`` (``sigma`` the noise multiplier,
``C`` the clip norm, as Opacus and dp_accounting use them) to a sum of clipped gradients
that contains the differing example with probability ``q`` (Poisson subsampling). In units
of ``C`` the worst-case pair is that of SPEC section 1 at the full clip shift, the pair
:meth:`WorstCasePair.subsampled` discretises::

    A = noise,    B = (1 - q) noise + q (noise + 1),

with ``noise`` the Gaussian ``N(0, sigma^2)`` cut at ``r = k sigma``. Two cuts are in use:

* ``"renormalised"`` (alias ``"resampled"``): the density restricted to ``[-r, r]`` and
  divided by ``Z = Phi(k) - Phi(-k)``. Redrawing until the draw lies inside the cut
  (rejection sampling, ``scipy.stats.truncnorm``) has exactly this law.
* ``"clamped"``: draws beyond the cut are moved onto ``+-r`` (``torch.clamp``): the same
  density inside, plus atoms of mass ``Phi(-k)`` at ``-r`` and ``r``.

``cut=math.inf`` is the untruncated subsampled Gaussian (both truncations coincide).

Losses (``mu = 1/sigma``, coordinate ``y = -x/sigma``,
:mod:`accountant.numerics.subsampled_loss`):
where both densities live (``x`` in ``(1 - r, r)``) ``L_{A/B} = -f(l)`` with
``l = mu y + mu^2/2`` in ``[-l*, l*]``, ``l* = mu k - mu^2/2``, rising from ``-f(-l*)`` to
``-f(l*)``. On ``[-r, 1 - r)`` (and the atoms at ``+-r`` when clamped) ``b = (1 - q) a``:
the loss is the constant ``L_max = -ln(1 - q)``, an atom of the loss distribution with
A-mass ``m0 = [Phi(mu - k) - Phi(-k)] / Z`` (renormalised) or ``Phi(mu - k) + Phi(-k)``
(clamped). Where only ``B`` lives (beyond ``r``; the atoms at ``1 - r`` and ``1 + r`` when
clamped) the outcome distinguishes ``B`` from ``A``::

    omega_{A/B} = 0 (q < 1),    omega_{B/A} = q m0    (both truncations, by symmetry),

and for ``q = 1`` the atom itself is distinguishing: ``omega_{A/B} = omega_{B/A} = m0``.
So ``sup L_{A/B} = L_max`` (``l*`` for ``q = 1``) and ``sup L_{B/A} = f(-l*)``. Log-moments
(SPEC section 3; the atom adds ``m0 e^(lambda L_max)`` or ``m0 (1 - q)^(1 + lambda)``)::

    Gamma_{A/B}(lambda) = ln[ ∫ phi(y)/Z e^(-lambda f(l(y))) dy + m0 (1 - q)^(-lambda) ],
    Gamma_{B/A}(lambda) = ln[ ∫ phi(y)/Z e^((1 + lambda) f(l(y))) dy + m0 (1 - q)^(1 + lambda) ]

over ``y`` in ``[-k, k - mu]`` (``Z = 1`` when clamped), by adaptive quadrature with a
stated error (:func:`~accountant.numerics.subsampled_loss.tilted_integral`).

The name says what is released (the "subsampled Gaussian" of Mironov et al. and of
every DP-SGD accountant, cut); the additive mechanisms' ``...Mechanism`` suffix is left
off because this is not an additive mechanism with a sensitivity: it has a sampling rate
and a clip norm. The clip ``C`` changes no privacy value (the pair scales with it); it
fixes the grid of :meth:`SubsampledTruncatedGaussian.pair`.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import attrs
import numpy as np

from accountant.buckets.gaussian_dominance import GaussianDomination
from accountant.errors import InvalidInputError
from accountant.noise import truncated_gaussian
from accountant.numerics.directed import MassLogs, down, up
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.gaussian import LOG_SQRT_2PI, log_gauss_mass_scalar
from accountant.numerics.lazy import special
from accountant.numerics.subsampled_loss import loss_f, tilted_integral
from accountant.pairs.worst_case import WorstCasePair

if TYPE_CHECKING:
    from accountant.mechanisms.subsampled_gaussian_release import SubsampledGaussianRelease
from accountant.validation import (
    check_choice,
    check_lambda,
    check_one_direction,
    check_positive_real,
    check_probability,
)

__all__ = ["SubsampledTruncatedGaussian"]

TRUNCATIONS = ("renormalised", "resampled", "clamped")
#: Declared relative error of the closed-form atom ``m0`` and of ``omega`` (observed far below).
DISTINGUISHING_RELATIVE_ERROR = 1e-10
#: Declared absolute error of ``ln Z`` (``log1p`` of two ``erfc`` tails: a few ulps).
LOG_NORMALISER_ERROR = 1e-13
#: Grid discretisations of the untruncated noise are cut at this many sigmas.
PAIR_SIGMAS = 40.0
_U = UNIT_ROUNDOFF


def _positive_sigma(value: float) -> float:
    return check_positive_real("sigma", value)


def _positive_clip(value: float) -> float:
    return check_positive_real("clip", value)


def _check_cut(value: object) -> float:
    """``k > 0``, or ``math.inf`` for no cut."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    return check_positive_real("cut", value)


def _check_truncation(instance: object, attribute: attrs.Attribute, value: object) -> None:
    check_choice("truncation", value, TRUNCATIONS)


@attrs.frozen
class Geometry:
    """The numbers every computation of one mechanism shares (units of the clip norm).

    ``mu = 1/sigma``; ``cut = k``; ``q``; ``ell_star = l* = mu k - mu^2/2`` (``inf`` for no
    cut); ``log_norm = ln Z`` (0 when clamped or uncut); ``log_atom = ln m0`` (``-inf`` for
    no cut); ``atom_loss = L_max = -ln(1 - q)`` (``inf`` for ``q = 1``); ``atom_error``: a
    bound on the relative error of ``e^log_atom`` (the normal-mass routines' ``256 u +
    16 u z^2`` with ``z = k + mu``, four times, plus :data:`LOG_NORMALISER_ERROR`).
    """

    mu: float
    cut: float
    q: float
    ell_star: float
    log_norm: float
    log_atom: float
    atom_loss: float
    atom_error: float = 0.0

    @property
    def support(self) -> tuple[float, float]:
        """The ``y`` range (under A) where both densities live: ``[-k, k - mu]``."""
        return -self.cut, self.cut - self.mu


@attrs.frozen(kw_only=True)
class SubsampledTruncatedGaussian:
    """Poisson-subsampled Gaussian noise cut at ``+-cut * sigma * clip``; see the module
    docstring for the pair, the losses and the formulas.

    ``sigma``: noise multiplier (noise std ``sigma * clip``). ``sampling_rate``: ``q`` in
    ``(0, 1]``. ``cut``: ``k > 0`` (``math.inf``: no cut), with ``k sigma > 1/2`` (else the
    noisy sums with and without the example never overlap). ``truncation``:
    ``"renormalised"`` = ``"resampled"`` (redraw until inside) or ``"clamped"``.
    ``ExtendedMA`` and ``PrivacyBuckets`` take it directly; ``pair(step)`` is its grid
    discretisation.
    """

    sigma: float = attrs.field(converter=_positive_sigma)
    sampling_rate: float = attrs.field(converter=lambda v: check_probability("sampling_rate", v))
    cut: float = attrs.field(converter=_check_cut)
    clip: float = attrs.field(default=1.0, converter=_positive_clip)
    truncation: str = attrs.field(default="renormalised", validator=_check_truncation)
    _cache: dict = attrs.field(factory=dict, init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.cut * self.sigma <= 0.5:
            raise InvalidInputError(
                f"cut must be > 1/(2 sigma) = {0.5 / self.sigma!r} (a cut at cut * sigma * clip "
                "below half the clip norm leaves the outputs with and without the example "
                f"no overlap), got cut={self.cut!r} with sigma={self.sigma!r}"
            )

    @property
    def description(self) -> str:
        """E.g. ``subsampled Gaussian (sigma=1.1, q=0.004, cut 8 sigma, renormalised), clip 1``."""
        cut = "no cut" if math.isinf(self.cut) else f"cut {self.cut:g} sigma, {self.truncation}"
        return (
            f"subsampled Gaussian (sigma={self.sigma:g}, q={self.sampling_rate:g}, {cut}), "
            f"clip {self.clip:g}"
        )

    @property
    def geometry(self) -> Geometry:
        """The shared numbers (:class:`Geometry`)."""
        if "geometry" not in self._cache:
            self._cache["geometry"] = self._geometry()
        return self._cache["geometry"]

    def _geometry(self) -> Geometry:
        mu, k, q = 1.0 / self.sigma, self.cut, self.sampling_rate
        atom_loss = math.inf if q == 1.0 else -math.log1p(-q)
        if math.isinf(k):
            return Geometry(mu, k, q, math.inf, 0.0, -math.inf, atom_loss)
        ell_star = mu * k - 0.5 * mu * mu
        if self.truncation == "clamped":
            log_norm = 0.0
            log_atom = float(np.logaddexp(special.log_ndtr(mu - k), special.log_ndtr(-k)))
        else:
            log_norm = log_gauss_mass_scalar(-k, k, 2.0 * k)
            log_atom = log_gauss_mass_scalar(-k, mu - k, mu) - log_norm
        atom_error = 4.0 * (256.0 * _U + 16.0 * _U * (k + mu) ** 2) + LOG_NORMALISER_ERROR
        return Geometry(mu, k, q, ell_star, log_norm, log_atom, atom_loss, atom_error)

    # -- LogMomentSource ---------------------------------------------------------------

    def distinguishing_mass(self, direction: str) -> float:
        """``omega``: ``q m0`` for B/A; for A/B ``m0`` if ``q = 1``, else 0."""
        direction = check_one_direction("direction", direction)
        g = self.geometry
        if direction == "A/B" and g.q < 1.0:
            return 0.0
        return math.exp(g.log_atom + (math.log(g.q) if direction == "B/A" else 0.0))

    def mass_logs(self, direction: str) -> MassLogs:
        """Total mass exactly 1; ``omega`` within :data:`DISTINGUISHING_RELATIVE_ERROR`."""
        omega = self.distinguishing_mass(direction)
        if omega == 0.0:
            return MassLogs()
        spread = DISTINGUISHING_RELATIVE_ERROR
        return MassLogs.of((0.0, 0.0), (down(omega * (1.0 - spread)), up(omega * (1.0 + spread))))

    def max_finite_loss(self, direction: str) -> float:
        """An upper bound on the largest finite loss: ``L_max`` (A/B, ``q < 1``), ``l*``
        (A/B, ``q = 1``) or ``f(-l*)`` (B/A), moved up past their rounding."""
        direction = check_one_direction("direction", direction)
        g = self.geometry
        if direction == "A/B" and g.q < 1.0:
            return up(g.atom_loss, 4)
        if math.isinf(g.ell_star):
            return math.inf
        top = g.ell_star if direction == "A/B" else float(loss_f(-g.ell_star, g.q))
        margin = 16.0 * _U * (abs(top) + g.mu * g.cut + g.mu * g.mu + 1.0)
        return up(top + margin, 4)

    def _moments(self, lam: float, direction: str) -> tuple[float, float, float]:
        """``(Gamma, dGamma/dlambda, error bound)`` at ``lam``, cached."""
        key = (lam, direction)
        if key in self._cache:
            return self._cache[key]
        g = self.geometry
        lo, hi = g.support
        c = -lam if direction == "A/B" else 1.0 + lam
        integral = tilted_integral(c, g.mu, g.q, lo, hi)
        log_cont = integral.log_value - LOG_SQRT_2PI - g.log_norm
        cont_loss = -integral.mean_f if direction == "A/B" else integral.mean_f
        log_atom, atom_loss = -math.inf, 0.0
        if g.q < 1.0 and g.log_atom > -math.inf:
            atom_loss = g.atom_loss if direction == "A/B" else -g.atom_loss
            log_atom = g.log_atom + (lam if direction == "A/B" else 1.0 + lam) * atom_loss
        gamma = float(np.logaddexp(log_cont, log_atom))
        share = math.exp(log_atom - gamma)
        slope = (1.0 - share) * cont_loss + share * atom_loss
        slope = min(slope, self.max_finite_loss(direction))
        relative = min(integral.relative_error, 0.5)
        error = (1.0 - share) * (relative / (1.0 - relative)) + share * g.atom_error
        if g.log_norm != 0.0:
            error += LOG_NORMALISER_ERROR
        error += 64.0 * _U * (abs(gamma) + (lam + 1.0) * abs(slope))
        if len(self._cache) > 4096:
            self._cache.clear()
            self._cache["geometry"] = g
        self._cache[key] = (gamma, slope, error)
        return gamma, slope, error

    def _checked_moments(self, lam: float, direction: str) -> tuple:
        return self._moments(check_lambda("lam", lam), check_one_direction("direction", direction))

    def log_moment(self, lam: float, direction: str) -> float:
        """``Gamma_lambda`` in ``direction`` (module docstring)."""
        return self._moments(check_lambda("lam", lam), check_one_direction("direction", direction))[
            0
        ]

    def log_moment_slope(self, lam: float, direction: str) -> float:
        """``dGamma/dlambda = E_w[L]`` under the tilted weights, from the same quadrature."""
        return self._moments(check_lambda("lam", lam), check_one_direction("direction", direction))[
            1
        ]

    def log_moment_error(self, lam: float, direction: str) -> float:
        """A bound on the absolute error of :meth:`log_moment`: the quadrature's stated
        relative error, the atom's (``Geometry.atom_error``) and ``ln Z``'s, and ``64 u (|Gamma| +
        (lambda + 1) |Gamma'|)`` for the rounding of the terms (as the other mechanisms)."""
        return self._moments(check_lambda("lam", lam), check_one_direction("direction", direction))[
            2
        ]

    # -- grid ----------------------------------------------------------------------------

    @property
    def gaussian_domination(self) -> GaussianDomination | None:
        """Uncut: each direction of the pair is a post-processing of ``N(1/sigma, 1)``
        against ``N(0, 1)`` (keep the draw with probability ``q``, else draw fresh noise),
        which it is for ``q = 1`` (:mod:`~accountant.buckets.gaussian_dominance`); cut:
        ``None`` (the cut adds distinguishing events the Gaussian lacks)."""
        if not math.isinf(self.cut):
            return None
        return GaussianDomination(1.0 / self.sigma, exact=self.sampling_rate == 1.0)

    def bucket_release(self) -> SubsampledGaussianRelease:
        """The PrivacyBuckets release of one step (no grid)."""
        # imported here: the release module builds on this one
        from accountant.mechanisms.subsampled_gaussian_release import SubsampledGaussianRelease

        return SubsampledGaussianRelease(self)

    def pair(self, step: float) -> WorstCasePair:
        """The grid discretisation: :func:`accountant.noise.truncated_gaussian` with std
        ``sigma * clip`` on ``[-cut sigma clip, cut sigma clip]`` (a whole number of
        ``step``\\ s; no cut: the smallest multiple of ``step`` covering ``PAIR_SIGMAS = 40``
        sigmas), then :meth:`WorstCasePair.subsampled` with ``q`` and ``clip``. Clamped, the
        grid part carries ``1 - 2 Phi(-k)`` and four more outcomes hold the atoms at ``-r``,
        ``r`` (``Phi(-k)`` each under ``A``, ``(1 - q) Phi(-k)`` under ``B``) and at ``1 - r``,
        ``1 + r`` (``q Phi(-k)`` under ``B`` only): an atom is an outcome of its own, not a
        grid cell, so the B-only ones stay distinguishing as in the continuous mechanism."""
        step = check_positive_real("step", step)
        std = self.sigma * self.clip
        if math.isinf(self.cut):
            bound = step * max(1, math.ceil(PAIR_SIGMAS * std / step * (1.0 - 1e-12)))
        else:
            bound = self.cut * std
            ratio = bound / step
            if abs(ratio - round(ratio)) > 1e-9 * max(1.0, ratio) or round(ratio) < 1:
                raise InvalidInputError(
                    f"step must divide the cut cut * sigma * clip = {bound!r} into whole "
                    f"grid steps, got step={step!r}"
                )
            bound = step * round(ratio)
        noise = truncated_gaussian(std, bound, step)
        pair = WorstCasePair.subsampled(noise, self.sampling_rate, self.clip)
        if self.truncation != "clamped" or math.isinf(self.cut):
            return pair
        tail, q = math.exp(float(special.log_ndtr(-self.cut))), self.sampling_rate
        a = np.concatenate([(1.0 - 2.0 * tail) * pair.a, [tail, tail, 0.0, 0.0]])
        b = np.concatenate(
            [(1.0 - 2.0 * tail) * pair.b, [(1.0 - q) * tail, (1.0 - q) * tail, q * tail, q * tail]]
        )
        return WorstCasePair(a, b, description=f"{pair.description}, clamped (atoms as 4 outcomes)")
