"""Learning symmetric noise that need not be monotone, trained and certified over every
query difference (issue 16, "learning beyond the paper"; ``docs/learning-beyond.md``).

For noise that rises somewhere away from 0 the shift by the full sensitivity no longer
bounds the smaller ones (SPEC section 4), so the problems here have ``all_shifts=True``:
the training loss is the largest over the shifts ``1..S`` and the certified delta the
largest PrivacyBuckets upper bound over every mix of shifts the releases can have
(:mod:`accountant.learning.certification`). Two experiments:

* ``n1``: bound 5, step 0.05, eps 0.3, one release, target delta 0.0503, U_L1 (the paper's
  staircase problem; S = 20 shifts). The model ``"symmetric"`` (free log-weights) from the
  LP optimum (warm start ``"optimal"``), from the best truncated Gaussian (``"gaussian"``)
  and from its own initialisation (``"model"``, seed 0), and the monotone
  ``"increments"`` model for reference. Each learned noise is checked independently by
  the exact single-release delta of all 20 shifts (``exact_delta``) and compared with the
  LP optima (all shifts, not monotone; and monotone) recomputed at its certified delta.
* ``n8``: bound 20, step 0.25, eps 1, eight releases, target delta 0.01 (S = 4 shifts):
  the monotone ``"increments"`` model against the ``"symmetric"`` one with all shifts.

Usage::

    python benchmarks/non_monotone.py   # every run: docs/non-monotone.json (+ .npz: the pmfs)
    python benchmarks/non_monotone.py --only n1 --epochs 300   # a quick look
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from accountant import CertificationWarning, certify, exact_delta, optimal, pair_map
from optimizers import LearningProblem, Schedule, learn

ROOT = Path(__file__).resolve().parent.parent

N1 = {"bound": 5.0, "step": 0.05, "epsilon": 0.3, "times": 1, "target_delta": 0.0503}
N8 = {"bound": 20.0, "step": 0.25, "epsilon": 1.0, "times": 8, "target_delta": 0.01}
#: (experiment, run name, problem, model, warm start, schedule changes)
RUNS = [
    ("n1", "symmetric-optimal", N1, "symmetric", "optimal", {}),
    ("n1", "symmetric-gaussian", N1, "symmetric", "gaussian", {}),
    ("n1", "symmetric-cold", N1, "symmetric", "model", {}),
    ("n1", "increments-gaussian", N1, "increments", "gaussian", {}),
    ("n8", "increments-gaussian", N8, "increments", "gaussian", {}),
    ("n8", "symmetric-gaussian", N8, "symmetric", "gaussian", {}),
    # a smaller step from the LP optimum: can descent move it towards the non-monotone one?
    ("n1", "symmetric-optimal-lr0.001", N1, "symmetric", "optimal", {"learning_rate": 0.001}),
    (
        "n1",
        "symmetric-optimal-lr0.001-e10000",
        N1,
        "symmetric",
        "optimal",
        {"learning_rate": 0.001, "epochs": 10000},
    ),
    # other cold starts
    ("n1", "symmetric-cold-seed1", N1, "symmetric", "model", {"seed": 1}),
    ("n1", "symmetric-cold-seed2", N1, "symmetric", "model", {"seed": 2}),
]


def _rises(pmf: np.ndarray) -> tuple[int, float]:
    """Grid points of the left half where the pmf falls towards the centre (a noise that
    is monotone towards 0 has none), and the largest such fall relative to the lower
    point, ``max (p_i - p_{i+1}) / p_{i+1}``."""
    left = pmf[: pmf.size // 2 + 1]
    falls = (left[:-1] - left[1:]) / left[1:]
    return int((falls > 0.0).sum()), float(max(falls.max(), 0.0))


def _exact_over_shifts(noise, values: dict) -> tuple[float, int]:
    """Exact single-release delta (both directions) of every shift ``1..S``, the largest
    and its shift: independent of the all-shift certificate."""
    steps = round(values.get("sensitivity", 1.0) / values["step"])
    deltas = [
        float(
            exact_delta(pair_map(values["step"], s * values["step"]).pair(noise), values["epsilon"])
        )
        for s in range(1, steps + 1)
    ]
    worst = int(np.argmax(deltas))
    return deltas[worst], worst + 1


def _lp(values: dict, delta: float) -> dict:
    """The LP optima at ``delta``: over every shift, not monotone; and monotone."""
    arguments = (values["bound"], values["step"], values["epsilon"], delta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        free = optimal.optimal_noise(*arguments, monotone=False, all_shifts=True)
        monotone = optimal.optimal_noise(*arguments)
    return {"lp_all_shifts_utility": free.utility, "lp_monotone_utility": monotone.utility}


def run(
    experiment: str, name: str, values: dict, model: str, warm: str, changes: dict, epochs: int
) -> tuple[dict, np.ndarray]:
    """Learn one run, certify it over every shift and check it."""
    all_shifts = model == "symmetric"
    problem = LearningProblem(**values, all_shifts=all_shifts)
    settings = {"epochs": epochs, "seed": 0} | changes
    schedule = Schedule(model=model, warm_start=warm, **settings)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the result's notes say the same)
        result = learn(problem, schedule, progress=False)
    seconds = time.perf_counter() - started
    learned = result.learned
    row = {
        "experiment": experiment,
        "run": name,
        "model": model,
        "warm_start": warm,
        "schedule_changes": changes,
        "seed": schedule.seed,
        "epochs": schedule.epochs,
        "all_shifts": all_shifts,
        "target_delta": values["target_delta"],
        "delta_certified": learned.delta_upper,
        "utility_l1": learned.utility_l1,
        "met_target": learned.delta_upper <= values["target_delta"],
        "returned": result.returned,
        "rises_on_left_half": _rises(learned.noise.pmf)[0],
        "largest_relative_rise": _rises(learned.noise.pmf)[1],
        "description": learned.description,
        "seconds": round(seconds, 1),
    }
    if values["times"] == 1:
        worst, shift = _exact_over_shifts(learned.noise, values)
        row |= {"delta_exact_all_shifts": worst, "worst_shift_steps": shift}
        row |= _lp(values, learned.delta_upper)
        at_exact = _lp(values, worst)
        row |= {f"{key}_at_exact_delta": value for key, value in at_exact.items()}
    else:
        # A monotone noise's full-shift certificate, re-checked over every shift mix.
        every = certify(
            learned.noise,
            pair_map(values["step"], 1.0, all_shifts=True),
            epsilon=values["epsilon"],
            times=values["times"],
        )
        row["delta_certified_all_shifts"] = every.delta_upper
    return row, learned.noise.pmf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("n1", "n8"), help="one experiment")
    parser.add_argument(
        "--runs", help="comma-separated experiment/run names, e.g. n1/symmetric-cold"
    )
    parser.add_argument("--epochs", type=int, default=3000)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "non-monotone.json")
    args = parser.parse_args(argv)
    rows, noises = [], {}
    chosen = set(args.runs.split(",")) if args.runs else None
    unknown = sorted((chosen or set()) - {f"{run[0]}/{run[1]}" for run in RUNS})
    if unknown:
        parser.error(f"unknown runs: {', '.join(unknown)}")
    for experiment, name, values, model, warm, changes in RUNS:
        if args.only and experiment != args.only:
            continue
        if chosen is not None and f"{experiment}/{name}" not in chosen:
            continue
        row, pmf = run(experiment, name, values, model, warm, changes, args.epochs)
        rows.append(row)
        noises[f"{experiment}/{name}"] = pmf
        print(json.dumps(rows[-1]), flush=True)
    record = {
        "python": platform.python_version(),
        "lp_at_target_0.0503": _lp(N1, N1["target_delta"]) if args.only != "n8" else None,
        "runs": rows,
    }
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    np.savez(args.output.with_suffix(".npz"), **noises)  # the learned pmfs
    return 0


if __name__ == "__main__":
    sys.exit(main())
