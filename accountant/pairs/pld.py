"""Privacy-loss distribution (PLD) of a worst-case pair, and exact single-release bounds.

For a pair ``(A, B)`` the privacy loss of outcome ``o`` is ``L(o) = ln(A(o)/B(o))``
(paper, Definition "Privacy Loss Random Variable"): ``+inf`` where ``A > 0 = B``
(distinguishing events, total A-mass ``omega``), ``-inf`` where ``A = 0 < B``
(never occurs under A). The bounds here are exact, no approximation (SPEC section 1):

* ADP: ``delta_{A/B}(eps) = sum_o max(0, A(o) - e^eps B(o))
  = omega + sum_{L(o) > eps} A(o) (1 - e^{eps - L(o)})``;
* PDP: ``delta^PDP_{A/B}(eps) = P_{o~A}[L(o) > eps] = omega + sum_{L(o) > eps} A(o)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from accountant.errors import InfeasibleTargetError, InvalidInputError
from accountant.numerics.directed import MassLogs, fsum_bounds
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.pairs.outcomes import OutcomeIndex
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import (
    MASS_TOLERANCE,
    Direction,
    Kind,
    OneDirection,
    check_direction,
    check_epsilons,
    check_finite_real,
    check_target_delta,
    directions_of,
    shown,
)

__all__ = [
    "PrivacyLossDistribution",
    "exact_delta",
    "exact_delta_pdp",
    "exact_epsilon",
    "privacy_loss_distribution",
]


def _readonly(array: np.ndarray, name: str = "array") -> np.ndarray:
    try:
        array = np.ascontiguousarray(array, dtype=np.float64)
    except (TypeError, ValueError) as exc:  # (not numpy's bare error)
        raise InvalidInputError(f"{name} must be an array of numbers, got {shown(array)}") from exc
    array.setflags(write=False)
    return array


@attrs.frozen(eq=False)
class PrivacyLossDistribution:
    """The finite privacy losses of one direction of a pair, sorted ascending, with the
    A- and B-mass of each outcome, and the distinguishing mass ``omega``.

    ``log_mass_a`` is ``ln A`` of each finite outcome (kept for log-space moments).
    ``impossible_mass_b`` is the B-mass of outcomes with ``A = 0``.

    Masses are accounted exactly as given (see :attr:`mass_logs`): their total need not
    be 1 to the last bit, and nothing is renormalised.
    """

    losses: np.ndarray = attrs.field(converter=lambda v: _readonly(v, "losses"))
    mass_a: np.ndarray = attrs.field(converter=lambda v: _readonly(v, "mass_a"))
    mass_b: np.ndarray = attrs.field(converter=lambda v: _readonly(v, "mass_b"))
    log_mass_a: np.ndarray = attrs.field(converter=lambda v: _readonly(v, "log_mass_a"))
    distinguishing_mass: float
    impossible_mass_b: float
    mass_logs: MassLogs | None = attrs.field(default=None, kw_only=True, repr=False)
    """Certified logs of the total A-mass ``S = omega + sum(mass_a)`` and of the finite share
    ``1 - omega / S``: what composition needs to account the masses exactly as given. When
    not given, ``omega`` is taken to within one ulp (it is a computed sum);
    :func:`privacy_loss_distribution` passes the bounds of the exact sums of the pair."""
    outcomes: OutcomeIndex | None = attrs.field(default=None, kw_only=True, repr=False)
    """Which outcome of the pair each entry is (:class:`~accountant.pairs.outcomes.OutcomeIndex`),
    for per-outcome quantities such as gradients; ``None`` for a PLD built from arrays."""

    def __attrs_post_init__(self) -> None:
        # The constructor is public: NaN losses or masses, unsorted losses or arrays of
        # different lengths would give NaN or wrong deltas later.
        size = self.losses.size
        for name in ("losses", "mass_a", "mass_b", "log_mass_a"):
            values = getattr(self, name)
            if values.ndim != 1 or values.size != size:
                raise InvalidInputError(
                    f"{name} must be one-dimensional with the length of losses ({size}), "
                    f"got shape {values.shape}"
                )
            if not np.isfinite(values).all():
                index = int(np.flatnonzero(~np.isfinite(values))[0])
                raise InvalidInputError(
                    f"{name} must be finite, got {float(values[index])!r} at index {index}"
                )
        for name in ("mass_a", "mass_b"):
            values = getattr(self, name)
            if (values < 0.0).any():
                index = int(np.flatnonzero(values < 0.0)[0])
                raise InvalidInputError(
                    f"{name} must be non-negative, got {float(values[index])!r} at index {index}"
                )
        if size > 1 and (np.diff(self.losses) < 0.0).any():
            index = int(np.flatnonzero(np.diff(self.losses) < 0.0)[0]) + 1
            raise InvalidInputError(
                f"losses must be sorted ascending, got {float(self.losses[index])!r} at index "
                f"{index} after {float(self.losses[index - 1])!r}"
            )
        for name in ("distinguishing_mass", "impossible_mass_b"):
            value = check_finite_real(name, getattr(self, name))
            if not 0.0 <= value <= 1.0 + MASS_TOLERANCE:
                raise InvalidInputError(f"{name} must lie in [0, 1], got {value!r}")
        if self.mass_logs is None:
            logs = _mass_logs(self.mass_a, self.distinguishing_mass)
            object.__setattr__(self, "mass_logs", logs)
        elif not isinstance(self.mass_logs, MassLogs):
            raise InvalidInputError(
                f"mass_logs must be a MassLogs or None, got {type(self.mass_logs).__name__}"
            )
        if self.outcomes is not None and (
            not isinstance(self.outcomes, OutcomeIndex) or self.outcomes.finite.size != size
        ):
            raise InvalidInputError(
                "outcomes must be None or an OutcomeIndex with one finite entry per loss "
                f"({size}), got {shown(self.outcomes)}"
            )

    @property
    def total_mass(self) -> float:
        """``S = omega + sum(mass_a)``, the A-mass of every outcome, correctly rounded."""
        return math.fsum([self.distinguishing_mass, *self.mass_a.tolist()])

    def reversed(self) -> PrivacyLossDistribution:
        """The other direction of the same pair: losses ``-L`` with the masses swapped, and
        distinguishing mass ``impossible_mass_b``."""
        order = slice(None, None, -1)
        return PrivacyLossDistribution(
            losses=-self.losses[order],
            mass_a=self.mass_b[order],
            mass_b=self.mass_a[order],
            log_mass_a=np.log(self.mass_b[order]),
            distinguishing_mass=self.impossible_mass_b,
            impossible_mass_b=self.distinguishing_mass,
            outcomes=None if self.outcomes is None else self.outcomes.reversed(),
        )

    @property
    def max_finite_loss(self) -> float:
        """Largest finite loss as computed, ``-inf`` if there is none."""
        return float(self.losses[-1]) if self.losses.size else -math.inf

    @property
    def loss_rounding(self) -> float:
        """A bound on the rounding error of every computed loss ``ln A - ln B``:
        ``4 u (max|ln A| + max|ln B| + max|L|)`` (each ``ln`` within one ulp, one subtraction)."""
        if self.losses.size == 0:
            return 0.0
        log_b = self.log_mass_a - self.losses
        largest = float(np.max(np.abs(self.log_mass_a)) + np.max(np.abs(log_b)))
        return 4.0 * UNIT_ROUNDOFF * (largest + float(np.max(np.abs(self.losses))))

    def delta(self, epsilon: float | np.ndarray) -> float | np.ndarray:
        """Exact ADP ``delta(eps) = omega + sum_{L > eps} A (1 - e^{eps - L})``, of the masses
        as given (no renormalisation, no clipping), evaluated in float64: each term is within
        a few ulps and the sum within ``(log2 N + 4) u`` relative of the exact value."""
        eps = check_epsilons("epsilon", epsilon)
        values = np.array([self._delta_one(float(e)) for e in eps.reshape(-1)])
        return _shape_like(values, eps)

    def delta_pdp(self, epsilon: float | np.ndarray) -> float | np.ndarray:
        """Exact PDP ``delta(eps) = omega + P_A[L > eps]`` (masses as given, float64 sums)."""
        eps = check_epsilons("epsilon", epsilon)
        tail = _suffix_sums(self.mass_a)
        start = np.searchsorted(self.losses, eps.reshape(-1), side="right")
        values = self.distinguishing_mass + tail[start]
        return _shape_like(values, eps)

    def _delta_one(self, eps: float) -> float:
        start = int(np.searchsorted(self.losses, eps, side="right"))
        if start == self.losses.size:
            return self.distinguishing_mass
        above = self.losses[start:]
        finite_part = float(np.sum(self.mass_a[start:] * -np.expm1(eps - above)))
        return self.distinguishing_mass + finite_part

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps >= 0`` with exact ADP ``delta(eps) <= delta``.

        Raises :class:`~accountant.errors.InfeasibleTargetError` when ``delta`` is
        below the distinguishing mass ``omega`` (no eps reaches it).
        """
        target = check_target_delta("delta", delta)
        self._check_feasible(target)
        if self._delta_one(0.0) <= target:
            return 0.0
        low, high = 0.0, max(self.max_finite_loss, 0.0)
        # delta is continuous and strictly decreasing on [0, max loss]: bisect until the
        # bracket is a few ulp wide; ``high`` always satisfies delta(high) <= target.
        while high - low > 4.0 * math.ulp(high):
            middle = 0.5 * (low + high)
            if self._delta_one(middle) <= target:
                high = middle
            else:
                low = middle
        return high

    def epsilon_pdp(self, delta: float) -> float:
        """Smallest ``eps >= 0`` with exact PDP ``delta(eps) <= delta``."""
        target = check_target_delta("delta", delta)
        self._check_feasible(target)
        if self.delta_pdp(0.0) <= target:
            return 0.0
        # P_A[L > eps] only changes at loss values, so the answer is the smallest
        # positive loss u with P_A[L > u] <= target - omega. tail[k + 1] = P_A[L > losses[k]]
        # at the last index of each group of equal losses, and above it elsewhere.
        tail = _suffix_sums(self.mass_a)
        budget = target - self.distinguishing_mass
        candidates = np.flatnonzero((tail[1:] <= budget) & (self.losses > 0.0))
        return float(self.losses[candidates[0]])

    def _check_feasible(self, target: float) -> None:
        if target < self.distinguishing_mass:
            raise InfeasibleTargetError(
                f"delta={target!r} is below the distinguishing mass of one release "
                f"{self.distinguishing_mass!r}; no epsilon reaches it; a wider cut (a larger "
                "bound) lowers it"
            )


