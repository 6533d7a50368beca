"""A run that refines its bucket width (``Schedule.refine_every``) resumes exactly: a
run stopped before, at or after a refinement and resumed from its checkpoint equals the
uninterrupted run, and a checkpoint written before refinement existed still resumes.

Split from ``tests/optimizers/test_learner_reliability.py`` (the other resume and
checkpoint guarantees)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from optimizers.learner import learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402


def _problem(**changes) -> LearningProblem:
    values = {"bound": 4.0, "step": 0.25, "epsilon": 1.0, "times": 2, "target_delta": 0.2}
    return LearningProblem(**(values | changes))


def _schedule(**changes) -> Schedule:
    values = {"epochs": 30, "learning_rate": 0.1, "checkpoint_every": 7}
    return Schedule(**(values | changes))


def _tampered(path: Path, change) -> None:
    """Rewrite the checkpoint at ``path`` with ``change`` applied to its state."""
    state = torch.load(path, weights_only=True)
    change(state)
    torch.save(state, path)


#: The smooth ADP loss of this problem at width 0.25 overestimates delta by about 25 %,
#: so the refinement at epoch 10 halves the width (tests/optimizers/test_training_bias.py).
BIASED = {"bound": 20.0, "step": 0.5, "epsilon": 1.0, "times": 32, "bucket_width": 0.25}


def _refining(epochs: int, refine_every: int | None = 10) -> Schedule:
    return _schedule(epochs=epochs, learning_rate=0.05, refine_every=refine_every)


def _same_run(resumed, whole) -> None:
    np.testing.assert_array_equal(resumed.learned.noise.pmf, whole.learned.noise.pmf)
    for key in ("bound", "utility", "objective"):
        np.testing.assert_array_equal(resumed.history[key], whole.history[key])
    assert resumed.refinements == whole.refinements
    assert resumed.training_bound == whole.training_bound
    assert resumed.training_width == whole.training_width
    assert resumed.best_epoch == whole.best_epoch


@pytest.fixture(scope="module")
def refined_whole():
    problem = _problem(**BIASED, target_delta=0.1)
    return learn(problem, _refining(30), progress=False, compare=False)


# 7: before the first refinement; 10: the first run refines at its last epoch; 17: after.
@pytest.mark.parametrize("first", [7, 10, 17])
def test_a_refining_run_resumed_from_its_checkpoint_equals_an_uninterrupted_one(
    tmp_path, refined_whole, first
):
    problem, path = _problem(**BIASED, target_delta=0.1), tmp_path / "run.ckpt"
    assert refined_whole.refinements and refined_whole.refinements[0].epoch == 10
    part = learn(problem, _refining(first), checkpoint=path, progress=False, compare=False)
    assert len(part.refinements) == (0 if first < 10 else len(refined_whole.refinements))
    resumed = learn(
        problem, _refining(30), checkpoint=path, resume=True, progress=False, compare=False
    )
    _same_run(resumed, refined_whole)


def test_a_checkpoint_written_before_refinement_existed_still_resumes(tmp_path):
    problem, path = _problem(**BIASED, target_delta=0.1), tmp_path / "run.ckpt"
    whole = learn(problem, _refining(20, None), progress=False, compare=False)
    learn(problem, _refining(9, None), checkpoint=path, progress=False, compare=False)

    def older(state) -> None:
        del state["bucket_width"], state["refinements"]
        del state["schedule"]["refine_every"]

    _tampered(path, older)
    resumed = learn(
        problem, _refining(20, None), checkpoint=path, resume=True, progress=False, compare=False
    )
    _same_run(resumed, whole)
