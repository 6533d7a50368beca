"""The Extended Moments Accountant with distinguishing events (paper, Section
"Extended Moments Accountant", Proposition "Numerical Extended MA"; SPEC section 3).

For releases ``i`` composed ``n_i`` times, in direction A/B::

    G(lambda) = sum_i n_i Gamma_lambda(A_i || B_i),
    Omega     = 1 - prod_i (1 - omega_i)^{n_i}           (composed distinguishing mass),
    delta_{A/B}(eps) = Omega + min_{lambda >= 0} c(lambda) exp(G(lambda) - lambda eps).

``conversion="paper"`` uses ``c = 1`` (Markov's inequality, as in the paper).
``conversion="tight"`` (default) uses ``c(lambda) = (lambda/(lambda+1))^lambda / (lambda+1)``:
for finite ``L``, ``max(0, 1 - e^{eps-L}) <= c(lambda) e^{lambda (L - eps)}`` and the
composed finite part has ``sum A_n e^{lambda L_n} = exp(G(lambda))``; outcomes with a
distinguishing component count in full. At ``lambda = 0`` the bound is ``1 - Omega``,
so ``delta <= 1`` always. The reported delta is ``max(delta_{A/B}, delta_{B/A})``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from accountant._checks import (
    check_direction,
    check_epsilons,
    check_finite_real,
    check_target_delta,
)
from accountant._composition import add_releases
from accountant._lambda_search import LAMBDA_MAX, LAMBDA_MIN, increasing_root
from accountant.errors import InfeasibleTargetError, InvalidInputError
from accountant.log_moments import (
    LogMomentSource,
    PairLogMoments,
    check_lambda,
    check_one_direction,
)
from accountant.moments_results import (
    DirectionalBound,
    MomentsDelta,
    MomentsGradient,
    PairGradient,
)
from accountant.pairs import WorstCasePair

__all__ = ["CONVERSIONS", "ExtendedMA", "log_conversion_factor"]

CONVERSIONS = ("tight", "paper")
_DIRECTIONS = ("A/B", "B/A")


def log_conversion_factor(lam: float, conversion: str) -> float:
    """``ln c(lambda)``: ``lambda ln lambda - (lambda+1) ln(lambda+1)`` (tight) or 0 (paper)."""
    if conversion == "paper" or lam == 0.0:
        return 0.0
    return -lam * math.log1p(1.0 / lam) - math.log1p(lam)


def _log_conversion_slope(lam: float, conversion: str) -> float:
    """``d ln c / d lambda = ln(lambda / (lambda + 1))`` (tight) or 0 (paper)."""
    if conversion == "paper":
        return 0.0
    return -math.log1p(1.0 / lam)


@attrs.frozen(eq=False)
class Component:
    """``times`` independent releases of one mechanism."""

    mechanism: Any
    source: LogMomentSource
    times: int


def _check_conversion(instance: Any, attribute: attrs.Attribute, value: str) -> None:
    if value not in CONVERSIONS:
        raise InvalidInputError(f"conversion must be one of {CONVERSIONS}, got {value!r}")


def _as_source(mechanism: Any) -> LogMomentSource:
    if isinstance(mechanism, WorstCasePair):
        return PairLogMoments(mechanism)
    if (
        isinstance(mechanism, Sequence)
        and mechanism
        and all(isinstance(p, WorstCasePair) for p in mechanism)
    ):
        return PairLogMoments(tuple(mechanism))
    if isinstance(mechanism, LogMomentSource):
        return mechanism
    raise InvalidInputError(
        "mechanism must be a WorstCasePair, a non-empty sequence of WorstCasePairs or an "
        f"analytic mechanism from accountant.mechanisms, got {type(mechanism).__name__}"
    )


@attrs.frozen(eq=False)
class ExtendedMA:
    """Extended Moments Accountant. Immutable: :meth:`compose` returns a new accountant.

    >>> from accountant import ExtendedMA, mechanisms
    >>> ma = ExtendedMA().compose(mechanisms.GaussianMechanism(sigma=10.0), times=100)
    >>> round(ma.epsilon(1e-5), 3) > 0
    True
    """

    conversion: str = attrs.field(default="tight", validator=_check_conversion)
    components: tuple[Component, ...] = attrs.field(default=(), repr=False)

    def compose(self, mechanism: Any, times: int = 1) -> ExtendedMA:
        """Add ``times`` releases of ``mechanism``: a :class:`WorstCasePair`, a sequence of
        pairs (the worst case over them in every release, e.g. every grid shift), or an
        analytic mechanism. Composing the same object again adds to its count."""
        components = add_releases(
            self.components, mechanism, times, lambda m, n: Component(m, _as_source(m), n)
        )
        return attrs.evolve(self, components=components)

    @property
    def releases(self) -> int:
        """Total number of composed releases."""
        return sum(c.times for c in self.components)

    # -- composed quantities, per direction -------------------------------------------

    def log_moment(self, lam: float, direction: str = "A/B") -> float:
        """``G(lambda) = sum_i n_i Gamma_lambda(A_i || B_i)``."""
        lam = check_lambda(lam)  # reliability fix: NaN / bad direction were not refused
        direction = check_one_direction(direction)
        return math.fsum(c.times * c.source.log_moment(lam, direction) for c in self.components)

    def _log_moment_slope(self, lam: float, direction: str) -> float:
        return math.fsum(
            c.times * c.source.log_moment_slope(lam, direction) for c in self.components
        )

    def _log_no_distinguishing(self, direction: str) -> float:
        """``ln(1 - Omega) = sum_i n_i ln(1 - omega_i)``."""
        return math.fsum(
            c.times * math.log1p(-c.source.distinguishing_mass(direction))
            if c.source.distinguishing_mass(direction) < 1.0
            else -math.inf
            for c in self.components
        )

    def _max_total_loss(self, direction: str) -> float:
        return math.fsum(c.times * c.source.max_finite_loss(direction) for c in self.components)

    def distinguishing_mass(self, direction: str = "max") -> float:
        """Composed ``Omega = 1 - prod_i (1 - omega_i)^{n_i}`` (max over directions by default)."""
        direction = check_direction("direction", direction)
        directions = _DIRECTIONS if direction == "max" else (direction,)
        return max(0.0 - math.expm1(self._log_no_distinguishing(d)) for d in directions)

    # -- delta -------------------------------------------------------------------------

    def _objective(self, lam: float, eps: float, direction: str) -> float:
        return (
            self.log_moment(lam, direction)
            + log_conversion_factor(lam, self.conversion)
            - lam * eps
        )

    def _bound(self, eps: float, direction: str) -> DirectionalBound:
        log_keep = self._log_no_distinguishing(direction)
        omega = 0.0 - math.expm1(log_keep)  # 0.0 - ...: never -0.0
        if log_keep == -math.inf:
            return DirectionalBound(delta=1.0, lam=0.0, distinguishing_mass=1.0, finite_part=0.0)
        if eps >= self._max_total_loss(direction):
            # Every composed finite loss is <= eps: the finite part of delta is exactly 0.
            return DirectionalBound(omega, math.inf, omega, 0.0)
        lam = increasing_root(
            lambda x: (
                self._log_moment_slope(x, direction)
                + _log_conversion_slope(x, self.conversion)
                - eps
            )
        )
        lam = min(max(lam, LAMBDA_MIN), LAMBDA_MAX)  # every lambda > 0 gives a valid bound
        log_finite = self._objective(lam, eps, direction)
        if log_finite >= log_keep:
            lam, log_finite = 0.0, log_keep
        finite = math.exp(log_finite)
        return DirectionalBound(min(1.0, omega + finite), lam, omega, finite)

    def delta_details(self, epsilon: float) -> MomentsDelta:
        """The bound in both directions with the optimal lambda of each."""
        eps = float(check_epsilons("epsilon", check_finite_real("epsilon", epsilon)))
        a_over_b, b_over_a = (self._bound(eps, d) for d in _DIRECTIONS)
        return MomentsDelta(eps, self.conversion, a_over_b, b_over_a)

    def delta(self, epsilon: float | np.ndarray, direction: str = "max") -> float | np.ndarray:
        """Upper bound on delta(eps) after all compositions; vectorised over ``epsilon``."""
        direction = check_direction("direction", direction)
        eps = check_epsilons("epsilon", epsilon)
        directions = _DIRECTIONS if direction == "max" else (direction,)
        values = np.array(
            [max(self._bound(float(e), d).delta for d in directions) for e in eps.reshape(-1)]
        ).reshape(eps.shape)
        return float(values) if values.ndim == 0 else values

    # -- epsilon -----------------------------------------------------------------------

    def epsilon(self, delta: float, direction: str = "max") -> float:
        """Smallest eps whose bound is at most ``delta`` (in every requested direction).

        ``eps = min(max total finite loss, inf_lambda (G + ln c - ln(delta - Omega)) / lambda)``,
        found exactly (see :mod:`accountant._lambda_search`). Raises
        :class:`~accountant.errors.InfeasibleTargetError` when ``delta`` does not exceed
        the composed distinguishing mass and the losses are unbounded.
        """
        target = check_target_delta("delta", delta)
        direction = check_direction("direction", direction)
        directions = _DIRECTIONS if direction == "max" else (direction,)
        return max(self._epsilon(target, d) for d in directions)

    def _epsilon(self, target: float, direction: str) -> float:
        log_keep = self._log_no_distinguishing(direction)
        omega = 0.0 - math.expm1(log_keep)  # 0.0 - ...: never -0.0
        max_loss = self._max_total_loss(direction)
        budget = target - omega
        if budget < 0.0 or (budget == 0.0 and math.isinf(max_loss)):
            raise InfeasibleTargetError(
                f"delta={target!r} is not above the composed distinguishing mass {omega!r} "
                f"(direction {direction}); no epsilon reaches it"
            )
        if budget == 0.0:
            return self._verified(max(0.0, max_loss), target, direction)
        log_budget = math.log(budget)
        if log_budget >= log_keep:
            return 0.0

        def numerator(lam: float) -> float:
            return (
                self.log_moment(lam, direction)
                + log_conversion_factor(lam, self.conversion)
                - log_budget
            )

        def slope(lam: float) -> float:
            return self._log_moment_slope(lam, direction) + _log_conversion_slope(
                lam, self.conversion
            )

        lam = increasing_root(lambda x: x * slope(x) - numerator(x))
        lam = min(max(lam, LAMBDA_MIN), LAMBDA_MAX)
        eps = min(numerator(lam) / lam, max_loss)
        return self._verified(max(0.0, eps), target, direction)

    def _verified(self, eps: float, target: float, direction: str) -> float:
        """Nudge ``eps`` up until the bound at it is certainly <= target (rounding guard)."""
        # The step doubles from max(1e-12 eps, 1e-18): a fixed relative step (plus 1e-300)
        # never moved an eps of ~3e-17 far enough to absorb the rounding of a bound that
        # is tight up to ~1e-16 (e.g. A = (1, 0), B = (1 - 1e-6, 1e-6), delta = 1e-6
        # raised "could not certify"). Overshooting (by less than twice the needed nudge)
        # only makes the answer slightly more conservative.
        step = max(eps * 1e-12, 1e-18)
        for _ in range(96):
            if self._bound(eps, direction).delta <= target:
                return eps
            eps += step
            step *= 2.0
        raise InfeasibleTargetError(  # pragma: no cover - defensive
            f"could not certify an epsilon for delta={target!r} (direction {direction})"
        )

    # -- gradient ----------------------------------------------------------------------

    def delta_and_gradient(self, epsilon: float, direction: str = "max") -> MomentsGradient:
        """delta(eps) and its partial derivatives with respect to the A- and B-masses of
        every composed pair (envelope theorem: lambda stays at its optimum).

        Finite part: ``d delta / dA_i(o) = n_i exp(F) dGamma_i/dA(o)`` with
        ``F = ln`` of the finite part. Distinguishing part:
        ``d Omega / dA_i(o) = n_i (1 - Omega) / (1 - omega_i)`` for ``o`` with
        ``B_i(o) = 0``. ``Omega`` jumps when a B-mass leaves 0, so that derivative is
        taken as 0 (the support is fixed). Analytic mechanisms get no gradient.
        """
        eps = float(check_epsilons("epsilon", check_finite_real("epsilon", epsilon)))
        direction = check_direction("direction", direction)
        directions = _DIRECTIONS if direction == "max" else (direction,)
        bounds = {d: self._bound(eps, d) for d in directions}
        chosen = max(directions, key=lambda d: bounds[d].delta)
        bound = bounds[chosen]
        gradients = tuple(self._component_gradient(c, bound, chosen) for c in self.components)
        return MomentsGradient(
            epsilon=eps, delta=bound.delta, direction=chosen, lam=bound.lam, gradients=gradients
        )

    def _component_gradient(
        self, component: Component, bound: DirectionalBound, direction: str
    ) -> tuple[PairGradient, ...]:
        source = component.source
        if not isinstance(source, PairLogMoments):
            return ()
        grads = [PairGradient(np.zeros(p.size), np.zeros(p.size)) for p in source.pairs]
        capped = bound.delta >= 1.0 and bound.lam == 0.0
        if capped:
            return tuple(grads)
        n = component.times
        if bound.finite_part > 0.0:
            log_finite = math.log(bound.finite_part)
            log_grad = source.log_moment_log_gradient(bound.lam, direction)
            target = grads[log_grad.pair_index]
            sign_a = 1.0 if log_grad.positive_is_a else -1.0
            target.a[:] += sign_a * n * np.exp(log_finite + log_grad.log_abs_grad_a)
            target.b[:] -= sign_a * n * np.exp(log_finite + log_grad.log_abs_grad_b)
        omega_i = source.distinguishing_mass(direction)
        if 0.0 < omega_i < 1.0:
            plds = source.plds(direction)
            index = int(np.argmax([pld.distinguishing_mass for pld in plds]))
            pair = source.pairs[index]
            first, second = (pair.a, pair.b) if direction == "A/B" else (pair.b, pair.a)
            log_keep = self._log_no_distinguishing(direction)
            weight = n * math.exp(log_keep - math.log1p(-omega_i))
            distinguishing = (first > 0.0) & (second == 0.0)
            target = grads[index].a if direction == "A/B" else grads[index].b
            target[distinguishing] += weight
        return tuple(grads)
