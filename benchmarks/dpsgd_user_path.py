"""DP-SGD accounting on the user's path, beside the peers (issue 26): every job a fresh
Python process that imports its library, builds, composes and queries; this library,
dp_accounting (PLD, pessimistic, value_discretization_interval 1e-4) and prv_accountant
(eps_error 0.01) interleaved in one run, medians of 3 runs, peak memory per job. Over
the committed grid ``benchmarks/dpsgd_grid.json`` (eps settings, the 1,000-setting
heterogeneous run, the MNIST calibration, the Opacus path). Writes
``docs/benchmarks-dpsgd.md`` and its raw results ``docs/benchmarks-dpsgd.json``::

    python benchmarks/dpsgd_user_path.py                   # everything (hours)
    python benchmarks/dpsgd_user_path.py --quick           # smoke run: small jobs, 1 run each
    python benchmarks/dpsgd_user_path.py --sections grid --settings mnist,r1 --repeats 1
    python benchmarks/dpsgd_user_path.py --resume          # go on with an interrupted run
    python benchmarks/dpsgd_user_path.py --report-only     # rewrite the page from the JSON

Only a full run (no ``--quick``, ``--sections``, ``--settings``, ``--accountants`` or
``--opacus-accountants``) writes to ``docs/`` by default; any other run writes
``dpsgd-user-path.md`` / ``.json`` in the temporary directory unless ``--output`` says
otherwise.

Peers (benchmark-only, never dependencies of the project; a missing one is a cell saying
"not installed")::

    pip install --no-deps dp-accounting==0.6.0 prv-accountant==0.2.0 absl-py
    pip install opacus==1.6.0                                # the Opacus jobs

A job is ``benchmarks/dpsgd_user_job.py`` (its docstring says what each job does); the
page's Method section says how it is timed. Jobs run one at a time; Ctrl-C stops after
writing what was measured (``--resume`` continues).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import dpsgd_peers  # noqa: E402
import dpsgd_process  # noqa: E402
import dpsgd_report  # noqa: E402
import dpsgd_user_report as report  # noqa: E402

GRID = HERE / "dpsgd_grid.json"
JOB = HERE / "dpsgd_user_job.py"
GIB = 2**30
ACCOUNTANTS = {
    "ours": "this library",
    "dp-pld": "dp_accounting",
    "prv": "prv_accountant",
}
OPACUS_ACCOUNTANTS = report.OPACUS
SECTIONS = report.SECTIONS
DISTRIBUTIONS = ["truncated-noise-accountant", "numpy", "scipy", "numba", "llvmlite"]
DISTRIBUTIONS += ["dp-accounting", "prv-accountant", "absl-py", "opacus", "torch"]
#: Environment variables that change how many threads a job uses (recorded, never set).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
THREAD_VARIABLES += ("NUMBA_NUM_THREADS", "NUMBA_CACHE_DIR")


# ------------------------------------------------------------------------------- grid


def load_grid(path: Path) -> dict:
    """The grid file, each eps setting checked (a bad one is a ValueError naming it)."""
    grid = json.loads(path.read_text(encoding="utf-8"))
    for part in (grid, grid.get("quick", {})):
        names = [s["name"] for s in part.get("settings", [])]
        if len(names) != len(set(names)):
            raise ValueError(f"{path}: setting names repeat: {sorted(names)}")
        for setting in [*part.get("settings", []), part.get("het")]:
            if setting:
                check_setting(setting)
    return grid


def check_setting(setting: dict) -> None:
    name = setting.get("name", "?")

    def bad(what: str) -> ValueError:
        return ValueError(f"grid setting {name!r}: {what}, got {setting!r}")

    single = setting.get("settings", 1) == 1
    if single and not (setting.get("sigma", 0) > 0 and 0 < setting.get("q", 0) <= 1):
        raise bad("needs sigma > 0 and 0 < q <= 1")
    if not (isinstance(setting.get("steps"), int) and setting["steps"] >= 1):
        raise bad("steps must be a positive integer")
    if not 0 < setting.get("delta", 0) < 1:
        raise bad("delta must lie in (0, 1)")
    if setting.get("ours") not in ("truncated", "gaussian"):
        raise bad("ours must be 'truncated' or 'gaussian'")
    if setting["ours"] == "truncated" and not (
        setting.get("cut", 0) > 0 and isinstance(setting.get("dimension"), int)
    ):
        raise bad("a truncated setting needs cut > 0 and an integer dimension")


def plan(args: argparse.Namespace, grid: dict) -> list[dict]:
    """Every job in run order: per setting and repeat, each accountant once (round robin,
    rotated by one per repeat)."""
    jobs = []
    peers = grid["peers"]
    for section in args.selected_sections:
        settings = args.selected_settings if section == "grid" else [args.part[section]]
        opacus = section == "opacus"
        accountants = args.selected_opacus if opacus else args.selected_accountants
        for setting in settings:
            for repeat in range(args.repeats):
                shift = repeat % len(accountants)
                for key in accountants[shift:] + accountants[:shift]:
                    spec = {**setting, "accountant": key, **peers}
                    if section == "opacus":
                        spec.update(job="opacus", opacus_accountant=key)
                    else:
                        spec["job"] = "calibrate" if section == "calibrate" else "epsilon"
                    job = {"section": section, "setting": setting["name"], "accountant": key}
                    jobs.append({**job, "repeat": repeat, "spec": spec})
    return jobs


# --------------------------------------------------------------------------- running


def run_job(job: dict, args: argparse.Namespace) -> dict:
    """One child process; its result with what the parent measured."""
    command = [sys.executable, str(JOB), json.dumps(job["spec"])]
    # a user's installation has its bytecode (pip compiles it): never run without it
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    timeout = args.opacus_timeout if job["section"] == "opacus" else args.timeout
    load = list(os.getloadavg())
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    result = dpsgd_process.run_child(command, timeout, int(args.memory_limit * GIB), env)
    record = {k: job[k] for k in ("section", "setting", "accountant", "repeat")}
    return {**record, "started": started, "load_average": load, **result}


def metadata(argv: list[str], args: argparse.Namespace, grid: dict) -> dict:
    labels = {**ACCOUNTANTS}
    labels.update({"dp-pld": "dp_accounting", "prv": "prv_accountant"})
    grid_text = args.grid.read_bytes()
    return {
        "script": "benchmarks/dpsgd_user_path.py",
        "command": " ".join(["python", "benchmarks/dpsgd_user_path.py", *argv]),
        "child_command": "python benchmarks/dpsgd_user_job.py '<job spec as JSON>'",
        "json_name": args.json.name,
        "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": dpsgd_report.machine(),
        "python": platform.python_version(),
        "versions": {name: dpsgd_report.version(name) for name in DISTRIBUTIONS},
        "commit": dpsgd_report.commit(ROOT, "accountant", "optimizers"),
        "load_average": list(os.getloadavg()),
        "environment": {k: os.environ.get(k, "unset") for k in THREAD_VARIABLES},
        "grid_file": _shown_path(args.grid),
        "grid_sha256": hashlib.sha256(grid_text).hexdigest(),
        "repeats": args.repeats,
        "timeout": args.timeout,
        "opacus_timeout": args.opacus_timeout,
        "memory_limit_gib": args.memory_limit,
        "peers": [k for k in args.selected_accountants if k != "ours"],
        "labels": labels,
        "dp_interval": grid["peers"]["dp_interval"],
        "eps_error": grid["peers"]["eps_error"],
        "delta_error_factor": dpsgd_peers.DELTA_ERROR_FACTOR,
    }


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def selected_grid(args: argparse.Namespace) -> dict:
    """The part of the grid this run measures, as stored in the JSON."""
    part = {"settings": args.selected_settings if "grid" in args.selected_sections else []}
    for section in ("het", "calibrate", "opacus"):
        part[section] = args.part[section] if section in args.selected_sections else None
    return part


def measure(argv: list[str], args: argparse.Namespace, grid: dict) -> dict:
    payload = {"meta": metadata(argv, args, grid), "grid": selected_grid(args), "runs": []}
    if args.resume and args.json.exists():
        earlier = json.loads(args.json.read_text(encoding="utf-8"))
        payload["runs"] = earlier["runs"]
        payload["meta"]["started"] = earlier["meta"]["started"]
        payload["meta"]["resumed"] = earlier["meta"].get("resumed", 0) + 1
        report.log(f"resuming: {len(payload['runs'])} runs already in {args.json}")
    done = {(r["section"], r["setting"], r["accountant"], r["repeat"]) for r in payload["runs"]}
    failed = {
        (r["section"], r["setting"], r["accountant"])
        for r in payload["runs"]
        if r["status"] != "ok"
    }
    missing: dict[str, str] = {}  # accountant -> why it is not installed
    jobs = plan(args, grid)
    report.log(f"{len(jobs)} jobs; writing {args.output} and {args.json}")
    interrupted = False
    try:
        for index, job in enumerate(jobs):
            key = (job["section"], job["setting"], job["accountant"])
            if (*key, job["repeat"]) in done or key in failed:
                continue
            where = f"[{index + 1}/{len(jobs)}] {job['section']} {job['setting']} "
            where += f"{job['accountant']} run {job['repeat'] + 1}"
            if job["accountant"] in missing:
                result = {"status": "not installed", "message": missing[job["accountant"]]}
                result = {**key_fields(job), **result}
            else:
                report.log(where + " ...")
                result = run_job(job, args)
            report.log(f"    {result['status']} {result.get('process_seconds', 0):.3g} s")
            if result["status"] == "not installed" and job["section"] != "opacus":
                missing[job["accountant"]] = result.get("message", "")
            if result["status"] != "ok":
                failed.add(key)
            payload["runs"].append(result)
            report.write(payload, args.output, args.json)
    except KeyboardInterrupt:
        interrupted = True
    payload["meta"]["finished"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    payload["meta"]["load_average_end"] = list(os.getloadavg())
    payload["meta"]["interrupted"] = interrupted
    report.write(payload, args.output, args.json)
    return payload


def key_fields(job: dict) -> dict:
    return {k: job[k] for k in ("section", "setting", "accountant", "repeat")}


# ------------------------------------------------------------------------- arguments


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small jobs, 1 run each")
    parser.add_argument("--sections", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--settings", help="comma-separated grid setting names (default all)")
    parser.add_argument("--accountants", help=f"subset of {','.join(ACCOUNTANTS)}")
    parser.add_argument("--opacus-accountants", help=f"subset of {','.join(OPACUS_ACCOUNTANTS)}")
    parser.add_argument("--repeats", type=int, help="runs per job (3; 1 with --quick)")
    parser.add_argument("--timeout", type=float, help="seconds per job (1800; 300 with --quick)")
    parser.add_argument("--opacus-timeout", type=float, default=3600.0, help="per Opacus job")
    parser.add_argument("--memory-limit", type=float, default=12.0, help="GiB per job (12)")
    parser.add_argument("--grid", type=Path, default=GRID, help="the grid file")
    parser.add_argument("--output", type=Path, help="the page (see the module docstring)")
    parser.add_argument("--json", type=Path, help="raw results (default: --output as .json)")
    parser.add_argument("--resume", action="store_true", help="keep the runs in --json")
    parser.add_argument("--report-only", action="store_true", help="rewrite the page from --json")
    args = parser.parse_args(argv)
    partial = any((args.sections, args.settings, args.accountants, args.opacus_accountants))
    if args.output is None:
        full = not (args.quick or partial) or args.report_only
        home = ROOT / "docs" if full else Path(tempfile.gettempdir())
        args.output = home / ("benchmarks-dpsgd.md" if full else "dpsgd-user-path.md")
    if args.json is None:
        args.json = args.output.with_suffix(".json")
    if args.report_only:
        return args
    try:
        grid = load_grid(args.grid)
    except (OSError, ValueError, KeyError) as error:
        parser.error(f"--grid {args.grid}: {error}")
    args.grid_data = grid
    part = grid["quick"] if args.quick else grid
    args.part = part
    settings = {s["name"]: s for s in part["settings"]}
    args.selected_sections = _choose(parser, "--sections", args.sections, list(SECTIONS))
    args.selected_settings = [
        settings[n] for n in _choose(parser, "--settings", args.settings, list(settings))
    ]
    args.selected_accountants = _choose(
        parser, "--accountants", args.accountants, list(ACCOUNTANTS)
    )
    args.selected_opacus = _choose(
        parser, "--opacus-accountants", args.opacus_accountants, list(OPACUS_ACCOUNTANTS)
    )
    if args.timeout is None:
        args.timeout = 300.0 if args.quick else 1800.0
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    for name in ("repeats", "timeout", "opacus_timeout", "memory_limit"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            parser.error(f"--{name.replace('_', '-')} must be positive, got {value!r}")
    return args


def _choose(parser, option: str, given: str | None, names: list[str]) -> list[str]:
    chosen = [n.strip() for n in (given or ",".join(names)).split(",") if n.strip()]
    unknown = [n for n in chosen if n not in names]
    if unknown or not chosen:
        parser.error(f"{option}: unknown {unknown or given!r}; choose from {', '.join(names)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.report_only:
        if not args.json.exists():
            report.log(f"--report-only: no results at {args.json}")
            return 2
        print(report.render(args.json, args.output), end="")
        return 0
    payload = measure(argv, args, args.grid_data)
    print(report.markdown(json.loads(report.dump(payload))), end="")
    return 130 if payload["meta"]["interrupted"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
