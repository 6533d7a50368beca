"""Analytic additive mechanisms: log-moments and distinguishing mass without a grid.

A mechanism with sensitivity ``s`` is the pair ``A`` = noise density centred at 0,
``B`` = the same density centred at ``s``; the privacy loss is ``L(x) = ln a(x)/b(x)``.
For direction A/B and ``lambda >= 0`` (SPEC section 3; paper, Proposition
"Numerical Extended MA", with sums replaced by integrals)::

    Gamma_lambda = ln ∫_{a>0, b>0} a(x)^(1+lambda) b(x)^(-lambda) dx,
    omega        = ∫_{a>0, b=0} a(x) dx.

Every noise here is symmetric, so the reflection ``x -> s - x`` maps ``A`` to ``B``
and both directions give the same values. Each class implements
:class:`~accountant.log_moments.LogMomentSource`; all work is done in log space
and stays finite (no overflow, no NaN) for ``lambda`` from 0 to far beyond 1e6.
``pair(step)`` gives the grid discretisation as a :class:`~accountant.pairs.WorstCasePair`.
"""

from __future__ import annotations

import math

import attrs

from accountant._directed import MassLogs, down, up
from accountant.errors import InvalidInputError
from accountant.gauss_numerics import (
    LOG_SQRT_2PI,
    exp_mean_offset,
    log1mexp_scalar,
    log_exp_integral,
    log_gauss_mass_scalar,
    log_upper_gauss_scaled,
    logsumexp_scalar,
    mills,
    mills_complement,
    narrow_gauss_integrals,
)
from accountant.mechanisms_dpsgd import SubsampledTruncatedGaussian
from accountant.noise import NoiseDistribution, truncated_gaussian, truncated_laplace
from accountant.pairs import WorstCasePair
from accountant.validation import (
    check_lambda,
    check_one_direction,
    check_positive_real,
)

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "SubsampledTruncatedGaussian",
    "TruncatedGaussianMechanism",
    "TruncatedLaplaceMechanism",
]

#: Declared relative error of the closed-form distinguishing masses (observed <= ~1.1e4 u).
DISTINGUISHING_RELATIVE_ERROR = 1e-10
#: Unit roundoff of float64.
_U = 2.0**-53

#: Grid discretisations of the untruncated noises are cut at this many sigmas / scales.
GAUSSIAN_PAIR_SIGMAS = 40.0
LAPLACE_PAIR_SCALES = 60.0


def _cover(length: float, step: float) -> float:
    """The smallest multiple of ``step`` that is ``>= length`` (up to rounding of the ratio)."""
    return step * max(1, math.ceil(length / step * (1.0 - 1e-12)))


def _positive(name: str):
    def convert(value: float) -> float:
        return check_positive_real(name, value)

    return convert


