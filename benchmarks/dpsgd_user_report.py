"""The page and the raw JSON of ``benchmarks/dpsgd_user_path.py``.

Everything on the page follows from the JSON alone (:func:`markdown` of the payload), so
``--report-only`` rewrites the page byte for byte. The payload: ``meta`` (machine, date,
versions, commit, command, limits), ``grid`` (the settings measured, as the grid file
gave them) and ``runs`` (one record per child process: what the job printed and what the
parent measured). Cells are summarised here, not in the JSON: per (section, setting,
accountant), the median of the successful runs' times, the largest peak memory, the values
of the first successful run.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from pathlib import Path

#: Sections in page order.
SECTIONS = ("grid", "het", "calibrate", "opacus")
#: The peers of the grid, het and calibration jobs, in column order.
PEERS = ("dp-pld", "prv")
#: Opacus accountants in row order (``truncated`` and ``certified`` are this library's).
OPACUS = ("truncated", "certified", "prv", "rdp")
OURS_OPACUS = ("truncated", "certified")
#: The accuracy target of a setting that names none (``rel <= this``).
DEFAULT_TARGET = 1e-4
#: Our peak memory target, MiB.
MEMORY_TARGET_MIB = 1024.0
#: Epochs whose ``get_epsilon`` time the Opacus table shows.
SHOWN_EPOCHS = (1, 2, 5, 10, 20, 50, 100)


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


def number(value) -> float | None:
    """A stored number back as a float (``"inf"`` strings included), or None."""
    if value is None:
        return None
    return float(value)


# ------------------------------------------------------------------------------ cells


def cells(payload: dict) -> dict[tuple[str, str, str], dict]:
    """One summary per (section, setting, accountant) from its runs, in run order."""
    grouped: dict[tuple[str, str, str], list[dict]] = {}
    for run in payload["runs"]:
        grouped.setdefault((run["section"], run["setting"], run["accountant"]), []).append(run)
    return {key: summarise(runs) for key, runs in grouped.items()}


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise(runs: list[dict]) -> dict:
    """A cell: the status (``ok`` if any run succeeded, else the first run's), values of
    the first successful run, median times of the successful runs (``time``: the
    parent's wall time of the whole process; ``inner``: the job's own, from its first
    statement; ``import``: to the library imported), the largest peak resident memory of
    any run, and notes (failed runs, warnings, values that differ between runs)."""
    ok = [r for r in runs if r["status"] == "ok"]
    first = ok[0] if ok else runs[0]
    notes = [f"run {r['repeat'] + 1}: {r['status']}" for r in runs if r not in ok and ok]
    if first.get("message"):
        notes.append(first["message"])
    if "partial" in first:
        notes.append(f"progress when stopped: {json.dumps(first['partial'])}")
    keys = ("lower", "upper", "sigma")
    if any(tuple(r.get(k) for k in keys) != tuple(first.get(k) for k in keys) for r in ok):
        notes.append("values differ between runs (first run's shown)")
    peaks = [r.get("peak_mib") or r.get("max_rss_mib") for r in runs]
    cell = {
        "status": "ok" if ok else first["status"],
        "runs": len(runs),
        "ok": len(ok),
        "time": _median([r.get("process_seconds") for r in ok]),
        "inner": _median([r.get("seconds") for r in ok]),
        "import": _median([r.get("import_seconds") for r in ok]),
        "times": [r.get("process_seconds") for r in ok],
        "peak_mib": max((p for p in peaks if p is not None), default=None),
        "warnings": first.get("warnings", []),
        "notes": notes,
        "method": first.get("method", ""),
    }
    for key in ("lower", "estimate", "upper", "rel", "sigma", "sigma_low", "evaluations"):
        cell[key] = number(first.get(key)) if key != "evaluations" else first.get(key)
    for key in ("calls", "epsilons", "dimension", "steps_per_epoch", "sample_rate", "steps"):
        cell[key] = first.get(key)
    if ok and ok[0].get("calls"):
        cell["total_calls"] = _median([r.get("total_calls_seconds") for r in ok])
        cell["first_call"] = _median([r.get("first_call_seconds") for r in ok])
        per_epoch = list(zip(*(r["calls"] for r in ok), strict=True))
        cell["calls"] = [statistics.median(c) for c in per_epoch]
    return cell


def certification_warnings(cell: dict) -> list[str]:
    return [w for w in cell["warnings"] if w.startswith("CertificationWarning")]


# ----------------------------------------------------------------------------- checks


def target_of(setting: dict) -> float:
    return float(setting.get("accuracy") or DEFAULT_TARGET)


def checks(setting: dict, ours: dict | None, peers: dict[str, dict | None]) -> dict[str, str]:
    """The issue's targets for one eps setting, each ``"yes"``, ``"NO"``, ``"yes (peer
    failed)"``, ``"-"`` (peer not run) or ``"NO (ours failed)"``: rel at most the target,
    our upper at most each peer's upper, less time than each peer, peak under 1 GiB."""
    if ours is None:
        return {"rel": "-", "memory": "-"} | {
            f"{what}-{key}": "-" for key in peers for what in ("upper", "time")
        }
    answered = ours["status"] == "ok" and ours["upper"] is not None
    found = {"rel": "NO (ours failed)", "memory": "NO (ours failed)"}
    if answered:
        rel = ours["rel"]
        found["rel"] = "yes" if rel is not None and rel <= target_of(setting) else "NO"
        peak = ours["peak_mib"]
        found["memory"] = "yes" if peak is not None and peak < MEMORY_TARGET_MIB else "NO"
    for key, peer in peers.items():
        if peer is None:
            found[f"upper-{key}"] = found[f"time-{key}"] = "-"
        elif not answered:
            found[f"upper-{key}"] = found[f"time-{key}"] = "NO (ours failed)"
        elif peer["status"] != "ok" or peer["upper"] is None:
            found[f"upper-{key}"] = found[f"time-{key}"] = "yes (peer failed)"
        else:
            below = ours["upper"] <= peer["upper"]
            found[f"upper-{key}"] = "yes" if below else "NO"
            found[f"time-{key}"] = "yes" if ours["time"] < peer["time"] else "NO"
    return found


