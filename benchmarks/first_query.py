"""Time of a first PrivacyBuckets query in a fresh process (numba kernels loaded from their
on-disk cache, not compiled): ``import accountant``, then the default audit's query
(truncated Gaussian sigma 100, bound 500, step 0.5, sensitivity 1, 128 releases, delta
at eps 0.3), then the same query again (warm). Median of ``--runs`` fresh processes::

    python benchmarks/first_query.py            # 5 runs
    python benchmarks/first_query.py --runs 9

The first process after an install or an engine change compiles the kernels and writes
their cache; it is run once before the timed ones and reported apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
start = time.perf_counter()
from accountant import PrivacyBuckets, WorstCasePair, noise
imported = time.perf_counter()
pair = WorstCasePair.additive(noise.truncated_gaussian(sigma=100.0, bound=500.0, step=0.5), 1.0)
PrivacyBuckets().compose(pair, 128).delta(0.3)
first = time.perf_counter()
PrivacyBuckets().compose(pair, 128).delta(0.3)
warm = time.perf_counter()
print(json.dumps([imported - start, first - imported, warm - first]))
"""


def one_process() -> tuple[float, float, float]:
    """``(import, first query, warm query)`` seconds in a fresh interpreter."""
    code = CHILD.format(root=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed fresh processes (5)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    cold = one_process()
    runs = [one_process() for _ in range(args.runs)]
    print(f"first process (may compile the kernels): import {cold[0]:.2f} s, query {cold[1]:.2f} s")
    print(f"median of {args.runs} fresh processes:")
    for label, column in (("import accountant", 0), ("first query", 1), ("warm query", 2)):
        values = [r[column] for r in runs]
        print(
            f"  {label:<17} {statistics.median(values):.3f} s  (runs: "
            + ", ".join(f"{v:.3f}" for v in values)
            + ")"
        )
    total = statistics.median(r[0] + r[1] for r in runs)
    print(f"  import + first query {total:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
