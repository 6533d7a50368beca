"""Running a sweep: on a local process pool, or on a Dask distributed cluster.

:func:`run_sweep` expands the spec, skips every run the store already holds, and runs
the others in parallel: on a :class:`concurrent.futures.ProcessPoolExecutor` (spawn
context: each worker is a fresh interpreter, safe with torch and numba threads) when no
scheduler is given, else on Dask (``client.submit`` per run, results taken as they
complete). Either way the results come back to this process and are written to the
store as each run finishes, so an interrupted sweep loses at most the runs in flight,
which continue from their checkpoints next time.

Dask is optional (the ``[cluster]`` extra) and imported only when a scheduler is given.
With Dask, checkpoints are written by the workers to the store's ``checkpoints/``
directory: a shared filesystem is needed for a run to resume on another machine (the
results themselves are always written here).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import attrs

from accountant.errors import InvalidInputError
from accountant.report.terminal import progress_enabled
from accountant.validation import check_positive_int, shown
from optimizers.devices import check_device
from optimizers.sweep.spec import SweepSpec
from optimizers.sweep.store import SweepStore
from optimizers.sweep.task import RunResult, StoppedRun, SweepTask, run_task

__all__ = ["CLUSTER_EXTRA", "SweepOutcome", "import_distributed", "run_sweep"]

CLUSTER_EXTRA = (
    "a Dask scheduler needs the [cluster] extra (dask[distributed]), which is not "
    "installed: pip install 'truncated-noise-accountant[cluster]'"
)
#: A job: the task and its checkpoint path (``None``: no checkpoints).
Job = tuple[SweepTask, str | None]


@attrs.frozen(kw_only=True)
class SweepOutcome:
    """What :func:`run_sweep` did: ``results``, every finished run of the spec (or
    specs) in their order (found in the store or run now); the ids of the runs ``ran``
    now and ``skipped`` (already in the store); ``stopped``: runs interrupted before
    their last epoch (they continue from their checkpoints); ``failed``: ``(run_id,
    error)`` of the runs that raised."""

    results: tuple[RunResult, ...]
    ran: tuple[str, ...]
    skipped: tuple[str, ...]
    stopped: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]

    @property
    def complete(self) -> bool:
        """Whether every run of the spec is finished."""
        return not self.stopped and not self.failed


def _ignore_sigint() -> None:
    """Worker initializer: an idle worker ignores Ctrl-C (a running learner installs
    its own handler and stops cleanly, keeping its checkpoint)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _outcome(future: Any) -> RunResult | StoppedRun | BaseException:
    try:
        return future.result()
    except Exception as exc:
        return exc


def _local_pool(
    jobs: list[Job], workers: int | None, device: str | None
) -> Iterator[tuple[SweepTask, Any]]:
    """Run ``jobs`` on a spawn-context process pool, training on ``device``; yields
    ``(task, outcome)`` as each finishes. On Ctrl-C, queued runs are cancelled and
    running ones (which stop at their next epoch) are still yielded before the interrupt
    is raised again."""
    count = min(workers or os.cpu_count() or 1, len(jobs))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(count, mp_context=context, initializer=_ignore_sigint) as pool:
        futures = {
            pool.submit(run_task, task, checkpoint, device): task for task, checkpoint in jobs
        }
        done = set()
        try:
            for future in as_completed(futures):
                done.add(future)
                yield futures[future], _outcome(future)
        except KeyboardInterrupt:
            running = [f for f in futures if f not in done and not f.cancel()]
            for future in as_completed(running):
                yield futures[future], _outcome(future)
            raise


