"""Gaussian noise on a sample drawn without replacement, replace-one neighbours
(dp_accounting's ``SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(sigma))``): a
symmetric dominating pair, its log moments and its PrivacyBuckets release, without a grid.

**The mechanism.** Each step draws ``m`` of the ``n`` records uniformly without replacement
(``gamma = m/n``), adds Gaussian noise of standard deviation ``sigma C`` to the sum of their
values (each of norm at most ``C``, the clip) and releases it. Neighbours differ in one
record (``x`` replaced by ``x'``).

**The per-step bound.** Fix the other records and write the outputs on ``D`` and ``D'`` as
``mu = (1 - gamma) mu_0 + gamma mu_1`` and ``mu' = (1 - gamma) mu_0 + gamma mu_1'``: with
probability ``1 - gamma`` the differing record is not drawn (the same law ``mu_0`` on both),
else ``m - 1`` others and ``x`` (resp. ``x'``). Balle, Barthe and Gaboardi 2018 ("Privacy
amplification by subsampling: tight analyses via couplings and divergences", Theorem 2,
advanced joint convexity) give, for ``alpha' = 1 + gamma (alpha - 1) >= 1``,
``H_alpha'(mu || mu') = gamma H_alpha(mu_1 || (1 - beta) mu_0 + beta mu_1') <= gamma [(1 - beta)
H_alpha(mu_1 || mu_0) + beta H_alpha(mu_1 || mu_1')]`` (``beta = alpha'/alpha``, ``H_alpha(P||Q) =
sum (P - alpha Q)^+``). ``mu_1`` and ``mu_0`` are coupled by drawing ``m - 1`` others and then
``x`` or one more other: outputs of inputs one substitution apart, as are ``mu_1`` and
``mu_1'``; by joint convexity each ``H_alpha`` is at most the Gaussian's under a shift of norm
``2C``, ``H_alpha(N(2C, s^2) || N(0, s^2))`` (rotation invariance). So for every ``alpha' >= 1``

    H_alpha'(mu || mu') <= gamma H_alpha(N(2) || N(0)) = H_alpha'(P' || Q'),
    P' = (1 - gamma) N(0, sigma^2) + gamma N(2, sigma^2),    Q' = N(0, sigma^2)

(units of ``C``; the last equality is the same identity for the mixture ``P'``). This is the
pair of Zhu, Dong and Wang (AISTATS 2022, "Optimal accounting of differential privacy via
characteristic function") for sampling without replacement under substitution, and it is
attained: others all ``-C``, ``x = C``, ``x' = -C`` give exactly ``(P', Q')`` shifted by ``-m C``.
For ``alpha' < 1``, ``H_alpha'(mu || mu') = 1 - alpha' + alpha' H_(1/alpha')(mu' || mu)`` and
``(D', D)`` are neighbours too, so ``H_alpha'(mu || mu') <= H_alpha'(Q' || P')``.

**The symmetric pair.** The step pair's orientation is not fixed across steps (others at
``-C`` give ``(P', Q')``, others at ``+C`` the mirror ``(Q', P')``), so composing ``P'/Q'`` and
``Q'/P'`` each with itself does not bound a composition that mixes them. The bound above is
``f(alpha) = H_alpha(P'||Q')`` for ``alpha >= 1`` and ``H_alpha(Q'||P')`` below: the profile of one
symmetric pair ``(P*, Q*)``, whose privacy-loss distribution (under ``P*``) is ``P'/Q'``'s
on losses ``> 0``, its mirror ``omega*(-l) = e^(-l) omega*(l)`` on losses ``< 0`` (``Q'``'s masses
there), and the rest at loss 0. (For ``alpha >= 1`` only losses above ``ln alpha`` count; the
mirror makes ``H_alpha(P*||Q*) = 1 - alpha + alpha H_(1/alpha)(Q*||P*)`` with
``H(Q*||P*) = H(P*||Q*)``.) Every step is dominated by ``(P*, Q*)`` for all ``alpha >= 0``, so
by Zhu, Dong and Wang (Theorem 10, adaptive composition of dominating pairs) the composition
of ``n`` steps is dominated by ``(P*^n, Q*^n)``: what this mechanism accounts, both
directions equal.

In the coordinate of the subsampled Gaussian (:mod:`accountant.numerics.subsampled_loss`,
units of ``2C``, noise multiplier ``sigma/2``, ``mu = 2/sigma``): ``P'/Q'`` is its B/A direction,
losses ``f(l)`` under ``B``, and ``f(l) > 0`` exactly for ``l < 0``; the mirror on negative losses
is its A/B direction restricted to ``l < 0`` (losses ``-f(l)`` under ``A``). So

    omega* = [B/A on l < 0] + [A/B on l < 0] + (1 - gamma) erf(1/(sigma sqrt 2)) at loss 0,

the atom being ``1 - P'(L > 0) - Q'(L > 0) = (1 - gamma)(1 - 2 Phi(-1/sigma))``. Log moments
(SPEC section 3): ``Gamma(lambda) = ln[ ∫_{l<0} phi e^((1+lambda) f) + ∫_{l<0} phi e^(-lambda f) +
atom ]`` (the subsampled Gaussian's tilted integrals over ``y < -mu/2``); buckets and the
lattice: the subsampled Gaussian's, of the two halves (:meth:`WithoutReplacementRelease.bucket`,
:meth:`WithoutReplacementRelease.lattice`).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.analytic_lattice import Atom, LawRounding, NormalPart, lattice_release
from accountant.buckets.bucketed import BucketedPLD
from accountant.buckets.lattice_quadrature import SmoothLaw
from accountant.buckets.sources import LossStatistics
from accountant.buckets.tails import TailMoments
from accountant.errors import InvalidInputError
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
from accountant.noise import NoiseDistribution
from accountant.numerics.directed import MassLogs
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.gaussian import LOG_SQRT_2PI
from accountant.numerics.lazy import special
from accountant.numerics.quadrature import gauss_legendre
from accountant.numerics.subsampled_loss import loss_f, tilted_integral
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import (
    check_lambda,
    check_one_direction,
    check_positive_real,
    check_probability,
)

__all__ = ["WithoutReplacementGaussian", "WithoutReplacementRelease", "without_replacement_pair"]

U = UNIT_ROUNDOFF
#: Relative error of the atom ``(1 - gamma) erf(1/(sigma sqrt 2))`` (erf: a few ulps).
ATOM_RELATIVE_ERROR = 64.0 * U
_GL24 = gauss_legendre(24)


def _positive_sigma(value: float) -> float:
    return check_positive_real("sigma", value)


def _positive_clip(value: float) -> float:
    return check_positive_real("clip", value)


def _rate(value: object) -> float:
    gamma = check_probability("sampling_rate", value)
    if gamma == 1.0:
        raise InvalidInputError(
            "sampling_rate must lie in (0, 1) (m = n draws every record: the Gaussian "
            "mechanism with sensitivity 2 clip, accountant.mechanisms.GaussianMechanism), got 1.0"
        )
    return gamma


@attrs.frozen(kw_only=True)
class WithoutReplacementGaussian:
    """Gaussian noise of multiplier ``sigma`` on the sum of ``m`` of ``n`` records drawn
    without replacement (``sampling_rate = m/n``), values of norm at most ``clip``, neighbours
    differing in one replaced record: the symmetric dominating pair of the module docstring.

    ``ExtendedMA`` and ``PrivacyBuckets`` take it directly; both directions are the same.
    """

    sigma: float = attrs.field(converter=_positive_sigma)
    sampling_rate: float = attrs.field(converter=_rate)
    clip: float = attrs.field(default=1.0, converter=_positive_clip)
    _cache: dict = attrs.field(factory=dict, init=False, repr=False, eq=False)

    @property
    def description(self) -> str:
        """E.g. ``Gaussian sampled without replacement (sigma=1, m/n=0.01), replace-one,
        clip 1``."""
        return (
            f"Gaussian sampled without replacement (sigma={self.sigma:g}, "
            f"m/n={self.sampling_rate:g}), replace-one, clip {self.clip:g}"
        )

    @property
    def poisson_pair(self) -> SubsampledTruncatedGaussian:
        """The subsampled Gaussian whose B/A direction is ``P'/Q'``: noise multiplier
        ``sigma/2`` on the shift ``2 clip``, rate ``gamma``, no cut."""
        return SubsampledTruncatedGaussian(
            sigma=self.sigma / 2.0,
            sampling_rate=self.sampling_rate,
            cut=math.inf,
            clip=2.0 * self.clip,
        )

    @property
    def atom(self) -> float:
        """The mass at loss 0: ``(1 - gamma) erf(1/(sigma sqrt 2))``, within
        :data:`ATOM_RELATIVE_ERROR`."""
        return (1.0 - self.sampling_rate) * float(special.erf(1.0 / (self.sigma * math.sqrt(2.0))))

    # -- LogMomentSource ---------------------------------------------------------------

    def distinguishing_mass(self, direction: str) -> float:
        """``omega = 0``."""
        check_one_direction("direction", direction)
        return 0.0

    def mass_logs(self, direction: str) -> MassLogs:
        """Total mass exactly 1, no distinguishing mass."""
        check_one_direction("direction", direction)
        return MassLogs()

    def max_finite_loss(self, direction: str) -> float:
        """``inf``: ``P'/Q'``'s losses are unbounded above."""
        check_one_direction("direction", direction)
        return math.inf

    def _moments(self, lam: float) -> tuple[float, float, float]:
        """``(Gamma, dGamma/dlambda, error bound)`` at ``lam`` (both directions), cached."""
        if lam in self._cache:
            return self._cache[lam]
        g = self.poisson_pair.geometry
        hi = -0.5 * g.mu  # l < 0
        positive = tilted_integral(1.0 + lam, g.mu, g.q, -math.inf, hi)  # B/A, f > 0
        mirror = tilted_integral(-lam, g.mu, g.q, -math.inf, hi)  # A/B, losses -f < 0
        logs = [
            positive.log_value - LOG_SQRT_2PI,
            mirror.log_value - LOG_SQRT_2PI,
            math.log(self.atom),
        ]
        gamma = float(special.logsumexp(logs))
        shares = [math.exp(v - gamma) for v in logs]
        slope = shares[0] * positive.mean_f - shares[1] * mirror.mean_f
        error = 0.0
        for share, part in zip(shares, (positive, mirror), strict=False):
            relative = min(part.relative_error, 0.5)
            error += share * relative / (1.0 - relative)
        error += shares[2] * ATOM_RELATIVE_ERROR
        error += 64.0 * U * (abs(gamma) + (lam + 1.0) * abs(slope))
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[lam] = (gamma, slope, error)
        return gamma, slope, error

    def log_moment(self, lam: float, direction: str) -> float:
        """``Gamma_lambda`` (module docstring; the same in both directions)."""
        check_one_direction("direction", direction)
        return self._moments(check_lambda("lam", lam))[0]

    def log_moment_slope(self, lam: float, direction: str) -> float:
        """``dGamma/dlambda = E_w[L]`` under the tilted weights, from the same quadratures."""
        check_one_direction("direction", direction)
        return self._moments(check_lambda("lam", lam))[1]

    def log_moment_error(self, lam: float, direction: str) -> float:
        """A bound on the absolute error of :meth:`log_moment`: the quadratures' stated
        relative errors, the atom's, and ``64 u (|Gamma| + (lambda + 1) |Gamma'|)``."""
        check_one_direction("direction", direction)
        return self._moments(check_lambda("lam", lam))[2]

    def bucket_release(self) -> WithoutReplacementRelease:
        """The PrivacyBuckets release of one step (no grid)."""
        return WithoutReplacementRelease(self)


