"""``accountant sweep``: a plugin subcommand; every option checked before any work (one
line naming the option and the value, exit 2); a table or JSON of the results at the
end; finished runs in the store are not run again."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.report.cli import main
from optimizers.sweep import SweepSpec, SweepStore, run_task
from optimizers.sweep.cli import _spec
from tests.optimizers.sweep.conftest import TINY

pytestmark = pytest.mark.filterwarnings("ignore::optimizers.results.LearningWarning")

GRID = ["--epsilons", "0.5,1", "--times", "2", "--losses", "MA"]
SHARED = ["--bound", "4", "--step", "0.25", "--target-deltas", "0.2"]
SCHEDULE = ["--epochs", "30", "--learning-rate", "0.1", "--checkpoint-every", "10"]
ARGS = [*GRID, *SHARED, *SCHEDULE, "--no-progress"]


def _sweep_parser_args(argv: list[str]):
    from accountant.report.cli import build_parser

    return build_parser(commands=("sweep",)).parse_args(["sweep", *argv, "--store", "unused"])


def test_the_options_make_the_spec_of_the_api():
    args = _sweep_parser_args([*ARGS, "--sampling-rates", "additive,0.5", "--seeds", "0,2"])
    spec = _spec(args)
    assert spec == SweepSpec(
        **(TINY | {"losses": ["MA"]}), sampling_rates=[None, 0.5], seeds=[0, 2]
    )
    # --target-deltas 0, as --target-delta 0 for accountant learn: no target, the
    # paper's objective; a list sweeps the targets.
    targets = _spec(_sweep_parser_args([*ARGS, "--target-deltas", "0,0.1"])).target_deltas
    assert targets == (None, 0.1)
    cold = _spec(_sweep_parser_args([*ARGS, "--warm-start", "model"]))
    assert cold.schedule.warm_start == "model"


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> SweepStore:
    """The CLI's two runs, run in this process and stored."""
    args = _sweep_parser_args(ARGS)
    store = SweepStore(tmp_path_factory.mktemp("cli") / "store")
    for task in _spec(args).tasks():
        store.save(run_task(task))
    return store


def test_a_finished_sweep_prints_its_table_without_running(stored, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in stored.directory.iterdir()}
    assert main(["sweep", *ARGS, "--store", str(stored.directory)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["run", "id", "eps"] and "target delta" in out[0]
    assert "certified delta" in out[0]
    rows = [line.split() for line in out[1:3]]
    results = {r.run_id: r for r in stored.results()}
    for row in rows:
        result = results[row[0]]
        assert row[1:7] == ["0.5" if result.task.problem.epsilon == 0.5 else "1", "2", "L1",
                            "MA", "additive", "0"]  # fmt: skip
        assert float(row[7]) == result.task.problem.target_delta == 0.2
        assert float(row[8]) == pytest.approx(result.delta_certified, rel=1e-6)
    assert out[3] == "2 runs finished: 0 run now, 2 found in the store"
    assert {p.name: p.stat().st_mtime_ns for p in stored.directory.iterdir()} == before


def test_json_output(stored, capsys):
    assert main(["sweep", *ARGS, "--store", str(stored.directory), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["ran"] == [] and len(record["skipped"]) == 2 and record["failed"] == []
    runs = {run["run_id"]: run for run in record["runs"]}
    for result in stored.results():
        run = runs[result.run_id]
        assert run["delta_certified"] == result.delta_certified
        assert run["problem"] == result.task.problem.to_dict()
        assert run["schedule"]["seed"] == 0 and run["epochs_run"] == 30


@pytest.mark.slow
def test_a_real_sweep_in_a_fresh_process(tmp_path):
    command = [sys.executable, "-m", "accountant", "sweep", *ARGS, "--epsilons", "1"]
    command += ["--store", str(tmp_path / "store"), "--workers", "1", "--json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert len(record["ran"]) == 1 and record["skipped"] == []
    assert SweepStore(tmp_path / "store").finished_ids() == set(record["ran"])
    assert result.stderr == ""  # no progress bar off a terminal


@pytest.mark.parametrize(
    ("args", "option", "shown"),
    [
        (["--epsilons", "a,b"], "--epsilons", "'a,b'"),
        (["--epsilons", "0.5,-1"], "--epsilons", "-1.0"),
        (["--epsilons", "0.5,0.5"], "--epsilons", "0.5"),
        (["--times", "2.5"], "--times", "'2.5'"),
        (["--times", "0"], "--times", "0"),
        (["--utilities", "L1,L9"], "--utilities", "'L9'"),
        (["--losses", "ADP,"], "--losses", "''"),
        (["--sampling-rates", "additive,2"], "--sampling-rates", "2.0"),
        (["--sampling-rates", "none"], "--sampling-rates", "'none'"),
        (["--seeds", "-3"], "--seeds", "-3"),
        (["--bound", "nan"], "--bound", "nan"),
        (["--step", "-0.25"], "--step", "-0.25"),
        (["--sensitivity", "0"], "--sensitivity", "0.0"),
        (["--target-deltas", "1.5"], "--target-deltas", "1.5"),
        (["--target-deltas", "0.1,x"], "--target-deltas", "'0.1,x'"),
        (["--warm-start", "lp"], "--warm-start", "'lp'"),
        (["--conversion", "loose"], "--conversion", "'loose'"),
        (["--losses", "ADP", "--conversion", "paper"], "--conversion", "'paper'"),
        (["--bucket-width", "0.01"], "--bucket-width", "0.01"),
        (["--bucket-width", "-1", "--losses", "ADP"], "--bucket-width", "-1.0"),
        (["--epochs", "0"], "--epochs", "0"),
        (["--learning-rate", "inf"], "--learning-rate", "inf"),
        (["--checkpoint-every", "0"], "--checkpoint-every", "0"),
        (["--checkpoint-every", "5", "--no-checkpoints"], "--checkpoint-every", "5"),
        (["--workers", "0"], "--workers", "0"),
        (["--scheduler", ""], "--scheduler", "''"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "--workers", "2"),
        (["--store", "{tmp}/a_file"], "--store", "a_file"),
    ],
)
def test_bad_options_exit_2_with_one_line_before_any_work(args, option, shown, tmp_path, capsys):
    (tmp_path / "a_file").write_text("x")
    store = ["--store", str(tmp_path / "store")]
    argv = ["sweep", *ARGS, *store, *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("accountant: error: "), captured.err
    assert option in lines[0] and shown in lines[0], lines[0]
    assert captured.out == "" and not (tmp_path / "store").exists()


def test_a_missing_required_option_is_named(tmp_path, capsys):
    assert main(["sweep", "--times", "2", "--store", str(tmp_path)]) == 2
    assert "--epsilons" in capsys.readouterr().err


def test_a_scheduler_without_dask_names_the_cluster_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)
    store = str(tmp_path / "store")
    assert main(["sweep", *ARGS, "--store", store, "--scheduler", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "[cluster]" in err and "\n" not in err
    assert not (tmp_path / "store").exists()