class _SymmetricMechanism:
    """Protocol methods shared by the symmetric mechanisms: validate, then delegate to the
    subclass's ``_gamma(lam)``, ``_slope(lam)``, ``_omega()`` and ``_max_loss()``."""

    _name = "mechanism"
    #: Declared absolute error of ``ln`` of a closed-form mass (``Phi`` differences,
    #: normalisers) inside ``Gamma_lambda``; 0 where ``Gamma`` is a plain formula.
    _log_mass_error = 0.0

    def __attrs_post_init__(self) -> None:
        bound = getattr(self, "bound", math.inf)
        if self.sensitivity >= 2.0 * bound:
            raise InvalidInputError(
                f"sensitivity must be < 2 * bound = {2.0 * bound!r} (else the outputs on "
                f"neighbouring inputs never overlap), got sensitivity={self.sensitivity!r}"
            )

    @property
    def description(self) -> str:
        """E.g. ``"truncated Gaussian (sigma=100, bound=500), sensitivity 1"``."""
        fields = [f.name for f in attrs.fields(type(self)) if f.name != "sensitivity"]
        shown = ", ".join(f"{name}={getattr(self, name):g}" for name in fields)
        return f"{self._name} ({shown}), sensitivity {self.sensitivity:g}"

    def _omega(self) -> float:
        return 0.0

    def pair(self, step: float) -> WorstCasePair:
        """The grid discretisation: the :mod:`accountant.noise` family on ``[-bound, bound]``
        (``bound`` and ``sensitivity`` whole numbers of ``step``), shifted by the sensitivity.
        Untruncated noise is cut at the smallest multiple of ``step`` covering
        ``GAUSSIAN_PAIR_SIGMAS = 40`` sigmas (mass beyond ``< e^-800``) or
        ``LAPLACE_PAIR_SCALES = 60`` scales (mass beyond ``e^-60 ≈ 9e-27``)."""
        step = check_positive_real("step", step)
        return WorstCasePair.additive(self._noise(step), self.sensitivity)

    def log_moment(self, lam: float, direction: str) -> float:
        """``Gamma_lambda`` (equal in both directions by symmetry)."""
        check_one_direction("direction", direction)
        return self._gamma(check_lambda("lam", lam))

    def log_moment_slope(self, lam: float, direction: str) -> float:
        """``dGamma_lambda/dlambda``, in closed form."""
        check_one_direction("direction", direction)
        return self._slope(check_lambda("lam", lam))

    def distinguishing_mass(self, direction: str) -> float:
        """``omega``: the A-mass where ``B`` has no density; near 1 as ``1 - e^Gamma_0``."""
        check_one_direction("direction", direction)
        omega = self._omega()
        return omega if omega <= 0.5 else -math.expm1(self._gamma(0.0))

    def max_finite_loss(self, direction: str) -> float:
        """An upper bound on the supremum of the finite privacy losses: the closed form
        (a few correctly rounded operations) moved up by 4 ulps."""
        check_one_direction("direction", direction)
        top = self._max_loss()
        return up(top, 4) if math.isfinite(top) else top

    def mass_logs(self, direction: str) -> MassLogs:
        """Total mass exactly 1; ``omega`` within :data:`DISTINGUISHING_RELATIVE_ERROR`."""
        omega = self.distinguishing_mass(direction)
        if omega == 0.0:
            return MassLogs()
        spread = DISTINGUISHING_RELATIVE_ERROR
        return MassLogs.of((0.0, 0.0), (down(omega * (1.0 - spread)), up(omega * (1.0 + spread))))

    def log_moment_error(self, lam: float, direction: str) -> float:
        """A bound on the absolute error of the computed ``Gamma_lambda``:
        ``64 u (|Gamma| + (lambda + 1) |Gamma'|)`` for the rounding of the formula's terms
        (their size is at most that of ``lambda Gamma'`` and ``Gamma``) plus the declared
        error of the logs of closed-form masses."""
        gamma = self.log_moment(lam, direction)
        slope = self.log_moment_slope(lam, direction)
        return 64.0 * _U * (abs(gamma) + (lam + 1.0) * abs(slope)) + self._log_mass_error


# ---------------------------------------------------------------- untruncated noise


@attrs.frozen
class GaussianMechanism(_SymmetricMechanism):
    """Gaussian noise ``N(0, sigma^2)``, sensitivity ``s``::

    Gamma_lambda = lambda (lambda + 1) s^2 / (2 sigma^2),   omega = 0,   sup L = inf

    (Mironov 2017, Rényi DP of order ``alpha = lambda + 1``; SPEC section 3).
    """

    _name = "Gaussian"
    sigma: float = attrs.field(converter=_positive("sigma"))
    sensitivity: float = attrs.field(default=1.0, converter=_positive("sensitivity"))

    def _rate(self) -> float:
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    def _gamma(self, lam: float) -> float:
        return lam * (lam + 1.0) * self._rate()

    def _slope(self, lam: float) -> float:
        return (2.0 * lam + 1.0) * self._rate()

    def _max_loss(self) -> float:
        return math.inf

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_gaussian(self.sigma, _cover(GAUSSIAN_PAIR_SIGMAS * self.sigma, step), step)


