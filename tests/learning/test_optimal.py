"""The single-release LP optimum (SPEC section 5) against the staircase mechanism."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import (
    InfeasibleTargetError,
    ShiftInvarianceWarning,
    WorstCasePair,
    additive_shift_pairs,
    exact_delta,
    noise,
)
from accountant.learning.optimal import optimal_noise


def test_reproduces_the_truncated_staircase_at_its_own_delta():
    # Geng & Viswanath: the staircase is L1-optimal; truncated at 5 it has delta ~0.0501
    # (SPEC section 5: U_L1 ~ 1.885 at delta ~ 0.0503; paper: Geng et al. 1.884).
    stair = noise.staircase(1.0, 0.3, 5.0, 0.01)
    stair_delta = exact_delta(WorstCasePair.additive(stair, 1.0), 0.3)
    result = optimal_noise(5.0, 0.01, 0.3, stair_delta)
    assert result.delta <= stair_delta * (1 + 1e-6)
    assert result.utility <= stair.utility_l1 + 1e-9
    assert result.utility == pytest.approx(stair.utility_l1, rel=1e-4)


def test_spec_yardstick():
    result = optimal_noise(5.0, 0.05, 0.3, 0.0503)
    assert result.utility == pytest.approx(1.885, abs=0.01)
    assert result.delta <= 0.0503 * (1 + 1e-6)


def test_more_delta_buys_utility_and_constraints_cost_utility():
    loose = optimal_noise(3.0, 0.1, 0.5, 0.25, monotone=False, symmetric=False)
    constrained = optimal_noise(3.0, 0.1, 0.5, 0.25)
    tighter = optimal_noise(3.0, 0.1, 0.5, 0.2)
    assert loose.utility <= constrained.utility + 1e-9 <= tighter.utility + 2e-9
    assert constrained.noise.is_symmetric(rtol=1e-6, atol=1e-9)
    assert constrained.noise.is_monotone(rtol=1e-6)


def test_l2_utility_and_result_fields():
    result = optimal_noise(3.0, 0.1, 0.5, 0.25, utility="L2")
    assert result.utility_kind == "L2"
    assert result.utility == pytest.approx(np.sqrt(np.dot(result.noise.grid**2, result.noise.pmf)))


def test_zero_delta_is_infeasible_for_truncated_noise():
    with pytest.raises(InfeasibleTargetError, match=r"delta=0\.0"):
        optimal_noise(2.0, 0.5, 0.3, 0.0)


def test_a_solution_above_the_target_delta_warns(monkeypatch):
    # The solver's feasibility tolerance can leave the exact delta a hair above the
    # target; the result must say so rather than pass as optimal at that delta.
    import accountant.learning.optimal as optimal_module
    from accountant.errors import CertificationWarning

    monkeypatch.setattr(optimal_module, "exact_delta", lambda pair, eps: 0.2)
    with pytest.warns(CertificationWarning, match=r"exact delta 0\.2 exceeds delta=0\.1"):
        result = optimal_module.optimal_noise(bound=4.0, step=0.5, epsilon=1.0, delta=0.1)
    assert result.delta == 0.2


def test_a_solution_at_the_target_does_not_warn():
    import warnings

    from accountant.errors import CertificationWarning
    from accountant.learning.optimal import optimal_noise

    with warnings.catch_warnings():
        warnings.simplefilter("error", CertificationWarning)
        result = optimal_noise(bound=4.0, step=0.5, epsilon=1.0, delta=0.1)
    assert result.delta <= 0.1 * (1 + 1e-6)


# -- every shift: non-monotone optima (issue 16) ---------------------------------------


def test_all_shifts_orders_the_three_optima_and_certifies_every_shift():
    """Symmetric noise on [-3, 3], step 0.1, sensitivity 1 (10 steps), eps 0.3: the
    monotone optimum is feasible for every shift, so the all-shift non-monotone optimum
    is at most as costly; enforcing only the full shift is cheaper still, and not private
    for the smaller shifts (which warns)."""
    arguments = {"bound": 3.0, "step": 0.1, "epsilon": 0.3, "delta": 0.2}
    monotone = optimal_noise(**arguments)
    every = optimal_noise(**arguments, monotone=False, all_shifts=True)
    with pytest.warns(ShiftInvarianceWarning, match="private for the full shift only"):
        full_only = optimal_noise(**arguments, monotone=False)
    assert full_only.utility < every.utility < monotone.utility
    assert every.all_shifts and not full_only.all_shifts
    pairs = additive_shift_pairs(every.noise, 1.0)
    assert exact_delta(pairs, 0.3) <= 0.2 * (1 + 1e-6)
    assert exact_delta(additive_shift_pairs(full_only.noise, 1.0), 0.3) > 0.2 * (1 + 1e-6)
    # for monotone noise the full shift is the worst: all_shifts changes nothing
    again = optimal_noise(**arguments, all_shifts=True)
    assert again.utility == pytest.approx(monotone.utility, rel=1e-7)


def test_the_paper_setting_non_monotone_gain():
    """[-5, 5], step 0.05, eps 0.3, delta 0.0503, every shift 1..20: a symmetric
    non-monotone noise reaches U_L1 1.882936 against the monotone 1.883918."""
    arguments = {"bound": 5.0, "step": 0.05, "epsilon": 0.3, "delta": 0.0503}
    monotone = optimal_noise(**arguments)
    every = optimal_noise(**arguments, monotone=False, all_shifts=True)
    assert monotone.utility == pytest.approx(1.883918, abs=2e-6)
    assert every.utility == pytest.approx(1.882936, abs=2e-6)