def missed(setting: dict, ours: dict | None, peers: dict[str, dict | None], labels) -> list[str]:
    """What :func:`checks` found missing, in words with the figures."""
    found, out = checks(setting, ours, peers), []
    if ours is None:
        return []
    if ours["status"] != "ok" or ours["upper"] is None:
        reason = ours["status"]
        if ours["notes"]:
            reason += f" ({clip(ours['notes'][-1], 160)})"
        return [f"ours failed: {reason}"]
    if found["rel"] == "NO":
        rel = "none" if ours["rel"] is None else f"{ours['rel']:.2g}"
        out.append(f"rel {rel} > {target_of(setting):g}")
    for key, peer in peers.items():
        if found[f"upper-{key}"] == "NO":
            out.append(f"upper {_g(ours['upper'], 8)} > {labels[key]}'s {_g(peer['upper'], 8)}")
        if found[f"time-{key}"] == "NO":
            out.append(f"slower than {labels[key]} ({ours['time']:.3g} s vs {peer['time']:.3g} s)")
    if found["memory"] == "NO":
        out.append(f"peak {ours['peak_mib']:.0f} MiB >= 1 GiB")
    return out


# ---------------------------------------------------------------------------- markdown


def _g(value, digits: int = 6) -> str:
    value = number(value)
    return "" if value is None else format(value, f".{digits}g")


def clip(text: str, length: int = 120) -> str:
    """``text`` cut at a word boundary to at most ``length`` characters, marked by "..."."""
    text = " ".join(str(text).split())
    if len(text) <= length:
        return text
    return text[: length - 4].rsplit(" ", 1)[0] + " ..."


def _seconds(value) -> str:
    return "" if value is None else f"{value:.3g} s"


def _mib(value) -> str:
    return "" if value is None else f"{value:.0f} MiB"


def _ratio(peer: dict | None, ours: dict | None, key: str = "time") -> str:
    if not peer or not ours or peer["status"] != "ok" or ours["status"] != "ok":
        return ""
    if peer.get(key) is None or not ours.get(key):
        return ""
    return f"{peer[key] / ours[key]:.3g}x"


