"""benchmarks/dpsgd.py (the warm-process comparison): argument handling, how a run's fate
is recorded (timeout, out of memory, missing peer), the table writer, and one tiny row end
to end with whatever peers are installed. Times are never asserted. The user's-path
benchmark that writes docs/benchmarks-dpsgd.md is tested in
test_benchmarks_dpsgd_user_path.py."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "dpsgd.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

import dpsgd  # noqa: E402
import dpsgd_process  # noqa: E402
import dpsgd_report  # noqa: E402

PEERS = [key for key, a in dpsgd.ACCOUNTANTS.items() if a.module]


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--rows", "r1,nope"], "nope"),
        (["--accountants", "ours,opacus"], "opacus"),
        (["--repeats", "0"], "--repeats"),
        (["--timeout", "-1"], "--timeout"),
        (["--memory-limit", "nan"], "--memory-limit"),
        (["--quick", "--rows", "mnist"], "mnist"),  # full rows are not quick rows
    ],
)
def test_bad_arguments_are_errors_naming_them(argv, named, capsys):
    with pytest.raises(SystemExit) as raised:
        dpsgd.parse_args(argv)
    assert raised.value.code == 2
    assert named in capsys.readouterr().err


def test_defaults_full_and_quick(tmp_path):
    full = dpsgd.parse_args([])
    assert [r.name for r in full.selected_rows] == list(dpsgd.ROWS)
    assert [a.key for a in full.selected_accountants] == list(dpsgd.ACCOUNTANTS)
    assert (full.repeats, full.timeout, full.memory_limit) == (3, 900.0, 12.0)
    assert full.json == full.output.with_suffix(".json")
    quick = dpsgd.parse_args(["--quick", "--output", str(tmp_path / "x.md")])
    assert [r.name for r in quick.selected_rows] == list(dpsgd.QUICK_ROWS)
    assert (quick.repeats, quick.timeout) == (1, 120.0)
    assert quick.json == tmp_path / "x.json"
    chosen = dpsgd.parse_args(["--rows", "mnist,het", "--accountants", "prv-0.01"])
    assert [r.name for r in chosen.selected_rows] == ["mnist", "het"]
    assert [a.key for a in chosen.selected_accountants] == ["prv-0.01"]


def test_rows_of_the_issue():
    rows = dpsgd.ROWS
    assert (rows["mnist"].q, rows["mnist"].steps, rows["mnist"].cut) == (256 / 60000, 14062, 8.0)
    assert (rows["1e6"].steps, rows["1e6"].delta) == (1_000_000, 1e-6)
    assert (rows["tiny-delta"].delta, rows["tiny-delta"].cut) == (1e-15, 10.0)
    assert rows["calibrate"].epsilon == 3.0


def test_cut_mass_is_the_gaussian_tail_past_the_cut_less_the_clip():
    """r1: 1000 steps x q 0.004 x P(X >= 8.8 - 1), X ~ N(0, 1.1^2): 7.09 sigma."""
    tail = 0.5 * math.erfc(7.8 / 1.1 / math.sqrt(2.0))
    assert dpsgd.cut_mass(dpsgd.ROWS["r1"]) == pytest.approx(1000 * 0.004 * tail, rel=1e-12)
    assert 1e-12 < dpsgd.cut_mass(dpsgd.ROWS["r1"]) < 1e-11
    assert dpsgd.cut_mass(dpsgd.ROWS["tiny-delta"]) < 1e-20  # cut at 10 sigma, sigma 4


def test_heterogeneous_schedule_is_seeded_distinct_and_in_range():
    row = dpsgd.ROWS["het"]
    entries = dpsgd.schedule(row)
    assert entries == dpsgd.schedule(row)
    assert len(entries) == 1000 and len(set(entries)) == 1000
    assert all(steps == 10 for _, _, steps in entries)
    assert all(0.8 <= s <= 1.5 and 0.002 <= q <= 0.01 for s, q, _ in entries)
    assert dpsgd.schedule(dpsgd.ROWS["r1"]) == [(1.1, 0.004, 1000)]


# ------------------------------------------------------------------ this library's cells


@pytest.mark.slow
def test_ours_runs_the_continuous_mechanism_at_the_rows_accuracy(monkeypatch):
    """No grid: the mechanism DP-SGD users run, cut at +-cut sigma and renormalised; the
    heterogeneous row asks the accuracy its target is stated in, the others the default."""
    mechanism = dpsgd.ours_mechanism(1.1, 0.004, 8.0)
    assert (mechanism.sigma, mechanism.sampling_rate, mechanism.cut) == (1.1, 0.004, 8.0)
    assert mechanism.truncation == "renormalised"
    assert dpsgd.ROWS["het"].accuracy == 1e-3
    assert all(r.accuracy is None for name, r in dpsgd.ROWS.items() if name != "het")
    low, high = dpsgd.ours_epsilon([(1.1, 0.05, 20)], 8.0, 1e-5, accuracy=1e-3)
    assert 0.0 < low <= high <= low * (1 + 1.5e-3)


@pytest.mark.slow
def test_ours_calibration_is_the_librarys_and_certified():
    from accountant import PrivacyBuckets

    low, sigma, count, _ = dpsgd.ours_calibrate(0.05, 20, 8.0, 2.0, 1e-5)
    assert count >= 2 and low < sigma
    composed = PrivacyBuckets(accuracy=1e-3).compose(dpsgd.ours_mechanism(sigma, 0.05, 8.0), 20)
    assert composed.delta(2.0).upper <= 1e-5


# --------------------------------------------------------------------- a run's fate


def _run(code: str, timeout: float = 60.0, memory: int = 2 * 2**30) -> dict:
    return dpsgd_process.run_child([sys.executable, "-c", code], timeout, memory)


def test_a_run_over_the_timeout_is_recorded_with_its_progress():
    code = "import json, time; print(json.dumps({'evaluations': 1}), flush=True); time.sleep(60)"
    result = _run(code, timeout=1.0)
    assert result["status"] == "timeout"
    assert result["partial"] == {"evaluations": 1}


def test_a_run_out_of_memory_is_recorded_as_such():
    result = _run("block = bytearray(2**31)", memory=512 * 2**20)
    assert result["status"] == "out of memory"
    # the child's peak is reported; it starts at the forking parent's resident size
    # (preexec_fn forks before exec), so it is not compared with the child's limit here
    assert result["max_rss_mib"] > 0.0


def test_a_failing_run_keeps_its_message_and_a_result_line_is_read():
    failed = _run("raise RuntimeError('peer refused')")
    assert failed["status"] == "error" and "peer refused" in failed["message"]
    ok = _run("import json; print(json.dumps({'status': 'ok', 'upper': 1.5, 'seconds': 0.1}))")
    assert (ok["status"], ok["upper"]) == ("ok", 1.5)


# ------------------------------------------------------------------------------ writer


def _args(tmp_path: Path) -> argparse.Namespace:
    return dpsgd.parse_args(["--rows", "r1,tiny-delta", "--output", str(tmp_path / "t.md")])


def _meta(args) -> dict:
    meta = dpsgd_report.metadata(["--rows", "r1,tiny-delta"], args, ROOT)
    meta.update(long_run=60.0, finished="now")
    meta["schedule"] = {"seed": 12, "sigma": (0.8, 1.5), "q": (0.002, 0.01)}
    meta["cut_mass"] = {"r1": {"mass": 2.5e-12, "delta": 1e-5}}
    return meta


def test_writer_keeps_every_cell_and_says_what_happened(tmp_path):
    args = _args(tmp_path)
    r1, tiny = dpsgd.ROWS["r1"], dpsgd.ROWS["tiny-delta"]
    acc = dpsgd.ACCOUNTANTS
    ok = {"status": "ok", "lower": 0.5, "upper": 0.6, "seconds": 2.0, "peak_mib": 100.0}
    results = [
        dpsgd_report.summarise(r1, acc["ours"], [ok, {**ok, "seconds": 4.0}, ok], args),
        dpsgd_report.summarise(r1, acc["dp-pessimistic"], [{"status": "timeout"}], args),
        dpsgd_report.summarise(r1, acc["prv-0.01"], [{"status": "out of memory"}], args),
        dpsgd_report.summarise(r1, acc["prv-0.001"], [ok, {"status": "timeout"}], args),
        dpsgd_report.summarise(
            tiny, acc["dp-optimistic"], [{"status": "not installed", "message": "no"}], args
        ),
        dpsgd_report.summarise(
            tiny, acc["dp-pessimistic"], [{**ok, "lower": None, "upper": math.inf}], args
        ),
        dpsgd_report.summarise(
            tiny, acc["ours"], [{**ok, "lower": None, "upper": None, "note": "straddles"}], args
        ),
    ]
    assert results[0]["seconds"] == 2.0 and results[0]["times"] == [2.0, 4.0, 2.0]
    assert "run 2: timeout" in results[3]["note"]
    text = dpsgd_report.write(results, _meta(args), args)
    assert text == args.output.read_text(encoding="utf-8")
    summary = [line for line in text.splitlines() if line.startswith(("| r1:", "| tiny-delta:"))]
    assert len(summary) == 2
    assert "timeout (> 900 s)" in summary[0] and "out of memory (> 12 GiB)" in summary[0]
    assert "[0.5, 0.6] (0.17 wide), 2 s, 100 MiB" in summary[0]
    assert "not installed" in summary[1] and "inf, 2 s" in summary[1]
    assert "no value (straddles)" in summary[1]
    assert "inside prv eps_error=0.001's interval" in text
    assert "- r1: at most 2.5e-12, 2.5e-07 of delta = 1e-05" in text
    rendered = tmp_path / "again.md"
    assert dpsgd.main(["--render", str(args.json), "--output", str(rendered)]) == 0
    assert rendered.read_text(encoding="utf-8") == text  # the page follows from the JSON
    payload = _strict_json(args.json.read_text(encoding="utf-8"))
    assert len(payload["results"]) == len(results)
    assert payload["results"][5]["upper"] == "inf"
    assert set(payload["rows"]) == {"r1", "tiny-delta"}


# -------------------------------------------------------------------------- end to end


def _script(tmp_path: Path, *argv: str, pythonpath: str = str(ROOT)) -> dict:
    output = tmp_path / "dpsgd.md"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv, "--output", str(output)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == output.read_text(encoding="utf-8").strip()
    return _strict_json(output.with_suffix(".json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_one_tiny_row_with_the_installed_peers(tmp_path):
    payload = _script(tmp_path, "--quick", "--rows", "quick")
    cells = {r["accountant"]: r for r in payload["results"]}
    assert list(cells) == list(dpsgd.ACCOUNTANTS)
    ours = cells["ours"]
    assert ours["status"] == "ok", ours
    assert 0.0 < ours["lower"] <= ours["upper"] < 1.0
    assert ours["seconds"] > 0.0 and ours["peak_mib"] > 0.0
    for key in PEERS:
        installed = importlib.util.find_spec(dpsgd.ACCOUNTANTS[key].module) is not None
        cell = cells[key]
        if not installed:
            assert cell["status"] == "not installed"
            continue
        assert cell["status"] == "ok", cell
        values = [cell[k] for k in ("lower", "estimate", "upper") if cell[k] is not None]
        assert values and all(0.0 < v < 1.0 for v in values)
        assert all(abs(v - ours["upper"]) < 0.05 for v in values)  # the same mechanism


def test_missing_peers_are_cells_saying_not_installed(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for module in ("dp_accounting", "prv_accountant"):
        (blocked / f"{module}.py").write_text("raise ImportError('hidden by the test')\n")
    payload = _script(
        tmp_path,
        *("--quick", "--rows", "quick,quick-het", "--accountants", ",".join(PEERS)),
        pythonpath=os.pathsep.join([str(blocked), str(ROOT)]),
    )
    assert len(payload["results"]) == 2 * len(PEERS)
    assert {r["status"] for r in payload["results"]} == {"not installed"}
    text = (tmp_path / "dpsgd.md").read_text(encoding="utf-8")
    summary = [line for line in text.splitlines() if line.startswith(("| quick:", "| quick-het:"))]
    assert [line.count("| not installed: ") for line in summary] == [len(PEERS)] * 2


@pytest.mark.parametrize(
    ("ours", "expected"),
    [((0.51, 0.59), "inside"), ((0.4, 0.7), "overlapping"), ((0.61, 0.7), "DISJOINT from")],
)
def test_brackets_are_placed_against_prv_at_eps_error_0_001(ours, expected):
    def cell(accountant, lower, upper):
        return {
            "row": "r",
            "accountant": accountant,
            "status": "ok",
            "lower": lower,
            "upper": upper,
        }

    results = [cell("ours", *ours), cell("prv-0.001", 0.5, 0.6), cell("prv-0.01", 0.0, 1.0)]
    assert dpsgd_report.relation(results, "r", "ours", "prv-0.001") == expected
    assert dpsgd_report.relation(results, "r", "ours", "dp-pessimistic") is None
