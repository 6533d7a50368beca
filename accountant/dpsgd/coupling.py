"""DP-SGD with noise cut per coordinate, bounded through the Gaussian it was cut from.

A step of DP-SGD on ``d`` parameters adds, to a sum of gradients clipped to L2 norm ``C``,
``d`` independent Gaussian coordinates of standard deviation ``sigma C``, each cut at
``+-k sigma C``: the noise lives in a box. The one-dimensional pair of SPEC section 1
("DP-SGD") puts the whole shift on one axis; a gradient spread over many coordinates
leaves the box with about ``sqrt(d)`` times more mass, so that pair is a *lower* bound
for ``d > 1`` but not an upper one (``tests/optimizers/opacus/test_dimension.py``).

The upper bound couples the cut run with the uncut one. Let ``E`` be the event that every
one of the ``N = sum_j d n_j`` Gaussian coordinates drawn over all steps lies inside its
cut (``n_j`` steps cut at ``k_j``), and ``tau = P(not E)``::

    tau = 1 - prod_j (1 - 2 Phi(-k_j))^(d n_j).

The noise is independent of the data and of earlier outputs, so this holds for adaptive
composition (the transcript of the whole run) and for Poisson subsampling alike. With
``G`` the uncut run and ``T`` the cut one, for every set ``S`` of transcripts:

* **renormalised** (a draw outside the cut is redrawn): ``T`` is ``G`` conditioned on
  ``E``, so ``P_T(S) <= P_G(S) / (1 - tau)`` and ``P_G(S) <= P_T(S) + tau``. Hence::

      delta_T(eps) <= (delta_G(eps) + e^eps tau) / (1 - tau).

* **clamped** (a draw outside the cut is moved onto it): ``T = G`` on ``E``, so
  ``|P_T(S) - P_G(S)| <= tau`` and::

      delta_T(eps) <= delta_G(eps) + (1 + e^eps) tau.

The same coupling bounds the cut run from below, where only the noise of the one-dimensional
pair is cut (``N = sum_j n_j`` draws, ``tau_1``): renormalised, ``P_T(S) >= P_G(S) - tau`` and
``Q_T(S) <= Q_G(S) + tau / (1 - tau)``; clamped, both within ``tau``. Hence::

    delta_T(eps) >= delta_G(eps) - tau - e^eps tau / (1 - tau)    (renormalised),
    delta_T(eps) >= delta_G(eps) - (1 + e^eps) tau                 (clamped),

so for a cut far in the tails the uncut run's lower bound, less that penalty, is the cut
run's (:func:`lowering`), and one composition serves both ends of the bracket.

``delta_G`` is the certified upper bound of the uncut subsampled Gaussian (the same pair
with ``cut = inf``; for the Gaussian the L2 sensitivity reduces the ``d``-dimensional
mechanism to that pair exactly). Both forms are ADP statements, for each direction.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from accountant.errors import AccountantError, InfeasibleTargetError
from accountant.numerics.directed import up
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.lazy import special

__all__ = [
    "SEARCH_ROUNDS",
    "coupled_delta",
    "coupled_epsilon",
    "delta_budget",
    "escape_probability",
    "lowered_delta",
    "lowering",
    "raised_target",
]

#: Rounds of :func:`coupled_epsilon`'s search before it gives up (each raises the guess).
SEARCH_ROUNDS = 16
#: Relative margin on ``tau`` covering the rounding of ``log_ndtr``, ``log1p`` and the
#: sum over components (each a few ulps; far below this).
TAU_MARGIN = 1e-12


def escape_probability(cuts_and_draws: list[tuple[float, int]]) -> float:
    """``tau = 1 - prod (1 - 2 Phi(-k))^N`` over ``(k, N)`` pairs (``N`` coordinates cut
    at ``k``), rounded up: the chance that some coordinate of the uncut run reaches its
    cut. ``k = inf`` contributes nothing. Computed as ``-expm1(sum N log1p(-2 Phi(-k)))``
    so a tiny ``tau`` keeps its digits."""
    log_inside = 0.0
    for cut, draws in cuts_and_draws:
        if cut == math.inf:
            continue
        outside = 2.0 * math.exp(float(special.log_ndtr(-cut)))
        log_inside += draws * math.log1p(-min(outside, 1.0))
    if log_inside == 0.0:
        return 0.0
    return min(1.0, up(-math.expm1(log_inside) * (1.0 + TAU_MARGIN)))


def coupled_delta(
    gaussian_delta: np.ndarray | float,
    epsilon: np.ndarray | float,
    tau: float,
    truncation: str,
) -> np.ndarray:
    """The upper bound on ``delta_T(eps)`` from the uncut run's certified
    ``gaussian_delta`` (module docstring: ``(delta_G + e^eps tau) / (1 - tau)``
    renormalised, ``delta_G + (1 + e^eps) tau`` clamped), rounded up, at most 1."""
    gaussian_delta = np.asarray(gaussian_delta, dtype=np.float64)
    if tau == 0.0:
        return np.minimum(gaussian_delta, 1.0)
    if tau >= 1.0:
        return np.ones_like(gaussian_delta)
    with np.errstate(over="ignore"):
        grown = np.exp(np.asarray(epsilon, dtype=np.float64)) * tau
    if truncation == "clamped":
        bound = gaussian_delta + grown + tau
    else:
        bound = (gaussian_delta + grown) / (1.0 - tau)
    return np.minimum(np.nextafter(bound * (1.0 + 8 * UNIT_ROUNDOFF), np.inf), 1.0)


def delta_budget(delta: float, epsilon: float, tau: float, truncation: str) -> float:
    """About the largest ``delta_G(eps)`` for which :func:`coupled_delta` is at most
    ``delta``: ``delta (1 - tau) - e^eps tau`` renormalised, ``delta - (1 + e^eps) tau``
    clamped (non-positive when no ``delta_G`` will do). A search guide only: an eps found
    with it is certified by :func:`coupled_delta` before it is returned."""
    grown = math.exp(epsilon) * tau if epsilon < 700.0 else math.inf
    budget = delta - grown - tau if truncation == "clamped" else delta * (1.0 - tau) - grown
    return budget


def lowering(epsilon: np.ndarray | float, tau: float, truncation: str) -> np.ndarray:
    """What the uncut run's lower bound on delta loses at ``epsilon`` as a lower bound of the
    cut run (module docstring: ``tau + e^eps tau / (1 - tau)`` renormalised, ``(1 + e^eps)
    tau`` clamped), rounded up (``inf`` when ``tau`` is 1 or ``e^eps tau`` overflows)."""
    eps = np.asarray(epsilon, dtype=np.float64)
    if tau == 0.0:
        return np.zeros_like(eps)
    if tau >= 1.0:
        return np.full_like(eps, math.inf)
    with np.errstate(over="ignore"):
        grown = np.exp(eps) * tau
    penalty = grown + tau if truncation == "clamped" else tau + grown / (1.0 - tau)
    return np.nextafter(penalty * (1.0 + 8 * UNIT_ROUNDOFF), np.inf)


def coupled_epsilon(
    gaussian_epsilon: Callable[[float], float],
    delta: float,
    tau: float,
    truncation: str,
    start: float,
    what: str,
) -> float:
    """The smallest eps found whose coupled upper bound is at most ``delta``:
    ``gaussian_epsilon(budget)``, the uncut run's certified upper eps at the budget
    :func:`delta_budget` leaves at a guess (first ``start``, e.g. the cut run's certified
    eps, close when ``tau`` is small), moved up until :func:`coupled_delta` of that budget
    certifies it. The uncut run's certified upper delta at that eps is at most the budget
    (what its eps query certifies), so no delta query is needed. Raises
    :class:`~accountant.errors.InfeasibleTargetError` when the escape alone costs more than
    ``delta`` (``what`` names the coordinates in the message)."""
    guess = start
    for round_ in range(SEARCH_ROUNDS):
        budget = delta_budget(delta, guess, tau, truncation) * (1.0 - 1e-9)
        if budget <= 0.0:
            raise InfeasibleTargetError(
                f"delta={delta!r} cannot be certified: some of the {what} reaches its cut "
                f"with probability tau={tau:.3g}, which alone costs more than delta at "
                f"eps={guess:.3g}; use a larger cut"
            )
        candidate = float(gaussian_epsilon(budget))
        if coupled_delta(budget, candidate, tau, truncation) <= delta:
            return candidate
        guess = max(candidate, guess) * (1.0 + 1e-4 * 2**round_) + 1e-12
    raise AccountantError(
        f"no eps was certified for delta={delta!r} in {SEARCH_ROUNDS} rounds "
        f"(tau={tau:.3g}); please report this with the accountant's history"
    )


def lowered_delta(
    gaussian_lower: np.ndarray | float, epsilon: np.ndarray | float, tau: float, truncation: str
) -> np.ndarray:
    """The cut run's lower bound on delta at ``epsilon`` from the uncut run's certified
    ``gaussian_lower``: ``gaussian_lower - lowering(epsilon)``, the subtraction rounded down
    (one ulp towards ``-inf``, where it subtracts anything)."""
    lower = np.asarray(gaussian_lower, dtype=np.float64)
    penalty = lowering(epsilon, tau, truncation)
    with np.errstate(invalid="ignore"):
        return np.where(penalty > 0.0, np.nextafter(lower - penalty, -np.inf), lower)


def raised_target(delta: float, epsilon: float, tau: float, truncation: str) -> float:
    """``delta + lowering(epsilon)``, rounded up: where the uncut run's certified lower eps
    is read so that no smaller eps (up to ``epsilon``) leaves the cut run's delta at or below
    ``delta`` (:func:`lowering` grows with eps)."""
    penalty = float(lowering(epsilon, tau, truncation))
    return delta if penalty == 0.0 else math.nextafter(delta + penalty, math.inf)