def failure(cell: dict | None, meta: dict) -> str:
    """A failed cell in words: status and limit or message."""
    if cell is None:
        return "not run"
    status = cell["status"]
    if status == "timeout":
        return f"timeout (> {meta['timeout']:g} s)"
    if status == "out of memory":
        return f"out of memory (> {meta['memory_limit_gib']:g} GiB)"
    message = cell["notes"][-1] if cell["notes"] else ""
    return f"{status}: {clip(message, 100)}" if message else status


def value_text(cell: dict | None, meta: dict) -> str:
    """``[lower, upper]``, ``upper`` or ``sigma`` of a successful cell, else its failure."""
    if cell is None or cell["status"] != "ok":
        return failure(cell, meta)
    if cell["sigma"] is not None:
        low = f"[{_g(cell['sigma_low'])}, " if cell["sigma_low"] is not None else ""
        return f"{low}{_g(cell['sigma'])}]" if low else _g(cell["sigma"])
    if cell["lower"] is not None and cell["upper"] is not None:
        return f"[{_g(cell['lower'])}, {_g(cell['upper'])}]"
    return _g(cell["upper"])


def describe(setting: dict) -> str:
    """``sigma 1.1, q 0.004267, 14,062 steps, delta 1e-05; ours: cut 10, d = 10^6``."""
    if setting.get("settings", 1) > 1:
        what = (
            f"{setting['settings']:,} settings x {setting['steps']:,} steps (sigma "
            f"{setting['sigma_range'][0]:g}-{setting['sigma_range'][1]:g}, q "
            f"{setting['q_range'][0]:g}-{setting['q_range'][1]:g}, seed {setting['seed']})"
        )
    else:
        q = setting["q"]
        shown = "1 - 1e-12" if q == 1 - 1e-12 else f"{q:.4g}"
        what = f"sigma {setting['sigma']:g}, q {shown}, {setting['steps']:,} steps"
    what += f", delta {setting['delta']:g}"
    if setting.get("ours") == "truncated":
        what += f"; ours cut {setting['cut']:g}, d = {_power(setting['dimension'])}"
    else:
        what += "; ours uncut"
    if setting.get("accuracy"):
        what += f", accuracy {setting['accuracy']:g}"
    return what


def _power(value: int) -> str:
    exponent = math.log10(value) if value > 0 else 0.0
    if value >= 100 and exponent == int(exponent):
        return f"10^{int(exponent)}"
    return f"{value:,}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in row) + " |")
    return lines


def markdown(payload: dict) -> str:
    meta, grid = payload["meta"], payload["grid"]
    found = cells(payload)
    labels = meta["labels"]
    lines = _header(meta)
    lines += _targets(grid, found, labels, meta)
    if grid.get("settings"):
        lines += _fresh_jobs(grid, found, labels, meta)
        lines += _grid_table(grid, found, labels, meta)
    for section in ("het", "calibrate"):
        if grid.get(section):
            lines += _single(section, grid[section], found, labels, meta)
    if grid.get("opacus"):
        lines += _opacus(grid["opacus"], found, meta)
    lines += _every_run(payload, found, labels)
    lines += ["", METHOD.format(**_method_fields(meta, grid))]
    return "\n".join(lines).rstrip("\n") + "\n"


def _header(meta: dict) -> list[str]:
    state = "interrupted: jobs measured so far" if meta.get("interrupted") else ""
    state = state or ("finished" if meta.get("finished") else "in progress: jobs so far")
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    threads = ", ".join(f"{k}={v}" for k, v in meta["environment"].items())
    end = meta.get("load_average_end")
    load = ", ".join(f"{x:.2f}" for x in meta["load_average"])
    load += f" at start; {', '.join(f'{x:.2f}' for x in end)} at the end" if end else " at start"
    return [
        "# DP-SGD: this library against dp_accounting and prv_accountant, on the user's path",
        "",
        f"Generated by `{meta['script']}` from `{meta['json_name']}` (raw results); do not edit "
        "by hand. Every job is a fresh Python process: import, build, compose, query.",
        "",
        f"- Command: `{meta['command']}` ({state})",
        f"- Started {meta['started']}, finished {meta.get('finished', '-')}",
        f"- Machine: {meta['machine']}; load average {load}",
        f"- Python {meta['python']}; {versions}",
        f"- This library at commit {meta['commit']}",
        f"- Thread settings: {threads}",
        f"- Grid: `{meta['grid_file']}` (sha256 {meta['grid_sha256'][:12]}), "
        f"runs per job: {meta['repeats']}, timeout {meta['timeout']:g} s "
        f"(Opacus jobs {meta['opacus_timeout']:g} s), address space {meta['memory_limit_gib']:g} "
        "GiB per job",
        f"- A job: `{meta['child_command']}`",
    ]


