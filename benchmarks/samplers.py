"""The batch samplers of DP-SGD side by side for one run (issue 27): certified eps at one
delta for Poisson sampling, fixed-size batches drawn without replacement at each step,
shuffled epochs, balls-and-bins epochs and deterministic (unshuffled) epochs, each with its
certified bracket. Writes ``docs/guide/samplers.json`` and the table between the markers of
``docs/guide/samplers.md`` (``tests/test_benchmark_samplers.py`` checks that they agree)::

    python benchmarks/samplers.py                      # 60,000 examples, batch 256, ...
    python benchmarks/samplers.py --dataset-size 64 --batch-size 16 --epochs 1 --output-dir /tmp

No timings: figures only.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from accountant import PrivacyBuckets, shuffled_epochs_epsilon  # noqa: E402
from accountant.mechanisms import (  # noqa: E402
    GaussianMechanism,
    ShuffledEpoch,
    SubsampledTruncatedGaussian,
    WithoutReplacementGaussian,
)

JSON_NAME = "samplers.json"
PAGE = ROOT / "docs" / "guide" / "samplers.md"
BEGIN = "<!-- samplers table: written by benchmarks/samplers.py -->"
END = "<!-- end of samplers table -->"


def _bracket(accountant: PrivacyBuckets, delta: float) -> list[float]:
    bounds = accountant.epsilon(delta)
    return [float(bounds.lower), float(bounds.upper)]


def measure(sigma: float, batch_size: int, dataset_size: int, epochs: int, delta: float) -> dict:
    """Every row of the table (JSON-ready)."""
    epoch = ShuffledEpoch(sigma=sigma, batch_size=batch_size, dataset_size=dataset_size)
    steps = epochs * epoch.batches
    rate = batch_size / dataset_size
    pb = PrivacyBuckets()
    rows = []
    poisson = pb.compose(
        SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=rate, cut=math.inf), times=steps
    )
    rows.append(
        {
            "sampler": "Poisson, rate b/n",
            "neighbours": "add-remove",
            "kind": "certified bracket of the true eps",
            "eps": _bracket(poisson, delta),
        }
    )
    if rate < 1.0:
        fixed = pb.compose(WithoutReplacementGaussian(sigma=sigma, sampling_rate=rate), steps)
        rows.append(
            {
                "sampler": "fixed-size batches, drawn without replacement each step",
                "neighbours": "replace-one",
                "kind": "certified bracket of the dominating pair's eps",
                "eps": _bracket(fixed, delta),
            }
        )
    for sampler, name in (("shuffle", "shuffled epochs"), ("balls-and-bins", "balls-and-bins")):
        for neighbours in ("add-remove", "replace-one"):
            result = shuffled_epochs_epsilon(
                sigma,
                batch_size,
                dataset_size,
                epochs,
                delta,
                neighbours=neighbours,
                sampler=sampler,
            )
            rows.append(
                {
                    "sampler": name,
                    "neighbours": neighbours,
                    "kind": "true eps lies in [lower, upper]",
                    "eps": [result.lower, result.upper],
                }
            )
    for neighbours, sensitivity in (("add-remove", 1.0), ("replace-one", 2.0)):
        deterministic = pb.compose(
            GaussianMechanism(sigma=sigma, sensitivity=sensitivity), times=epochs
        )
        rows.append(
            {
                "sampler": "deterministic epochs (fixed order)",
                "neighbours": neighbours,
                "kind": "certified bracket of the true eps",
                "eps": _bracket(deterministic, delta),
            }
        )
    return {
        "script": "benchmarks/samplers.py",
        "run": {
            "sigma": sigma,
            "batch_size": batch_size,
            "dataset_size": dataset_size,
            "epochs": epochs,
            "delta": delta,
            "batches_per_epoch": epoch.batches,
            "last_batch_size": epoch.last_batch_size,
            "steps": steps,
        },
        "rows": rows,
    }


def _figure(value: float) -> str:
    return f"{value:.3f}"


def render_table(results: dict) -> str:
    """The Markdown table of ``results`` (what the page holds between its markers)."""
    lines = [
        "| sampler | neighbours | eps lower | eps upper | what the bracket is |",
        "|---|---|---:|---:|---|",
    ]
    for row in results["rows"]:
        low, high = row["eps"]
        lines.append(
            f"| {row['sampler']} | {row['neighbours']} | {_figure(low)} | {_figure(high)} "
            f"| {row['kind']} |"
        )
    return "\n".join(lines)


def write_page(results: dict, page: Path = PAGE) -> None:
    """Replace the table between :data:`BEGIN` and :data:`END` in ``page``."""
    text = page.read_text(encoding="utf-8")
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    page.write_text(text[:start] + "\n" + render_table(results) + "\n" + text[stop:], "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sigma", type=float, default=1.1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--dataset-size", type=int, default=60_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--output-dir", type=Path, default=ROOT / "docs" / "guide")
    args = parser.parse_args(argv)
    results = measure(args.sigma, args.batch_size, args.dataset_size, args.epochs, args.delta)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    path = args.output_dir / JSON_NAME
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.output_dir.resolve() == PAGE.parent.resolve():
        write_page(results)
    print(render_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
