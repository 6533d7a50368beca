"""Results, Markdown page and JSON of ``benchmarks/dpsgd.py``: one summary per (row,
accountant) from its runs, nothing dropped (a timeout, an out-of-memory run, an error or
a missing peer is a cell saying so)."""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

DISTRIBUTIONS = ["truncated-noise-accountant", "numpy", "scipy", "numba"]
DISTRIBUTIONS += ["dp-accounting", "prv-accountant", "absl-py"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def finite_json(value):
    """``value`` with every non-finite float as the string ``"inf"``, ``"-inf"`` or
    ``"nan"`` (strict JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def _number(value) -> float | None:
    """A result field back as a float (``"inf"`` strings included), or None."""
    if value is None:
        return None
    return float(value)


# ----------------------------------------------------------------------------- metadata


def version(name: str) -> str:
    """The installed version of distribution ``name``, or ``"not installed"``."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def git(root: Path, *args: str) -> str:
    """``git -C root args...``'s output, or ``""`` if it fails."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def machine() -> str:
    """Cores this process may use, CPU model, RAM and kernel, in one line."""
    model = platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{len(os.sched_getaffinity(0))} cores ({model}), {memory:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}"
    )


def commit(root: Path, *packages: str) -> str:
    """The short commit of ``root``, noting uncommitted changes under ``packages``."""
    found = git(root, "rev-parse", "--short", "HEAD") or "unknown"
    dirty = [p for p in packages if git(root, "status", "--porcelain", "--", p)]
    if dirty:
        found += f" ({', '.join(d + '/' for d in dirty)} with uncommitted changes)"
    return found


def metadata(argv: list[str], args, root: Path) -> dict:
    return {
        "command": " ".join(["python", "benchmarks/dpsgd.py", *argv]),
        "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "python": platform.python_version(),
        "versions": {name: version(name) for name in DISTRIBUTIONS},
        "commit": commit(root, "accountant"),
        "load_average": list(os.getloadavg()),
        "timeout": args.timeout,
        "memory_limit_gib": args.memory_limit,
        "repeats": args.repeats,
    }


# ------------------------------------------------------------------------------ summary


def setting(row, accountant, args) -> str:
    if accountant.key == "ours":
        buckets = "PrivacyBuckets() defaults"
        if row.accuracy is not None:
            buckets = f"PrivacyBuckets(accuracy={row.accuracy:g})"
        if row.epsilon is not None:
            buckets = "calibrate_noise_multiplier() defaults"
        return f"SubsampledTruncatedGaussian(cut={row.cut:g}), renormalised, no grid; {buckets}"
    if accountant.module == "dp_accounting":
        return f"value_discretization_interval={row.dp_interval:g}, untruncated Gaussian"
    return f"eps_error={accountant.eps_error:g}, delta_error=delta/1000, untruncated Gaussian"


def summarise(row, accountant, runs: list[dict], args) -> dict:
    """One cell from its runs: values of the first successful run, median time, largest
    peak memory; status of the first run (later failures become notes)."""
    ok = [r for r in runs if r.get("status") == "ok"]
    first = ok[0] if ok else runs[0]
    notes = [f"run {i + 1}: {r['status']}" for i, r in enumerate(runs) if r not in ok and ok]
    notes += [first[k] for k in ("note", "message") if first.get(k)]
    notes += first.get("warnings", [])
    if "evaluations" in first:
        notes.append(f"{first['evaluations']} evaluations")
    if "partial" in first:
        notes.append(f"progress when stopped: {json.dumps(first['partial'])}")
    peaks = [r.get("peak_mib") or r.get("max_rss_mib") for r in runs]
    times = [r["seconds"] for r in ok]
    return finite_json(
        {
            "row": row.name,
            "title": row.title,
            "kind": "calibration" if row.epsilon is not None else "epsilon",
            "accountant": accountant.key,
            "label": accountant.label,
            "setting": setting(row, accountant, args),
            "status": "ok" if ok else first.get("status", "error"),
            "lower": first.get("lower"),
            "estimate": first.get("estimate"),
            "upper": first.get("upper"),
            "seconds": statistics.median(times) if times else None,
            "times": times,
            "peak_mib": max((p for p in peaks if p is not None), default=None),
            "note": "; ".join(notes),
            "runs": runs,
        }
    )


def relative_width(result: dict) -> float | None:
    lower, upper = _number(result.get("lower")), _number(result.get("upper"))
    if lower is None or upper is None or not math.isfinite(upper) or upper <= 0.0:
        return None
    return (upper - lower) / upper


def relation(results: list[dict], row: str, accountant: str, reference: str) -> str | None:
    """How ``accountant``'s bracket on ``row`` sits against ``reference``'s: ``"inside"``,
    ``"overlapping"`` (wider or shifted, not disjoint) or ``"DISJOINT from"``."""
    found = {r["accountant"]: r for r in results if r["row"] == row and r["status"] == "ok"}
    if accountant not in found or reference not in found:
        return None
    a, b = found[accountant], found[reference]
    if any(_number(x.get(k)) is None for x in (a, b) for k in ("lower", "upper")):
        return None
    (a_low, a_high), (b_low, b_high) = ((_number(x["lower"]), _number(x["upper"])) for x in (a, b))
    if b_low <= a_low and a_high <= b_high:
        return "inside"
    return "overlapping" if a_low <= b_high and b_low <= a_high else "DISJOINT from"


# ----------------------------------------------------------------------------- markdown


def _g(value, digits: int = 6) -> str:
    value = _number(value)
    return "" if value is None else format(value, f".{digits}g")


def clip(text: str, length: int = 120) -> str:
    """``text`` cut at a word boundary to at most ``length`` characters, marked by "..."."""
    if len(text) <= length:
        return text
    return text[: length - 3].rsplit(" ", 1)[0] + " ..."


def cell(result: dict, timeout: float, memory: float) -> str:
    """Summary cell: value or bracket, time, peak memory; or what went wrong."""
    status = result["status"]
    if status == "timeout":
        return f"timeout (> {timeout:g} s)"
    if status == "out of memory":
        return f"out of memory (> {memory:g} GiB)"
    if status != "ok":
        return f"{status}: {clip(result['note'])}" if result["note"] else status
    lower, estimate, upper = (result.get(k) for k in ("lower", "estimate", "upper"))
    if lower is not None and upper is not None:
        value = f"[{_g(lower)}, {_g(upper)}]"
        width = relative_width(result)
        value += f" ({width:.2g} wide)" if width else ""
    else:
        given = [v for v in (lower, estimate, upper) if v is not None]
        value = _g(given[0]) if given else f"no value ({clip(result['note'])})"
    value += f", {result['seconds']:.3g} s"
    if result["peak_mib"] is not None:
        value += f", {result['peak_mib']:.0f} MiB"
    return value


def markdown(results: list[dict], meta: dict) -> str:
    accountants = list(dict.fromkeys(r["accountant"] for r in results))
    labels = {r["accountant"]: r["label"] for r in results}
    rows = list(dict.fromkeys(r["row"] for r in results))
    by_cell = {(r["row"], r["accountant"]): r for r in results}
    titles = {r["row"]: r["title"] for r in results}
    state = "interrupted: rows measured so far" if meta.get("interrupted") else ""
    state = state or ("finished" if meta.get("finished") else "in progress: rows so far")
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        "# DP-SGD: this library against dp_accounting and prv_accountant",
        "",
        "Generated by `benchmarks/dpsgd.py`; do not edit by hand. Raw results: the JSON "
        "file of the same name.",
        "",
        f"- Command: `{meta['command']}` ({state})",
        f"- Started {meta['started']}, finished {meta.get('finished', '-')}",
        f"- Machine: {meta['machine']}; load average at start "
        + ", ".join(f"{x:.2f}" for x in meta["load_average"]),
        f"- Python {meta['python']}; {versions}",
        f"- This library at commit {meta['commit']}",
        f"- Per run: timeout {meta['timeout']:g} s, address space {meta['memory_limit_gib']:g} "
        f"GiB, up to {meta['repeats']} runs (one if a run takes over {meta['long_run']:g} s)",
        "",
        "## Summary",
        "",
        "Eps at delta (calibration rows: sigma). Each cell: value or [lower, upper], median "
        "time of the accounting call, peak resident memory of its process.",
        "",
        "| row | " + " | ".join(labels[a] for a in accountants) + " |",
        "|---" * (len(accountants) + 1) + "|",
    ]
    for row in rows:
        cells = [
            cell(by_cell[row, a], meta["timeout"], meta["memory_limit_gib"])
            if (row, a) in by_cell
            else ""
            for a in accountants
        ]
        lines.append(f"| {row}: {titles[row]} | " + " | ".join(cells) + " |")
    lines += ["", "## All runs", ""]
    header = ["row", "accountant", "setting", "lower", "estimate", "upper", "rel. width"]
    header += ["time (s, median)", "times (s)", "peak (MiB)", "status", "note"]
    lines += ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for r in results:
        width = relative_width(r)
        check = relation(results, r["row"], r["accountant"], "prv-0.001")
        parts = [r["note"], f"{check} prv eps_error=0.001's interval" if check else ""]
        note = "; ".join(p for p in parts if p) if r["accountant"] == "ours" else r["note"]
        cells = [r["row"], r["label"], r["setting"], _g(r["lower"], 9), _g(r["estimate"], 9)]
        cells += [_g(r["upper"], 9), "" if width is None else f"{width:.3g}"]
        cells += [_g(r["seconds"], 3), ", ".join(f"{t:.3g}" for t in r["times"])]
        cells += [_g(r["peak_mib"], 4), r["status"], note]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    lines += cut_check(results, meta)
    seed, sigma, q = (meta["schedule"][k] for k in ("seed", "sigma", "q"))
    ranges = {"sigma_range": "{:g} to {:g}".format(*sigma), "q_range": "{:g} to {:g}".format(*q)}
    lines += ["", METHOD.format(**meta, seed=seed, **ranges)]
    return "\n".join(lines)


def cut_check(results: list[dict], meta: dict) -> list[str]:
    """How much the cut can matter: the distinguishing mass it adds against delta."""
    measured = {r["row"] for r in results}
    lines = [
        "",
        "## What the cut changes",
        "",
        "The peers run the untruncated Gaussian, this library the Gaussian cut at +-cut "
        "sigma. The cut adds a distinguishing mass (outcomes only the neighbour with the "
        "example can produce) of at most the figure below over the whole run (union bound "
        "`sum steps q P(X >= cut sigma - 1)`, `benchmarks/dpsgd.py: cut_mass`); every other "
        "change is a renormalisation by 1 + O(1e-15). The cut thus moves eps at delta by about "
        "as much as lowering delta by that fraction of itself would.",
        "",
    ]
    for row, cut in meta.get("cut_mass", {}).items():
        if row in measured:
            mass, delta = cut["mass"], cut["delta"]
            lines.append(f"- {row}: at most {mass:.2g}, {mass / delta:.2g} of delta = {delta:g}")
    return lines


METHOD = """## Method

- **The mechanism.** Poisson-subsampled Gaussian, clipping norm 1, add/remove
  neighbours, delta as in the row. This library runs the noise the project is for: a
  Gaussian cut at +-cut sigma, continuous and renormalised (the law of resampling until
  inside the cut), `mechanisms.SubsampledTruncatedGaussian(sigma=, sampling_rate=, cut=)`,
  accounted from its CDFs with no grid and composed by `PrivacyBuckets()` at its default
  accuracy (the heterogeneous row asks `accuracy=1e-3`, the figure its target is stated
  in); its brackets are certified. The peers run the **untruncated**
  Gaussian, the only noise they support for DP-SGD; at +-8 sigma the cut changes eps by
  far less than any bracket here, so the brackets are comparable (the note of each row
  of this library says whether its bracket lies inside prv_accountant's eps_error=0.001
  interval).
- **dp_accounting.** Pessimistic: `PLDAccountant(value_discretization_interval=...)`
  composing `PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`, an upper estimate.
  Optimistic: the same PLD built with `pessimistic_estimate=False` (its privacy-buckets
  construction), a lower estimate. Neither is certified; the interval is per row (see
  the setting): finer where the optimistic estimate needs it, the default 1e-4 for the
  heterogeneous row and the calibration.
- **prv_accountant.** `PRVAccountant` with one `PoissonSubsampledGaussianMechanism` per
  setting, `delta_error = delta / 1000`; `compute_epsilon` gives lower, estimate and
  upper.
- **Heterogeneous row.** Each setting draws sigma uniformly from {sigma_range} and q
  from {q_range} with `random.Random({seed})`; every accountant composes
  the same schedule.
- **Calibration row.** The noise multiplier for the target (eps, delta): this library
  runs `calibrate_noise_multiplier` (secant steps on its certified delta at eps, relative
  tolerance 1e-3) and returns [certified too small, certified];
  dp_accounting `calibrate_dp_mechanism` (pessimistic; tol 1e-3) and a `brentq`
  bisection on the optimistic eps; prv_accountant `dpsgd.find_noise_multiplier`.
- **Time and memory.** Each (row, accountant) run is a fresh process with its address
  space limited (`RLIMIT_AS`); time is `perf_counter` around the accounting call after
  imports and a tiny warm-up call; memory is the process's peak resident set (`VmHWM`,
  imports included). A run over the timeout is killed and reported as such.
"""


def write(results: list[dict], meta: dict, args) -> str:
    """Write the Markdown page and the JSON; return the page."""
    text = markdown(results, meta) if results else "# DP-SGD: no results\n"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    rows = {r.name: {**asdict(r), "title": r.title} for r in args.selected_rows}
    payload = {"meta": meta, "rows": rows, "results": results}
    args.json.write_text(json.dumps(finite_json(payload), indent=1) + "\n", encoding="utf-8")
    return text


def render(json_path: Path, output: Path) -> str:
    """Rewrite the Markdown page from the raw results of a run (no measuring)."""
    payload = json.loads(json_path.read_text(encoding="utf-8"))
    text = markdown(payload["results"], payload["meta"])
    output.write_text(text, encoding="utf-8")
    return text