def _eps_settings(grid: dict) -> list[dict]:
    return list(grid.get("settings") or []) + ([grid["het"]] if grid.get("het") else [])


def _targets(grid, found, labels, meta) -> list[str]:
    lines = ["", "## Where targets are missed", ""]
    lines.append(
        "Targets (issue 26): rel = (upper - lower) / upper at most 1e-4 (the setting's "
        "accuracy where it names one), our upper at most each peer's upper, less wall time "
        "than each peer (whole process), peak memory under 1 GiB; where a peer fails, ours "
        "answers."
    )
    lines.append("")
    misses, count = [], 0
    for setting in _eps_settings(grid):
        section = "het" if setting is grid.get("het") else "grid"
        ours = found.get((section, setting["name"], "ours"))
        peers = {k: found.get((section, setting["name"], k)) for k in meta["peers"]}
        if ours is None:
            continue
        count += 1
        problems = missed(setting, ours, peers, labels)
        if problems:
            misses.append(f"- {setting['name']} ({describe(setting)}): " + "; ".join(problems))
    met = count - len(misses)
    if grid.get("calibrate"):
        misses += _calibration_misses(grid["calibrate"], found, labels)
    if grid.get("opacus"):
        misses += _opacus_misses(found)
    lines.append(f"All targets met in {met} of {count} eps settings measured.")
    lines += [""] + (misses or ["- none"])
    return lines


def _calibration_misses(setting, found, labels) -> list[str]:
    ours = found.get(("calibrate", setting["name"], "ours"))
    if ours is None:
        return []
    if ours["status"] != "ok":
        return [f"- calibrate: ours failed ({ours['status']})"]
    out = []
    for key in PEERS:
        peer = found.get(("calibrate", setting["name"], key))
        if peer and peer["status"] == "ok" and ours["time"] >= peer["time"]:
            out.append(f"slower than {labels[key]} ({ours['time']:.3g} s vs {peer['time']:.3g} s)")
    return [f"- calibrate: {'; '.join(out)}"] if out else []


def _opacus_misses(found) -> list[str]:
    out = []
    prv = next((c for (s, _, a), c in found.items() if s == "opacus" and a == "prv"), None)
    for (section, _, key), cell in found.items():
        if section != "opacus" or key not in OURS_OPACUS or cell["status"] == "not available":
            continue
        if cell["status"] != "ok":
            out.append(f"- Opacus ({key}): ours failed ({cell['status']})")
            continue
        problems = []
        if prv and prv["status"] == "ok" and cell["total_calls"] >= prv["total_calls"]:
            problems.append(
                f"{len(cell['calls'])} get_epsilon calls {cell['total_calls']:.3g} s vs Opacus "
                f"PRV {prv['total_calls']:.3g} s"
            )
        if cell["peak_mib"] is not None and cell["peak_mib"] >= MEMORY_TARGET_MIB:
            problems.append(f"peak {cell['peak_mib']:.0f} MiB >= 1 GiB (torch included)")
        if problems:
            out.append(f"- Opacus ({key}): " + "; ".join(problems))
    return out


def _fresh_jobs(grid, found, labels, meta) -> list[str]:
    fresh = [s for s in grid["settings"] if s.get("fresh")]
    if not fresh:
        return []
    lines = ["", "## The fresh-process jobs", ""]
    lines.append(
        "Median wall time of the whole process (interpreter start-up, import, build, compose, "
        "query), its value, and the peer's time over ours."
    )
    lines.append("")
    rows = []
    for setting in fresh:
        ours = found.get(("grid", setting["name"], "ours"))
        row = [f"{setting['name']}: {describe(setting)}"]
        row.append(f"{_seconds(ours and ours['time'])}, {value_text(ours, meta)}")
        for key in meta["peers"]:
            peer = found.get(("grid", setting["name"], key))
            ratio = _ratio(peer, ours)
            text = f"{_seconds(peer and peer['time'])}, {value_text(peer, meta)}"
            row.append(text + (f" ({ratio})" if ratio else ""))
        rows.append(row)
    return lines + _table(["job", "ours", *(labels[k] for k in meta["peers"])], rows)


