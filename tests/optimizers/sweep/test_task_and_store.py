"""One run as a task: its result record, resuming from a checkpoint (or starting afresh
from one that is not its own); the store: atomic files, round trip, refusals."""

from __future__ import annotations

import json
import os
import pickle
import signal
import threading
import time

import attrs
import numpy as np
import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant import PrivacyBuckets
from accountant.errors import InvalidInputError
from accountant.noise import from_array
from optimizers.learner import learn
from optimizers.sweep import RunResult, StoppedRun, SweepStore, run_task
from optimizers.sweep.store import FORMAT
from tests.optimizers.sweep.conftest import tiny_spec

pytestmark = pytest.mark.filterwarnings("ignore::optimizers.results.LearningWarning")


@pytest.fixture(scope="module")
def task():
    return tiny_spec().tasks()[1]  # eps 0.5, n 2, Extended MA training bound


@pytest.fixture(scope="module")
def result(task) -> RunResult:
    return run_task(task)


def test_a_task_and_its_result_pickle(task, result):
    assert pickle.loads(pickle.dumps(task)) == task
    again = pickle.loads(pickle.dumps(result))
    assert again.run_id == result.run_id and again.summary() == result.summary()


def test_the_result_is_the_certified_learned_noise(task, result):
    problem = task.problem
    assert result.run_id == task.run_id and result.seed == 0
    assert result.epochs_run == 30 and result.resumed_from_epoch == 0
    noise = from_array(result.learned_pmf, problem.step)
    pair = problem.pair_map.pair(noise)
    upper = PrivacyBuckets(accuracy=1e-3).compose(pair, problem.times).delta(problem.epsilon)
    assert result.learned_delta_certified == upper.upper
    assert 0.0 < result.delta_certified <= result.learned_delta_certified
    assert result.met_target is (result.delta_certified <= 0.2)
    assert result.gaussian_delta_certified <= result.learned_delta_certified
    assert result.returned in ("learned", "baseline")
    if result.returned == "baseline":
        assert result.delta_certified == result.gaussian_delta_certified
        assert any("does not beat" in note for note in result.notes)
    assert result.wall_seconds >= result.training_seconds > 0.0


def test_a_run_resumes_from_its_checkpoint(task, result, tmp_path):
    path = tmp_path / "run.pt"
    # A run "killed" after 12 of its 30 epochs left this checkpoint.
    learn(
        task.problem,
        attrs.evolve(task.schedule, epochs=12),
        checkpoint=path,
        progress=False,
    )
    resumed = run_task(task, str(path))
    assert resumed.resumed_from_epoch == 12 and resumed.epochs_run == 30
    # The learner resumes deterministically: the same noise as the uninterrupted run.
    np.testing.assert_array_equal(resumed.learned_pmf, result.learned_pmf)
    assert resumed.delta_certified == result.delta_certified


@pytest.mark.parametrize("kind", ["corrupted", "another run"])
def test_a_checkpoint_not_of_this_run_is_replaced(task, result, tmp_path, kind):
    path = tmp_path / "run.pt"
    if kind == "corrupted":
        path.write_bytes(b"not a checkpoint")
    else:
        other = attrs.evolve(task.problem, epsilon=0.9)
        learn(other, attrs.evolve(task.schedule, epochs=3), checkpoint=path, progress=False)
    again = run_task(task, str(path))
    assert again.resumed_from_epoch == 0
    np.testing.assert_array_equal(again.learned_pmf, result.learned_pmf)


def test_the_store_round_trips_a_result(result, tmp_path):
    store = SweepStore(tmp_path / "store")
    store.checkpoint_path(result.run_id).parent.mkdir(parents=True)
    store.checkpoint_path(result.run_id).write_bytes(b"left over")
    path = store.save(result)
    assert path.name == f"{result.run_id}.json"
    names = {p.name for p in store.directory.iterdir()}
    assert names == {"checkpoints", f"{result.run_id}.json", f"{result.run_id}.npy"}
    assert not store.checkpoint_path(result.run_id).exists()  # dropped when finished
    record = json.loads(path.read_text())
    assert record["format"] == FORMAT and record["run_id"] == result.run_id
    assert record["task"] == result.task.parameters()
    assert record["result"]["delta_certified"] == result.delta_certified
    np.testing.assert_array_equal(np.load(store.pmf_path(result.run_id)), result.learned_pmf)
    loaded = store.load(result.run_id)
    assert loaded.summary() == result.summary() and loaded.task == result.task
    assert store.finished_ids() == {result.run_id} and store.is_finished(result.run_id)
    assert [r.run_id for r in store.results()] == [result.run_id]


def test_the_store_ignores_other_files_and_refuses_a_tampered_result(result, tmp_path):
    store = SweepStore(tmp_path)
    (tmp_path / "notes.json").write_text("{}")
    store.save(result)
    assert store.finished_ids() == {result.run_id}
    path = store.result_path(result.run_id)
    record = json.loads(path.read_text())
    record["task"]["problem"]["epsilon"] = 0.75  # no longer the run its name says
    path.write_text(json.dumps(record))
    with pytest.raises(InvalidInputError, match=rf"{result.run_id}\.json.*run id"):
        store.load(result.run_id)
    path.write_text("{not json")
    with pytest.raises(InvalidInputError, match=r"not a readable sweep result"):
        store.load(result.run_id)


@pytest.mark.parametrize(("value", "shown"), [(3, "int: 3"), (b"dir", "bytes"), ("", "''")])
def test_a_bad_store_path_is_refused(value, shown):
    with pytest.raises(InvalidInputError) as info:
        SweepStore(value)
    assert "store" in str(info.value) and shown in str(info.value)


def test_a_file_is_not_a_store(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(InvalidInputError, match=r"store=.*file.* is not a directory"):
        SweepStore(path)


def test_an_interrupted_run_is_stopped_not_a_result_and_continues(task, tmp_path):
    """Ctrl-C in a worker: the learner stops at its next epoch and keeps its checkpoint;
    the task says it stopped (nothing to store) and a later run continues from there."""
    path = tmp_path / "run.pt"
    long = attrs.evolve(task, schedule=attrs.evolve(task.schedule, epochs=100_000))

    def interrupt_after_the_first_checkpoint() -> None:
        deadline = time.monotonic() + 120
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt_after_the_first_checkpoint)
    thread.start()
    stopped = run_task(long, str(path))
    thread.join()
    assert isinstance(stopped, StoppedRun) and stopped.stopped_by == "SIGINT"
    assert stopped.run_id == long.run_id
    assert 10 <= stopped.epochs_run < 100_000  # the first checkpoint is at epoch 10
    # The epochs may change on resuming: continue for five more.
    epochs = stopped.epochs_run + 5
    shorter = attrs.evolve(task, schedule=attrs.evolve(task.schedule, epochs=epochs))
    resumed = run_task(shorter, str(path))
    assert isinstance(resumed, RunResult)
    assert resumed.resumed_from_epoch == stopped.epochs_run
    assert resumed.epochs_run == stopped.epochs_run + 5
