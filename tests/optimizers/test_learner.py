"""The learner: certified results, deterministic resume, clean stops, refusal of bad
checkpoints, collapse detection, save/load."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant import PrivacyBuckets  # noqa: E402
from accountant.errors import InvalidInputError  # noqa: E402
from optimizers.checkpoints import CheckpointError  # noqa: E402
from optimizers.learner import NoiseCollapseError, learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402
from optimizers.results import LearnedNoise  # noqa: E402

# These tests run a few epochs on tiny problems: whether the learned noise beats the
# Gaussian or meets its target is not what they check (test_learn_outcome.py checks the
# LearningWarning that says so), so it is not shown here.
pytestmark = pytest.mark.filterwarnings("ignore::optimizers.results.LearningWarning")


def _problem(**changes) -> LearningProblem:
    values = {"bound": 4.0, "step": 0.25, "epsilon": 1.0, "times": 2, "target_delta": 0.2}
    return LearningProblem(**(values | changes))


def _schedule(**changes) -> Schedule:
    values = {"epochs": 30, "learning_rate": 0.1, "checkpoint_every": 7}
    return Schedule(**(values | changes))


def test_result_is_certified_and_compared():
    problem = _problem()
    result = learn(problem, _schedule(), progress=False)
    pair = problem.pair_map.pair(result.noise)
    bounds = PrivacyBuckets(accuracy=1e-3).compose(pair, problem.times).delta(problem.epsilon)
    assert result.delta == bounds.upper
    assert result.noise.is_symmetric() and result.noise.is_monotone()
    assert result.baseline is not None
    assert result.baseline.certificate.delta_upper <= result.delta
    assert len(result.history["bound"]) == result.epochs_run == 30
    assert result.stopped_by is None


def test_learning_beats_its_gaussian_start_at_the_target():
    # The warm start is the best truncated Gaussian meeting the training target: the
    # target delta 0.2 less the schedule's margin (1 %).
    result = learn(_problem(), _schedule(epochs=150), progress=False)
    utility, bound = result.history["utility"], result.history["bound"]
    assert bound[0] == pytest.approx(0.2 * 0.99, rel=0.01)
    assert utility[-1] < 0.995 * utility[0]
    assert bound[-1] == pytest.approx(0.2 * 0.99, rel=0.01)
    assert result.utility < result.baseline.utility
    assert result.returned == "learned" and result.beats_baseline is True
    assert result.met_target is True and result.delta <= 0.2


def test_a_warm_start_whose_tails_underflow_still_starts_at_the_gaussian():
    # sigma about 5 on [-200, 200]: the Gaussian's pmf is 0.0 in float64 beyond about
    # 38 sigma. The model starts from its positive part, floored far below any mass.
    problem = _problem(bound=200.0, step=0.5, epsilon=1.0, times=1, target_delta=1e-3)
    start = problem.best_gaussian(1e-3 * 0.99).noise
    assert (start.pmf == 0.0).any()
    result = learn(problem, _schedule(epochs=2), progress=False, compare=False)
    assert result.history["bound"][0] == pytest.approx(1e-3 * 0.99, rel=0.01)
    assert np.isfinite(result.delta) and result.delta < 2e-3


def test_the_seed_enters_a_cold_start_only():
    # docs/learning.md: a warm start (the best truncated Gaussian) is deterministic, so
    # its runs are the same for every seed; a cold start draws its initial noise from it.
    def pmf(**changes):
        return learn(_problem(), _schedule(epochs=5, **changes), progress=False).learned.noise.pmf

    np.testing.assert_array_equal(pmf(seed=0), pmf(seed=1))
    cold = pmf(seed=0, warm_start="model"), pmf(seed=1, warm_start="model")
    assert not np.array_equal(*cold)


def test_the_utility_weight_narrows_the_noise():
    # Without a target the warm start is sigma = bound / 3; weight 0.5 favours utility.
    problem = _problem(target_delta=None)
    schedule = _schedule(epochs=150, utility_weight=0.5, weight_half_life=1e6)
    result = learn(problem, schedule, progress=False, compare=False)
    assert result.history["utility"][-1] < 0.9 * result.history["utility"][0]


def test_paper_objective_with_decaying_weight():
    problem = _problem(target_delta=None)
    schedule = _schedule(epochs=60, utility_weight=0.01, weight_half_life=20.0)
    result = learn(problem, schedule, progress=False, compare=False)
    assert result.baseline is None and result.baseline_note == "comparison not requested"
    objective = result.history["objective"]
    weights = [schedule.utility_weight_at(t) for t in range(60)]
    expected = result.history["bound"] + np.array(weights) * result.history["utility"]
    np.testing.assert_allclose(objective, expected, rtol=1e-12)


def test_resume_gives_the_uninterrupted_result(tmp_path):
    problem = _problem()
    whole = learn(problem, _schedule(epochs=40), progress=False, compare=False)
    path = tmp_path / "run.ckpt"
    learn(problem, _schedule(epochs=25), checkpoint=path, progress=False, compare=False)
    resumed = learn(
        problem, _schedule(epochs=40), checkpoint=path, resume=True, progress=False, compare=False
    )
    np.testing.assert_array_equal(resumed.noise.pmf, whole.noise.pmf)
    np.testing.assert_array_equal(resumed.history["objective"], whole.history["objective"])


def test_sigint_stops_cleanly_and_resumes(tmp_path):
    problem = _problem()
    path = tmp_path / "run.ckpt"
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in a background job, else the default
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        stopped = learn(
            problem, _schedule(epochs=10**6), checkpoint=path, progress=False, compare=False
        )
    finally:
        timer.cancel()
    assert stopped.stopped_by == "SIGINT"
    assert 0 < stopped.epochs_run < 10**6
    assert signal.getsignal(signal.SIGINT) is before
    total = stopped.epochs_run + 5
    resumed = learn(
        problem,
        _schedule(epochs=total),
        checkpoint=path,
        resume=True,
        progress=False,
        compare=False,
    )
    whole = learn(problem, _schedule(epochs=total), progress=False, compare=False)
    np.testing.assert_array_equal(resumed.noise.pmf, whole.noise.pmf)


def test_bad_checkpoints_are_refused(tmp_path):
    problem = _problem()
    path = tmp_path / "run.ckpt"
    learn(problem, _schedule(epochs=7), checkpoint=path, progress=False, compare=False)
    with pytest.raises(CheckpointError, match=r"epsilon: checkpoint 1\.0, now 0\.7"):
        learn(_problem(epsilon=0.7), _schedule(), checkpoint=path, resume=True, progress=False)
    with pytest.raises(CheckpointError, match="learning_rate"):
        learn(problem, _schedule(learning_rate=0.2), checkpoint=path, resume=True)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="corrupted"):
        learn(problem, _schedule(), checkpoint=path, resume=True, progress=False)
    with pytest.raises(CheckpointError, match="does not exist"):
        learn(problem, _schedule(), checkpoint=tmp_path / "none", resume=True)


def test_collapse_is_reported():
    problem = _problem(target_delta=None, epsilon=0.05, times=20)
    schedule = _schedule(epochs=400, utility_weight=100.0, weight_half_life=1e6, learning_rate=1.0)
    with pytest.raises(NoiseCollapseError, match="collapsed at epoch"):
        learn(problem, schedule, progress=False, compare=False)


def test_save_and_load_round_trip(tmp_path):
    result = learn(_problem(), _schedule(), progress=False)
    loaded = LearnedNoise.load(result.save(tmp_path / "out"))
    np.testing.assert_array_equal(loaded.noise.pmf, result.noise.pmf)
    assert loaded.summary() == result.summary()
    assert loaded.problem == result.problem and loaded.schedule == result.schedule
    np.testing.assert_array_equal(loaded.baseline.noise.pmf, result.baseline.noise.pmf)
    np.testing.assert_array_equal(loaded.history["utility"], result.history["utility"])
    with pytest.raises(InvalidInputError, match="directory"):
        LearnedNoise.load(tmp_path / "missing")


@pytest.mark.parametrize("loss", ["PDP", "MA"])
def test_other_training_bounds(loss):
    result = learn(_problem(loss=loss), _schedule(epochs=10), progress=False, compare=False)
    assert 0.0 < result.delta < 1.0


def test_dp_sgd_pair_and_sigmoid_model():
    problem = _problem(q=0.2, times=4, target_delta=0.01)
    schedule = _schedule(epochs=10, model="sigmoid", sigmoids=20, warm_start="model")
    result = learn(problem, schedule, progress=False, compare=False)
    pair = problem.pair_map.pair(result.noise)
    assert result.delta == PrivacyBuckets(accuracy=1e-3).compose(pair, 4).delta(1.0).upper


@pytest.mark.parametrize(
    ("factory", "changes", "match"),
    [
        (_problem, {"bound": 4.1}, "bound"),
        (_problem, {"epsilon": -1.0}, "epsilon"),
        (_problem, {"times": 0}, "times"),
        (_problem, {"sensitivity": 0.3}, "sensitivity"),
        (_problem, {"sensitivity": 9.0}, "sensitivity"),
        (_problem, {"q": 1.5}, "q"),
        (_problem, {"utility": "L3"}, "utility"),
        (_problem, {"loss": "RDP"}, "loss"),
        (_problem, {"target_delta": 1.0}, "target_delta"),
        (_schedule, {"epochs": 0}, "epochs"),
        (_schedule, {"learning_rate": float("nan")}, "learning_rate"),
        (_schedule, {"learning_rate_decay": 1.5}, "learning_rate_decay"),
        (_schedule, {"model": "mlp"}, "model"),
        (_schedule, {"seed": -1}, "seed"),
        (_schedule, {"warm_start": "lp"}, "warm_start"),
    ],
)
def test_bad_problem_or_schedule(factory, changes, match):
    with pytest.raises(InvalidInputError, match=match):
        factory(**changes)