def _grid_table(grid, found, labels, meta) -> list[str]:
    peers = meta["peers"]
    lines = ["", "## Every setting", ""]
    lines.append(
        "Eps at delta. Ours: the certified [lower, upper], rel = (upper - lower) / upper; "
        "peers: their upper estimate. Time: median wall time of the whole process over the "
        "successful runs; memory: largest peak resident set (VmHWM); x: the peer's time over "
        "ours (above 1: ours is faster). The checks: rel at most the target, our upper at "
        "most the peer's, ours faster, ours under 1 GiB."
    )
    lines.append("")
    header = ["setting", "ours [lower, upper]", "rel", "ours time", "ours peak"]
    for key in peers:
        header += [f"{labels[key]} upper", "time", "peak", "x"]
    header += ["rel ok"] + [f"<= {labels[k]}" for k in peers]
    header += [f"faster than {labels[k]}" for k in peers]
    header += ["< 1 GiB"]
    rows = []
    for setting in grid["settings"]:
        name = setting["name"]
        ours = found.get(("grid", name, "ours"))
        cellmap = {k: found.get(("grid", name, k)) for k in peers}
        if ours is None and not any(cellmap.values()):
            continue
        ok = ours is not None and ours["status"] == "ok"
        row = [f"{name}: {describe(setting)}", value_text(ours, meta)]
        row += [_g(ours["rel"], 2) if ok else "", _seconds(ours["time"]) if ok else ""]
        row += [_mib(ours["peak_mib"]) if ours else ""]
        for key in peers:
            peer = cellmap[key]
            good = peer is not None and peer["status"] == "ok"
            row += [_g(peer["upper"]) if good else failure(peer, meta)]
            row += [_seconds(peer["time"]) if good else "", _mib(peer and peer["peak_mib"])]
            row += [_ratio(peer, ours) if good and ok else ""]
        flags = checks(setting, ours, cellmap)
        row += [flags["rel"]] + [flags[f"upper-{k}"] for k in peers]
        row += [flags[f"time-{k}"] for k in peers] + [flags["memory"]]
        rows.append(row)
    lines += _table(header, rows)
    warned = []
    for setting in grid["settings"]:
        ours = found.get(("grid", setting["name"], "ours"))
        for text in certification_warnings(ours) if ours else []:
            warned.append(f"- {setting['name']}: {clip(text, 300)}")
    if warned:
        lines += ["", "Certification warnings of ours:", "", *warned]
    return lines


def _single(section, setting, found, labels, meta) -> list[str]:
    """The heterogeneous run or the calibration: one row per accountant."""
    title = {"het": "The heterogeneous run", "calibrate": "Calibration"}[section]
    name = setting["name"]
    ours = found.get((section, name, "ours"))
    if ours is None and not any(found.get((section, name, k)) for k in meta["peers"]):
        return []
    if section == "het":
        what = describe(setting)
        value = "eps at delta: [lower, upper] (ours), upper estimate (peers)"
    else:
        what = (
            f"sigma for eps {setting['epsilon']:g} at delta {setting['delta']:g}, q "
            f"{setting['q']:.4g}, {setting['steps']:,} steps; ours cut {setting['cut']:g}, "
            f"d = {_power(setting['dimension'])}"
        )
        value = "sigma: [certified too small, certified] (ours), [too small, found] (prv bisection)"
    lines = ["", f"## {title}", "", f"{name}: {what}. Value: {value}.", ""]
    rows = []
    for key in ("ours", *meta["peers"]):
        cell = found.get((section, name, key))
        ok = cell is not None and cell["status"] == "ok"
        label = "this library" if key == "ours" else labels[key]
        extra = []
        if ok and cell.get("rel") is not None:
            extra.append(f"rel {cell['rel']:.2g}")
        if ok and cell.get("evaluations") is not None:
            extra.append(f"{cell['evaluations']} evaluations")
        ratio = "" if key == "ours" else _ratio(cell, ours) if ok else ""
        rows.append(
            [
                label,
                value_text(cell, meta) + (f" ({', '.join(extra)})" if extra else ""),
                _seconds(cell["time"]) if ok else "",
                _mib(cell and cell["peak_mib"]),
                ratio,
                (cell or {}).get("method", ""),
            ]
        )
    return lines + _table(["accountant", "value", "time", "peak", "x", "how"], rows)


