"""benchmarks/dpsgd_user_path.py (issue 26): the committed grid covers what the issue asks,
jobs are interleaved and a failed job is not repeated, the page follows from the JSON byte
for byte, the targets are judged from the data, and (slow) the quick run end to end. Times
are never asserted."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "dpsgd_user_path.py"
JOB = ROOT / "benchmarks" / "dpsgd_user_job.py"
FIXTURE = Path(__file__).resolve().parent / "data" / "dpsgd_user_path"
sys.path.insert(0, str(ROOT / "benchmarks"))

import dpsgd  # noqa: E402
import dpsgd_peers  # noqa: E402
import dpsgd_user_job  # noqa: E402
import dpsgd_user_path as user_path  # noqa: E402
import dpsgd_user_report as report  # noqa: E402

GRID = user_path.load_grid(user_path.GRID)


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------------------- grid


def test_the_grid_spans_what_the_issue_asks():
    settings = GRID["settings"]
    assert len(settings) >= 40
    sigmas, qs = [s["sigma"] for s in settings], [s["q"] for s in settings]
    steps, deltas = [s["steps"] for s in settings], [s["delta"] for s in settings]
    assert (min(sigmas), max(sigmas)) == (0.5, 10.0)
    assert (min(qs), max(qs)) == (1e-4, 1.0)
    assert any(0.99 <= q < 1.0 for q in qs) and 1 - 1e-12 in qs
    assert (min(steps), max(steps)) == (10, 10**7)
    assert {10**k for k in range(1, 8)} <= set(steps)
    assert {1e-5, 1e-6} <= set(deltas) and sum(d < 1e-9 for d in deltas) >= 2
    assert {s["ours"] for s in settings} == {"truncated", "gaussian"}
    for setting in settings:
        user_path.check_setting(setting)
        if setting["ours"] == "truncated":
            assert setting["cut"] * setting["sigma"] > 0.5  # a valid cut


@pytest.mark.parametrize(
    ("sigma", "q", "steps", "ours"),
    [
        (10.0, 1.0, 10**6, None),
        (2.0, 0.5, 10**7, None),
        (2.0, 1 - 1e-12, 100, None),
        (1.0, 1e-4, 10, None),
        (0.5, 1e-4, 10**7, "gaussian"),
        (0.5, 1e-4, 10**7, "truncated"),
        (1.0, 0.1, 10**4, None),
    ],
)
def test_the_settings_named_in_the_performance_notes_are_in_the_grid(sigma, q, steps, ours):
    found = [
        s
        for s in GRID["settings"]
        if (s["sigma"], s["q"], s["steps"]) == (sigma, q, steps) and ours in (None, s["ours"])
    ]
    assert found


def test_the_two_fresh_process_jobs():
    fresh = {s["name"]: s for s in GRID["settings"] if s.get("fresh")}
    mnist, million = fresh["mnist"], fresh["s1-q1e-3-1e6"]
    assert (mnist["sigma"], mnist["q"], mnist["steps"], mnist["delta"]) == (
        1.1,
        256 / 60000,
        14062,
        1e-5,
    )
    assert (mnist["ours"], mnist["cut"], mnist["dimension"]) == ("truncated", 10.0, 10**6)
    assert (million["sigma"], million["q"], million["steps"], million["delta"]) == (
        1.0,
        1e-3,
        10**6,
        1e-6,
    )
    assert (million["ours"], million["cut"]) == ("truncated", 8.0)


def test_het_calibration_and_opacus_jobs():
    het = GRID["het"]
    assert dpsgd_user_job.schedule_of(het) == dpsgd.schedule(dpsgd.ROWS["het"])
    calibrate = GRID["calibrate"]
    row = dpsgd.ROWS["calibrate"]
    assert (calibrate["epsilon"], calibrate["q"], calibrate["steps"]) == (3.0, row.q, row.steps)
    opacus = GRID["opacus"]
    widths = opacus["layers"]
    parameters = sum((a + 1) * b for a, b in itertools.pairwise(widths))
    assert parameters == 10**6 and opacus["epochs"] == 100
    assert GRID["peers"] == {"dp_interval": 1e-4, "eps_error": 0.01}


def test_a_bad_setting_is_refused_naming_it(tmp_path):
    grid = json.loads(user_path.GRID.read_text())
    grid["settings"][3] = {**grid["settings"][3], "q": 0.0}
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(grid))
    with pytest.raises(ValueError, match=grid["settings"][3]["name"]):
        user_path.load_grid(path)


# -------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--settings", "mnist,nope"], "nope"),
        (["--sections", "grid,warm"], "warm"),
        (["--accountants", "ours,autodp"], "autodp"),
        (["--opacus-accountants", "gdp"], "gdp"),
        (["--repeats", "0"], "--repeats"),
        (["--timeout", "nan"], "--timeout"),
        (["--quick", "--settings", "mnist"], "mnist"),  # grid settings are not quick ones
    ],
)
def test_bad_arguments_are_errors_naming_them(argv, named, capsys):
    with pytest.raises(SystemExit) as raised:
        user_path.parse_args(argv)
    assert raised.value.code == 2
    assert named in capsys.readouterr().err


def test_only_a_full_run_writes_the_docs_page_by_default():
    full = user_path.parse_args([])
    assert full.output == ROOT / "docs" / "benchmarks-dpsgd.md"
    assert full.json == ROOT / "docs" / "benchmarks-dpsgd.json"
    assert (full.repeats, full.timeout) == (3, 1800.0)
    assert len(full.selected_settings) == len(GRID["settings"])
    for argv in (["--quick"], ["--settings", "mnist"], ["--sections", "het"]):
        assert user_path.parse_args(argv).output.parent != ROOT / "docs"
    quick = user_path.parse_args(["--quick"])
    assert (quick.repeats, [s["name"] for s in quick.selected_settings]) == (
        1,
        [s["name"] for s in GRID["quick"]["settings"]],
    )


def test_jobs_are_interleaved_round_robin_rotated_per_repeat():
    args = user_path.parse_args(["--sections", "grid,opacus", "--settings", "mnist,r1"])
    jobs = user_path.plan(args, GRID)
    grid_jobs = [j for j in jobs if j["section"] == "grid"]
    assert [(j["setting"], j["repeat"], j["accountant"]) for j in grid_jobs[:6]] == [
        ("mnist", 0, "ours"),
        ("mnist", 0, "dp-pld"),
        ("mnist", 0, "prv"),
        ("mnist", 1, "dp-pld"),
        ("mnist", 1, "prv"),
        ("mnist", 1, "ours"),
    ]
    assert len(grid_jobs) == 2 * 3 * 3
    spec = grid_jobs[0]["spec"]
    assert (spec["job"], spec["dimension"], spec["dp_interval"], spec["eps_error"]) == (
        "epsilon",
        10**6,
        1e-4,
        0.01,
    )
    opacus = [j for j in jobs if j["section"] == "opacus"]
    assert {j["spec"]["opacus_accountant"] for j in opacus} == set(report.OPACUS)
    assert all(j["spec"]["job"] == "opacus" for j in opacus)


# ---------------------------------------------------------------------------- running


def _fake_runs(monkeypatch, outcomes: dict) -> list[tuple]:
    """Replace the child process by ``outcomes[(setting, accountant)]`` (a status; times
    made up); returns the jobs asked for."""
    asked = []

    def fake(job, args):
        asked.append((job["setting"], job["accountant"], job["repeat"]))
        status = outcomes.get((job["setting"], job["accountant"]), "ok")
        result = {"status": status, "process_seconds": 2.0 + job["repeat"], "seconds": 1.0}
        if status == "ok":
            result.update(lower=1.0, upper=1.0001 if job["accountant"] == "ours" else 1.1)
            result.update(rel=1e-4 / 1.0001 if job["accountant"] == "ours" else None)
        result["peak_mib"] = 100.0
        return {**user_path.key_fields(job), **result}

    monkeypatch.setattr(user_path, "run_job", fake)
    return asked


def test_a_failed_job_is_not_repeated_and_resume_skips_what_was_run(tmp_path, monkeypatch):
    argv = ["--sections", "grid", "--settings", "r1,r2", "--output", str(tmp_path / "p.md")]
    asked = _fake_runs(monkeypatch, {("r1", "prv"): "out of memory"})
    args = user_path.parse_args(argv)
    payload = user_path.measure(argv, args, args.grid_data)
    assert ("r1", "prv", 0) in asked and ("r1", "prv", 1) not in asked
    assert len(asked) == 2 * 3 * 3 - 2
    cells = report.cells(payload)
    assert cells[("grid", "r1", "prv")]["status"] == "out of memory"
    assert cells[("grid", "r1", "ours")]["times"] == [2.0, 3.0, 4.0]
    assert cells[("grid", "r1", "ours")]["time"] == 3.0
    page = (tmp_path / "p.md").read_text(encoding="utf-8")
    assert "out of memory (> 12 GiB)" in page and "yes (peer failed)" in page
    again = _fake_runs(monkeypatch, {})
    args = user_path.parse_args([*argv, "--resume"])
    user_path.measure([*argv, "--resume"], args, args.grid_data)
    assert again == []  # everything done or failed already


def test_a_missing_peer_is_asked_once(tmp_path, monkeypatch):
    argv = ["--quick", "--sections", "grid", "--output", str(tmp_path / "p.md")]
    outcomes = {(s["name"], "prv"): "not installed" for s in GRID["quick"]["settings"]}
    asked = _fake_runs(monkeypatch, outcomes)
    args = user_path.parse_args(argv)
    payload = user_path.measure(argv, args, args.grid_data)
    assert [a for a in asked if a[1] == "prv"] == [(GRID["quick"]["settings"][0]["name"], "prv", 0)]
    statuses = [r["status"] for r in payload["runs"] if r["accountant"] == "prv"]
    assert statuses == ["not installed"] * len(GRID["quick"]["settings"])


# ----------------------------------------------------------------------------- checks


def _cell(status="ok", upper=1.0, lower=0.9999, time=1.0, peak=100.0, rel=None):
    if rel is None and upper and lower is not None:
        rel = (upper - lower) / upper
    return {
        "status": status,
        "upper": upper if status == "ok" else None,
        "lower": lower,
        "rel": rel,
        "time": time,
        "peak_mib": peak,
        "notes": [] if status == "ok" else ["MemoryError: std::bad_alloc"],
    }


def test_targets_are_judged_from_the_figures():
    setting = {"name": "s", "sigma": 1.0, "q": 0.01, "steps": 10, "delta": 1e-5}
    ours = _cell(upper=1.0, lower=1.0 - 5e-5, time=1.0)
    peers = {"dp-pld": _cell(upper=1.0001, time=2.0), "prv": _cell("out of memory")}
    found = report.checks(setting, ours, peers)
    assert found == {
        "rel": "yes",
        "memory": "yes",
        "upper-dp-pld": "yes",
        "time-dp-pld": "yes",
        "upper-prv": "yes (peer failed)",
        "time-prv": "yes (peer failed)",
    }
    labels = {"dp-pld": "dp_accounting", "prv": "prv_accountant"}
    assert report.missed(setting, ours, peers, labels) == []
    slow = _cell(upper=1.001, lower=0.99, time=3.0, peak=2048.0)
    problems = report.missed(setting, slow, peers, labels)
    assert problems == [
        "rel 0.011 > 0.0001",
        "upper 1.001 > dp_accounting's 1.0001",
        "slower than dp_accounting (3 s vs 2 s)",
        "peak 2048 MiB >= 1 GiB",
    ]
    assert report.checks({**setting, "accuracy": 1e-3}, _cell(lower=0.9995), {})["rel"] == "yes"
    failed = report.missed(setting, _cell("timeout"), peers, labels)
    assert failed[0].startswith("ours failed: timeout")


def test_the_prv_bisection_keeps_its_bracket(monkeypatch):
    """On a made-up prv eps (decreasing in sigma), the bisection ends with
    eps(sigma) <= target < eps(sigma_low) and a bracket within the tolerance."""

    def fake(schedule, delta, eps_error):
        sigma = schedule[0][0]
        return (0.0, 0.0, 3.0 / sigma)

    monkeypatch.setattr(dpsgd_peers, "prv_epsilon", fake)
    low, sigma, count = dpsgd_peers.prv_bisect(0.01, 100, 2.0, 1e-5, 0.01)
    assert 3.0 / sigma <= 2.0 < 3.0 / low
    assert 0.0 < sigma - low <= dpsgd_peers.SIGMA_TOLERANCE and count > 5


# ----------------------------------------------------------------------------- report


def test_the_page_follows_from_the_json_byte_for_byte(tmp_path):
    """The committed fixture (a quick run's results and page) rendered again."""
    page = tmp_path / "page.md"
    code = user_path.main(
        ["--report-only", "--json", str(FIXTURE / "quick.json"), "--output", str(page)]
    )
    assert code == 0
    assert page.read_bytes() == (FIXTURE / "quick.md").read_bytes()
    _strict_json((FIXTURE / "quick.json").read_text(encoding="utf-8"))


def test_the_committed_docs_page_follows_from_its_json(tmp_path):
    committed = ROOT / "docs" / "benchmarks-dpsgd.json"
    payload = json.loads(committed.read_text(encoding="utf-8"))
    if payload.get("meta", {}).get("script") != "benchmarks/dpsgd_user_path.py":
        pytest.skip("docs/benchmarks-dpsgd.json is not yet from dpsgd_user_path.py")
    page = tmp_path / "page.md"
    assert user_path.main(["--report-only", "--json", str(committed), "--output", str(page)]) == 0
    assert page.read_bytes() == (ROOT / "docs" / "benchmarks-dpsgd.md").read_bytes()


def test_the_fixture_has_every_section():
    payload = json.loads((FIXTURE / "quick.json").read_text(encoding="utf-8"))
    sections = {r["section"] for r in payload["runs"]}
    assert sections == set(report.SECTIONS)
    page = (FIXTURE / "quick.md").read_text(encoding="utf-8")
    for heading in ("## Where targets are missed", "## Every setting", "## Calibration"):
        assert heading in page
    assert "## Opacus: get_epsilon after every epoch" in page


# -------------------------------------------------------------------------- end to end


def _job(spec: dict) -> dict:
    done = subprocess.run(
        [sys.executable, str(JOB), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return _strict_json(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_peer_job_reports_its_clock_and_memory():
    pytest.importorskip("dp_accounting")
    spec = {**GRID["quick"]["settings"][0], **GRID["peers"], "job": "epsilon"}
    result = _job({**spec, "accountant": "dp-pld"})
    assert result["status"] == "ok", result
    assert 0.0 < result["upper"] < 1.0
    assert 0.0 < result["import_seconds"] <= result["seconds"]
    assert result["peak_mib"] > 0.0 and "SelfComposedDpEvent" in result["method"]


@pytest.mark.slow
def test_a_failing_job_is_a_result_not_a_crash():
    spec = {**GRID["quick"]["settings"][0], **GRID["peers"], "job": "epsilon"}
    result = _job({**spec, "accountant": "ours", "delta": 2.0})
    assert result["status"] == "error" and "delta" in result["message"]


@pytest.mark.slow
def test_the_quick_run_end_to_end(tmp_path):
    """One quick setting with every accountant, through the script (minutes while the
    engine compiles its kernels in every fresh process)."""
    output = tmp_path / "page.md"
    argv = ["--quick", "--sections", "grid", "--settings", "quick-gaussian"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv, "--output", str(output)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == output.read_text(encoding="utf-8")
    payload = _strict_json(output.with_suffix(".json").read_text(encoding="utf-8"))
    runs = {r["accountant"]: r for r in payload["runs"]}
    assert list(runs) == list(user_path.ACCOUNTANTS)
    ours = runs["ours"]
    assert ours["status"] == "ok", ours
    assert 0.0 < ours["lower"] <= ours["upper"] < 1.0
    assert ours["seconds"] < ours["process_seconds"]  # the parent's clock includes start-up
    for key in ("dp-pld", "prv"):
        if runs[key]["status"] == "not installed":
            continue
        assert runs[key]["status"] == "ok", runs[key]
        assert math.isclose(runs[key]["upper"], ours["upper"], rel_tol=0.05)


@pytest.mark.slow
def test_the_opacus_job_with_opacus_rdp():
    pytest.importorskip("opacus")
    spec = {**GRID["quick"]["opacus"], "job": "opacus", "accountant": "rdp"}
    result = _job({**spec, "opacus_accountant": "rdp"})
    assert result["status"] == "ok", result
    widths = spec["layers"]
    assert result["dimension"] == sum((a + 1) * b for a, b in itertools.pairwise(widths))
    assert len(result["calls"]) == spec["epochs"] == len(result["epsilons"])
    assert result["epsilons"] == sorted(result["epsilons"])  # a growing history
    assert result["steps"] == spec["epochs"] * result["steps_per_epoch"]
