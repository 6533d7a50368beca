"""Work too large for the machine, or simply long, on the command line (issue 25, C): a
grid that memory cannot hold is refused in one line naming --step/--bound and the memory
before anything is allocated; a composition the bucket budget cannot hold names the
count as it was given (-n/--compositions, --steps; times in Python); an audit that runs
long prints a progress line every few seconds when stderr is not a terminal."""

from __future__ import annotations

import io
import itertools
import time
import tracemalloc

import pytest

import accountant.report.audit as audit_module
import accountant.report.cli_audit as cli_audit
from accountant import InvalidInputError, WorstCasePair, noise
from accountant.report.audit import audit_pairs
from accountant.report.cli import main
from accountant.report.cli_audit import ProgressLines

GRID = ["--sigma", "2", "--bound", "6", "--step", "0.5"]
TOO_MANY = "100000000000000000000"


def refused(capsys, *args: str) -> str:
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    assert lines[0].startswith("accountant: error: ") and "Traceback" not in captured.err
    return lines[0]


# -- memory -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["audit"], ["sample", "-n", "3"]])
def test_a_grid_memory_cannot_hold_is_refused_before_it_is_allocated(capsys, command):
    """The issue's --step 1e-7 on the default bound 500: 10^10 points, about 745 GiB to
    build (numpy failed at 74.5 GiB with a 20-line traceback)."""
    tracemalloc.start()
    try:
        line = refused(capsys, *command, "--step", "1e-7")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "--step=1e-07 with --bound=500.0" in line
    assert "10,000,000,001 points" in line and "745 GiB" in line
    assert "use a larger --step or a smaller --bound" in line
    assert peak < 50 * 2**20  # nothing of the grid's size was allocated


def test_memory_that_runs_out_later_in_the_audit_is_refused_naming_the_grid(capsys, monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 74.5 GiB")

    monkeypatch.setattr(audit_module, "audit_additive", exhausted)
    line = refused(capsys, "audit", *GRID, "-n", "2")
    assert "ran out of memory (Unable to allocate 74.5 GiB)" in line
    assert "--step 0.5 and --bound 6" in line


# -- releases -----------------------------------------------------------------------------


#: Doubling the bucket width until 10^20 releases fit overflows exp() in
#: accountant/buckets/rounding.py (mass_b = exp(ln A - g)) before the budget refusal; the
#: refusal is what these tests check.
OVERFLOW = pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")


@OVERFLOW
@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (["-n", TOO_MANY], f"-n/--compositions {TOO_MANY}:"),
        (["--sampling-rate", "0.1", "--steps", TOO_MANY], f"--steps {TOO_MANY}:"),
    ],
    ids=["-n", "--steps"],
)
def test_a_composition_the_buckets_cannot_hold_names_the_count(capsys, count, shown):
    line = refused(capsys, "audit", *GRID, *count)
    assert shown in line and "does not fit the PrivacyBuckets bucket budget" in line
    assert "max_buckets=" in line and "audit fewer releases" in line


@OVERFLOW
def test_in_python_the_refusal_names_times():
    pair = WorstCasePair.additive(noise.truncated_gaussian(2.0, 6.0, 0.5), 1.0)
    with pytest.raises(InvalidInputError, match=rf"^times={TOO_MANY}: the composition of"):
        audit_pairs(pair, int(TOO_MANY))


# -- progress -----------------------------------------------------------------------------


def test_progress_lines_start_after_the_delay_then_come_every_interval():
    """A clock the test sets: nothing before 10 s, then one line per 10 s, each with the
    elapsed time and the stage."""
    now = [100.0]
    stream = io.StringIO()
    lines = ProgressLines("accountant audit", stream, clock=lambda: now[0])
    for at, status in [(100.0, "a"), (109.9, "b"), (110.0, "c"), (115.0, "d"), (120.5, "e")]:
        now[0] = at
        lines.update(status)
    assert stream.getvalue().splitlines() == [
        "accountant audit: 10 s, c",
        "accountant audit: 20 s, e",
    ]


def test_a_long_stage_without_updates_is_reported_by_the_thread(monkeypatch):
    monkeypatch.setattr(cli_audit, "PROGRESS_INTERVAL", 1e-3)  # the thread ticks each ms
    ticks = itertools.count()
    stream = io.StringIO()
    with ProgressLines("accountant audit", stream, clock=lambda: 20.0 * next(ticks)) as lines:
        lines.update("stage 4/6: PrivacyBuckets composition, n = 14062")
        for _ in range(500):  # polls until the thread has written (within ms)
            if stream.getvalue().count("\n") >= 2:
                break
            time.sleep(0.01)
    written = stream.getvalue().splitlines()
    assert len(written) >= 2
    assert all(line.endswith("PrivacyBuckets composition, n = 14062") for line in written)


def test_an_audit_whose_stderr_is_not_a_terminal_prints_progress_lines(capsys, monkeypatch):
    monkeypatch.setattr(cli_audit, "PROGRESS_DELAY", 0.0)  # every stage is "long"
    monkeypatch.setattr(cli_audit, "PROGRESS_INTERVAL", 0.0)
    assert main(["audit", *GRID, "-n", "4"]) == 0
    captured = capsys.readouterr()
    assert "mechanism:" in captured.out and "accountant audit:" not in captured.out
    progress = [line for line in captured.err.splitlines() if line.startswith("accountant audit:")]
    for stage in (
        "stage 1/6: privacy-loss distributions of one release",
        "stage 2/6: Extended MA, n = 4",
        "stage 4/6: PrivacyBuckets composition, n = 4",
    ):
        assert any(line.endswith(stage) for line in progress), captured.err
    # the thread may also write before the first stage: "<elapsed> s, starting"
    assert all(" s, stage " in line or line.endswith(" s, starting") for line in progress)