def _mass_logs(mass_a: np.ndarray, distinguishing_mass: float) -> MassLogs:
    """:class:`MassLogs` of the masses as given: ``sum(mass_a)`` exactly (to the nearest
    floats around it); ``omega`` (itself a computed sum) to within one ulp."""
    omega = float(distinguishing_mass)
    omega_low = max(0.0, math.nextafter(omega, -math.inf)) if omega > 0.0 else 0.0
    omega_high = math.nextafter(omega, math.inf) if omega > 0.0 else 0.0
    finite = mass_a.tolist()
    excess = (
        fsum_bounds([omega_low, *finite, -1.0])[0],
        fsum_bounds([omega_high, *finite, -1.0])[1],
    )
    return MassLogs.of(excess, (omega_low, omega_high))


def _suffix_sums(mass: np.ndarray) -> np.ndarray:
    """``tail[k] = sum(mass[k:])``, with ``tail[len] = 0``."""
    tail = np.zeros(mass.size + 1)
    tail[:-1] = np.cumsum(mass[::-1])[::-1]
    return tail


def _shape_like(values: np.ndarray, eps: np.ndarray) -> float | np.ndarray:
    values = values.reshape(eps.shape)
    return float(values) if values.ndim == 0 else values


def privacy_loss_distribution(
    pair: WorstCasePair, direction: OneDirection = "A/B"
) -> PrivacyLossDistribution:
    """The PLD of ``pair`` in ``direction`` ``"A/B"`` (losses ``ln A/B`` under ``A``)
    or ``"B/A"``; losses are computed as ``ln A - ln B`` so no ratio overflows."""
    if not isinstance(pair, WorstCasePair):
        raise InvalidInputError(f"pair must be a WorstCasePair, got {type(pair).__name__}")
    checked = check_direction("direction", direction)
    if checked == "max":
        raise InvalidInputError("direction must be 'A/B' or 'B/A' for one PLD, got 'max'")
    a, b = (pair.a, pair.b) if checked == "A/B" else (pair.b, pair.a)
    finite = (a > 0.0) & (b > 0.0)
    log_a = np.log(a[finite])
    losses = log_a - np.log(b[finite])
    order = np.argsort(losses, kind="stable")
    distinguishing = a[(a > 0.0) & (b == 0.0)].tolist()
    return PrivacyLossDistribution(
        losses=losses[order],
        mass_a=a[finite][order],
        mass_b=b[finite][order],
        log_mass_a=log_a[order],
        distinguishing_mass=math.fsum(distinguishing),
        impossible_mass_b=math.fsum(b[(a == 0.0) & (b > 0.0)].tolist()),
        mass_logs=MassLogs.of(fsum_bounds([*a.tolist(), -1.0]), fsum_bounds(distinguishing)),
        outcomes=OutcomeIndex.of(a, b, order),
    )


