"""A cold start users do not notice (issue 26): ``import accountant`` and the parser of
``accountant --help`` load neither scipy nor numba (nor torch, nor a plugin), and the
first run of a command that compiles the numba kernels says so, once, on stderr.

Each check runs in a fresh interpreter (a module imported by an earlier test would hide
an import). A module that imports scipy or numba too early is named in the failure with
the line of ``accountant`` that imported it. Times are measured in
``benchmarks/cold_start.py``, never asserted here.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accountant.numerics import lazy
from accountant.report.terminal import show_notes

ROOT = Path(__file__).resolve().parent.parent
NOTE = "note: " + lazy.COMPILING_NOTE

#: Records, for each heavy package, the line of ``accountant`` (or ``optimizers``) whose
#: import first loaded it; then runs the code after it and prints what was loaded.
WATCH = """
import json, sys, traceback

HEAVY = {heavy!r}
first = {{}}


class Watch:
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in HEAVY and top not in first:
            ours = [
                f"{{f.filename}}:{{f.lineno}}"
                for f in traceback.extract_stack()
                if "/accountant/" in f.filename or "/optimizers/" in f.filename
            ]
            first[top] = ours[-1] if ours else "outside accountant"
        return None


sys.meta_path.insert(0, Watch())
{code}
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set(HEAVY))
print("\\nRESULT " + json.dumps({{name: first.get(name, "?") for name in loaded}}))
"""


def _loaded_by(code: str, heavy: tuple[str, ...]) -> dict[str, str]:
    """``{package: line of accountant that first imported it}`` after running ``code``."""
    script = WATCH.format(heavy=heavy, code=code)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, (done.stdout, done.stderr)
    return json.loads(lines[-1][len("RESULT ") :])


def test_import_accountant_loads_neither_scipy_nor_numba():
    loaded = _loaded_by("import accountant", ("scipy", "numba", "llvmlite"))
    assert loaded == {}, loaded


def test_the_help_parser_loads_no_scipy_numba_torch_or_plugin():
    code = (
        "from accountant.report.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "from accountant.report.cli import build_parser\n"
        "build_parser(commands=())\n"
    )
    loaded = _loaded_by(code, ("scipy", "numba", "llvmlite", "torch", "optimizers"))
    assert loaded == {}, loaded


# ---------------------------------------------------------------------------------------
# the first-run note of the command line

SMALL_AUDIT = ["audit", "--sigma", "2", "--bound", "4", "--step", "0.5", "-n", "2"]


def _audit(cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "accountant", *SMALL_AUDIT],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )


def test_the_first_run_says_once_that_numba_compiles_and_a_warm_run_says_nothing(tmp_path):
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    first = _audit(cache)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines().count(NOTE) == 1, first.stderr
    assert list(cache.rglob("*.nbi"))  # the kernels were cached there
    warm = _audit(cache)
    assert warm.returncode == 0, warm.stderr
    assert NOTE not in warm.stderr
    assert warm.stdout.splitlines()[0] == first.stdout.splitlines()[0]


def test_show_notes_prints_info_records_as_note_lines_once(capsys):
    logger = logging.getLogger("accountant.tests.cold_start")
    try:
        show_notes(logger)
        show_notes(logger)  # no second handler
        logger.info("compiling\nsomething")
        logger.debug("not shown")
        assert capsys.readouterr().err == "note: compiling something\n"
    finally:
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)


# ---------------------------------------------------------------------------------------
# the benchmark script


def test_cold_start_benchmark_reports_every_figure(tmp_path):
    output = tmp_path / "cold-start.json"
    script = ROOT / "benchmarks" / "cold_start.py"
    done = subprocess.run(
        [sys.executable, str(script), "--runs", "1", "--no-compile-run", "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert {"machine", "started", "load_average", "runs"} <= set(report["meta"])
    for name in ("import accountant", "accountant --help", "first query", "warm query"):
        assert name in report["seconds"] and name in done.stdout
    assert set(report["modules"]) == {"import accountant", "accountant --help"}


@pytest.mark.parametrize("runs", ["0", "-1"])
def test_cold_start_benchmark_refuses_no_runs(runs):
    script = ROOT / "benchmarks" / "cold_start.py"
    done = subprocess.run(
        [sys.executable, str(script), "--runs", runs], capture_output=True, text=True
    )
    assert done.returncode == 2 and f"--runs must be at least 1, got {runs}" in done.stderr
