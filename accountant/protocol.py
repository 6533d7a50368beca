"""The interfaces everything else is built against.

* :class:`AnalyticMechanism`: what a mechanism given by formulas (no grid) provides so
  that both accountants take it as it is: the Extended MA's log moments (SPEC section 3)
  and a PrivacyBuckets release (SPEC section 2). A grid mechanism is a
  :class:`~accountant.pairs.worst_case.WorstCasePair` instead; a family that is exact on a
  lattice may build its pair and hand both accountants what the pair gives
  (:mod:`accountant.mechanisms.discrete_laplace` does).
* :class:`ReleaseSource` (with its :class:`LossStatistics`): one release as PrivacyBuckets
  composes it, what :meth:`AnalyticMechanism.bucket_release` returns. It is declared here,
  below both the mechanisms and the buckets, so that neither layer imports the other to
  name it (:mod:`accountant.buckets.sources` re-exports both names).
* :class:`Accountant`: compose mechanisms, query delta and eps, read the history, save
  the state and rebuild from it. :class:`~accountant.buckets.PrivacyBuckets` and
  :class:`~accountant.moments.ExtendedMA` implement it. Two-sided accountants answer with
  :class:`~accountant.results.Bounds` / :class:`~accountant.results.EpsilonBounds`;
  an accountant with only an upper bound answers with
  :class:`~accountant.results.DeltaUpperBound` / :class:`~accountant.results.EpsilonUpperBound`
  (the same fields, no ``lower``), so generic code reads ``.upper`` from either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import attrs

from accountant.validation import Direction, OneDirection

if TYPE_CHECKING:
    import numpy as np

    from accountant.numerics.directed import MassLogs
    from accountant.results import Bounds, DeltaUpperBound, EpsilonBounds, EpsilonUpperBound

__all__ = [
    "Accountant",
    "AnalyticMechanism",
    "LogMomentSource",
    "LossStatistics",
    "ReleaseSource",
]


@attrs.frozen
class LossStatistics:
    """Finite losses of one release under A: mean, variance (of the normalised finite
    part), the range holding all but ``tail_mass`` of the A-mass, and a lattice.

    ``lattice`` is the spacing ``g`` of a lattice ``anchor + k g`` holding every
    finite loss (``0.0`` for a single loss value, ``None`` for no lattice).
    """

    mean: float
    variance: float
    low: float
    high: float
    anchor: float
    lattice: float | None


class ReleaseSource(Protocol):
    """One release in both directions, as PrivacyBuckets needs it: what
    :meth:`AnalyticMechanism.bucket_release` returns (pairs and PLDs become a
    :class:`~accountant.buckets.sources.PLDRelease`)."""

    description: str

    def statistics(self, direction: str, tail_mass: float) -> LossStatistics:
        """Loss statistics in ``direction`` ("A/B" or "B/A")."""
        ...

    def bucket(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> Any:  # a buckets.bucketed.BucketedPLD: that type lives above this module
        """Buckets of ``width`` with upper edges at ``anchor + J width`` (a
        :class:`~accountant.buckets.bucketed.BucketedPLD`); raises
        :class:`~accountant.buckets.bucketed.BucketBudgetError` beyond ``max_buckets``."""
        ...

    def same_directions(self) -> bool:
        """Whether both directions have identical PLDs (compose once, use twice)."""
        ...


@runtime_checkable
class LogMomentSource(Protocol):
    """What the Extended Moments Accountant needs of one release, per direction
    (``"A/B"``: losses ``ln A/B`` under ``A``; ``"B/A"`` the reverse). Pairs
    (:class:`~accountant.moments.log_moments.PairLogMoments`) and every
    :class:`AnalyticMechanism` provide it."""

    @property
    def description(self) -> str:
        """Readable, e.g. ``"Gaussian (sigma=2), sensitivity 1"``; used in histories."""
        ...

    def log_moment(self, lam: float, direction: OneDirection) -> float:
        """``Gamma_lambda = ln sum_{a>0,b>0} a^(1+lambda) b^(-lambda)`` for ``lam >= 0``
        (``-inf`` if no outcome has a finite loss)."""
        ...

    def log_moment_slope(self, lam: float, direction: OneDirection) -> float:
        """``dGamma_lambda / dlambda`` at ``lam``."""
        ...

    def log_moment_error(self, lam: float, direction: OneDirection) -> float:
        """A bound on the absolute error of the computed :meth:`log_moment` at ``lam``."""
        ...

    def distinguishing_mass(self, direction: OneDirection) -> float:
        """``omega``: the mass of outcomes only the first distribution can produce
        (loss ``+inf``)."""
        ...

    def mass_logs(self, direction: OneDirection) -> MassLogs:
        """Certified logs of the total mass and of the finite share ``1 - omega / S``."""
        ...

    def max_finite_loss(self, direction: OneDirection) -> float:
        """An upper bound on the supremum of the finite losses, rounding included (``inf``
        if unbounded, ``-inf`` if there are none)."""
        ...


@runtime_checkable
class AnalyticMechanism(LogMomentSource, Protocol):
    """One application of a mechanism given by formulas, in both directions: the Extended
    MA's log moments (:class:`LogMomentSource`) and the release PrivacyBuckets composes."""

    def bucket_release(self) -> ReleaseSource:
        """The release PrivacyBuckets buckets and composes."""
        ...


@runtime_checkable
class Accountant(Protocol):
    """Composition of mechanisms with certified answers. Immutable: :meth:`compose`
    returns a new accountant, so a composed one can be shared and queried freely."""

    def compose(self, mechanism: Any, times: int = 1) -> Self:
        """The accountant with ``times`` more releases of ``mechanism`` (a
        :class:`~accountant.pairs.worst_case.WorstCasePair` or an
        :class:`AnalyticMechanism`)."""
        ...

    @property
    def releases(self) -> int:
        """Total number of composed releases."""
        ...

    @property
    def history(self) -> str:
        """What was composed, e.g. ``"128 x truncated Gaussian(sigma=100, ...)"``."""
        ...

    def delta(
        self, epsilon: float | np.ndarray, direction: Direction = "max"
    ) -> Bounds | DeltaUpperBound:
        """Approximate-DP delta(eps) (SPEC section 1), certified."""
        ...

    def delta_pdp(
        self, epsilon: float | np.ndarray, direction: Direction = "max"
    ) -> Bounds | DeltaUpperBound:
        """Probabilistic-DP delta: the probability that the privacy loss exceeds eps."""
        ...

    def epsilon(
        self, delta: float, direction: Direction = "max"
    ) -> EpsilonBounds | EpsilonUpperBound:
        """The smallest eps whose (ADP) delta is at most ``delta``, certified."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to rebuild the accountant: its settings and its components
        (mechanism objects and counts), with a format ``version``."""
        ...

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Self:
        """The accountant :meth:`state_dict` described; refuses another kind or version."""
        ...