def _opacus(setting, found, meta) -> list[str]:
    name = setting["name"]
    present = [(k, found[("opacus", name, k)]) for k in OPACUS if ("opacus", name, k) in found]
    if not present:
        return []
    ok = [c for _, c in present if c["status"] == "ok"]
    sample = ok[0] if ok else None
    layers = " -> ".join(str(w) for w in setting["layers"])
    lines = ["", "## Opacus: get_epsilon after every epoch", ""]
    what = (
        f"A real `opacus.PrivacyEngine` on an MLP {layers}"
        + (f" ({sample['dimension']:,} trainable parameters)" if sample else "")
        + f", {setting['dataset']:,} synthetic examples, batch {setting['batch']}"
        + (
            f" (Poisson sampling rate {sample['sample_rate']:.6g}, {sample['steps_per_epoch']} "
            f"steps per epoch, {sample['steps']:,} steps in all)"
            if sample
            else ""
        )
        + f", noise multiplier {setting['sigma']:g}, `get_epsilon({setting['delta']:g})` after "
        f"each of {setting['epochs']} epochs; ours cut {setting['cut']:g}. Times: medians over "
        "the runs; x: Opacus PRV's total over ours (above 1: ours is faster)."
    )
    lines += [what, ""]
    prv = found.get(("opacus", name, "prv"))
    rows = []
    for key, cell in present:
        good = cell["status"] == "ok"
        label = f"{'this library' if key in OURS_OPACUS else 'Opacus'} (`accountant={key!r}`)"
        if not good:
            rows.append([label, failure(cell, meta), "", "", "", "", "", ""])
            continue
        later = cell["calls"][1:]
        rows.append(
            [
                label,
                _seconds(cell["total_calls"]),
                _seconds(cell["first_call"]),
                _seconds(statistics.median(later)) if later else "",
                _seconds(cell["time"]),
                _mib(cell["peak_mib"]),
                _g(cell["upper"]),
                _ratio(prv, cell, "total_calls") if key in OURS_OPACUS else "",
            ]
        )
    header = ["accountant", f"{setting['epochs']} calls", "first call", "median later call"]
    header += ["whole process", "peak", "eps after the last epoch", "x"]
    lines += _table(header, rows)
    epochs = sorted({e for e in SHOWN_EPOCHS if e <= setting["epochs"]} | {setting["epochs"]})
    if ok:
        lines += ["", "Seconds of the `get_epsilon` call after epoch:", ""]
        rows = []
        for key, cell in present:
            if cell["status"] == "ok":
                rows.append([key, *(f"{cell['calls'][e - 1]:.3g}" for e in epochs)])
        lines += _table(["accountant", *(str(e) for e in epochs)], rows)
    return lines


def _every_run(payload, found, labels) -> list[str]:
    lines = ["", "## Every run", ""]
    lines.append(
        "Per job: the wall time of each successful run (whole process), the job's own time "
        "from its first statement and to its library imported (medians), peak memory, and "
        "notes (failures, warnings, how the accountant was called)."
    )
    lines.append("")
    rows = []
    for (section, setting, key), cell in found.items():
        label = labels.get(key, key) if section != "opacus" else f"opacus {key}"
        notes = list(cell["notes"]) + [clip(w, 200) for w in certification_warnings(cell)]
        rows.append(
            [
                f"{section}: {setting}",
                label,
                f"{cell['status']} ({cell['ok']}/{cell['runs']})",
                ", ".join(f"{t:.3g}" for t in cell["times"]),
                _g(cell["inner"], 3),
                _g(cell["import"], 3),
                _g(cell["peak_mib"], 4),
                clip("; ".join([cell["method"], *notes]).strip("; "), 400),
            ]
        )
    header = ["job", "accountant", "status (ok/runs)", "process times (s)", "in-process (s)"]
    header += ["import (s)", "peak (MiB)", "how; notes"]
    return lines + _table(header, rows)


