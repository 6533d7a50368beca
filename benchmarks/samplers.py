"""The batch samplers of DP-SGD side by side for one run (issue 27): certified eps at one
delta for Poisson sampling, fixed-size batches drawn without replacement at each step,
shuffled epochs, balls-and-bins epochs and deterministic (unshuffled) epochs, each with its
certified bracket. Writes ``docs/guide/samplers.json`` and the table between the markers of
``docs/guide/samplers.md`` (``tests/test_benchmark_samplers.py`` checks that they agree),
and the figure ``docs/figures/samplers.png``: the same figures after every epoch from 1 to
``--epochs`` (the JSON's ``"curves"``; its last epoch is the table)::

    python benchmarks/samplers.py                      # 60,000 examples, batch 256, ...
    python benchmarks/samplers.py --dataset-size 64 --batch-size 16 --epochs 1 --output-dir /tmp

With another ``--output-dir`` than ``docs/guide`` the figure is written there too.

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
FIGURE_NAME = "samplers.png"
PAGE = ROOT / "docs" / "guide" / "samplers.md"
FIGURE = ROOT / "docs" / "figures" / FIGURE_NAME
BEGIN = "<!-- samplers table: written by benchmarks/samplers.py -->"
END = "<!-- end of samplers table -->"
POISSON = "Poisson, rate b/n"
FIXED = "fixed-size batches, drawn without replacement each step"
SHUFFLED = "shuffled epochs"
BALLS = "balls-and-bins"
DETERMINISTIC = "deterministic epochs (fixed order)"


def _bracket(accountant: PrivacyBuckets, delta: float) -> list[float]:
    bounds = accountant.epsilon(delta)
    return [float(bounds.lower), float(bounds.upper)]


def _rows(sigma: float, batch_size: int, dataset_size: int, epochs: int, delta: float) -> list:
    """Every row of the table after ``epochs`` epochs (JSON-ready)."""
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
            "sampler": POISSON,
            "neighbours": "add-remove",
            "kind": "certified bracket of the true eps",
            "eps": _bracket(poisson, delta),
        }
    )
    if rate < 1.0:
        fixed = pb.compose(WithoutReplacementGaussian(sigma=sigma, sampling_rate=rate), steps)
        rows.append(
            {
                "sampler": FIXED,
                "neighbours": "replace-one",
                "kind": "certified bracket of the dominating pair's eps",
                "eps": _bracket(fixed, delta),
            }
        )
    for sampler, name in (("shuffle", SHUFFLED), ("balls-and-bins", BALLS)):
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
                "sampler": DETERMINISTIC,
                "neighbours": neighbours,
                "kind": "certified bracket of the true eps",
                "eps": _bracket(deterministic, delta),
            }
        )
    return rows


def measure(sigma: float, batch_size: int, dataset_size: int, epochs: int, delta: float) -> dict:
    """The table (``"rows"``, after ``epochs`` epochs) and the same rows after every epoch
    from 1 to ``epochs`` (``"curves"``: one series per row, its ``"eps"`` one bracket per
    epoch, the last one the row's), JSON-ready."""
    epoch = ShuffledEpoch(sigma=sigma, batch_size=batch_size, dataset_size=dataset_size)
    steps = epochs * epoch.batches
    per_epoch = [_rows(sigma, batch_size, dataset_size, k, delta) for k in range(1, epochs + 1)]
    rows = per_epoch[-1]
    series = [
        {
            "sampler": row["sampler"],
            "neighbours": row["neighbours"],
            "kind": row["kind"],
            "eps": [after[i]["eps"] for after in per_epoch],
        }
        for i, row in enumerate(rows)
    ]
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
        "curves": {"epochs": list(range(1, epochs + 1)), "series": series},
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


#: How each series is drawn: (sampler, neighbours) -> (colour, legend label, style).
STYLES = {
    (POISSON, "add-remove"): ("tab:blue", "Poisson, rate b/n (add-remove)", "o-"),
    (FIXED, "replace-one"): (
        "tab:orange",
        "fixed-size batches drawn without replacement each step (replace-one)",
        "s-",
    ),
    (SHUFFLED, "add-remove"): ("tab:green", "shuffled epochs (add-remove): [lower, upper]", ""),
    (SHUFFLED, "replace-one"): ("tab:red", "shuffled epochs (replace-one): [lower, upper]", ""),
    (BALLS, "add-remove"): ("tab:olive", "balls-and-bins (add-remove): [lower, upper]", ""),
    (BALLS, "replace-one"): ("tab:purple", "balls-and-bins (replace-one): [lower, upper]", ""),
    (DETERMINISTIC, "add-remove"): (
        "black",
        "deterministic epochs (add-remove) = the bracket's upper end",
        "x:",
    ),
    (DETERMINISTIC, "replace-one"): (
        "black",
        "deterministic epochs (replace-one) = the bracket's upper end",
        "x:",
    ),
}


def curve_id(sampler: str, neighbours: str, end: str) -> str:
    """The ``gid`` of the line drawn for one end (``"lower"`` or ``"upper"``) of a series."""
    return f"{sampler} | {neighbours} | {end}"


def draw_figure(results: dict, path: Path) -> dict[str, tuple[list[float], list[float]]]:
    """Draw ``results["curves"]`` (and nothing else) into the PNG ``path``, one panel per
    neighbouring relation on a shared log scale: certified upper bounds as lines, shuffled
    and balls-and-bins brackets as shaded bands between their two ends (balls-and-bins
    folded into shuffling where its bracket is the same). Returns every line drawn, read
    back from the axes: :func:`curve_id` -> (epochs, eps)."""
    from accountant.report.plotting import pyplot

    plt = pyplot()
    curves, run = results["curves"], results["run"]
    epochs = curves["epochs"]
    series = {(s["sampler"], s["neighbours"]): s for s in curves["series"]}
    figure, panels = plt.subplots(1, 2, figsize=(10.0, 5.0), dpi=120, sharey=True)
    relations = {"add-remove": panels[0], "replace-one": panels[1]}
    for (sampler, neighbours), entry in series.items():
        axes = relations[neighbours]
        colour, label, style = STYLES[sampler, neighbours]
        lower = [low for low, _ in entry["eps"]]
        upper = [high for _, high in entry["eps"]]
        if style:  # a certified upper bound
            (line,) = axes.plot(epochs, upper, style, color=colour, lw=1.4, ms=5, label=label)
            line.set_gid(curve_id(sampler, neighbours, "upper"))
            continue
        if sampler == BALLS and entry["eps"] == series[SHUFFLED, neighbours]["eps"]:
            continue  # the same bracket: drawn once, labelled for both
        if sampler == SHUFFLED and series.get((BALLS, neighbours), {}).get("eps") == entry["eps"]:
            label = f"shuffled epochs = balls-and-bins ({neighbours}): [lower, upper]"
        axes.fill_between(epochs, lower, upper, color=colour, alpha=0.2, lw=0, label=label)
        for end, values, dash in (("lower", lower, "--"), ("upper", upper, "-")):
            (line,) = axes.plot(epochs, values, dash, color=colour, lw=1.0)
            line.set_gid(curve_id(sampler, neighbours, end))
    for neighbours, axes in relations.items():
        axes.set_yscale("log")
        axes.set_xticks(epochs)
        axes.set_xlabel("epochs")
        axes.set_title(f"{neighbours} neighbours", fontsize=10)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    panels[0].set_ylabel(f"certified eps at delta = {run['delta']:g}")
    figure.suptitle(
        f"{run['dataset_size']:,} examples, batch {run['batch_size']} "
        f"({run['batches_per_epoch']} steps per epoch), noise multiplier {run['sigma']:g}: "
        "eps after each epoch",
        fontsize=10,
    )
    figure.tight_layout()
    drawn = {
        line.get_gid(): ([float(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()])
        for axes in panels
        for line in axes.get_lines()
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return drawn


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
        draw_figure(results, FIGURE)
    else:
        draw_figure(results, args.output_dir / FIGURE_NAME)
    print(render_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
