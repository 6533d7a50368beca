"""A learning result says what it returns and whether that is what was asked: whether its
certified delta met the target, whether the learned noise beats the best truncated
Gaussian (and, when it does not, the Gaussian is returned); in its fields, its summary,
its saved record and a :class:`LearningWarning`. The defaults of a schedule live in one
place. The progress bar is throttled when stderr is not a terminal."""

from __future__ import annotations

import json
import warnings

import attrs
import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.errors import InvalidInputError  # noqa: E402
from optimizers import problem as problem_module  # noqa: E402
from optimizers.learner import learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402
from optimizers.results import RESULT_FILE, LearnedNoise, LearningWarning  # noqa: E402


def _problem(**changes) -> LearningProblem:
    values = {"bound": 4.0, "step": 0.25, "epsilon": 1.0, "times": 2, "target_delta": 0.2}
    return LearningProblem(**(values | changes))


#: One epoch of the paper's sigmoid model from its own random start: a noise far worse
#: than the truncated Gaussian of the same certified delta (U_L1 2.04 against 0.89).
POOR = Schedule(epochs=1, model="sigmoid", sigmoids=20, warm_start="model")


@pytest.fixture(scope="module")
def poor() -> tuple[LearnedNoise, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = learn(_problem(), POOR, progress=False)
    return result, [w for w in caught if issubclass(w.category, LearningWarning)]


def test_a_learned_noise_worse_than_the_gaussian_is_not_returned(poor):
    result, caught = poor
    base = result.baseline
    assert result.learned.utility_l1 > base.utility  # the learned noise lost
    assert result.beats_baseline is False and result.returned == "baseline"
    assert result.noise is base.noise and result.certificate is base.certificate
    assert result.delta == base.certificate.delta_upper <= result.learned.delta_upper
    assert result.utility == base.utility
    assert [str(w.message) for w in caught] == result.notes
    assert "does not beat the best truncated Gaussian" in result.notes[0]
    summary = result.summary()
    assert summary["returned"] == "baseline" and summary["beats_baseline"] is False
    assert summary["learned_utility"] == result.learned.utility_l1 > summary["utility"]


def test_a_returned_baseline_is_saved_and_loaded_as_such(poor, tmp_path):
    result, _ = poor
    directory = result.save(tmp_path / "out")
    record = json.loads((directory / RESULT_FILE).read_text())
    assert record["returned"] == "baseline" and record["beats_baseline"] is False
    with np.load(directory / "noise.npz") as arrays:
        np.testing.assert_array_equal(arrays["pmf"], result.baseline.noise.pmf)
        np.testing.assert_array_equal(arrays["learned_pmf"], result.learned.noise.pmf)
    loaded = LearnedNoise.load(directory)
    assert loaded.returned == "baseline" and loaded.summary() == result.summary()
    np.testing.assert_array_equal(loaded.learned.noise.pmf, result.learned.noise.pmf)


@pytest.mark.filterwarnings("ignore:the learned noise \\(U_L1:optimizers.results.LearningWarning")
def test_a_missed_target_is_said_in_the_fields_and_by_a_warning():
    # No truncated Gaussian on [-4, 4] reaches 1e-4: the run starts at sigma = bound / 3
    # and five epochs do not get there.
    with pytest.warns(LearningWarning, match=r"certified delta .* misses the target delta"):
        result = learn(_problem(target_delta=1e-4), Schedule(epochs=5), progress=False)
    assert result.target_delta == 1e-4 < result.delta
    assert result.met_target is False
    summary = result.summary()
    assert summary["met_target"] is False and summary["target_delta"] == 1e-4
    assert any("misses the target" in note for note in summary["notes"])


def test_a_met_target_and_a_win_give_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LearningWarning)
        result = learn(_problem(), Schedule(epochs=150, learning_rate=0.1), progress=False)
    assert result.met_target is True and result.delta <= 0.2
    assert result.beats_baseline is True and result.returned == "learned"
    assert result.noise is result.learned.noise and result.notes == []


def test_without_a_target_there_is_nothing_to_meet():
    schedule = Schedule(epochs=5, utility_weight=0.01)
    result = learn(_problem(target_delta=None), schedule, progress=False, compare=False)
    assert result.target_delta is None and result.met_target is None
    assert result.beats_baseline is None and result.returned == "learned"


def test_beats_baseline_must_agree_with_the_certificates(poor):
    result, _ = poor
    with pytest.raises(InvalidInputError, match="beats_baseline=True contradicts"):
        attrs.evolve(result, beats_baseline=True)
    with pytest.raises(InvalidInputError, match="needs a baseline"):
        attrs.evolve(result, baseline=None, beats_baseline=False)


def test_schedule_defaults_are_the_module_constants():
    defaults = Schedule()
    for field in attrs.fields(Schedule):
        assert getattr(defaults, field.name) == getattr(problem_module, field.name.upper())


def test_progress_is_throttled_when_stderr_is_not_a_terminal(capsys):
    # pytest's captured stderr is not a terminal: a 400-epoch run draws at most
    # PROGRESS_LINES (20) updates plus the first and the last, not one per epoch.
    result = learn(_problem(), Schedule(epochs=400), progress=True, compare=False)
    err = capsys.readouterr().err
    assert result.epochs_run == 400 and "400/400" in err
    assert err.count("\r") <= 25, err.count("\r")