class WithoutReplacementRelease:
    """One release of a :class:`WithoutReplacementGaussian`: the two halves of the
    subsampled Gaussian's release (its B/A buckets above loss 0, its A/B buckets up to 0)
    and the atom at 0. Anchors must be whole multiples of the width (the engine takes the
    anchor of :meth:`statistics`, 0)."""

    def __init__(self, mechanism: WithoutReplacementGaussian):
        self.mechanism = mechanism
        self.description = mechanism.description
        self._inner = mechanism.poisson_pair.bucket_release()
        self._g = mechanism.poisson_pair.geometry
        self._stats: dict[float, LossStatistics] = {}
        self._lattice_moments: dict = {}

    def same_directions(self) -> bool:
        """``True``: the pair is symmetric."""
        return True

    def statistics(self, direction: str, tail_mass: float) -> LossStatistics:
        """Mean and variance of the loss (Gauss-Legendre over ``y < -mu/2`` on both
        halves), the range from the halves' own tail cuts, anchor 0, no lattice."""
        check_one_direction("direction", direction)
        key = float(tail_mass)
        if key not in self._stats:
            low = min(0.0, self._inner.statistics("A/B", key).low)
            high = max(0.0, self._inner.statistics("B/A", key).high)
            mean, variance = self._moments()
            self._stats[key] = LossStatistics(mean, variance, low, high, 0.0, None)
        return self._stats[key]

    def _moments(self) -> tuple[float, float]:
        g = self._g
        lo, hi = -40.0 - g.mu, -0.5 * g.mu
        pieces = max(1, math.ceil((hi - lo) / 0.25))
        step = (hi - lo) / pieces
        y = (lo + step * np.arange(pieces)[:, None] + step * (_GL24[0] + 1.0) / 2.0).ravel()
        w = np.tile(0.5 * step * _GL24[1], pieces) / math.sqrt(2.0 * math.pi)
        f = loss_f(g.mu * y + 0.5 * g.mu * g.mu, g.q)
        a_side = np.exp(-0.5 * y * y)
        s_side = np.exp(-0.5 * (y + g.mu) ** 2)
        positive = w * ((1.0 - g.q) * a_side + g.q * s_side)  # B on losses f > 0
        mirror = w * a_side  # A on losses -f < 0
        weights = np.concatenate([positive, mirror, [self.mechanism.atom]])
        loss = np.concatenate([f, -f, [0.0]])
        total = float(np.sum(weights))
        mean = float(np.dot(weights, loss)) / total
        return mean, float(np.dot(weights, (loss - mean) ** 2)) / total

    def _split(self, anchor: float, width: float) -> int:
        """The bucket index whose upper edge is loss 0."""
        ratio = -anchor / width
        if ratio != round(ratio):
            raise InvalidInputError(
                f"anchor must be a whole multiple of the width {width!r} (loss 0 an edge), "
                f"got anchor={anchor!r}"
            )
        return round(ratio)

    def bucket(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """Buckets ``J`` holding the losses in ``(anchor + (J-1) width, anchor + J width]``:
        the subsampled Gaussian's B/A buckets above the one ending at 0, its A/B buckets up
        to that one, the atom in it; errors and lost masses of both halves added (each
        bounds its part)."""
        check_one_direction("direction", direction)
        zero = self._split(anchor, width)
        positive = self._inner.bucket("B/A", width, anchor, tail_mass, max_buckets)
        mirror = self._inner.bucket("A/B", width, anchor, tail_mass, max_buckets)
        first = min(mirror.first_index, zero)
        last = max(positive.first_index + positive.size - 1, zero)
        size = last - first + 1
        mass_a, mass_b = np.zeros(size), np.zeros(size)
        for part, keep in ((positive, lambda j: j > zero), (mirror, lambda j: j <= zero)):
            index = part.first_index + np.arange(part.size)
            chosen = keep(index)
            mass_a[index[chosen] - first] += part.mass_a[chosen]
            mass_b[index[chosen] - first] += part.mass_b[chosen]
        atom = self.mechanism.atom
        mass_a[zero - first] += atom
        mass_b[zero - first] += atom
        spill = 2.0 * ATOM_RELATIVE_ERROR * atom
        bucketed = BucketedPLD(
            width=width,
            first_index=first,
            mass_a=mass_a,
            mass_b=mass_b,
            offset_low=min(positive.offset_low, mirror.offset_low),
            offset_high=max(positive.offset_high, mirror.offset_high),
            mass_logs=MassLogs(),
            lost_a=positive.lost_a + mirror.lost_a,
            relative_error=max(positive.relative_error, mirror.relative_error),
            error_a=positive.error_a + mirror.error_a + spill,
            error_b=positive.error_b + mirror.error_b + spill,
        )
        return attrs.evolve(bucketed, tail_moments=((TailMoments.of(bucketed), 1),))

    def lattice(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """The release split onto ``anchor + J width`` by the dominating split
        (:func:`~accountant.buckets.analytic_lattice.lattice_release`, both directions alike):
        its continuous part is :class:`SymmetricHalves` (each half the subsampled Gaussian's
        normal law restricted to ``l <= 0``), the atom at 0 sits on the lattice."""
        check_one_direction("direction", direction)
        self._split(anchor, width)
        stats = self.statistics(direction, tail_mass)
        atom = Atom(0.0, self.mechanism.atom, ATOM_RELATIVE_ERROR, 0.0)
        return lattice_release(
            SymmetricHalves(self._g),
            [atom],
            "A/B",
            width,
            anchor,
            stats,
            MassLogs(),
            max_buckets,
            self._lattice_moments,
        )


class SymmetricHalves:
    """The continuous part of ``omega*`` for
    :func:`~accountant.buckets.analytic_lattice.lattice_release`: the subsampled Gaussian's A/B
    law on ``l <= 0`` (numerator ``A``, losses ``-f(l) <= 0``) and its B/A law there (numerator
    ``B``, losses ``f(l) >= 0``), each a :class:`~accountant.buckets.analytic_lattice.NormalPart`
    with the exact support end 0. The second is split as the B/A release is (mirrored, on the
    reflected lattice, reversed): each outcome is split by its own half, so the masses, the
    errors and the merged masses of the halves add, and the drift is the larger one."""

    def __init__(self, geometry):
        g = geometry
        laws = {
            name: SmoothLaw(g.mu, g.q, weights, 0.0, 0.0, (-math.inf, 0.0), 0.0)
            for name, weights in (("mirror", (1.0, 0.0)), ("positive", (1.0 - g.q, g.q)))
        }
        self.halves = {name: NormalPart(law, bounded=True) for name, law in laws.items()}
        self._parts: dict[int, tuple[LawRounding, LawRounding]] = {}

    def round_onto(
        self, anchor: float, k0: int, k1: int, width: float, mirrored: bool = False
    ) -> LawRounding:
        """Both halves on ``anchor + K width``, ``K = k0 .. k1``, added (class docstring)."""
        if mirrored:  # pragma: no cover - the pair is symmetric: split in the A/B scale only
            raise ValueError("the symmetric pair is split in the A/B scale only")
        mirror = self.halves["mirror"].round_onto(anchor, k0, k1, width)
        positive = self.halves["positive"].round_onto(-anchor, -k1, -k0, width, mirrored=True)

        def flipped(values: np.ndarray, merged: bool) -> np.ndarray:
            # A/B interval K (lower point g_K) is interval -K-1 here: reversed, one step down
            return np.append(values[::-1][1:], 0.0) if merged else values[::-1]

        total = LawRounding(
            mirror.masses + flipped(positive.masses, False),
            mirror.errors + flipped(positive.errors, False),
            max(mirror.drift, positive.drift),
            mirror.ends,
            mirror.c_low,
            mirror.c_high,
            mirror.merged + flipped(positive.merged, True),
            mirror.merged_c + flipped(positive.merged_c, True),
            mirror.merged_errors + flipped(positive.merged_errors, True),
            mirror.merged_c_errors + flipped(positive.merged_c_errors, True),
            max(mirror.merged_c_relative, positive.merged_c_relative),
        )
        if len(self._parts) > 64:
            self._parts.clear()
        self._parts[id(total)] = (mirror, positive)
        return total

    def lost_beyond(self, rounded: LawRounding) -> float:
        """Both halves' masses outside their interval ends."""
        mirror, positive = self._parts.pop(id(rounded))
        return self.halves["mirror"].lost_beyond(mirror) + self.halves["positive"].lost_beyond(
            positive
        )


def without_replacement_pair(
    noise: NoiseDistribution, sensitivity: float, sampling_rate: float
) -> WorstCasePair:
    """The symmetric pair ``(P*, Q*)`` of the module docstring for additive noise on a grid
    (``noise`` symmetric and falling from 0, so the full shift bounds smaller ones): the base
    pair under substitution is ``noise`` against ``noise`` shifted by ``2 sensitivity``, so
    ``P' = (1 - gamma) noise + gamma noise(. - 2s)`` and ``Q' = noise``
    (:meth:`~accountant.pairs.worst_case.WorstCasePair.subsampled` with ``clip = 2s``, its
    ``B`` and ``A``). On the outcomes where ``P' > Q'`` (losses ``> 0``, distinguishing ones
    included) ``P*, Q* = P', Q'``; a mirror copy of them carries ``Q', P'``; one more outcome
    carries ``1 - P'(L > 0) - Q'(L > 0)`` under both (exact sums, :func:`math.fsum`)."""
    gamma = _rate(sampling_rate)
    base = WorstCasePair.subsampled(noise, gamma, 2.0 * sensitivity)
    upper, lower = base.b, base.a  # P' (the record drawn with rate gamma), Q'
    positive = upper > lower
    rest = 1.0 - math.fsum([*upper[positive].tolist(), *lower[positive].tolist()])
    if rest < -1e-12:  # pragma: no cover - a symmetric, monotone noise never gets here
        raise InvalidInputError(
            f"noise must be symmetric and fall from 0 (P'(L > 0) + Q'(L > 0) = {1.0 - rest!r} "
            "exceeds 1)"
        )
    rest = max(rest, 0.0)
    a = np.concatenate([upper[positive], lower[positive], [rest]])
    b = np.concatenate([lower[positive], upper[positive], [rest]])
    return WorstCasePair.from_arrays(
        a,
        b,
        f"{noise.description} sampled without replacement (m/n={gamma:g}), replace-one, "
        f"shift {2.0 * sensitivity:g}, symmetric",
    )