PairOrPairs = WorstCasePair | Sequence[WorstCasePair]


def _as_pairs(pairs: PairOrPairs) -> tuple[WorstCasePair, ...]:
    if isinstance(pairs, WorstCasePair):
        return (pairs,)
    try:
        result = tuple(pairs)
    except TypeError:  # not iterable
        result = ()
    if not result or not all(isinstance(p, WorstCasePair) for p in result):
        raise InvalidInputError(
            "pair must be a WorstCasePair or a non-empty sequence of them, "
            f"got {type(pairs).__name__}"
        )
    return result


def _directions(direction: str) -> tuple[OneDirection, ...]:
    return directions_of(check_direction("direction", direction))


def _plds(pairs: PairOrPairs, direction: str) -> list[PrivacyLossDistribution]:
    return [
        privacy_loss_distribution(pair, d)
        for pair in _as_pairs(pairs)
        for d in _directions(direction)
    ]


def exact_delta(
    pair: PairOrPairs, epsilon: float | np.ndarray, direction: Direction = "max"
) -> float | np.ndarray:
    """Exact single-release ADP delta(eps) of a pair, or the worst case over several pairs
    (e.g. every shift of :func:`~accountant.pairs.worst_case.additive_shift_pairs`).
    ``direction="max"`` reports ``max(delta_{A/B}, delta_{B/A})``."""
    values = [pld.delta(epsilon) for pld in _plds(pair, direction)]
    return _maximum(values)


def exact_delta_pdp(
    pair: PairOrPairs, epsilon: float | np.ndarray, direction: Direction = "max"
) -> float | np.ndarray:
    """Exact single-release PDP delta(eps); worst case over pairs and directions."""
    values = [pld.delta_pdp(epsilon) for pld in _plds(pair, direction)]
    return _maximum(values)


def exact_epsilon(
    pair: PairOrPairs, delta: float, direction: Direction = "max", *, kind: Kind = "ADP"
) -> float:
    """Smallest eps whose exact single-release delta (``kind`` ``"ADP"`` or ``"PDP"``, spelled
    as everywhere) is at most ``delta`` in every requested direction and pair."""
    if kind not in ("ADP", "PDP"):
        raise InvalidInputError(f"kind must be 'ADP' or 'PDP', got {kind!r}")
    plds = _plds(pair, direction)
    return max(pld.epsilon(delta) if kind == "ADP" else pld.epsilon_pdp(delta) for pld in plds)


def _maximum(values: list) -> float | np.ndarray:
    result = values[0]
    for value in values[1:]:
        result = np.maximum(result, value)
    return float(result) if np.ndim(result) == 0 else result
