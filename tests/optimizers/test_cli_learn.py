"""``accountant learn``: a plugin subcommand that learns, certifies, compares and saves;
without torch it fails in one line naming the [torch] extra."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.cli import main  # noqa: E402
from optimizers.results import LearnedNoise  # noqa: E402

SMALL = ["--bound", "4", "--step", "0.25", "--epsilon", "1", "-n", "2", "--target-delta", "0.2"]


def test_learn_json_output_and_plot(tmp_path, capsys):
    out, png = tmp_path / "out", tmp_path / "noise.png"
    args = ["learn", *SMALL, "--epochs", "20", "--no-progress", "--json"]
    status = main([*args, "--output", str(out), "--plot", str(png)])
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    saved = LearnedNoise.load(out)
    assert summary["delta_certified"] == saved.delta
    assert summary["gaussian_delta_certified"] <= summary["delta_certified"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_default_problem_prints_the_lp_yardstick(capsys):
    assert main(["learn", "--epochs", "30", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "learned noise" in text and "LP optimum, same delta" in text
    assert "n = 1" in text


def test_bad_arguments_exit_2_with_one_line(capsys):
    assert main(["learn", "--epochs", "0"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "epochs" in error


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
        "from accountant.cli import main\n"
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
