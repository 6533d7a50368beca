"""Learning runs of issue 4: learned noise against the LP optimum (n = 1) and the best
truncated Gaussian of the same range and grid at the same certified delta.

    python benchmarks/learn_noise.py                       # every run (about 15 minutes)
    python benchmarks/learn_noise.py --runs n1-L1,dpsgd    # some runs
    python benchmarks/learn_noise.py --quick --output /tmp/learn   # a smoke test

Writes ``learning.md`` (the table), ``learning.json`` and one plot per run
(``figures/learned-<run>.png``, the learned noise against the truncated Gaussian and,
for n = 1, the LP optimum) into ``--output`` (default ``docs/``). Every delta in the
table is a certified PrivacyBuckets upper bound, never a training loss.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from accountant.errors import CertificationWarning  # noqa: E402
from accountant.learning.divergence import kl_divergence  # noqa: E402
from accountant.learning.optimal import optimal_noise  # noqa: E402
from accountant.report.plotting import plot_noises  # noqa: E402
from optimizers.learner import learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402
from optimizers.results import LearningWarning  # noqa: E402

WIDE = {"bound": 500.0, "step": 0.5, "epsilon": 0.3, "bucket_width": 0.001}
#: The large-range runs use Schedule()'s defaults (those of ``accountant learn``).
DEFAULT_SCHEDULE: dict = {}

#: name -> (problem, schedule, time limit in seconds: the issue's budget).
RUNS: dict[str, tuple[dict, dict, float]] = {
    "n1-L1": (
        {"bound": 5.0, "step": 0.05, "epsilon": 0.3, "times": 1, "target_delta": 0.0503},
        {"epochs": 30000, "learning_rate": 0.3, "learning_rate_decay": 0.9999},
        180.0,
    ),
    "n8-L1": ({**WIDE, "times": 8, "target_delta": 1e-6}, DEFAULT_SCHEDULE, 600.0),
    "n8-L2": (
        {**WIDE, "times": 8, "target_delta": 1e-6, "utility": "L2"},
        DEFAULT_SCHEDULE,
        600.0,
    ),
    "n128-L1": ({**WIDE, "times": 128, "target_delta": 2e-4}, DEFAULT_SCHEDULE, 600.0),
    "n128-L2": (
        {**WIDE, "times": 128, "target_delta": 2e-4, "utility": "L2"},
        DEFAULT_SCHEDULE,
        600.0,
    ),
    "dpsgd": (
        {
            "bound": 10.0,
            "step": 0.05,
            "epsilon": 1.0,
            "times": 128,
            "q": 0.1,
            "sensitivity": 1.0,
            "utility": "L2",
            "target_delta": 0.01,
        },
        {"epochs": 2000},
        600.0,
    ),
}


def _run(name: str, quick: bool, figures: Path) -> dict:
    problem_args, schedule_args, limit = RUNS[name]
    problem = LearningProblem(**problem_args)
    schedule = Schedule(**(schedule_args | ({"epochs": 20} if quick else {})))
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CertificationWarning)
        warnings.simplefilter("always", LearningWarning)
        result = learn(problem, schedule, progress=not quick, time_limit=limit)
    row = {"run": name, **result.summary(), "problem": problem.to_dict()}
    row["schedule"] = schedule.to_dict()
    row["warnings"] = list(dict.fromkeys(str(w.message) for w in caught))
    learned = result.learned
    noises = {f"learned, delta {learned.delta_upper:.3g}": learned.noise}
    if result.baseline is not None:
        row["utility_over_gaussian"] = row["learned_utility"] / result.baseline.utility
        noises[f"truncated Gaussian, sigma {result.baseline.sigma:.4g}"] = result.baseline.noise
        if problem.utility == "L2" and problem.q is None:
            row["kl_gaussian_to_learned"] = kl_divergence(result.baseline.noise, learned.noise)
    if problem.times == 1 and problem.q is None:
        optimum = optimal_noise(
            bound=problem.bound,
            step=problem.step,
            epsilon=problem.epsilon,
            delta=learned.delta_upper,
            sensitivity=problem.sensitivity,
            utility=problem.utility,
            symmetric=True,
            monotone=True,
        )
        row["lp_optimum_utility"] = optimum.utility
        row["utility_over_lp_optimum"] = row["learned_utility"] / optimum.utility
        noises["LP optimum (n = 1)"] = optimum.noise
    row["total_seconds"] = time.perf_counter() - started
    figure = figures / f"learned-{name}.png"
    title = f"{name}: eps {problem.epsilon:g}, n {problem.times}, U_{problem.utility}" + (
        f", DP-SGD q {problem.q:g}" if problem.q is not None else ""
    )
    plot_noises(noises, str(figure), title=title)
    row["figure"] = f"figures/{figure.name}"
    return row


def _cell(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _markdown(rows: list[dict], command: str) -> str:
    lines = [
        "# Learning noise: measured runs",
        "",
        f"Generated by `{command}` on {datetime.date.today().isoformat()} "
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}).",
        "Deltas are certified PrivacyBuckets upper bounds (ADP, both directions); the",
        "baseline is the truncated Gaussian of the same range and grid with the smallest",
        "utility loss at a certified delta no larger than the learned noise's. The columns",
        "are the learned noise's; *returned* says whether `learn` returns it or, when it",
        "does not beat the Gaussian, the Gaussian; *met* whether the returned noise's",
        "certified delta meets the target. Against the truncated Laplace and staircase as",
        "well (the stronger baselines under L1 at small n), see",
        "[the strongest baselines](baselines.md) (`python benchmarks/stronger_baselines.py`).",
        "Every run starts warm, from the best truncated Gaussian meeting the target",
        "(sigma = bound / 3 where none does: n1-L1; `warm_start` in `learning.json`). A",
        "warm start is deterministic: the seed enters nowhere and every seed gives the",
        "same run. The evidence below the figures states, for each headline figure, the",
        "cold-start spread over 5 seeds and the strongest baseline.",
        "",
        "| run | n | target | certified delta | utility | Gaussian sigma | Gaussian delta "
        "| Gaussian utility | learned / Gaussian | learned / LP | KL(G \\|\\| learned) "
        "| returned | met | epochs | train s | total s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        kind = row["utility_kind"]
        lines.append(
            f"| {row['run']} | {row['problem']['times']} | {_cell(row['target_delta'])} "
            f"| {_cell(row['learned_delta_certified'])} "
            f"| U_{kind} {_cell(row['learned_utility'], 6)} | {_cell(row['gaussian_sigma'])} "
            f"| {_cell(row['gaussian_delta_certified'])} | {_cell(row['gaussian_utility'], 6)} "
            f"| {_cell(row.get('utility_over_gaussian'), 5)} "
            f"| {_cell(row.get('utility_over_lp_optimum'), 5)} "
            f"| {_cell(row.get('kl_gaussian_to_learned'), 3)} | {row['returned']} "
            f"| {_cell(row['met_target'])} | {row['epochs_run']} "
            f"| {row['seconds']:.0f} | {row['total_seconds']:.0f} |"
        )
    lines.append("")
    for row in rows:
        notes = [row["baseline_note"]] if row["gaussian_sigma"] is None else []
        notes += row["warnings"]
        if row["stopped_by"]:
            notes.append(f"stopped by {row['stopped_by']}")
        suffix = f" Notes: {'; '.join(notes)}." if notes else ""
        lines.append(f"![{row['run']}]({row['figure']})" + suffix)
        lines.append("")
    return "\n".join(lines)


#: The written-by-hand part of learning.md (the evidence behind each headline figure:
#: warm start, seeds, spread, strongest baseline) starts at this line; regenerating the
#: table keeps it.
EVIDENCE_MARKER = "<!-- evidence: written by hand, kept by benchmarks/learn_noise.py -->"


def _kept_evidence(page: Path) -> str:
    """The page's text from :data:`EVIDENCE_MARKER` on ('' if there is none)."""
    text = page.read_text(encoding="utf-8") if page.is_file() else ""
    start = text.find(EVIDENCE_MARKER)
    return "" if start < 0 else "\n" + text[start:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=",".join(RUNS), help="comma-separated run names")
    parser.add_argument("--quick", action="store_true", help="20 epochs per run")
    parser.add_argument("--output", default=str(ROOT / "docs"), help="output directory")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.runs.split(",") if n.strip()]
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        parser.error(f"unknown runs {unknown}; choose from {list(RUNS)}")
    output = Path(args.output)
    figures = output / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        print(f"--- {name}", flush=True)
        rows.append(_run(name, args.quick, figures))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "schedule"}), flush=True)
    command = "python benchmarks/learn_noise.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    (output / "learning.json").write_text(json.dumps(rows, indent=2) + "\n")
    page = output / "learning.md"
    page.write_text(_markdown(rows, command) + "\n" + _kept_evidence(page))
    print(_markdown(rows, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
