"""Curves from stored runs: selection, grouping, ordering, the Gaussian points, plots."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.errors import InvalidInputError
from optimizers.problem import LearningProblem, Schedule
from optimizers.sweep import RunResult, SweepTask
from optimizers.sweep.curves import plot_utility_curves, select, utility_curves


def _result(times: int, target: float, delta: float, utility: float, gaussian=True) -> RunResult:
    problem = LearningProblem(
        bound=4.0, step=0.25, epsilon=0.5, times=times, target_delta=target, utility="L2"
    )
    return RunResult(
        task=SweepTask(problem=problem, schedule=Schedule(epochs=5)),
        delta_certified=delta,
        utility=utility,
        returned="learned",
        met_target=delta <= target,
        learned_delta_certified=delta,
        learned_utility=utility,
        gaussian_sigma=1.0 if gaussian else None,
        gaussian_delta_certified=0.9 * delta if gaussian else None,
        gaussian_utility=1.1 * utility if gaussian else None,
        epochs_run=5,
        best_epoch=4,
        training_seconds=0.1,
        wall_seconds=0.2,
        resumed_from_epoch=0,
        notes=(),
        learned_pmf=np.full(33, 1 / 33),
    )


RESULTS = [
    _result(2, 0.2, 0.19, 1.0),
    _result(1, 0.1, 0.09, 2.0),
    _result(2, 0.1, 0.08, 1.5),
    _result(1, 0.2, 0.18, 1.2, gaussian=False),
]


def test_curves_group_by_a_field_and_sort_by_delta():
    curves = utility_curves(RESULTS, "times")
    assert [(c.label, c.kind) for c in curves] == [
        ("n = 1", "learned"),
        ("n = 1", "Gaussian"),
        ("n = 2", "learned"),
        ("n = 2", "Gaussian"),
    ]
    learned_2 = curves[2].points
    assert [p.delta for p in learned_2] == [0.08, 0.19]  # sorted by delta
    assert [p.utility for p in learned_2] == [1.5, 1.0]
    # The run without a Gaussian baseline adds no Gaussian point.
    assert [p.run_id for p in curves[1].points] == [RESULTS[1].run_id]
    assert curves[1].points[0].utility == pytest.approx(2.2)


def test_select_filters_by_problem_fields():
    assert select(RESULTS, times=2) == [RESULTS[0], RESULTS[2]]
    assert select(RESULTS, times=2, target_delta=0.1) == [RESULTS[2]]
    assert select(RESULTS, utility="L1") == []


@pytest.mark.parametrize("call", [lambda: select(RESULTS, colour=1),
                                  lambda: utility_curves(RESULTS, "colour")])  # fmt: skip
def test_an_unknown_field_is_refused(call):
    with pytest.raises(InvalidInputError, match="colour"):
        call()


def test_the_plot_is_written(tmp_path):
    path = tmp_path / "curves.png"
    plot_utility_curves(utility_curves(RESULTS, "times"), str(path), title="t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curve_points_are_frozen():
    point = utility_curves(RESULTS, "times")[0].points[0]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        point.delta = 1.0
