"""Symmetric noise that need not be monotone: the ``"symmetric"`` model, problems trained
and certified over every shift (``all_shifts``), and the refusals that keep a
non-monotone noise from a full-shift-only certificate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from accountant import AllShiftsPairMap, exact_delta, pair_map  # noqa: E402
from accountant.errors import InvalidInputError  # noqa: E402
from optimizers import LearningProblem, Schedule, SymmetricWeightModel, build_model, learn  # noqa: E402
from optimizers.problem import optimal_warm_start  # noqa: E402


def _bumpy_pmf() -> np.ndarray:
    """Symmetric, positive, rising away from 0 in places."""
    half = np.array([0.3, 1.0, 0.2, 0.8, 0.5, 2.0])
    weights = np.concatenate([half, half[-2::-1]])
    return weights / weights.sum()


def test_from_pmf_round_trip_keeps_a_non_monotone_pmf():
    pmf = _bumpy_pmf()
    model = SymmetricWeightModel.from_pmf(pmf)
    out = model().detach().numpy()
    np.testing.assert_allclose(out, pmf, rtol=1e-13)
    np.testing.assert_array_equal(out, out[::-1])  # exactly symmetric
    again = SymmetricWeightModel.from_pmf(torch.tensor(out))
    np.testing.assert_allclose(again().detach().numpy(), pmf, rtol=1e-13)


def test_symmetric_model_is_positive_symmetric_and_can_rise_away_from_zero():
    model = build_model("symmetric", 6, 1.5, seed=3)
    assert isinstance(model, SymmetricWeightModel)
    with torch.no_grad():
        model.weights.copy_(torch.tensor([0.0, 2.0, -1.0, 1.0, 5.0, -800.0, 3.0]))
    pmf = model().detach().numpy()
    assert pmf.size == 13 and (pmf > 0).all()  # the -800 weight is floored at max - 690
    assert pmf.sum() == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_array_equal(pmf, pmf[::-1])
    assert (np.diff(pmf[:7]) < 0).any()  # not monotone towards the centre
    seeded = [build_model("symmetric", 6, 1.5, seed=3)().detach() for _ in range(2)]
    torch.testing.assert_close(seeded[0], seeded[1], rtol=0, atol=0)


def test_problem_all_shifts_round_trips_and_leaves_other_dicts_unchanged():
    values = {"bound": 2.0, "step": 0.25, "epsilon": 0.5, "times": 2}
    plain = LearningProblem(**values)
    assert "all_shifts" not in plain.to_dict()  # run ids hashed from it are unchanged
    assert LearningProblem.from_dict(plain.to_dict()) == plain
    every = LearningProblem(**values, all_shifts=True)
    assert every.to_dict()["all_shifts"] is True
    assert LearningProblem.from_dict(every.to_dict()) == every
    assert every.pair_map == AllShiftsPairMap(4, step=0.25)
    assert plain.pair_map == pair_map(0.25, 1.0)
    with pytest.raises(InvalidInputError, match="all_shifts=True is for additive noise only"):
        LearningProblem(**values, q=0.1, all_shifts=True)


def test_non_monotone_model_needs_all_shifts():
    problem = LearningProblem(bound=2.0, step=0.25, epsilon=0.5, times=1, target_delta=0.2)
    with pytest.raises(InvalidInputError, match="all_shifts=True"):
        problem.check_schedule(Schedule(model="symmetric"))
    problem.check_schedule(Schedule(model="increments"))  # a monotone model is fine


def test_optimal_warm_start_is_the_monotone_lp_optimum_at_the_training_target():
    problem = LearningProblem(
        bound=2.0, step=0.25, epsilon=0.5, times=1, target_delta=0.2, all_shifts=True
    )
    schedule = Schedule(model="symmetric", warm_start="optimal", target_margin=0.05)
    start = optimal_warm_start(problem, schedule)
    assert start.is_symmetric() and start.is_monotone(rtol=1e-6)
    assert exact_delta(pair_map(0.25, 1.0).pair(start), 0.5) <= 0.19 * (1 + 1e-6)
    with pytest.raises(InvalidInputError, match="times=2"):
        optimal_warm_start(LearningProblem(**(problem.to_dict() | {"times": 2})), schedule)


def test_learned_all_shift_noise_is_certified_over_every_shift():
    problem = LearningProblem(
        bound=2.0, step=0.25, epsilon=0.5, times=1, target_delta=0.2, all_shifts=True
    )
    schedule = Schedule(epochs=40, model="symmetric", warm_start="model", checkpoint_every=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = learn(problem, schedule, progress=False, compare=False)
    learned = result.learned
    assert "every shift" in learned.description
    exact = [exact_delta(pair_map(0.25, s * 0.25).pair(learned.noise), 0.5) for s in range(1, 5)]
    assert learned.delta_lower <= max(exact) * (1 + 1e-9) <= learned.delta_upper * (1 + 1e-9)
    assert max(exact) <= learned.delta_upper
