"""Sweeps of learning runs: a grid of problems, run in parallel, stored one file per run.

>>> from optimizers.sweep import SweepSpec, run_sweep
>>> spec = SweepSpec(epsilons=[0.5, 1.0], times=[2], bound=4.0, step=0.25, target_deltas=[0.2])
>>> outcome = run_sweep(spec, "sweep-results")  # doctest: +SKIP
>>> [r.delta_certified for r in outcome.results]  # doctest: +SKIP

Modules: :mod:`~optimizers.sweep.spec` (the grid), :mod:`~optimizers.sweep.task` (one
run: its id, its result), :mod:`~optimizers.sweep.store` (the results directory and its
format), :mod:`~optimizers.sweep.executors` (local process pool or Dask) and
:mod:`~optimizers.sweep.cli` (``accountant sweep``). Dask is needed only for a
scheduler (the ``[cluster]`` extra); this package imports without it.
"""

from optimizers.sweep.executors import SweepOutcome, run_sweep
from optimizers.sweep.spec import SweepSpec
from optimizers.sweep.store import SweepStore
from optimizers.sweep.task import RunResult, StoppedRun, SweepTask, run_task

__all__ = [
    "RunResult",
    "StoppedRun",
    "SweepOutcome",
    "SweepSpec",
    "SweepStore",
    "SweepTask",
    "run_sweep",
    "run_task",
]
