"""What ``accountant audit`` shows (issue 11, items 5, 6, 8, 10): output paths refused
before any work, the composed floor in an infeasibility message, progress only on a
terminal, warnings as ``note:`` lines, and a plot whose title states n and marks eps."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import accountant.report.audit
from accountant import ExtendedMA, PrivacyBuckets, WorstCasePair, noise
from accountant.errors import InfeasibleTargetError
from accountant.pairs.pld import privacy_loss_distribution
from accountant.report.cli import main

SMALL = ["--sigma", "2", "--bound", "4", "--step", "0.5", "-n", "2"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(argv: list[str], stderr: io.StringIO) -> tuple[int, str, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(stderr):
        status = main(argv)
    return status, out.getvalue(), stderr.getvalue()


# -- item 5: output paths before any work ----------------------------------------------


@pytest.fixture
def no_audit(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the audit ran before the output path was checked")

    monkeypatch.setattr(accountant.report.audit, "audit_additive", refuse)
    monkeypatch.setattr(accountant.report.audit, "audit_pairs", refuse)


@pytest.mark.parametrize(
    "plot",
    ["/nonexistent/x.png", "{tmp}/missing/x.png", "{tmp}/a_file/x.png", "/proc/x.png"],
)
def test_an_unwritable_plot_path_is_refused_before_any_work(plot, tmp_path, no_audit):
    (tmp_path / "a_file").write_text("x")
    plot = plot.replace("{tmp}", str(tmp_path))
    status, out, err = _run(["audit", *SMALL, "--plot", plot], io.StringIO())
    assert status == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("accountant: error: --plot cannot be written") and plot in line


def test_a_missing_matplotlib_is_reported_before_any_work(monkeypatch, tmp_path, no_audit):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    status, _, err = _run(["audit", *SMALL, "--plot", str(tmp_path / "x.png")], io.StringIO())
    assert status == 2 and "[plot] extra" in err and err.startswith("accountant: error: --plot")


# -- item 6: the composed floor ----------------------------------------------------------

ISSUE_6 = ["--sigma", "1", "--bound", "4", "--step", "0.02", "--sampling-rate", "0.01"]


def test_the_infeasible_target_quotes_the_composed_floor_and_a_remedy(capsys):
    assert main(["audit", *ISSUE_6, "-n", "10000", "--target-delta", "1e-5"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "below the distinguishing mass after n = 10000 releases, 0.1198" in line
    assert "one release: 1.276e-05" in line
    assert "a larger bound" in line and "fewer releases" in line


def _dp_sgd_pair() -> WorstCasePair:
    return WorstCasePair.subsampled(noise.truncated_gaussian(1.0, 4.0, 0.02), 0.01, 1.0)


def test_library_messages_say_one_release_or_composed():
    pair = _dp_sgd_pair()
    with pytest.raises(InfeasibleTargetError, match="distinguishing mass of one release"):
        privacy_loss_distribution(pair, "B/A").epsilon(1e-5)
    with pytest.raises(InfeasibleTargetError, match="composed distinguishing mass") as info:
        ExtendedMA().compose(pair, times=10000).epsilon(1e-5)
    assert "0.1197" in str(info.value) and "fewer releases" in str(info.value)
    buckets = PrivacyBuckets().compose(pair, times=100)
    with pytest.raises(InfeasibleTargetError, match="composed distinguishing mass") as info:
        buckets.epsilon(1e-5, "B/A")
    assert "fewer releases" in str(info.value)


# -- item 8: progress on a terminal only, notes ---------------------------------------------


def test_progress_is_shown_on_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    status, out, err = _run(["audit", *SMALL], _Terminal())
    assert status == 0
    for stage in ("Extended MA, n = 2", "PrivacyBuckets composition, n = 2", "audit 5/6"):
        assert stage in err, err
    assert "audit" not in out.split("mechanism:")[0]


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    status, out, err = _run(["audit", *SMALL], io.StringIO())
    assert status == 0 and err == "" and "mechanism:" in out


#: An audit with notes: a one-dimensional DP-SGD pair (its upper bound holds for a
#: 1-coordinate model only) composed a few times.
NOTED = ["audit", "--sigma", "2", "--bound", "8", "--step", "0.5", "--sampling-rate", "0.1"]
NOTED += ["-n", "10"]


@pytest.mark.slow
def test_warnings_are_note_lines_without_file_or_line():
    result = subprocess.run(
        [sys.executable, "-m", "accountant", *NOTED], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stdout.splitlines() if line.startswith("note: ")]
    assert any("1-coordinate model only" in n for n in notes), result.stdout
    assert "Warning" not in result.stdout + result.stderr
    assert ".py:" not in result.stdout + result.stderr


def test_the_quick_start_audit_ends_without_a_note():
    """The paper's default audit reaches the accuracy it asks for (its PDP bracket spans a
    lattice atom at eps, reported as such, not as a missed accuracy)."""
    result = subprocess.run(
        [sys.executable, "-m", "accountant", "audit"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "note:" not in result.stdout + result.stderr, result.stdout


def test_json_keeps_stdout_clean_and_prints_notes_on_stderr(capsys):
    assert main([*NOTED, "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.out.lstrip().startswith("{") and "note:" not in captured.out
    # progress lines ("accountant audit: 10 s, ...") appear when a run is slow
    lines = [
        line
        for line in captured.err.strip().splitlines()
        if not line.startswith("accountant audit: ")
    ]
    assert lines and all(line.startswith("note: ") for line in lines)


# -- item 10: the plot states n and marks eps ----------------------------------------------


@pytest.fixture
def saved_figures(monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    figures = []
    real = Figure.savefig

    def capture(self, *args, **kwargs):
        figures.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return figures


def _marks(axes) -> tuple[list[float], list[float]]:
    vertical = [ln.get_xdata()[0] for ln in axes.lines if len(set(ln.get_xdata())) == 1]
    horizontal = [ln.get_ydata()[0] for ln in axes.lines if len(set(ln.get_ydata())) == 1]
    return vertical, horizontal


def test_the_plot_title_states_n_and_marks_the_requested_eps(saved_figures, tmp_path):
    status, _, _ = _run(
        ["audit", *SMALL[:-1], "8", "--epsilon", "0.7", "--plot", str(tmp_path / "a.png")],
        io.StringIO(),
    )
    assert status == 0
    (axes,) = saved_figures[-1].axes
    assert "n = 8" in axes.get_title() and "eps = 0.7" in axes.get_title()
    assert "sigma 2" in axes.get_title()
    vertical, _ = _marks(axes)
    assert 0.7 in vertical


def test_the_plot_of_an_eps_query_marks_the_target_and_the_eps_found(saved_figures, tmp_path):
    argv = ["audit", *SMALL, "--target-delta", "0.1", "--plot", str(tmp_path / "b.png"), "--json"]
    status, out, _ = _run(argv, io.StringIO())
    assert status == 0
    (axes,) = saved_figures[-1].axes
    vertical, horizontal = _marks(axes)
    assert 0.1 in horizontal
    found = json.loads(out)["results"]["privacy_buckets"]["adp"]["upper"]
    assert found["reported"] in vertical
    assert "n = 2" in axes.get_title()


@pytest.mark.parametrize(
    "args",
    [
        ["--family", "uniform", "--bound", "4", "--step", "0.5", "-n", "10"],  # mass 0.71
        ["--sigma", "1", "--bound", "4", "--step", "0.5", "--sensitivity", "8.5"],  # mass 1
    ],
)
def test_a_plot_with_a_composed_mass_near_one_is_drawn(args, saved_figures, tmp_path):
    status, _, err = _run(["audit", *args, "--plot", str(tmp_path / "c.png")], io.StringIO())
    assert status == 0, err
    assert saved_figures


def test_the_plot_draws_and_names_the_requested_direction(saved_figures, tmp_path):
    argv = ["audit", *SMALL, "--sampling-rate", "0.1", "--direction", "A/B"]
    status, _, err = _run([*argv, "--plot", str(tmp_path / "d.png")], io.StringIO())
    assert status == 0, err
    (axes,) = saved_figures[-1].axes
    assert "direction A/B" in axes.get_title()
    _, horizontal = _marks(axes)
    assert 0.0 in horizontal  # A/B of the DP-SGD pair has no distinguishing events


def test_the_getting_started_page_shows_the_current_audit_within_90_columns():
    text = (Path(__file__).resolve().parents[2] / "docs" / "getting-started.md").read_text()
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        widest = max(block.splitlines(), key=len)
        assert len(widest) <= 90, widest
    shown = next(b for b in blocks if b.startswith("mechanism:"))
    assert "query: delta at eps = 0.3 after n = 128 releases; direction max" in shown
    assert "PrivacyBuckets ADP delta upper, n = 128" in shown
