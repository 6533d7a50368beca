"""``accountant learn``: a plugin subcommand that learns, certifies, compares and saves;
says (and exits 1) when it misses its target, and when it returns the Gaussian; refuses
unwritable paths before training; draws no progress bar off a terminal; prints warnings
as ``note:`` lines; documents every option with its default once. Without torch it
fails in one line naming the [torch] extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import attrs
import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.report.cli import build_parser, main  # noqa: E402
from optimizers import cli as learn_cli  # noqa: E402
from optimizers.problem import Schedule  # noqa: E402
from optimizers.results import LearnedNoise  # noqa: E402

SMALL = ["--bound", "4", "--step", "0.25", "--epsilon", "1", "-n", "2", "--target-delta", "0.2"]
#: A run whose learned noise loses to the truncated Gaussian (tests/optimizers/test_learn_outcome).
POOR = ["--epochs", "1", "--model", "sigmoid", "--sigmoids", "20", "--warm-start", "model"]


def _learn_parser():
    parser = build_parser(commands=("learn",))
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    return subparsers.choices["learn"]


def test_learn_json_output_and_plot(tmp_path, capsys):
    out, png = tmp_path / "out", tmp_path / "noise.png"
    args = ["learn", *SMALL, "--epochs", "150", "--learning-rate", "0.1", "--json"]
    status = main([*args, "--no-progress", "--output", str(out), "--plot", str(png)])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    saved = LearnedNoise.load(out)
    assert summary["delta_certified"] == saved.delta
    assert summary["gaussian_delta_certified"] <= summary["delta_certified"]
    assert summary["target_delta"] == 0.2 and summary["met_target"] is True
    assert summary["beats_baseline"] is True and summary["returned"] == "learned"
    assert summary["notes"] == []
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_default_problem_misses_its_target_in_30_epochs_and_says_so(capsys):
    assert main(["learn", "--epochs", "30", "--no-progress"]) == 1
    text = capsys.readouterr().out
    assert "learned noise" in text and "LP optimum, same delta" in text
    assert "n = 1" in text and "target: MISSED" in text and "target 0.0503" in text
    notes = [line for line in text.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "misses the target delta 0.0503" in notes[0]


def test_a_missed_target_in_json_exits_1_with_the_note_on_stderr(capsys):
    args = [*SMALL[:-1], "1e-4", "--epochs", "5", "--no-progress", "--json"]
    assert main(["learn", *args]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["met_target"] is False and summary["target_delta"] == 1e-4
    assert summary["delta_certified"] > 1e-4
    assert any("misses the target" in note for note in summary["notes"])
    assert any(line.startswith("note: ") for line in captured.err.splitlines())


def test_a_losing_learned_noise_returns_the_gaussian_and_says_so(tmp_path, capsys):
    out = tmp_path / "out"
    # one epoch misses the target too: exit 1
    assert main(["learn", *SMALL, *POOR, "--no-progress", "--output", str(out)]) == 1
    text = capsys.readouterr().out
    assert "returned: the truncated Gaussian" in text
    assert any("does not beat" in line for line in text.splitlines() if line.startswith("note:"))
    saved = LearnedNoise.load(out)
    assert saved.returned == "baseline"
    with np.load(out / "noise.npz") as arrays:
        np.testing.assert_array_equal(arrays["pmf"], saved.baseline.noise.pmf)


@pytest.mark.parametrize(
    ("args", "shown"),
    [(["-n", "8"], "-n 8"), (["--bound", "500", "--step", "0.5"], "--bound 500.0")],
)
def test_the_paper_target_is_not_used_for_another_problem(args, shown, capsys, monkeypatch):
    monkeypatch.setattr(learn_cli, "learn", _no_training)
    assert main(["learn", *args]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and error.startswith("accountant: error: --target-delta")
    assert shown in error and "0.0503" in error


def test_target_zero_is_the_papers_objective(capsys):
    args = [*SMALL[:-1], "0", "--epochs", "5", "--no-compare", "--no-progress", "--json"]
    assert main(["learn", *args]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["target_delta"] is None and summary["met_target"] is None


def _no_training(*args, **kwargs):
    raise AssertionError("training started")


@pytest.mark.parametrize("flag", ["--plot", "--checkpoint", "--output"])
def test_output_paths_are_checked_before_training(flag, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(learn_cli, "learn", _no_training)
    path = str(tmp_path / "missing" / "deeper" / "x.png")
    if flag == "--output":  # a directory may be created, but not inside a file
        (tmp_path / "a_file").write_text("x")
        path = str(tmp_path / "a_file" / "out")
    assert main(["learn", *SMALL, flag, path]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and error.startswith(f"accountant: error: {flag}")


def test_no_progress_bar_when_stderr_is_not_a_terminal():
    # 300 epochs drew 300 bars (about 30 KB) into a pipe; now nothing.
    command = [sys.executable, "-m", "accountant", "learn", *SMALL, "--epochs", "300"]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr
    assert len(result.stderr.encode()) == 0, result.stderr[:500]


def test_warnings_are_note_lines_without_file_and_line():
    # A CertificationWarning during the run (as after Ctrl-C) printed Python's raw
    # "file:line: CertificationWarning: ..." on stderr.
    code = (
        "import sys, warnings\n"
        "from accountant.errors import CertificationWarning\n"
        "import optimizers.cli as cli\n"
        "real = cli.learn\n"
        "def learn(*args, **kwargs):\n"
        "    warnings.warn(CertificationWarning('accuracy 1e-3 not reached'))\n"
        "    return real(*args, **kwargs)\n"
        "cli.learn = learn\n"
        "from accountant.report.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    args = ["learn", *SMALL, "--epochs", "150", "--learning-rate", "0.1", "--no-progress"]
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and ".py:" not in result.stderr
    assert "note: accuracy 1e-3 not reached" in result.stdout.splitlines()


def test_every_option_has_help_showing_its_default_once():
    parser = _learn_parser()
    text = parser.format_help()
    assert "``" not in text and ":class:" not in text and "(default: None)" not in text
    for action in parser._actions:
        assert action.help, action.option_strings
        shown = parser._get_formatter()._get_help_string(action)
        takes_a_value = action.nargs != 0
        assert shown.count("(default: ") == int(takes_a_value), (action.option_strings, shown)


def test_the_schedule_defaults_are_schedules():
    args = _learn_parser().parse_args([])
    for field in attrs.fields(Schedule):
        assert getattr(args, field.name) == getattr(Schedule(), field.name), field.name
    text = _learn_parser().format_help()
    assert f"(default: {Schedule().learning_rate})" in text.replace("\n", " ")


def test_without_torch_one_line_naming_the_extra():
    # A finder that refuses torch, as on a machine without it (sys.modules['torch'] = None
    # would also confuse scipy's array-API checks, which look torch up in sys.modules).
    code = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(\"No module named 'torch'\")\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from accountant.report.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    learn = subprocess.run(
        [sys.executable, "-c", code, "learn"], capture_output=True, text=True, timeout=300
    )
    assert learn.returncode == 2
    assert learn.stderr.strip().count("\n") == 0 and "[torch]" in learn.stderr
    audit = subprocess.run(
        [sys.executable, "-c", code, "audit", "-n", "2", "--bound", "20", "--sigma", "5"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert audit.returncode == 0, audit.stderr