def import_distributed() -> Any:
    """The ``distributed`` module, or an ImportError naming the ``[cluster]`` extra."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(CLUSTER_EXTRA) from exc
    return distributed


def _dask(jobs: list[Job], scheduler: Any, device: str | None) -> Iterator[tuple[SweepTask, Any]]:
    """Run ``jobs`` on the Dask cluster of ``scheduler`` (an address, or a client that
    is left open), training on ``device``; yields ``(task, outcome)`` as each finishes."""
    distributed = import_distributed()
    own = isinstance(scheduler, str)
    client = distributed.Client(scheduler) if own else scheduler
    futures = {}
    try:
        for task, checkpoint in jobs:
            future = client.submit(run_task, task, checkpoint, device, pure=False)
            futures[future.key] = (future, task)
        for future in distributed.as_completed([f for f, _ in futures.values()]):
            yield futures[future.key][1], _outcome(future)
    finally:
        if own:
            client.close()
        else:
            client.cancel([f for f, _ in futures.values() if not f.done()])


def _check_scheduler(scheduler: Any, workers: Any) -> None:
    if scheduler is None:
        return
    if isinstance(scheduler, str):
        if not scheduler.strip():
            raise InvalidInputError(
                f"scheduler must be a Dask scheduler address, got {scheduler!r}"
            )
    elif not isinstance(scheduler, import_distributed().Client):
        raise InvalidInputError(
            "scheduler must be None, a Dask scheduler address or a distributed.Client, got "
            f"{type(scheduler).__name__}: {shown(scheduler)}"
        )
    if workers is not None:
        raise InvalidInputError(
            f"workers={workers!r} sets the size of the local pool only; with a scheduler "
            "the cluster's workers run the sweep (leave workers=None)"
        )


def _check_arguments(spec: Any, store: Any, scheduler: Any, workers: Any, flags: dict) -> None:
    """Every argument checked before any work."""
    specs = spec if isinstance(spec, list | tuple) else [spec]
    if not specs or not all(isinstance(s, SweepSpec) for s in specs):
        raise InvalidInputError(
            "spec must be a SweepSpec or a non-empty list of them, got "
            f"{type(spec).__name__}: {shown(spec)}"
        )
    if not isinstance(store, SweepStore | str | os.PathLike) or isinstance(store, bytes):
        raise InvalidInputError(
            f"store must be a SweepStore or a directory path, got {type(store).__name__}: "
            f"{shown(store)}"
        )
    if workers is not None:
        check_positive_int("workers", workers)
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise InvalidInputError(f"{name} must be True or False, got {shown(value)}")
    _check_scheduler(scheduler, workers)


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="run",
        file=sys.stderr,
        dynamic_ncols=True,
        disable=not (enabled and progress_enabled(sys.stderr)),
    )


def _tasks(spec: SweepSpec | list[SweepSpec] | tuple[SweepSpec, ...]) -> tuple[SweepTask, ...]:
    """The runs of one spec, or of several in their order, each run once."""
    specs = spec if isinstance(spec, list | tuple) else [spec]
    unique = {task.run_id: task for one in specs for task in one.tasks()}
    return tuple(unique.values())


def run_sweep(
    spec: SweepSpec | list[SweepSpec] | tuple[SweepSpec, ...],
    store: SweepStore | str | os.PathLike,
    *,
    scheduler: Any = None,
    workers: int | None = None,
    progress: bool = True,
    checkpoints: bool = True,
    device: str | None = None,
) -> SweepOutcome:
    """Run every run of ``spec`` not yet in ``store`` (module docstring).

    ``spec``: a :class:`SweepSpec`, or a list of them run as one sweep (one pool, one
    progress bar; a run common to two of them is run once), e.g. the grids of several
    figures whose shared values differ.

    ``scheduler``: ``None`` for a local process pool of ``workers`` processes (default:
    the number of CPUs, at most one per run), or a Dask scheduler address
    (``"tcp://host:8786"``) or a ``distributed.Client`` (then ``workers`` must be
    ``None``). ``progress``: a bar over the whole sweep on stderr, drawn only on a
    terminal. ``checkpoints``: runs write checkpoints to the store and an interrupted
    run continues from its checkpoint; else it starts again from scratch. ``device``: the
    torch device every run trains on (``None``: the CPU; see
    :func:`optimizers.devices.check_device`; with a Dask scheduler its availability is
    checked on the workers). It is not part of the run ids: a run gives the same result
    (up to floating-point rounding on a GPU) wherever it trains.
    """
    flags = {"progress": progress, "checkpoints": checkpoints}
    _check_arguments(spec, store, scheduler, workers, flags)
    if device is not None:
        device = str(check_device(device, available=scheduler is None))
    store = store if isinstance(store, SweepStore) else SweepStore(store)
    tasks = _tasks(spec)
    skipped = tuple(t.run_id for t in tasks if store.is_finished(t.run_id))
    jobs = [
        (t, str(store.checkpoint_path(t.run_id)) if checkpoints else None)
        for t in tasks
        if t.run_id not in skipped
    ]
    ran, stopped, failed = [], [], []
    if jobs:
        if scheduler is None:
            runner = _local_pool(jobs, workers, device)
        else:
            runner = _dask(jobs, scheduler, device)
        with _progress(len(tasks), len(skipped), progress) as bar:
            for task, outcome in runner:
                if isinstance(outcome, RunResult):
                    store.save(outcome)
                    ran.append(task.run_id)
                elif isinstance(outcome, StoppedRun):
                    stopped.append(task.run_id)
                else:
                    message = " ".join(f"{type(outcome).__name__}: {outcome}".split())
                    failed.append((task.run_id, message))
                bar.update(1)
    finished = store.finished_ids()
    return SweepOutcome(
        results=tuple(store.load(t.run_id) for t in tasks if t.run_id in finished),
        ran=tuple(ran),
        skipped=skipped,
        stopped=tuple(stopped),
        failed=tuple(failed),
    )