@attrs.frozen
class LaplaceMechanism(_SymmetricMechanism):
    """Laplace noise with density ``e^(-|x|/b) / (2b)``, sensitivity ``s``, ``t = s/b``::

    Gamma_lambda = ln[(lambda+1)/(2lambda+1) e^(lambda t) + lambda/(2lambda+1) e^(-(lambda+1) t)]

    (Mironov 2017, Rényi DP of Laplace with ``alpha = lambda + 1``), evaluated as
    ``lambda t + ln((lambda+1)/(2lambda+1)) + log1p(lambda/(lambda+1) e^(-(2lambda+1) t))``;
    ``omega = 0``, ``sup L = t``.
    """

    _name = "Laplace"
    _log_mass_error = 64.0 * _U
    scale: float = attrs.field(converter=_positive("scale"))
    sensitivity: float = attrs.field(default=1.0, converter=_positive("sensitivity"))

    def _gamma(self, lam: float) -> float:
        t = self.sensitivity / self.scale
        g = lam / (lam + 1.0) * math.exp(-(2.0 * lam + 1.0) * t)
        return lam * t + math.log1p(lam) - math.log1p(2.0 * lam) + math.log1p(g)

    def _slope(self, lam: float) -> float:
        t = self.sensitivity / self.scale
        decay = math.exp(-(2.0 * lam + 1.0) * t)
        g = lam / (lam + 1.0) * decay
        dg = decay * (1.0 / (lam + 1.0) ** 2 - 2.0 * t * lam / (lam + 1.0))
        return t - 1.0 / ((lam + 1.0) * (2.0 * lam + 1.0)) + dg / (1.0 + g)

    def _max_loss(self) -> float:
        return self.sensitivity / self.scale

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_laplace(self.scale, _cover(LAPLACE_PAIR_SCALES * self.scale, step), step)


# ---------------------------------------------------------------- truncated noise


