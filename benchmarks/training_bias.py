"""The smooth training loss's bias, without and with its correction (issue 16).

    python benchmarks/training_bias.py                 # the table of docs/guide/learning.md
    python benchmarks/training_bias.py --epochs 300    # a quick look

Learns each problem twice with the default schedule (3,000 epochs, warm start from the
best truncated Gaussian at the target): once at the default bucket width of the smooth
ADP loss (about 0.005), once with ``Schedule(refine_every=...)``, which halves the width
while the best noise's training bound exceeds its certified delta by more than 2 %
(:mod:`optimizers.refinement`). For each run it prints the training bound at the best
epoch, its certified delta (PrivacyBuckets upper bound, accuracy 1e-3), their ratio (the
training bias), the final width and the utility loss of the learned noise.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from optimizers.learner import learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402
from optimizers.results import LearnedNoise, LearningWarning  # noqa: E402

PROBLEMS = {
    "n=128 L2 2e-4": LearningProblem(
        bound=500, step=0.5, epsilon=0.3, times=128, target_delta=2e-4, utility="L2"
    ),
    "n=8 L1 1e-6": LearningProblem(
        bound=500, step=0.5, epsilon=0.3, times=8, target_delta=1e-6, utility="L1"
    ),
}
HEADER = (
    "| problem | refine_every | training bound | certified delta | bias | met target "
    "| final width | utility | seconds |"
)


def _row(name: str, refine: int | None, result: LearnedNoise, seconds: float) -> str:
    width = "-" if result.training_width is None else f"{result.training_width:.4g}"
    return (
        f"| {name} | {refine or '-'} | {result.training_bound:.4e} | "
        f"{result.learned.delta_upper:.4e} | {result.training_bias:.4f} | "
        f"{'yes' if result.met_target else 'NO'} | {width} | "
        f"{result.learned.utility(result.problem.utility):.4f} | {seconds:.0f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3000, help="epochs per run")
    parser.add_argument("--refine-every", type=int, default=250, help="epochs between checks")
    parser.add_argument(
        "--problems", nargs="*", default=list(PROBLEMS), choices=list(PROBLEMS), help="which"
    )
    args = parser.parse_args(argv)
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|")
    for name in args.problems:
        for refine in (None, args.refine_every):
            schedule = Schedule(epochs=args.epochs, refine_every=refine)
            started = time.perf_counter()
            with warnings.catch_warnings():
                # A missed target is the table's "met target" column.
                warnings.simplefilter("ignore", LearningWarning)
                result = learn(PROBLEMS[name], schedule, progress=False, compare=False)
            print(_row(name, refine, result, time.perf_counter() - started), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
