"""The sweep behind ``docs/curves.md`` (issue 16): the paper's curves as one sweep.

    python benchmarks/sweep_curves.py --cluster 2                # a Dask LocalCluster
    python benchmarks/sweep_curves.py --workers 2                # the local process pool
    python benchmarks/sweep_curves.py --parts dpsgd --workers 2  # one part
    python benchmarks/sweep_curves.py --list                     # the runs, nothing run

Parts (every run certified by PrivacyBuckets, compared with the best truncated Gaussian
at the same certified delta):

* ``optimality``: ``fig:optimality_graph`` and ``fig:different_eps``. The additive pair on
  the paper's grid ``[-500, 500]`` (step 0.5, sensitivity 1), n = 1, 8, 32 and 128,
  U_L1 and U_L2, learned with ``l^ADP`` for certified delta 1e-2, 1e-4 and 1e-6 at eps
  0.3, for 1e-4 at eps 0.1 and 1, and for all three at eps 0.1 and 1 for n = 128, U_L2
  (44 runs). The paper draws its points by varying the utility weight;
  here each point is a target delta (``docs/learning.md``), warm-started from the best
  truncated Gaussian, 3,000 epochs.
* ``dpsgd``: ``fig:dp_sgd``. The DP-SGD pair (q 0.1, clipping norm 1), eps 0.3, U_L1,
  n = 8, 32 and 128 and the same three target deltas on ``[-20, 20]`` (step 0.05); the
  paper's ``[-500, 500]`` at step 0.5 puts a few grid points inside one sigma (9 runs).
* ``seeds``: the headline points from a cold start (``warm_start="model"``), seeds 0-4:
  n = 128 U_L2 at delta 2e-4, 20,000 epochs, with the learner's default learning-rate
  decay 0.999 and with 0.9999; n = 8 U_L1 at delta 1e-6, 10,000 epochs, decay 0.9999;
  on the paper's grid (15 runs).
* ``range``: n = 8 U_L1 at delta 1e-6 (eps 0.3) on ranges 50, 75, 100, 150 and 250
  (step 0.5), beside the range 500 of ``optimality`` (5 runs).

Results go to ``--store`` (default ``docs/sweep``); running again skips finished runs
and continues interrupted ones from their checkpoints. ``python
benchmarks/sweep_report.py`` writes the pages from the store.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from optimizers.problem import Schedule  # noqa: E402
from optimizers.sweep import SweepSpec, SweepStore, run_sweep  # noqa: E402

PAPER_GRID = {"bound": 500.0, "step": 0.5, "bucket_width": 0.001}
TARGETS = [1e-2, 1e-4, 1e-6]

PARTS: dict[str, list[SweepSpec]] = {  # longest runs first: no idle worker at the end
    "seeds": [
        SweepSpec(
            epsilons=[0.3],
            times=[128],
            utilities=["L2"],
            target_deltas=[2e-4],
            seeds=[0, 1, 2, 3, 4],
            schedule=Schedule(epochs=20000, warm_start="model", checkpoint_every=500),
            **PAPER_GRID,
        ),
        SweepSpec(
            epsilons=[0.3],
            times=[128],
            utilities=["L2"],
            target_deltas=[2e-4],
            seeds=[0, 1, 2, 3, 4],
            schedule=Schedule(
                epochs=20000,
                learning_rate_decay=0.9999,
                warm_start="model",
                checkpoint_every=500,
            ),
            **PAPER_GRID,
        ),
        SweepSpec(
            epsilons=[0.3],
            times=[8],
            target_deltas=[1e-6],
            seeds=[0, 1, 2, 3, 4],
            schedule=Schedule(
                epochs=10000,
                learning_rate_decay=0.9999,
                warm_start="model",
                checkpoint_every=500,
            ),
            **PAPER_GRID,
        ),
    ],
    "optimality": [
        SweepSpec(  # fig:optimality_graph: every n and utility at three targets
            epsilons=[0.3],
            times=[1, 8, 32, 128],
            utilities=["L1", "L2"],
            target_deltas=TARGETS,
            schedule=Schedule(epochs=3000),
            **PAPER_GRID,
        ),
        SweepSpec(  # the eps grid of the issue at one target
            epsilons=[0.1, 1.0],
            times=[1, 8, 32, 128],
            utilities=["L1", "L2"],
            target_deltas=[1e-4],
            schedule=Schedule(epochs=3000),
            **PAPER_GRID,
        ),
        SweepSpec(  # fig:different_eps: n = 128, U_L2, the other two targets
            epsilons=[0.1, 1.0],
            times=[128],
            utilities=["L2"],
            target_deltas=[1e-2, 1e-6],
            schedule=Schedule(epochs=3000),
            **PAPER_GRID,
        ),
    ],
    "dpsgd": [
        SweepSpec(
            epsilons=[0.3],
            times=[8, 32, 128],
            sampling_rates=[0.1],
            target_deltas=TARGETS,
            bound=20.0,
            step=0.05,
            bucket_width=0.001,
            schedule=Schedule(epochs=3000),
        )
    ],
    "range": [
        SweepSpec(
            epsilons=[0.3],
            times=[8],
            target_deltas=[1e-6],
            bound=bound,
            step=0.5,
            bucket_width=0.001,
            schedule=Schedule(epochs=3000),
        )
        for bound in (50.0, 75.0, 100.0, 150.0, 250.0)
    ],
}


def specs(parts: list[str]) -> list[SweepSpec]:
    """The specs of ``parts``, in order."""
    return [spec for part in parts for spec in PARTS[part]]


def _parts(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",")]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise argparse.ArgumentTypeError(
            f"--parts must list some of {', '.join(PARTS)}, got {text!r}"
        )
    return parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", type=_parts, default=list(PARTS), help=", ".join(PARTS))
    parser.add_argument("--store", default=str(ROOT / "docs" / "sweep"))
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--workers", type=int, default=None, help="local pool size")
    how.add_argument("--cluster", type=int, default=None, help="LocalCluster workers")
    parser.add_argument("--list", action="store_true", help="list the runs and stop")
    args = parser.parse_args(argv)
    chosen = specs(args.parts)
    tasks = {t.run_id: t for spec in chosen for t in spec.tasks()}
    store = SweepStore(args.store)
    finished = store.finished_ids()
    print(f"{len(tasks)} runs, {len(set(tasks) & finished)} already in {args.store}")
    if args.list:
        for run_id, task in tasks.items():
            p = task.problem
            state = "done" if run_id in finished else "todo"
            print(
                f"{run_id} {state} eps {p.epsilon:g} n {p.times} {p.utility} q {p.q} "
                f"target {p.target_delta} seed {task.seed} epochs {task.schedule.epochs}"
            )
        return 0
    started = time.perf_counter()
    executor = f"LocalCluster({args.cluster})" if args.cluster else f"pool({args.workers})"
    try:
        outcome = _run(chosen, store, args)
    except KeyboardInterrupt:
        ran = len(store.finished_ids() & set(tasks)) - len(set(tasks) & finished)
        _log(store, executor, args.parts, started, ran=ran, interrupted=True)
        print(f"interrupted after {time.perf_counter() - started:.1f} s: {ran} runs stored")
        return 130
    _log(
        store,
        executor,
        args.parts,
        started,
        ran=len(outcome.ran),
        skipped=len(outcome.skipped),
        stopped=len(outcome.stopped),
        failed=len(outcome.failed),
    )
    wall = time.perf_counter() - started
    print(
        f"ran {len(outcome.ran)}, skipped {len(outcome.skipped)}, stopped "
        f"{len(outcome.stopped)}, failed {len(outcome.failed)}; wall {wall:.1f} s"
    )
    for run_id, error in outcome.failed:
        print(f"failed {run_id}: {error}")
    return 0 if outcome.complete else 1


def _run(chosen: list[SweepSpec], store: SweepStore, args: argparse.Namespace):
    if args.cluster is None:
        return run_sweep(chosen, store, workers=args.workers)
    from distributed import Client, LocalCluster

    started = time.perf_counter()
    cluster = LocalCluster(
        n_workers=args.cluster, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, Client(cluster) as client:
        up = time.perf_counter() - started
        print(f"LocalCluster of {args.cluster} workers up in {up:.1f} s", flush=True)
        return run_sweep(chosen, store, scheduler=client)


def _log(store: SweepStore, executor: str, parts: list[str], started: float, **counts) -> None:
    """One line per session in ``<store>/sessions.jsonl`` (not a run file: the store
    reads only ``<16 hex digits>.json``), for the wall times of docs/curves.md."""
    record = {
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "executor": executor,
        "parts": parts,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "interrupted": False,
        **counts,
    }
    with open(store.directory / "sessions.jsonl", "a", encoding="utf-8") as stream:
        stream.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    sys.exit(main())
