"""A sweep spec expands into one task per combination, with stable, unique ids; bad
specs are refused naming the argument and the value."""

from __future__ import annotations

import subprocess
import sys

import attrs
import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.errors import InvalidInputError
from optimizers.problem import LearningProblem, Schedule
from optimizers.sweep import SweepTask
from tests.optimizers.sweep.conftest import TINY, tiny_spec


def test_expansion_is_the_grid_in_order():
    spec = tiny_spec(utilities=["L1", "L2"], sampling_rates=[None, 0.5], seeds=[0, 3])
    tasks = spec.tasks()
    assert len(tasks) == len(spec) == 2 * 1 * 2 * 2 * 2 * 2
    combos = [
        (t.problem.epsilon, t.problem.utility, t.problem.loss, t.problem.q, t.seed) for t in tasks
    ]
    assert len(set(combos)) == len(combos)
    assert combos[0] == (0.5, "L1", "ADP", None, 0)
    assert combos[1] == (0.5, "L1", "ADP", None, 3)  # the seed varies fastest
    assert combos[2] == (0.5, "L1", "ADP", 0.5, 0)
    assert combos[-1] == (1.0, "L2", "MA", 0.5, 3)
    for task in tasks:  # the shared values reach every run
        assert task.problem.bound == 4.0 and task.problem.step == 0.25
        assert task.problem.target_delta == 0.2 and task.problem.times == 2
        assert attrs.evolve(task.schedule, seed=0) == TINY["schedule"]


def test_target_deltas_are_swept_between_loss_and_pair():
    spec = tiny_spec(losses=["ADP"], target_deltas=[0.2, None, 0.1], sampling_rates=[None, 0.5])
    combos = [(t.problem.epsilon, t.problem.target_delta, t.problem.q) for t in spec.tasks()]
    assert len(spec) == len(combos) == 2 * 3 * 2
    assert combos[:6] == [
        (0.5, 0.2, None),
        (0.5, 0.2, 0.5),
        (0.5, None, None),
        (0.5, None, 0.5),
        (0.5, 0.1, None),
        (0.5, 0.1, 0.5),
    ]


def test_ids_are_unique_and_stable():
    tasks = tiny_spec(seeds=[0, 1, 2]).tasks()
    ids = [t.run_id for t in tasks]
    assert len(set(ids)) == len(ids) == 12
    assert all(len(i) == 16 and set(i) <= set("0123456789abcdef") for i in ids)
    assert [t.run_id for t in tiny_spec(seeds=[0, 1, 2]).tasks()] == ids
    # A rebuilt task and its round trip through plain values keep the id.
    first = tasks[0]
    rebuilt = SweepTask(
        problem=LearningProblem.from_dict(first.problem.to_dict()),
        schedule=Schedule.from_dict(first.schedule.to_dict()),
    )
    assert rebuilt.run_id == SweepTask.from_parameters(first.parameters()).run_id == ids[0]


def test_the_id_is_the_same_in_another_process():
    # Not Python's salted hash(): a fresh interpreter computes the same id.
    code = (
        "from tests.optimizers.sweep.conftest import tiny_spec; "
        "print(tiny_spec().tasks()[-1].run_id)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == tiny_spec().tasks()[-1].run_id


def test_every_parameter_changes_the_id():
    base = tiny_spec().tasks()[0]
    changed = [
        attrs.evolve(base, problem=attrs.evolve(base.problem, epsilon=0.7)),
        attrs.evolve(base, problem=attrs.evolve(base.problem, sensitivity=0.5)),
        attrs.evolve(base, problem=attrs.evolve(base.problem, target_delta=None)),
        attrs.evolve(base, schedule=attrs.evolve(base.schedule, epochs=31)),
        attrs.evolve(base, schedule=attrs.evolve(base.schedule, seed=1)),
    ]
    ids = {base.run_id, *(t.run_id for t in changed)}
    assert len(ids) == 1 + len(changed)


@pytest.mark.parametrize(
    ("changes", "argument", "shown"),
    [
        ({"epsilons": []}, "epsilons", "[]"),
        ({"epsilons": [0.5, -1.0]}, "epsilons", "-1.0"),
        ({"epsilons": 0.5}, "epsilons", "0.5"),
        ({"epsilons": "0.5"}, "epsilons", "'0.5'"),
        ({"epsilons": [0.5, 0.5]}, "epsilons", "0.5"),
        ({"times": [0]}, "times", "0"),
        ({"times": [2.5]}, "times", "2.5"),
        ({"utilities": ["L3"]}, "utilities", "'L3'"),
        ({"losses": ["RDP"]}, "losses", "'RDP'"),
        ({"sampling_rates": [1.5]}, "sampling_rates", "1.5"),
        ({"sampling_rates": [None, None]}, "sampling_rates", "None"),
        ({"seeds": [-1]}, "seeds", "-1"),
        ({"seeds": [True]}, "seeds", "True"),
        ({"bound": float("nan")}, "bound", "nan"),
        ({"step": 0.3}, "bound", "4.0"),  # not a whole number of steps
        ({"sensitivity": -1.0}, "sensitivity", "-1.0"),
        ({"target_deltas": [1.5]}, "target_deltas", "1.5"),
        ({"target_deltas": [0.0]}, "target_deltas", "0.0"),
        ({"conversion": "loose"}, "conversion", "'loose'"),
        ({"bucket_width": 0.0}, "bucket_width", "0.0"),
        ({"schedule": {"epochs": 3}}, "schedule", "{'epochs': 3}"),
    ],
)
def test_bad_specs_are_refused_naming_the_argument_and_value(changes, argument, shown):
    with pytest.raises(InvalidInputError) as info:
        tiny_spec(**changes)
    message = str(info.value)
    assert argument in message and shown in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("values", "argument"),
    [({"problem": "p", "schedule": Schedule()}, "problem"), ({"schedule": 3}, "schedule")],
)
def test_a_task_checks_its_fields(values, argument):
    problem = tiny_spec().tasks()[0].problem
    with pytest.raises(InvalidInputError, match=argument):
        SweepTask(**({"problem": problem} | values))
