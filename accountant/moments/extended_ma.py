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
from typing import Any, ClassVar

import attrs
import numpy as np

from accountant.composition import Component, ComposedReleases
from accountant.errors import InfeasibleTargetError, InvalidInputError
from accountant.moments.lambda_search import LAMBDA_MAX, LAMBDA_MIN, increasing_root
from accountant.moments.log_moments import LogMomentSource, PairLogMoments
from accountant.moments.results import (
    DirectionalBound,
    MomentsDelta,
    MomentsGradient,
    PairGradient,
)
from accountant.numerics.directed import (
    MassLogs,
    distinguishing_bounds,
    exp_up,
    sum_down,
    sum_up,
    total_mass_up,
    up,
)
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.pairs.worst_case import WorstCasePair
from accountant.results import DeltaUpperBound, EpsilonUpperBound
from accountant.validation import (
    ONE_DIRECTION,
    Direction,
    Kind,
    OneDirection,
    check_choice,
    check_direction,
    check_epsilons,
    check_finite_real,
    check_lambda,
    check_one_direction,
    check_target_delta,
    directions_of,
)

__all__ = ["CONVERSIONS", "ExtendedMA", "log_conversion_factor"]

CONVERSIONS = ("tight", "paper")


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


def _check_conversion(instance: Any, attribute: attrs.Attribute, value: str) -> None:
    check_choice("conversion", value, CONVERSIONS)


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
class ExtendedMA(ComposedReleases):
    """Extended Moments Accountant. Immutable: :meth:`compose` returns a new accountant.

    >>> from accountant import ExtendedMA, mechanisms
    >>> ma = ExtendedMA().compose(mechanisms.GaussianMechanism(sigma=10.0), times=100)
    >>> ma.epsilon(1e-5).upper > 0
    True
    """

    conversion: str = attrs.field(default="tight", validator=_check_conversion)
    components: tuple[Component, ...] = attrs.field(default=(), repr=False)

    SETTINGS: ClassVar[tuple[str, ...]] = ("conversion",)
    source_of = staticmethod(_as_source)

    # -- composed quantities, per direction -------------------------------------------

    def log_moment(self, lam: float, direction: OneDirection = "A/B") -> float:
        """``G(lambda) = sum_i n_i Gamma_lambda(A_i || B_i)``."""
        lam = check_lambda("lam", lam)
        direction = check_one_direction("direction", direction)
        return math.fsum(c.times * c.source.log_moment(lam, direction) for c in self.components)

    def _log_moment_slope(self, lam: float, direction: OneDirection) -> float:
        return math.fsum(
            c.times * c.source.log_moment_slope(lam, direction) for c in self.components
        )

    def _mass_logs(self, direction: OneDirection) -> MassLogs:
        """``T = sum_i n_i ln S_i`` and ``D = sum_i n_i ln(1 - omega_i / S_i)``, certified."""
        logs = MassLogs()
        for c in self.components:
            logs = logs + c.source.mass_logs(direction).times(c.times)
        return logs

    def _max_total_loss(self, direction: OneDirection) -> float:
        """An upper bound on the largest composed finite loss ``sum_i n_i sup L_i``."""
        tops = [c.times * c.source.max_finite_loss(direction) for c in self.components]
        if not tops or -math.inf in tops:  # some release has no finite outcome
            return -math.inf
        if math.inf in tops:
            return math.inf
        total = 0.0
        for top in tops:
            total = sum_up(total, up(top, 1))
        return total

    def distinguishing_mass(self, direction: Direction = "max") -> float:
        """Composed ``Omega = prod_i S_i^{n_i} - prod_i F_i^{n_i}`` (``1 - prod_i (1 -
        omega_i)^{n_i}`` for pmfs summing to 1), max over directions by default."""
        direction = check_direction("direction", direction)
        directions = directions_of(direction)
        return max(self._mass_logs(d).distinguishing_mass for d in directions)

    # -- delta -------------------------------------------------------------------------

    def _objective(self, lam: float, eps: float, direction: OneDirection, conversion: str) -> float:
        return self.log_moment(lam, direction) + log_conversion_factor(lam, conversion) - lam * eps

    def _objective_error(
        self, lam: float, eps: float, direction: OneDirection, conversion: str
    ) -> float:
        """A bound on the rounding error of :meth:`_objective`: the sources' declared
        errors of ``Gamma_lambda`` times their counts, plus the final sums and products."""
        sources = math.fsum(
            c.times * c.source.log_moment_error(lam, direction) for c in self.components
        )
        terms = abs(self.log_moment(lam, direction)) + lam * eps
        terms += abs(log_conversion_factor(lam, conversion))
        return up(sources * (1.0 + 1e-12) + 8.0 * UNIT_ROUNDOFF * terms)

    def _bound(self, eps: float, direction: OneDirection, kind: Kind = "ADP") -> DirectionalBound:
        """The ADP bound (``kind="PDP"``: the Chernoff bound ``Omega + e^(G - lambda eps)``
        on ``P[L > eps]``, i.e. ``c = 1`` and no ``near_top`` term) rounded up to the last
        bit: ``Omega`` and the finite part each from
        certified pieces (:mod:`accountant.numerics.directed`), the optimal lambda's objective
        moved up by its rounding bound, ``e^x`` rounded up (never 0 for a finite ``x``)."""
        logs = self._mass_logs(direction)
        omega = distinguishing_bounds(logs)[1]
        total = total_mass_up(logs)
        log_finite_mass = logs.log_finite_mass.high  # lambda = 0: all finite A-mass, F
        if log_finite_mass == -math.inf:
            return DirectionalBound(
                delta=omega, lam=0.0, distinguishing_mass=omega, finite_part=0.0
            )
        max_loss = self._max_total_loss(direction)
        if eps >= max_loss:
            # Every composed finite loss is <= eps: the finite part of delta is exactly 0.
            return DirectionalBound(omega, math.inf, omega, 0.0)
        # sum_{L > eps} A_n (1 - e^{eps - L}) <= F^n (sup L - eps): tiny near the top loss.
        near_top = exp_up(log_finite_mass) * up(max_loss - eps) if kind == "ADP" else math.inf
        conversion = self.conversion if kind == "ADP" else "paper"
        lam = increasing_root(
            lambda x: (
                self._log_moment_slope(x, direction) + _log_conversion_slope(x, conversion) - eps
            )
        )
        lam = min(max(lam, LAMBDA_MIN), LAMBDA_MAX)  # every lambda > 0 gives a valid bound
        log_finite = self._objective(lam, eps, direction, conversion)
        log_finite = sum_up(log_finite, self._objective_error(lam, eps, direction, conversion))
        if log_finite >= log_finite_mass:
            lam, log_finite = 0.0, log_finite_mass
        finite = exp_up(log_finite)
        if near_top < finite:
            lam, finite = math.inf, near_top
        return DirectionalBound(min(total, sum_up(omega, finite)), lam, omega, finite)

    def delta_details(self, epsilon: float) -> MomentsDelta:
        """The bound in both directions with the optimal lambda of each."""
        eps = float(check_epsilons("epsilon", check_finite_real("epsilon", epsilon)))
        a_over_b, b_over_a = (self._bound(eps, d) for d in ONE_DIRECTION)
        return MomentsDelta(eps, self.conversion, a_over_b, b_over_a)

    def delta(self, epsilon: float | np.ndarray, direction: Direction = "max") -> DeltaUpperBound:
        """Certified upper bound on the ADP delta(eps) after all compositions (``upper``);
        vectorised over ``epsilon``. The Extended MA has no lower bound: the type says so."""
        return self._query(epsilon, direction, "ADP")

    def delta_pdp(
        self, epsilon: float | np.ndarray, direction: Direction = "max"
    ) -> DeltaUpperBound:
        """Certified upper bound on the PDP delta ``P_A[L > eps]`` (distinguishing events
        included): ``Omega + min_lambda e^(G(lambda) - lambda eps)`` (Chernoff; ``c = 1``
        whatever the ``conversion``)."""
        return self._query(epsilon, direction, "PDP")

    def _query(self, epsilon: Any, direction: str, kind: Kind) -> DeltaUpperBound:
        direction = check_direction("direction", direction)
        eps = check_epsilons("epsilon", epsilon)
        directions = directions_of(direction)
        values = np.array(
            [max(self._bound(float(e), d, kind).delta for d in directions) for e in eps.reshape(-1)]
        ).reshape(eps.shape)
        scalar = values.ndim == 0
        return DeltaUpperBound(
            upper=float(values) if scalar else values,
            epsilon=float(eps) if scalar else eps,
            kind=kind,
            direction=direction,
            releases=self.releases,
        )

    # -- epsilon -----------------------------------------------------------------------

    def epsilon(self, delta: float, direction: Direction = "max") -> EpsilonUpperBound:
        """Smallest eps whose bound is at most ``delta`` (in every requested direction).

        ``eps = min(max total finite loss, inf_lambda (G + ln c - ln(delta - Omega)) / lambda)``,
        found exactly (see :mod:`accountant.moments.lambda_search`). Raises
        :class:`~accountant.errors.InfeasibleTargetError` when ``delta`` does not exceed
        the composed distinguishing mass and the losses are unbounded.
        """
        target = check_target_delta("delta", delta)
        direction = check_direction("direction", direction)
        upper = max(self._epsilon(target, d) for d in directions_of(direction))
        return EpsilonUpperBound(upper, target, "ADP", direction, self.releases)

    def _epsilon(self, target: float, direction: OneDirection) -> float:
        logs = self._mass_logs(direction)
        omega = distinguishing_bounds(logs)[1]
        max_loss = self._max_total_loss(direction)
        budget = sum_down(target, -omega)
        if budget < 0.0 or (budget == 0.0 and max_loss == math.inf):
            raise InfeasibleTargetError(
                f"delta={target!r} is not above the composed distinguishing mass {omega!r} "
                f"(direction {direction}); no epsilon reaches it; a wider cut (a larger bound) "
                "or fewer releases lowers it"
            )
        if budget == 0.0:  # only past every finite loss (none at all: max_loss = -inf)
            return self._verified(max(0.0, max_loss), target, direction)
        log_budget = math.log(budget)
        if log_budget >= logs.log_finite_mass.high:
            return self._verified(0.0, target, direction)

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
        if math.isfinite(max_loss):  # the bound F^n (sup L - eps) of _bound meets the budget
            eps = min(eps, max_loss - budget / exp_up(logs.log_finite_mass.high))
        return self._verified(max(0.0, eps), target, direction)

    def _verified(self, eps: float, target: float, direction: OneDirection) -> float:
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

    def delta_and_gradient(self, epsilon: float, direction: Direction = "max") -> MomentsGradient:
        """delta(eps) and its partial derivatives with respect to the A- and B-masses of
        every composed pair (envelope theorem: lambda stays at its optimum).

        Finite part: ``d delta / dA_i(o) = n_i exp(F) dGamma_i/dA(o)`` with
        ``F = ln`` of the finite part. Distinguishing part, masses as given
        (``Omega = prod S_i^{n_i} - prod F_i^{n_i}``): ``n_i Omega_S / S_i`` on outcomes with
        ``B_i(o) = 0`` and ``n_i (Omega_S / S_i - Omega_F / F_i)`` on finite ones, where
        ``Omega_S = prod S^n`` and ``Omega_F = prod F^n``. ``Omega`` jumps when a B-mass
        leaves 0, so that derivative is taken as 0 (the support is fixed). Analytic
        mechanisms get no gradient.
        """
        eps = float(check_epsilons("epsilon", check_finite_real("epsilon", epsilon)))
        direction = check_direction("direction", direction)
        directions = directions_of(direction)
        bounds = {d: self._bound(eps, d) for d in directions}
        chosen = max(directions, key=lambda d: bounds[d].delta)
        bound = bounds[chosen]
        gradients = tuple(self._component_gradient(c, bound, chosen) for c in self.components)
        return MomentsGradient(
            epsilon=eps, delta=bound.delta, direction=chosen, lam=bound.lam, gradients=gradients
        )

    def _component_gradient(
        self, component: Component, bound: DirectionalBound, direction: OneDirection
    ) -> tuple[PairGradient, ...]:
        source = component.source
        if not isinstance(source, PairLogMoments):
            return ()
        grads = [PairGradient(np.zeros(p.size), np.zeros(p.size)) for p in source.pairs]
        n = component.times
        if bound.finite_part > 0.0 and math.isfinite(bound.lam):
            # (lam = inf: the finite part is F^n (sup L - eps), below rounding; no gradient)
            log_finite = math.log(bound.finite_part)
            log_grad = source.log_moment_log_gradient(bound.lam, direction)
            target = grads[log_grad.pair_index]
            sign_a = 1.0 if log_grad.positive_is_a else -1.0
            target.a[:] += sign_a * n * np.exp(log_finite + log_grad.log_abs_grad_a)
            target.b[:] -= sign_a * n * np.exp(log_finite + log_grad.log_abs_grad_b)
        logs = self._mass_logs(direction)
        if logs.distinguishing_mass > 0.0:
            # Omega = e^T - e^K with T = sum n ln S, K = sum n ln F (masses as given):
            # dOmega/dA(o) = n e^T / S_i on distinguishing outcomes and
            # n (e^T / S_i - e^K / F_i) on finite ones (the support kept fixed).
            plds = source.plds(direction)
            index = int(np.argmax([pld.distinguishing_mass for pld in plds]))
            outcomes = plds[index].outcomes
            own = plds[index].mass_logs
            # privacy_loss_distribution gives both (the pairs' PLDs are built by it)
            assert outcomes is not None and own is not None
            log_total, log_finite = logs.total.middle, logs.log_finite_mass.middle
            per_total = n * math.exp(log_total - own.total.middle)
            per_finite = n * math.exp(log_finite - own.log_finite_mass.middle)
            masses = grads[index].a if direction == "A/B" else grads[index].b
            masses[outcomes.distinguishing] += per_total
            masses[outcomes.finite] += per_total - per_finite
        return tuple(grads)