@attrs.frozen
class TruncatedGaussianMechanism(_SymmetricMechanism):
    """Gaussian density restricted to ``[-r, r]`` and renormalised by
    ``Z = Phi(r/sigma) - Phi(-r/sigma)`` (paper, Example "Truncated Gaussian Noise",
    continuous version), sensitivity ``s < 2r``. On the overlap ``[s-r, r]``,
    ``a^(1+lambda) b^(-lambda) = e^(lambda(lambda+1)s^2/(2sigma^2)) phi((x + lambda s)/sigma)
    / (sigma Z)``, hence with ``u1 = (r + lambda s)/sigma``, ``u2 = (s - r + lambda s)/sigma``::

        Gamma_lambda = lambda(lambda+1) s^2/(2 sigma^2) + ln[Phi(u1) - Phi(u2)] - ln Z,
        omega        = [Phi((s-r)/sigma) - Phi(-r/sigma)] / Z,
        sup L        = L(s-r) = s (2r - s) / (2 sigma^2).

    For ``u2 >= 0`` the quadratic terms cancel analytically,
    ``lambda(lambda+1)s^2/(2sigma^2) - u2^2/2 = lambda sup L - (s-r)^2/(2sigma^2)``, and the
    rest uses ``erfcx``. The slope is ``E_w[L]`` under the tilted density, a normal
    ``N(-lambda s, sigma^2)`` truncated to the overlap:
    ``sup L - (s/sigma) [(phi(u2) - phi(u1))/(Phi(u1) - Phi(u2)) - u2]``.
    """

    _name = "truncated Gaussian"
    _log_mass_error = DISTINGUISHING_RELATIVE_ERROR
    sigma: float = attrs.field(converter=_positive("sigma"))
    bound: float = attrs.field(converter=_positive("bound"))
    sensitivity: float = attrs.field(default=1.0, converter=_positive("sensitivity"))

    def _log_z(self) -> float:
        r = self.bound / self.sigma
        return log_gauss_mass_scalar(-r, r, 2.0 * r)

    def _arguments(self, lam: float) -> tuple[float, float, float]:
        s, r, sigma = self.sensitivity, self.bound, self.sigma
        return (r + lam * s) / sigma, (s - r + lam * s) / sigma, (2.0 * r - s) / sigma

    def _narrow(self, lam: float) -> tuple[float, float] | None:
        """For a narrow overlap, where the forms below cancel: with ``m = (u1 + u2)/2`` and
        ``tau = (x + lambda s)/sigma - m`` on ``[-w/2, w/2]``, ``Phi(u1) - Phi(u2) = phi(m) I0``
        and the slope is ``E_w[L] = (s/sigma) E[-tau] = (s/sigma) I1/I0`` (see
        :func:`narrow_gauss_integrals`). Returns ``(ln I0, slope)`` or ``None``."""
        u1, u2, width = self._arguments(lam)
        integrals = narrow_gauss_integrals(0.5 * (u1 + u2), 0.5 * width)
        if integrals is None:
            return None
        slope = self.sensitivity / self.sigma * integrals[1] / integrals[0]
        return math.log(integrals[0]), slope

    def _gamma(self, lam: float) -> float:
        u1, u2, width = self._arguments(lam)
        narrow = self._narrow(lam)
        if narrow is not None:  # lambda(lambda+1)s^2/(2sigma^2) - m^2/2 = -s^2/(8 sigma^2)
            quadratic = -(self.sensitivity**2) / (8.0 * self.sigma**2) - LOG_SQRT_2PI
            return quadratic + narrow[0] - self._log_z()
        if u2 >= 0.0:
            offset = (self.sensitivity - self.bound) ** 2 / (2.0 * self.sigma**2)
            log_mass = log_upper_gauss_scaled(u2, u1, width)
            return lam * self._max_loss() - offset + log_mass - self._log_z()
        quadratic = lam * (lam + 1.0) * self.sensitivity**2 / (2.0 * self.sigma**2)
        return quadratic + log_gauss_mass_scalar(u2, u1, width) - self._log_z()

    def _slope(self, lam: float) -> float:
        narrow = self._narrow(lam)
        if narrow is not None:
            return narrow[1]
        u1, u2, width = self._arguments(lam)
        if u2 >= 0.0:
            # excess = (phi(u2) - phi(u1))/(Phi(u1) - Phi(u2)) - u2; numerator and denominator
            # scaled by e^(u2^2/2)/phi(0), so phi(u1) -> e^-c, Q(u) -> M(u) e^(-(u^2 - u2^2)/2).
            decay = math.exp(-0.5 * width * (u1 + u2))
            mills1 = mills(u1)
            numerator = mills_complement(u2) - decay * (mills_complement(u1) + width * mills1)
            excess = numerator / (mills(u2) - decay * mills1)
        else:
            # phi(u2) - phi(u1) = phi(u2) (1 - e^-c), c = (u1^2 - u2^2)/2 = width (u1 + u2)/2
            log_phi2 = -0.5 * u2 * u2 - LOG_SQRT_2PI - log_gauss_mass_scalar(u2, u1, width)
            excess = math.exp(log_phi2) * -math.expm1(-0.5 * width * (u1 + u2)) - u2
        max_loss = self._max_loss()
        slope = max_loss - (self.sensitivity / self.sigma) * excess
        return min(max(slope, -max_loss), max_loss)  # E_w[L] lies in [inf L, sup L]

    def _omega(self) -> float:
        s, r, sigma = self.sensitivity, self.bound, self.sigma
        log_mass = log_gauss_mass_scalar(-r / sigma, (s - r) / sigma, s / sigma)
        return math.exp(log_mass - self._log_z())

    def _max_loss(self) -> float:
        s = self.sensitivity
        return s * (2.0 * self.bound - s) / (2.0 * self.sigma**2)

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_gaussian(self.sigma, self.bound, step)


