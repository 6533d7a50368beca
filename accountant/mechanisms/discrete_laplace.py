"""The truncated discrete Laplace (two-sided geometric) mechanism: integer noise ``k`` in
``[-r, r]`` with ``p(k) = e^(-|k|/b) / Z``, ``Z = sum_{|j| <= r} e^(-|j|/b)``, added to an
integer-valued query of sensitivity ``s`` (an integer, ``1 <= s < 2r``).

Its pair lies on the integer lattice, so the grid pair *is* the mechanism: nothing is
discretised, and every bound both accountants give for it is a bound on the mechanism
itself. Closed forms (``t = s/b``): finite privacy losses ``L(k) = (|k - s| - |k|)/b`` lie in
``[-t, t]``; the distinguishing outcomes under ``A`` are ``k = -r, ..., -r + s - 1`` with
mass ``omega = sum_{k=-r}^{-r+s-1} e^(-|k|/b) / Z`` (checked against the accountants in
``tests/mechanisms/test_discrete_laplace.py``).

This module is the worked example of adding a family (``docs/architecture.md``): one
module implementing :class:`accountant.protocol.AnalyticMechanism`, exported by one line
in :mod:`accountant.mechanisms`.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.sources import PLDRelease, ReleaseSource
from accountant.errors import InvalidInputError
from accountant.moments.log_moments import PairLogMoments
from accountant.noise import NoiseDistribution
from accountant.noise.families import from_log_density, symmetric_grid
from accountant.numerics.directed import MassLogs
from accountant.pairs.pld import privacy_loss_distribution
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import OneDirection, check_positive_int, check_positive_real

__all__ = ["TruncatedDiscreteLaplaceMechanism", "distinguishing_mass_closed_form"]


@attrs.frozen(kw_only=True)
class TruncatedDiscreteLaplaceMechanism:
    """``p(k) ∝ e^(-|k|/scale)`` on the integers ``-bound..bound``, sensitivity an integer.

    >>> from accountant import ExtendedMA, PrivacyBuckets, mechanisms
    >>> m = mechanisms.TruncatedDiscreteLaplaceMechanism(scale=2.0, bound=20, sensitivity=1)
    >>> bounds = PrivacyBuckets().compose(m, times=10).delta(1.0)
    >>> bounds.upper <= ExtendedMA().compose(m, times=10).delta(1.0).upper
    True
    """

    scale: float = attrs.field(converter=lambda v: check_positive_real("scale", v))
    bound: int = attrs.field(converter=lambda v: check_positive_int("bound", v))
    sensitivity: int = attrs.field(
        default=1, converter=lambda v: check_positive_int("sensitivity", v)
    )
    _pair: WorstCasePair = attrs.field(init=False, repr=False, eq=False)
    _moments: PairLogMoments = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.sensitivity >= 2 * self.bound:
            raise InvalidInputError(
                f"sensitivity must be < 2 * bound = {2 * self.bound} (else the outputs on "
                f"neighbouring inputs never overlap), got sensitivity={self.sensitivity!r}"
            )
        pair = WorstCasePair.additive(self.noise(), float(self.sensitivity))
        object.__setattr__(self, "_pair", pair)  # frozen: built once, here
        object.__setattr__(self, "_moments", PairLogMoments(pair))

    @property
    def description(self) -> str:
        """E.g. ``"truncated discrete Laplace (scale=2, bound=20), sensitivity 1"``."""
        return (
            f"truncated discrete Laplace (scale={self.scale:g}, bound={self.bound}), "
            f"sensitivity {self.sensitivity}"
        )

    def noise(self) -> NoiseDistribution:
        """The noise on ``-bound..bound`` (step 1), normalised in log space."""
        grid = symmetric_grid(float(self.bound), 1.0)
        log_density = -np.abs(grid) / self.scale
        name = f"truncated discrete Laplace(scale={self.scale:g}, "
        return from_log_density(grid, log_density, name)

    def pair(self, step: float = 1.0) -> WorstCasePair:
        """The exact worst-case pair: the noise and the noise shifted by the sensitivity.
        ``step`` must be 1 (the mechanism lives on the integers)."""
        if step != 1.0:
            raise InvalidInputError(f"step must be 1 for integer noise, got {step!r}")
        return self._pair

    # -- AnalyticMechanism: both accountants use the exact pair's quantities -------------

    def log_moment(self, lam: float, direction: OneDirection) -> float:
        """``Gamma_lambda`` of the exact pair."""
        return self._moments.log_moment(lam, direction)

    def log_moment_slope(self, lam: float, direction: OneDirection) -> float:
        """``dGamma_lambda/dlambda`` of the exact pair."""
        return self._moments.log_moment_slope(lam, direction)

    def log_moment_error(self, lam: float, direction: OneDirection) -> float:
        """The rounding bound of the exact pair's ``Gamma_lambda``."""
        return self._moments.log_moment_error(lam, direction)

    def distinguishing_mass(self, direction: OneDirection) -> float:
        """``omega``: the A-mass of ``k < -r + s`` (equal in both directions)."""
        return self._moments.distinguishing_mass(direction)

    def mass_logs(self, direction: OneDirection) -> MassLogs:
        """Certified total and distinguishing masses of the exact pair."""
        return self._moments.mass_logs(direction)

    def max_finite_loss(self, direction: OneDirection) -> float:
        """At most ``s / scale`` (the exact pair's largest finite loss)."""
        return self._moments.max_finite_loss(direction)

    def bucket_release(self) -> ReleaseSource:
        """The exact pair's privacy-loss distribution as a PrivacyBuckets release."""
        pair = self._pair
        return PLDRelease(privacy_loss_distribution(pair, "A/B"), self.description)


def distinguishing_mass_closed_form(scale: float, bound: int, sensitivity: int) -> float:
    """``sum_{k=-r}^{-r+s-1} e^(-|k|/b) / Z`` with ``Z = sum_{|j| <= r} e^(-|j|/b)``."""
    z = math.fsum(math.exp(-abs(j) / scale) for j in range(-bound, bound + 1))
    ends = range(-bound, -bound + sensitivity)
    top = math.fsum(math.exp(-abs(k) / scale) for k in ends)
    return top / z
