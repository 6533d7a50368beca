"""An accountant for DP-SGD whose noise is cut per coordinate, on any number of
coordinates: :class:`DPSGDAccountant`.

For ``dimension = 1`` it is :class:`~accountant.buckets.PrivacyBuckets` on the truncated
pair (SPEC section 2), exact to its accuracy. For ``dimension = d > 1``:

* ``lower``: the truncated one-dimensional pair's certified lower bound. A clipped
  gradient on one axis is a valid neighbouring input and leaves the other ``d - 1``
  coordinates with the same law under both inputs, so the ``d``-dimensional mechanism is
  at least as distinguishable as that pair. Where its cut lies so far in the tails that
  the coupling of :mod:`accountant.dpsgd.coupling` costs at most :data:`NEGLIGIBLE` of the
  delta, that lower bound comes from the uncut run (less the coupling's penalty), whose
  composition the upper bound needs anyway: one composition, not two.
* ``upper``: the coupling bound of :mod:`accountant.dpsgd.coupling` on top of the
  certified upper bound of the same steps without the cut (``cut = inf``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import attrs
import numpy as np

from accountant.buckets import PrivacyBuckets
from accountant.composition import Component, ComposedReleases
from accountant.dpsgd.coupling import (
    coupled_delta,
    coupled_epsilon,
    escape_probability,
    lowered_delta,
    lowering,
    raised_target,
)
from accountant.errors import (
    CertificationWarning,
    InvalidInputError,
)
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
from accountant.results import Bounds, EpsilonBounds
from accountant.validation import (
    Direction,
    Kind,
    check_choice,
    check_direction,
    check_epsilons,
    check_open_fraction,
    check_positive_int,
    check_target_delta,
)

__all__ = ["CutAndUncut", "DPSGDAccountant"]

#: The cut run's lower bound comes from the uncut run when the coupling's penalty is at
#: most this share of the delta (the eps it moves is about this over the tail's slope).
NEGLIGIBLE = 1e-7
#: The accuracy at which the uncut run is first asked for delta when the escape
#: probability is not negligible (:meth:`DPSGDAccountant._gaussian_delta`).
COARSE_ACCURACY = 0.05


def _canonical(truncation: str) -> str:
    return "renormalised" if truncation == "resampled" else truncation


@attrs.frozen
class CutAndUncut:
    """One step's mechanism as composed (``cut``) and the same step without its cut
    (``uncut``, ``cut = inf``), whose Gaussian the coupling bound starts from."""

    cut: SubsampledTruncatedGaussian
    uncut: SubsampledTruncatedGaussian

    @property
    def description(self) -> str:
        """The composed mechanism's description."""
        return self.cut.description


def _both(mechanism: Any) -> CutAndUncut:
    if not isinstance(mechanism, SubsampledTruncatedGaussian):
        raise InvalidInputError(
            "mechanism must be a SubsampledTruncatedGaussian (one DP-SGD step), "
            f"got {type(mechanism).__name__}"
        )
    return CutAndUncut(mechanism, attrs.evolve(mechanism, cut=math.inf))