@attrs.frozen
class TruncatedLaplaceMechanism(_SymmetricMechanism):
    """Laplace density ``e^(-|x|/b) / (2bZ)`` on ``[-r, r]``, ``Z = 1 - e^(-r/b)``,
    sensitivity ``s < 2r`` (SPEC section 4, continuous version). On the overlap
    ``[s-r, r]``, ``ln a^(1+lambda) b^(-lambda) + ln(2bZ) = alpha x + beta`` is piecewise
    linear with breakpoints 0 and ``s``::

        x < 0:      alpha = 1/b,             beta = lambda s/b      (L = s/b)
        0 <= x < s: alpha = -(2lambda+1)/b,  beta = lambda s/b      (L = (s - 2x)/b)
        x >= s:     alpha = -1/b,            beta = -lambda s/b     (L = -s/b)

    so ``Gamma_lambda = ln sum_pieces ∫ e^(alpha x + beta) dx - ln(2bZ)`` in closed
    form, and ``dGamma/dlambda = sum_p w_p (alpha'_p E_p[x] + beta'_p)`` (differentiating
    under the integral; ``w_p`` the pieces' shares, ``E_p`` the mean under ``e^(alpha x)``
    on the piece). ``omega`` = A-mass of ``[-r, s-r)``; ``sup L = L(s-r) = min(s, 2r-s)/b``.
    """

    _name = "truncated Laplace"
    _log_mass_error = DISTINGUISHING_RELATIVE_ERROR
    scale: float = attrs.field(converter=_positive("scale"))
    bound: float = attrs.field(converter=_positive("bound"))
    sensitivity: float = attrs.field(default=1.0, converter=_positive("sensitivity"))

    def _log_norm(self) -> float:
        """``ln(2bZ)``."""
        return math.log(2.0 * self.scale) + log1mexp_scalar(-self.bound / self.scale)

    def _pieces(self, lam: float) -> list[tuple[float, float, float, float, float, float]]:
        """``(alpha, beta, lo, hi, dalpha/dlambda, L(midpoint))`` of the non-empty pieces.

        ``dbeta/dlambda + dalpha/dlambda * midpoint`` is the loss at the midpoint, exactly
        ``s/b``, ``0`` (the middle piece is always centred on ``s/2``) and ``-s/b``.
        """
        s, r, b = self.sensitivity, self.bound, self.scale
        rise = lam * s / b
        candidates = (
            (1.0 / b, rise, -math.inf, 0.0, 0.0, s / b),
            (-(2.0 * lam + 1.0) / b, rise, 0.0, s, -2.0 / b, 0.0),
            (-1.0 / b, -rise, s, math.inf, 0.0, -s / b),
        )
        pieces = []
        for alpha, beta, lo, hi, d_alpha, mid_loss in candidates:
            lo, hi = max(lo, s - r), min(hi, r)
            if hi > lo:
                pieces.append((alpha, beta, lo, hi, d_alpha, mid_loss))
        return pieces

    def _gamma(self, lam: float) -> float:
        logs = [log_exp_integral(a, be, lo, hi) for a, be, lo, hi, _, _ in self._pieces(lam)]
        return logsumexp_scalar(logs) - self._log_norm()

    def _slope(self, lam: float) -> float:
        pieces = self._pieces(lam)
        logs = [log_exp_integral(a, be, lo, hi) for a, be, lo, hi, _, _ in pieces]
        top = max(logs)
        shares = [math.exp(v - top) for v in logs]  # normalised below, not via ln(sum)
        slope = 0.0
        for share, (alpha, _, lo, hi, d_alpha, mid_loss) in zip(shares, pieces, strict=True):
            # alpha' E[x] + beta' = L(mid) + alpha' (E[x] - mid)
            width = hi - lo
            slope += share * (mid_loss + d_alpha * width * exp_mean_offset(alpha * width))
        max_loss = self._max_loss()
        return min(max(slope / math.fsum(shares), -max_loss), max_loss)

    def _omega(self) -> float:
        s, r, b = self.sensitivity, self.bound, self.scale
        logs = []
        for alpha, lo, hi in ((1.0 / b, -r, min(0.0, s - r)), (-1.0 / b, 0.0, s - r)):
            if hi > lo:
                logs.append(log_exp_integral(alpha, 0.0, lo, hi))
        return math.exp(logsumexp_scalar(logs) - self._log_norm())

    def _max_loss(self) -> float:
        return min(self.sensitivity, 2.0 * self.bound - self.sensitivity) / self.scale

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_laplace(self.scale, self.bound, step)
