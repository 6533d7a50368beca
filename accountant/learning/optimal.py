"""The best noise for a single release, by linear programming (SPEC section 5).

On the grid ``x_i = -bound + i step`` and with sensitivity ``m`` grid steps, the
additive pair is ``A = (p, 0_m)``, ``B = (0_m, p)``, and the exact ADP delta of one
release, ``sum_o max(0, A(o) - e^eps B(o))``, is convex and piecewise linear in ``p``.
With slack variables ``t_o >= A(o) - e^eps B(o)``, ``t_o >= 0`` and ``sum_o t_o <= delta``
(in both directions), minimising the utility loss ``sum_i |x_i| p_i`` (L1) or
``sum_i x_i^2 p_i`` (L2, the square of ``U_L2``) is a linear program. Symmetry
(``p_i = p_{N-1-i}``) and monotonicity (``p`` non-decreasing towards 0) are optional
linear constraints. Solved with scipy's HiGHS. This optimum is the yardstick for
learned noise at ``n = 1``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import attrs
import numpy as np

from accountant.errors import (
    CertificationWarning,
    InfeasibleTargetError,
    InvalidInputError,
    ShiftInvarianceWarning,
)
from accountant.noise import NoiseDistribution
from accountant.noise.families import symmetric_grid
from accountant.numerics.lazy import sparse
from accountant.pairs.pld import exact_delta
from accountant.pairs.worst_case import WorstCasePair, additive_shift_pairs
from accountant.validation import check_finite_real, check_nonnegative_real, check_positive_real

if TYPE_CHECKING:
    import scipy.sparse

__all__ = ["OptimalNoise", "optimal_noise"]

#: Largest epsilon the linear program accepts: its constraint coefficients grow like
#: e^epsilon and leave the solver's numerical range beyond this (e^30 ~ 1e13).
MAX_EPSILON = 30.0
#: Relative excess of the exact delta over the target beyond which the result warns.
TARGET_SLACK = 1e-6


@attrs.frozen(eq=False)
class OptimalNoise:
    """The LP optimum: the noise, its utility loss and its exact single-release delta (the
    largest over the shifts enforced: every shift up to the sensitivity if
    ``all_shifts``, else the full one)."""

    noise: NoiseDistribution
    utility: float
    utility_kind: str
    delta: float
    epsilon: float
    sensitivity: float
    all_shifts: bool = False


def _direction_rows(size: int, steps: int, scale: float, reverse: bool) -> scipy.sparse.csr_matrix:
    """Rows ``A(o) - scale * B(o)`` (or ``B(o) - scale * A(o)``) as linear maps of ``p``."""
    outcomes = size + steps
    rows_a = sparse.eye(outcomes, size, k=0, format="csr")  # A(o) = p_o
    rows_b = sparse.eye(outcomes, size, k=-steps, format="csr")  # B(o) = p_{o - m}
    first, second = (rows_b, rows_a) if reverse else (rows_a, rows_b)
    return (first - scale * second).tocsr()


def optimal_noise(
    bound: float,
    step: float,
    epsilon: float,
    delta: float,
    sensitivity: float = 1.0,
    *,
    utility: str = "L1",
    symmetric: bool = True,
    monotone: bool = True,
    all_shifts: bool = False,
) -> OptimalNoise:
    """Minimise the utility loss over noise on ``[-bound, bound]`` whose exact single-release
    ADP delta at ``epsilon`` is at most ``delta`` in both directions, for the shift by the
    sensitivity, or with ``all_shifts`` for every shift by 1 to ``sensitivity / step`` grid
    steps (what a query of sensitivity ``sensitivity`` can move by). For symmetric monotone
    noise the full shift is the worst and ``all_shifts`` changes nothing; without
    ``monotone`` a smaller shift may be worse, and ``all_shifts`` is what makes the
    optimum private for every neighbouring input (``exact_delta`` of
    :func:`~accountant.pairs.worst_case.additive_shift_pairs` is then checked)."""
    grid = symmetric_grid(bound, step)
    epsilon = check_nonnegative_real("epsilon", epsilon)
    if epsilon > MAX_EPSILON:
        # The constraints scale with e^eps: beyond ~33 HiGHS reports feasible programs as
        # infeasible (a wrong InfeasibleTargetError), beyond ~709 np.exp overflows.
        raise InvalidInputError(
            f"epsilon must be <= {MAX_EPSILON:g} for the linear program (its constraints "
            f"scale with e^epsilon), got {epsilon!r}"
        )
    delta = check_finite_real("delta", delta)
    if not 0.0 <= delta < 1.0:
        raise InvalidInputError(f"delta must lie in [0, 1), got {delta!r}")
    if utility not in ("L1", "L2"):
        raise InvalidInputError(f"utility must be 'L1' or 'L2', got {utility!r}")
    check_positive_real("sensitivity", sensitivity)
    for name, flag in (
        ("symmetric", symmetric),
        ("monotone", monotone),
        ("all_shifts", all_shifts),
    ):
        if not isinstance(flag, bool | np.bool_):  # (not read as truthiness)
            raise InvalidInputError(f"{name} must be True or False, got {flag!r}")
    size = grid.size
    steps = NoiseDistribution(np.full(size, 1.0 / size), step, grid[0]).shift_steps(sensitivity)
    shifts = range(1, steps + 1) if all_shifts else (steps,)
    scale = float(np.exp(epsilon))
    # variables: p (size), then per shift s the slacks t of A/B and of B/A (size + s each)
    n_vars = size + 2 * sum(size + s for s in shifts)
    cost = np.zeros(n_vars)
    cost[:size] = np.abs(grid) if utility == "L1" else grid**2
    blocks, bounds_upper = [], []
    first_slack = size
    for shift in shifts:
        outcomes = size + shift
        for reverse in (False, True):
            slack = sparse.csr_matrix(
                (
                    np.full(outcomes, -1.0),
                    (np.arange(outcomes), first_slack + np.arange(outcomes)),
                ),
                shape=(outcomes, n_vars),
            )
            rows = sparse.hstack(
                [
                    _direction_rows(size, shift, scale, reverse),
                    sparse.csr_matrix((outcomes, n_vars - size)),
                ]
            )
            blocks.append(rows + slack)  # A - e^eps B - t <= 0
            bounds_upper.append(np.zeros(outcomes))
            budget = np.zeros(n_vars)
            budget[first_slack : first_slack + outcomes] = 1.0
            blocks.append(sparse.csr_matrix(budget))  # sum t <= delta
            bounds_upper.append(np.array([delta]))
            first_slack += outcomes
    if monotone:
        centre = size // 2
        rows, cols, vals = [], [], []
        for i in range(size - 1):
            # towards the centre p must not fall: left half p_i <= p_{i+1}, right p_{i+1} <= p_i
            outer, inner = (i, i + 1) if i + 1 <= centre else (i + 1, i)
            rows += [len(rows) // 2] * 2
            cols += [outer, inner]
            vals += [1.0, -1.0]
        blocks.append(sparse.csr_matrix((vals, (rows, cols)), shape=(size - 1, n_vars)))
        bounds_upper.append(np.zeros(size - 1))
    equality = [np.concatenate([np.ones(size), np.zeros(n_vars - size)])]
    equality_rhs = [1.0]
    if symmetric:
        for i in range(size // 2):
            row = np.zeros(n_vars)
            row[i], row[size - 1 - i] = 1.0, -1.0
            equality.append(row)
            equality_rhs.append(0.0)
    import scipy.optimize  # (imported when needed: it costs 0.2 s)

    result = scipy.optimize.linprog(
        cost,
        A_ub=sparse.vstack(blocks).tocsr(),
        b_ub=np.concatenate(bounds_upper),
        A_eq=np.array(equality),
        b_eq=np.array(equality_rhs),
        bounds=(0.0, None),
        method="highs",
    )
    if result.status == 2:
        raise InfeasibleTargetError(
            f"no noise on [-{bound:g}, {bound:g}] reaches delta={delta!r} at epsilon={epsilon!r}"
        )
    if result.status != 0:
        raise InvalidInputError(f"the linear program failed: {result.message}")
    pmf = np.clip(result.x[:size], 0.0, None)
    pmf = pmf / pmf.sum()  # undo the solver's ~1e-9 feasibility tolerance, then re-check
    noise = NoiseDistribution(pmf, step, grid[0])
    pairs = [WorstCasePair._additive(noise, shift) for shift in shifts]
    achieved = float(exact_delta(pairs, epsilon))
    if achieved > delta * (1.0 + TARGET_SLACK):
        warnings.warn(
            f"the LP solution's exact delta {achieved:.6g} exceeds delta={delta!r} (solver "
            "tolerance); its utility loss is optimal only up to that difference",
            CertificationWarning,
            stacklevel=2,
        )
    if not (monotone or all_shifts) and steps > 1:
        worst = float(exact_delta(additive_shift_pairs(noise, sensitivity), epsilon))
        if worst > delta * (1.0 + TARGET_SLACK):
            warnings.warn(
                f"the optimum is not monotone, and a shift smaller than the sensitivity "
                f"gives it delta {worst:.6g} > delta={delta!r}: it is private for the full "
                "shift only; pass all_shifts=True for noise private for every shift",
                ShiftInvarianceWarning,
                stacklevel=2,
            )
    return OptimalNoise(
        noise=noise,
        utility=noise.utility(utility),
        utility_kind=utility,
        delta=achieved,
        epsilon=epsilon,
        sensitivity=sensitivity,
        all_shifts=all_shifts,
    )