def _check_dimension(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    check_positive_int(attribute.name, value)


def _check_accuracy(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    check_open_fraction(attribute.name, value)


@attrs.frozen(eq=False)
class DPSGDAccountant(ComposedReleases):
    """Certified accountant of DP-SGD steps (:class:`SubsampledTruncatedGaussian`) on
    ``dimension`` coordinates, each cut separately (module docstring). Immutable.

    ``dimension``: the number of noised coordinates per step (the model's trainable
    parameters); required, since the bound depends on it. ``accuracy``: the
    PrivacyBuckets accuracy of both compositions. All steps must share one truncation.
    """

    dimension: int = attrs.field(validator=_check_dimension)
    accuracy: float = attrs.field(default=1e-4, validator=_check_accuracy)
    components: tuple[Component, ...] = attrs.field(default=(), repr=False)
    #: the two compositions (:attr:`truncated`, :attr:`gaussian`), built at their first use
    _composed: dict[str, PrivacyBuckets] = attrs.field(factory=dict, init=False, repr=False)

    SETTINGS: ClassVar[tuple[str, ...]] = ("dimension", "accuracy")
    source_of = staticmethod(_both)

    def __attrs_post_init__(self) -> None:
        # one pass over the steps' truncations, no composition: composing step after step
        # (a heterogeneous schedule of thousands of settings) stays linear in the steps
        truncations = {_canonical(t) for t in {c.mechanism.truncation for c in self.components}}
        if len(truncations) > 1:
            raise InvalidInputError(
                f"mechanism must share one truncation with the steps composed so far, "
                f"got {sorted(truncations)}"
            )

    def _composition(self, which: str) -> PrivacyBuckets:
        """The PrivacyBuckets composition of the steps as cut (``"cut"``) or without their
        cut (``"uncut"``), made once per accountant."""
        composed = self._composed.get(which)
        if composed is None:
            composed = PrivacyBuckets(accuracy=self.accuracy)
            for component in self.components:
                composed = composed.compose(getattr(component.source, which), component.times)
            self._composed[which] = composed
        return composed

    @property
    def truncated(self) -> PrivacyBuckets:
        """The composition of the steps as cut (their certified upper bounds)."""
        return self._composition("cut")

    @property
    def gaussian(self) -> PrivacyBuckets:
        """The composition of the same steps without their cut (the coupling's start)."""
        return self._composition("uncut")

    @property
    def truncation(self) -> str:
        """``"renormalised"`` or ``"clamped"`` (``"renormalised"`` before any step)."""
        if not self.components:
            return "renormalised"
        return _canonical(self.components[0].mechanism.truncation)

    @property
    def escape_probability(self) -> float:
        """``tau``: the chance, rounded up, that some noise coordinate of the uncut run
        reaches its cut over all steps (:func:`~accountant.dpsgd.coupling.escape_probability`)."""
        return escape_probability(
            [(c.mechanism.cut, self.dimension * c.times) for c in self.components]
        )

    @property
    def one_dimensional_escape(self) -> float:
        """``tau_1``: :attr:`escape_probability` of the one-dimensional pair (one coordinate
        per step), whose coupling bounds the cut run from below through the uncut one."""
        return escape_probability([(c.mechanism.cut, c.times) for c in self.components])

    def delta(self, epsilon: float | np.ndarray, direction: Direction = "max") -> Bounds:
        """Certified ADP ``Bounds(lower, upper)`` on delta(eps) of the ``d``-dimensional
        run (vectorised over eps)."""
        if self.dimension == 1:
            return self.truncated.delta(epsilon, direction)
        eps = check_epsilons("epsilon", epsilon)
        high = self._gaussian_delta(epsilon, eps, direction)
        upper = coupled_delta(high.upper, eps, self.escape_probability, self.truncation)
        penalty = lowering(eps, self.one_dimensional_escape, self.truncation)
        through = lowered_delta(high.lower, eps, self.one_dimensional_escape, self.truncation)
        if np.all(penalty <= NEGLIGIBLE * np.asarray(high.lower)):
            low = attrs.evolve(high, lower=float(through) if np.ndim(epsilon) == 0 else through)
        else:
            low = self.truncated.delta(epsilon, direction)
        lower = np.asarray(low.lower, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            gaps = np.where(upper > 0.0, (upper - lower) / upper, 0.0)
            escape = (
                coupled_delta(np.zeros_like(eps), eps, self.escape_probability, self.truncation)
                / upper
            )
        if np.max(gaps) > self.accuracy and np.max(escape) > self.accuracy:
            warnings.warn(
                f"DPSGDAccountant reached a relative bracket of {np.max(gaps):.3g}, not the "
                f"requested accuracy {self.accuracy:g}: some of the {self.dimension} x "
                f"{self.releases} noise coordinates reaches its cut with probability "
                f"tau={self.escape_probability:.3g}, which alone makes up "
                f"{100 * np.max(escape):.3g}% of the upper bound (a larger cut narrows it; "
                "bounds still certified)",
                CertificationWarning,
                stacklevel=2,
            )
        scalar = np.ndim(epsilon) == 0
        return Bounds(
            lower=low.lower,
            upper=float(upper) if scalar else upper,
            epsilon=low.epsilon,
            kind="ADP",
            direction=low.direction,
            releases=self.releases,
            accuracy=self.accuracy,
            achieved_accuracy=float(np.max(gaps)),
            bucket_width=high.bucket_width,
        )

    def _escape_term(self, eps: np.ndarray) -> np.ndarray:
        """``(e^eps + 1) tau``: at least the part of the coupled upper bound
        (:func:`~accountant.dpsgd.coupling.coupled_delta`, ``a delta_G + b``) that the
        escape probability adds, relative to ``a`` (``b / a = e^eps tau``, plus ``tau``
        clamped)."""
        with np.errstate(over="ignore"):
            return (np.exp(eps) + 1.0) * self.escape_probability

    def _gaussian_delta(self, epsilon: Any, eps: np.ndarray, direction: Direction) -> Bounds:
        """The uncut run's delta bounds, as fine as the coupled upper bound can use: its
        bracket ``a (h+ - h-)`` needs to be at most the accuracy times the coupled upper
        bound ``a h+ + b``, so relative ``accuracy (1 + b / (a h+))``. With a large
        escape probability that is far coarser than the accuracy: the uncut run is first
        asked at :data:`COARSE_ACCURACY` (a few coarse compositions) and refined only as
        far as that asks."""
        escape = self._escape_term(eps)
        if not np.any(escape > NEGLIGIBLE * self.accuracy):
            return self.gaussian.delta(epsilon, direction)
        coarse = attrs.evolve(self.gaussian, accuracy=max(COARSE_ACCURACY, self.accuracy))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificationWarning)
            first = coarse.delta(epsilon, direction)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(
                np.asarray(first.upper) > 0.0, escape / np.asarray(first.upper), np.inf
            )
        wanted = float(np.min(self.accuracy * (1.0 + share)))
        if wanted >= COARSE_ACCURACY:
            return first
        return attrs.evolve(self.gaussian, accuracy=max(wanted, self.accuracy)).delta(
            epsilon, direction
        )

    def delta_pdp(self, epsilon: float | np.ndarray, direction: Direction = "max") -> Bounds:
        """Certified PDP bounds. For ``dimension > 1`` only the lower bound is informative
        (the one-dimensional pair's; the coupling bound is an ADP statement): the upper
        bound is the trivial 1, ``achieved_accuracy`` is 1 and a
        :class:`~accountant.errors.CertificationWarning` says so."""
        low = self.truncated.delta_pdp(epsilon, direction)
        if self.dimension == 1:
            return low
        self._warn_pdp()
        upper = 1.0 if np.ndim(epsilon) == 0 else np.ones_like(np.asarray(low.upper))
        return attrs.evolve(low, upper=upper, achieved_accuracy=1.0)

    def epsilon(
        self, delta: float | np.ndarray, direction: Direction = "max", kind: Kind = "ADP"
    ) -> EpsilonBounds:
        """Certified bounds on the smallest eps with delta(eps) <= ``delta``. Raises
        :class:`~accountant.errors.InfeasibleTargetError` when no eps can be certified."""
        kind = check_choice("kind", kind, ("ADP", "PDP"))
        if self.dimension == 1:
            return self.truncated.epsilon(delta, direction, kind)
        if kind == "PDP":
            low = self.truncated.epsilon(delta, direction, "PDP")
            self._warn_pdp()
            upper = math.inf if np.ndim(delta) == 0 else np.full(np.shape(low.upper), math.inf)
            return attrs.evolve(low, upper=upper)
        direction = check_direction("direction", direction)
        if np.ndim(delta) != 0:
            parts = [self.epsilon(float(d), direction) for d in np.asarray(delta).ravel()]
            return attrs.evolve(
                parts[0],
                lower=np.array([p.lower for p in parts]),
                upper=np.array([p.upper for p in parts]),
                delta=np.asarray(delta, dtype=np.float64).ravel(),
            )
        delta = check_target_delta("delta", delta)
        low = self._lower_epsilon(delta, direction)
        upper = self._certified_epsilon(delta, direction, float(low.upper))
        self._warn_wide_epsilon(float(low.lower), upper, delta)
        return EpsilonBounds(
            lower=low.lower,
            upper=upper,
            delta=delta,
            kind="ADP",
            direction=direction,
            releases=self.releases,
            accuracy=self.accuracy,
            bucket_width=low.bucket_width,
        )

    def _lower_epsilon(self, delta: float, direction: Direction) -> EpsilonBounds:
        """The cut run's eps bounds at ``delta`` (its lower end certified): through the uncut
        run when the coupling's penalty at the uncut run's certified upper eps ``E`` is at
        most :data:`NEGLIGIBLE` of ``delta`` (every eps below the uncut run's certified lower
        eps at ``delta + penalty(E)``, which is at most ``E``, leaves the cut run's delta
        above ``delta``), else the cut run's own."""
        tau = self.one_dimensional_escape
        if tau < NEGLIGIBLE * delta:
            first = self.gaussian.epsilon(delta, direction)
            penalty = float(lowering(float(first.upper), tau, self.truncation))
            if penalty <= NEGLIGIBLE * delta:
                if penalty == 0.0:
                    return first
                target = raised_target(delta, float(first.upper), tau, self.truncation)
                shifted = self.gaussian.epsilon(target, direction)
                return attrs.evolve(first, lower=shifted.lower)
        return self.truncated.epsilon(delta, direction)

    def _certified_epsilon(self, delta: float, direction: Direction, start: float) -> float:
        """The smallest eps found whose coupled upper bound is at most ``delta``
        (:func:`~accountant.dpsgd.coupling.coupled_epsilon` of the uncut run, from the cut
        run's certified eps ``start``)."""
        return coupled_epsilon(
            lambda budget: float(self.gaussian.epsilon(budget, direction).upper),
            delta,
            self.escape_probability,
            self.truncation,
            start,
            f"{self.dimension} x {self.releases} noise coordinates (dimension={self.dimension})",
        )

    def _warn_wide_epsilon(self, lower: float, upper: float, delta: float) -> None:
        """Say when the eps bracket ``[lower, upper]`` misses the accuracy: the part of
        ``delta`` the cut's escape probability takes at ``upper`` (the coupling leaves the
        uncut run the rest, so its eps rises), when that is what widens it, else that the
        two runs' ends lie that far apart."""
        gap = (upper - lower) / upper if upper > 0.0 and math.isfinite(upper) else 1.0
        if not gap > self.accuracy:
            return
        tau = self.escape_probability
        share = float(coupled_delta(np.zeros(1), np.array([upper]), tau, self.truncation)[0])
        share /= delta
        if share > self.accuracy:
            reason = (
                f"some of the {self.dimension} x {self.releases} noise coordinates reaches its "
                f"cut with probability tau={tau:.3g}, which alone takes "
                f"{100 * share:.3g}% of delta at eps={upper:.6g} (a larger cut narrows it)"
            )
        else:
            reason = (
                "the lower end (the cut run's) and the upper end (the uncut run's, at the "
                "delta the coupling leaves it) lie that far apart"
            )
        warnings.warn(
            f"DPSGDAccountant reached a relative eps bracket of {gap:.3g} ([{lower:.6g}, "
            f"{upper:.6g}]), not the requested accuracy {self.accuracy:g}: {reason} (bounds "
            "still certified)",
            CertificationWarning,
            stacklevel=3,
        )

    def _warn_pdp(self) -> None:
        warnings.warn(
            f"PDP is certified only from below for dimension={self.dimension} (the "
            "one-dimensional pair's lower bound; the coupling bound is an ADP statement): "
            "the upper bound is the trivial one",
            CertificationWarning,
            stacklevel=3,
        )
