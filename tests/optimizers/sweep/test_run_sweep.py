"""Sweeps on a local process pool and on a Dask LocalCluster: results stored as each run
finishes, nothing redone, interrupted sweeps resumed, the same certified results on
both executors; bad arguments refused before any work."""

from __future__ import annotations

import shutil
import subprocess
import sys

import attrs
import numpy as np
import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.errors import InvalidInputError
from optimizers.learner import learn
from optimizers.problem import Schedule
from optimizers.sweep import SweepStore, run_sweep
from tests.optimizers.sweep.conftest import tiny_spec

pytestmark = pytest.mark.filterwarnings("ignore::optimizers.results.LearningWarning")

#: One run whose noise collapses at its first epoch (NoiseCollapseError).
COLLAPSING = tiny_spec(
    epsilons=[0.5],
    losses=["ADP"],
    target_deltas=[None],
    schedule=Schedule(epochs=30, learning_rate=10.0, utility_weight=1000.0),
)


def _files(store: SweepStore) -> dict[str, tuple[int, bytes]]:
    """Every result file's modification time (ns) and content."""
    return {
        p.name: (p.stat().st_mtime_ns, p.read_bytes())
        for p in store.directory.iterdir()
        if p.is_file()
    }


@pytest.fixture(scope="module")
def pool_sweep(tmp_path_factory):
    """The tiny sweep, run once on a local pool of two processes."""
    store = SweepStore(tmp_path_factory.mktemp("pool") / "store")
    outcome = run_sweep(tiny_spec(), store, workers=2, progress=False)
    return store, outcome


def _copy(store: SweepStore, tmp_path) -> SweepStore:
    return SweepStore(shutil.copytree(store.directory, tmp_path / "copy"))


@pytest.mark.slow
def test_the_local_pool_writes_one_result_per_run(pool_sweep):
    store, outcome = pool_sweep
    ids = [t.run_id for t in tiny_spec().tasks()]
    assert outcome.complete and outcome.skipped == () and sorted(outcome.ran) == sorted(ids)
    assert [r.run_id for r in outcome.results] == ids  # in the spec's order
    assert store.finished_ids() == set(ids)
    assert {p.name for p in store.directory.glob("*.npy")} == {f"{i}.npy" for i in ids}
    assert list(store.directory.glob("checkpoints/*")) == []  # dropped when finished
    for result in outcome.results:
        assert 0.0 < result.delta_certified < 1.0 and result.epochs_run == 30
        assert result.learned_pmf.shape == (33,)
        assert store.load(result.run_id).summary() == result.summary()
    # The two training bounds learn different noises.
    adp, ma = outcome.results[0], outcome.results[1]
    assert (adp.task.problem.loss, ma.task.problem.loss) == ("ADP", "MA")
    assert not np.array_equal(adp.learned_pmf, ma.learned_pmf)


@pytest.mark.slow
def test_running_again_redoes_nothing(pool_sweep, tmp_path):
    store = _copy(pool_sweep[0], tmp_path)
    before = _files(store)
    outcome = run_sweep(tiny_spec(), store, workers=2, progress=False)
    assert outcome.ran == () and len(outcome.skipped) == 4 and outcome.complete
    assert _files(store) == before  # not one file rewritten
    assert [r.summary() for r in outcome.results] == [r.summary() for r in pool_sweep[1].results]


@pytest.mark.slow
def test_an_interrupted_sweep_runs_only_the_missing_runs(pool_sweep, tmp_path):
    store = _copy(pool_sweep[0], tmp_path)
    tasks = tiny_spec().tasks()
    missing = [tasks[1].run_id, tasks[2].run_id]
    for run_id in missing:
        store.result_path(run_id).unlink()
        store.pmf_path(run_id).unlink()
    # One of them was killed after 20 of its 30 epochs: its checkpoint is in the store.
    killed = tasks[2]
    path = store.checkpoint_path(killed.run_id)
    learn(killed.problem, attrs.evolve(killed.schedule, epochs=20), checkpoint=path, progress=False)
    kept = _files(store)
    outcome = run_sweep(tiny_spec(), store, workers=2, progress=False)
    assert sorted(outcome.ran) == sorted(missing) and len(outcome.skipped) == 2
    after = _files(store)
    assert {k: v for k, v in after.items() if k in kept} == kept  # finished runs untouched
    resumed = {r.run_id: r for r in outcome.results}
    assert resumed[killed.run_id].resumed_from_epoch == 20
    assert resumed[tasks[1].run_id].resumed_from_epoch == 0
    # Resumed or not, the same certified results as the uninterrupted sweep.
    for original in pool_sweep[1].results:
        again = resumed[original.run_id]
        assert again.delta_certified == original.delta_certified
        np.testing.assert_array_equal(again.learned_pmf, original.learned_pmf)


