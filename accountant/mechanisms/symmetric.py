"""What the symmetric analytic mechanisms share: validation, descriptions, the
Extended MA protocol methods, and grid discretisation.

A mechanism with sensitivity ``s`` is the pair ``A`` = noise density centred at 0,
``B`` = the same density centred at ``s``; the privacy loss is ``L(x) = ln a(x)/b(x)``.
For direction A/B and ``lambda >= 0`` (SPEC section 3; paper, Proposition
"Numerical Extended MA", with sums replaced by integrals)::

    Gamma_lambda = ln ∫_{a>0, b>0} a(x)^(1+lambda) b(x)^(-lambda) dx,
    omega        = ∫_{a>0, b=0} a(x) dx.

Every noise here is symmetric, so the reflection ``x -> s - x`` maps ``A`` to ``B``
and both directions give the same values. Each class implements
:class:`~accountant.moments.log_moments.LogMomentSource`; all work is done in log space
and stays finite (no overflow, no NaN) for ``lambda`` from 0 to far beyond 1e6.
``pair(step)`` gives the grid discretisation as a
:class:`~accountant.pairs.worst_case.WorstCasePair`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from accountant.errors import InvalidInputError
from accountant.numerics.directed import MassLogs, down, up
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import check_lambda, check_one_direction, check_positive_real

if TYPE_CHECKING:
    from accountant.noise import NoiseDistribution

__all__ = [
    "DISTINGUISHING_RELATIVE_ERROR",
    "GAUSSIAN_PAIR_SIGMAS",
    "LAPLACE_PAIR_SCALES",
    "SymmetricMechanism",
    "cover",
    "positive",
]

#: Declared relative error of the closed-form distinguishing masses (observed <= ~1.1e4 u).
DISTINGUISHING_RELATIVE_ERROR = 1e-10

#: Grid discretisations of the untruncated noises are cut at this many sigmas / scales.
GAUSSIAN_PAIR_SIGMAS = 40.0
LAPLACE_PAIR_SCALES = 60.0


def cover(length: float, step: float) -> float:
    """The smallest multiple of ``step`` that is ``>= length`` (up to rounding of the ratio)."""
    return step * max(1, math.ceil(length / step * (1.0 - 1e-12)))


def positive(name: str) -> Callable[[float], float]:
    def convert(value: float) -> float:
        return check_positive_real(name, value)

    return convert


class SymmetricMechanism:
    """Protocol methods shared by the symmetric mechanisms: validate, then delegate to the
    subclass's ``_gamma(lam)``, ``_slope(lam)``, ``_omega()`` and ``_max_loss()``."""

    _name = "mechanism"
    #: Declared absolute error of ``ln`` of a closed-form mass (``Phi`` differences,
    #: normalisers) inside ``Gamma_lambda``; 0 where ``Gamma`` is a plain formula.
    _log_mass_error = 0.0

    if TYPE_CHECKING:  # what every subclass (an attrs class) has
        __attrs_attrs__: ClassVar[Any]
        sensitivity: float

        def _noise(self, step: float) -> NoiseDistribution: ...
        def _gamma(self, lam: float) -> float: ...
        def _slope(self, lam: float) -> float: ...
        def _max_loss(self) -> float: ...

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
        return 64.0 * UNIT_ROUNDOFF * (abs(gamma) + (lam + 1.0) * abs(slope)) + self._log_mass_error
