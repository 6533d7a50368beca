"""Throughput of the exact samplers (``accountant.noise.quantised``): secure draws
(``os.urandom``) and simulated draws (a seeded numpy ``Generator``) per second, for a
2,001-point and a 60,001-point truncated Gaussian table (48 bits), and of a whole
``accountant.release.release`` of a million answers (at most ``--draws``). Best of
``--repeats`` runs of ``--draws`` draws each, on one core::

    python benchmarks/sampling.py
    python benchmarks/sampling.py --draws 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from accountant import noise
from accountant.noise.quantised import quantise
from accountant.release import release

#: Answers per timed release (the exact grid check of each answer is a Python loop).
RELEASE_ANSWERS = 1_000_000
TABLES = {"2,001 points": (500.0, 1000.0, 1.0), "60,001 points": (3000.0, 30000.0, 1.0)}


def _best_rate(action, draws: int, repeats: int) -> float:
    """Draws per second of the fastest of ``repeats`` calls of ``action()``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return draws / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.draws < 1 or args.repeats < 1:
        parser.error(f"--draws and --repeats must be at least 1, got {args.draws}, {args.repeats}")
    print(f"{'table':>14} {'secure draws/s':>16} {'simulated draws/s':>18} {'release/s':>12}")
    for name, (sigma, bound, step) in TABLES.items():
        q = quantise(noise.truncated_gaussian(sigma, bound, step))
        rng = np.random.default_rng(0)
        answers = np.zeros(min(args.draws, RELEASE_ANSWERS))
        secure = _best_rate(lambda q=q: q.draw(args.draws), args.draws, args.repeats)
        simulated = _best_rate(
            lambda q=q, rng=rng: q.simulate(args.draws, rng), args.draws, args.repeats
        )
        released = _best_rate(
            lambda q=q, answers=answers: release(answers, q, sensitivity=1.0),
            answers.size,
            min(args.repeats, 2),
        )
        print(f"{name:>14} {secure:>16.3g} {simulated:>18.3g} {released:>12.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