@pytest.mark.slow
def test_a_dask_local_cluster_gives_the_pool_s_results(pool_sweep, tmp_path):
    distributed = pytest.importorskip("distributed")  # the [cluster] extra; CI installs it
    store = SweepStore(tmp_path / "dask")
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        outcome = run_sweep(tiny_spec(), store, scheduler=client, progress=False)
        assert client.status == "running"  # a client it was given is left open
        again = run_sweep(tiny_spec(), store, scheduler=cluster.scheduler_address)
        collapsing = run_sweep(COLLAPSING, store, scheduler=client, progress=False)
    # A run that raises is reported, not stored; the store keeps the other runs.
    (collapsed,) = COLLAPSING.tasks()
    assert collapsing.failed[0][0] == collapsed.run_id and len(collapsing.failed) == 1
    assert "NoiseCollapseError: the noise collapsed" in collapsing.failed[0][1]
    assert not collapsing.complete and collapsing.results == () and collapsing.ran == ()
    assert not store.is_finished(collapsed.run_id) and len(store.finished_ids()) == 4
    assert outcome.complete and again.ran == () and len(again.skipped) == 4
    pool = pool_sweep[1].results
    assert [r.run_id for r in outcome.results] == [r.run_id for r in pool]
    for on_dask, on_pool in zip(outcome.results, pool, strict=True):
        # The learner is deterministic on CPU: the same seeds learn the same noise.
        assert on_dask.delta_certified == on_pool.delta_certified
        assert on_dask.summary() | {"wall_seconds": 0, "training_seconds": 0} == (
            on_pool.summary() | {"wall_seconds": 0, "training_seconds": 0}
        )
        np.testing.assert_array_equal(on_dask.learned_pmf, on_pool.learned_pmf)


def test_a_scheduler_without_dask_names_the_cluster_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    with pytest.raises(ImportError, match=r"\[cluster\]"):
        run_sweep(tiny_spec(), tmp_path, scheduler="tcp://127.0.0.1:8786")
    assert list(tmp_path.iterdir()) == []  # refused before any work


@pytest.mark.parametrize(
    ("arguments", "argument", "shown"),
    [
        ({"workers": 0}, "workers", "0"),
        ({"workers": 1.5}, "workers", "1.5"),
        ({"scheduler": 8786}, "scheduler", "8786"),
        ({"scheduler": " "}, "scheduler", "' '"),
        ({"scheduler": "tcp://127.0.0.1:8786", "workers": 2}, "workers", "2"),
        ({"progress": "yes"}, "progress", "'yes'"),
        ({"checkpoints": 1}, "checkpoints", "1"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(arguments, argument, shown, tmp_path):
    with pytest.raises(InvalidInputError) as info:
        run_sweep(tiny_spec(), tmp_path / "store", **arguments)
    message = str(info.value)
    assert argument in message and shown in message and "\n" not in message
    assert not (tmp_path / "store").exists()


def test_several_specs_run_as_one_sweep_each_run_once(pool_sweep, tmp_path):
    # The pool sweep's store holds tiny_spec(); a second spec sharing two of its runs
    # adds only its own, and the outcome lists both specs' runs in order, once each.
    stored, first = pool_sweep
    store = _copy(stored, tmp_path)
    second = tiny_spec(epsilons=[1.0, 2.0], losses=["ADP"])
    outcome = run_sweep([tiny_spec(), second], store, workers=1, progress=False)
    ids = [r.run_id for r in outcome.results]
    expected = [t.run_id for t in tiny_spec().tasks()] + [second.tasks()[1].run_id]
    assert ids == expected
    assert outcome.ran == (second.tasks()[1].run_id,)
    assert set(outcome.skipped) == {r.run_id for r in first.results}


@pytest.mark.parametrize(
    ("spec", "store", "argument", "shown"),
    [
        ({"epsilons": [1.0]}, "store", "spec", "dict"),
        ([], "store", "spec", "[]"),
        ([{"epsilons": [1.0]}], "store", "spec", "list"),
        (None, 3, "store", "int: 3"),
    ],
)
def test_a_bad_spec_or_store_is_refused(spec, store, argument, shown, tmp_path):
    with pytest.raises(InvalidInputError) as info:
        run_sweep(tiny_spec() if spec is None else spec, store)
    assert argument in str(info.value) and shown in str(info.value)


def test_the_package_and_its_command_import_without_dask():
    code = (
        "import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
        "import optimizers.sweep, optimizers.sweep.cli\n"
        "from accountant.report.cli import main\n"
        "sys.exit(main(['sweep', '--help']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "usage: accountant sweep" in result.stdout and "--scheduler" in result.stdout