def _method_fields(meta: dict, grid: dict) -> dict:
    return {
        "dp_interval": f"{meta['dp_interval']:g}",
        "eps_error": f"{meta['eps_error']:g}",
        "delta_error": f"{meta['delta_error_factor']:g}",
        "repeats": meta["repeats"],
    }


METHOD = """## Method

- **A job** is one fresh child process, `python benchmarks/dpsgd_user_job.py '<spec>'`: it
  takes `time.perf_counter()` at its first statement, imports its library, builds,
  composes, queries and prints one JSON line (its result, its own time, the time to its
  library imported, its peak resident set `VmHWM`, every warning). The parent measures the
  wall time of the whole process, from just before the fork to the exit (interpreter
  start-up included): the times on this page are that, unless they say otherwise. The
  process runs with its address space limited (`RLIMIT_AS`) and is killed at the timeout;
  a job that fails (timeout, out of memory, an exception) is recorded as such and not
  repeated. One job runs at a time.
- **Interleaving.** For each setting and each repeat, every accountant runs once before
  the next repeat (round robin, the order rotated by one per repeat), so drift in the load
  of the machine hits all alike. Runs per job: {repeats}; times are medians over the
  successful runs, memory the largest peak.
- **This library.** `truncated` settings: `DPSGDAccountant(dimension=d)` composing
  `SubsampledTruncatedGaussian(sigma, q, cut)` (Gaussian noise cut at +-cut sigma per
  coordinate, renormalised; the upper bound covers all d coordinates' cuts); `uncut`
  settings: `PrivacyBuckets()` composing `SubsampledTruncatedGaussian(sigma, q,
  cut=inf)`, the plain subsampled Gaussian the peers account. Default accuracy (1e-4)
  unless the setting names one; query `epsilon(delta)`, certified [lower, upper].
  Calibration: `calibrate_noise_multiplier` at its defaults.
- **dp_accounting.** `PLDAccountant(value_discretization_interval={dp_interval})`
  composing `SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)),
  steps)` (one per entry of a heterogeneous schedule), `get_epsilon(delta)`: a
  pessimistic estimate (not certified). Calibration: `calibrate_dp_mechanism` on that
  accountant, tolerance 1e-3 in sigma.
- **prv_accountant.** `PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(q,
  sigma)], max_self_compositions=[steps], eps_error={eps_error}, delta_error=delta *
  {delta_error})`, `compute_epsilon(delta, [steps])`: lower, estimate and upper (its
  upper is the one compared). Calibration: a bisection on its upper eps (bracket from
  [0.5, 2], halved to 1e-3 in sigma; `benchmarks/dpsgd_peers.py: prv_bisect`), since
  prv_accountant has no calibration with a stated tolerance.
- **The peers run the untruncated Gaussian**, the only DP-SGD noise they support; on the
  `truncated` settings ours accounts the cut noise on d coordinates, a different (and,
  for d > 1, more conservative) mechanism.
- **Opacus.** One real DP-SGD step on two examples (per-example gradients, clipping,
  noise, the accountant's step hook), then the optimiser's step hook once per further
  step (the call `DPOptimizer.step` makes after noising), so the accountant records the
  history a training run would without the training; `PrivacyEngine.get_epsilon(delta)`
  after each epoch, each call timed. Opacus's `prv` accountant uses its defaults
  (eps_error 0.01, delta_error delta / 1000); `rdp` its default orders.
"""


# ------------------------------------------------------------------------------- files


def dump(payload: dict) -> str:
    return json.dumps(finite_json(payload), indent=1) + "\n"


def _atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def write(payload: dict, output: Path, json_path: Path) -> str:
    """Write the JSON, then the page from it; return the page."""
    text = dump(payload)
    _atomic(json_path, text)
    page = markdown(json.loads(text))
    _atomic(output, page)
    return page


def render(json_path: Path, output: Path) -> str:
    """Rewrite the page from the raw results alone (no measuring)."""
    page = markdown(json.loads(json_path.read_text(encoding="utf-8")))
    _atomic(output, page)
    return page
