"""A learned noise, released: its quantisation keeps support and shape, a million
simulated draws follow the quantised pmf, and the certified delta of what is sampled
stays within the documented distance n t (1 + e^eps) of the learned noise's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant import PrivacyBuckets  # noqa: E402
from accountant.noise.quantised import quantise  # noqa: E402
from optimizers.learner import learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::optimizers.results.LearningWarning")


@pytest.fixture(scope="module")
def learned():
    problem = LearningProblem(bound=4.0, step=0.25, epsilon=1.0, times=4, target_delta=0.2)
    result = learn(problem, Schedule(epochs=60, learning_rate=0.1), progress=False, compare=False)
    return problem, result.noise


@pytest.mark.parametrize("bits", [20, 48])
def test_the_quantised_learned_noise_is_certified_within_the_bound(learned, bits):
    problem, p = learned
    q = quantise(p, bits)
    assert np.array_equal(q.weights > 0, p.pmf > 0)
    assert q.noise.is_symmetric() == p.is_symmetric()
    assert q.noise.is_monotone() == p.is_monotone()
    buckets = PrivacyBuckets(accuracy=1e-6)
    epsilons = [0.5, problem.epsilon, 2.0]
    original = buckets.compose(problem.pair_map.pair(p), problem.times).delta(epsilons)
    released = buckets.compose(problem.pair_map.pair(q.noise), problem.times).delta(epsilons)
    bound = q.delta_shift_bound(epsilons, problem.times)
    assert (released.upper >= original.lower - bound).all()
    assert (released.lower <= original.upper + bound).all()


def test_a_million_draws_of_the_learned_noise_follow_its_quantisation(learned):
    _, p = learned
    q = quantise(p)
    draws = q.simulate(1_000_000, np.random.default_rng(2026))
    index = np.rint((draws - p.start) / p.step).astype(np.int64)
    observed = np.bincount(index, minlength=p.size)
    expected = 1_000_000 * q.noise.pmf
    assert observed[expected == 0].sum() == 0
    kept = expected >= 5
    observed = np.append(observed[kept], observed[~kept].sum())
    expected = np.append(expected[kept], expected[~kept].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert stats.chisquare(observed, expected).pvalue > 1e-4
