"""Bad command-line values: ``accountant audit`` and ``accountant learn`` exit with status 2
and exactly one line on stderr naming the argument, never a traceback."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from accountant import (
    CertificationWarning,
)
from accountant.report.cli import main

try:
    import torch
except ImportError:  # pragma: no cover - the [torch] extra is missing
    torch = None


# ---------------------------------------------------------------------------------------
# the command line: exit status 2, exactly one line on stderr naming the argument


def _pmf_files(directory: Path) -> None:
    np.save(directory / "nan.npy", np.array([0.25, np.nan, 0.5, 0.25, 0.0]))
    np.save(directory / "unnormalised.npy", np.array([0.25, 0.5, 0.5]))
    np.save(directory / "empty.npy", np.array([]))
    np.save(directory / "negative.npy", np.array([0.6, -0.1, 0.5]))
    np.save(directory / "strings.npy", np.array(["0.5", "0.5", "0"]))
    (directory / "empty.txt").write_text("")
    (directory / "nan.csv").write_text("0.25,nan,0.25,0.25,0.25\n")
    (directory / "words.txt").write_text("0.25 abc 0.25\n")
    (directory / "fake.npy").write_bytes(b"\x93NUMPY not really")
    (directory / "a_file").write_text("x")
    (directory / "folder.png").mkdir(exist_ok=True)


SMALL_AUDIT = ["-n", "2"]
GAUSSIAN = ["--sigma", "2", "--bound", "4", "--step", "0.5"]  # for the default family
SMALL_LEARN = ["--bound", "4", "--step", "0.25", "--epsilon", "1", "-n", "2"]
LEARN_RUN = [*SMALL_LEARN, "--target-delta", "0.2", "--epochs", "2", "--no-progress"]


def _file(name: str) -> list[str]:
    return ["--family", "file", "--pmf-file", "{tmp}/" + name, "--step", "0.5"]


# (arguments, the argument's name as the message shows it, the value as shown)
AUDIT_CASES = [
    (["--sigma", "inf"], "sigma", "got inf"),
    (["--family", "truncated-laplace", "--scale", "nan"], "scale", "got nan"),
    (["--family", "truncated-laplace", "--scale=-2"], "scale", "got -2.0"),
    (["--family", "staircase", "--stair-epsilon", "nan"], "epsilon", "got nan"),
    (["--family", "staircase", "--stair-epsilon", "0"], "epsilon", "got 0.0"),
    (["--family", "staircase", "--gamma", "1.5"], "gamma", "got 1.5"),
    (["--bound", "nan"], "bound", "got nan"),
    (["--bound", "inf"], "bound", "got inf"),
    (["--bound=-1"], "bound", "got -1.0"),
    (["--step", "0"], "step", "got 0.0"),
    (["--step", "nan"], "step", "got nan"),
    (["--step", "0.3"], "--bound", "(--step=0.3)"),
    (["--step", "1e-7", "--bound", "500"], "--step=1e-07", "with --bound=500.0 makes a grid"),
    (["--sensitivity", "nan"], "sensitivity", "got nan"),
    (["--sensitivity=-1"], "sensitivity", "got -1.0"),
    (["--sensitivity", "inf"], "sensitivity", "got inf"),
    (["--sensitivity", "0.75"], "sensitivity", "sensitivity=0.75 is not a whole number"),
    (["--sampling-rate", "0"], "--sampling-rate", "got 0.0"),
    (["--sampling-rate=-0.1"], "--sampling-rate", "got -0.1"),
    (["--sampling-rate", "nan"], "--sampling-rate", "got nan"),
    (["--sampling-rate", "inf"], "--sampling-rate", "got inf"),
    (["--sampling-rate", "0.1", "--sensitivity", "0.25"], "clip", "clip=0.25"),
    (["-n=-3"], "-n/--compositions", "got -3"),
    (["-n", "nan"], "-n/--compositions", "'nan'"),
    (["-n", "1e3"], "-n/--compositions", "'1e3'"),
    (["--epsilon", "nan"], "epsilon", "got nan"),
    (["--epsilon", "inf"], "epsilon", "got inf"),
    (["--epsilon=-0.1"], "epsilon", "got -0.1"),
    (["--target-delta", "0"], "--target-delta", "got 0.0"),
    (["--target-delta", "nan"], "--target-delta", "got nan"),
    (["--target-delta=-1e-5"], "--target-delta", "got -1e-05"),
    (["--target-delta", "1"], "--target-delta", "got 1.0"),
    (["--target-delta", "1e-12"], "delta", "delta=1e-12"),  # impossible: below omega
    (_file("nan.npy"), "--pmf-file", "got nan at index 1"),
    (_file("nan.csv"), "--pmf-file", "got nan at index 1"),
    (_file("unnormalised.npy"), "--pmf-file", "got sum 1.25"),
    (_file("empty.npy"), "--pmf-file", "must not be empty"),
    (_file("empty.txt"), "--pmf-file", "must not be empty"),
    (_file("negative.npy"), "--pmf-file", "got -0.1 at index 1"),
    (_file("strings.npy"), "--pmf-file", "got dtype <U3"),
    (_file("words.txt"), "--pmf-file", "'abc'"),
    (_file("fake.npy"), "--pmf-file", "fake.npy"),
    (_file("missing.npy"), "--pmf-file", "missing.npy"),
    (["--family", "file", "--pmf-file", "{tmp}"], "--pmf-file", "Is a directory"),
    ([*_file("unnormalised.npy"), "--start", "nan"], "--start", "got nan"),
    ([*_file("unnormalised.npy"), "--start", "-0.5"], "--pmf-file", "got sum 1.25"),
    (["--plot", "{tmp}/a_file/curves.png"], "--plot", "a_file' is not a directory"),
    (["--plot", "{tmp}/folder.png"], "--plot", "folder.png', which is a directory"),
    (["--plot", "{tmp}/missing/curves.png"], "--plot", "missing' does not exist"),
    (["--bits", "54"], "--bits", "must lie in [8, 53], got 54"),
    (["--bits", "7"], "--bits", "must lie in [8, 53], got 7"),
    (["--bits", "2.5"], "--bits", "'2.5'"),
]

#: The grid-free DP-SGD audit (``--noise-multiplier``), added to :data:`GRID_FREE_RUN`.
GRID_FREE_CASES = [
    (["--noise-multiplier", "0"], "--noise-multiplier", "got 0.0"),
    (["--noise-multiplier", "nan"], "--noise-multiplier", "got nan"),
    (["--noise-multiplier", "inf"], "--noise-multiplier", "got inf"),
    (["--cut=-1"], "--cut", "got -1.0"),
    (["--cut", "nan"], "--cut", "got nan"),
    (["--cut", "0.1"], "--cut 0.1 with --noise-multiplier 1", "got cut=0.1"),
    (["--dimension", "0"], "--dimension", "got 0"),
    (["--clip", "nan"], "--clip", "got nan"),
    (["--clip", "0"], "--clip", "got 0.0"),
    (["--steps", "0"], "--steps", "got 0"),
    (["--steps", "2.5"], "--steps", "'2.5'"),
    (["--sampling-rate", "1.5"], "--sampling-rate", "got 1.5"),
    (["--truncation", "gaussian"], "--truncation", "'gaussian'"),
]
GRID_FREE_RUN = ["--noise-multiplier", "1", "--sampling-rate", "0.1", "--steps", "2"]
GRID_FREE_RUN += ["--cut", "3", "--dimension", "5"]

LEARN_CASES = [
    (["--epsilon", "nan"], "epsilon", "got nan"),
    (["--epsilon", "inf"], "epsilon", "got inf"),
    (["--epsilon=-1"], "epsilon", "got -1.0"),
    (["-n", "0"], "times", "got 0"),
    (["-n=-1"], "times", "got -1"),
    (["-n", "2.5"], "-n/--times", "'2.5'"),
    (["--bound", "nan"], "bound", "got nan"),
    (["--bound", "0"], "bound", "got 0.0"),
    (["--bound", "4.1"], "bound", "bound=4.1"),
    (["--step", "nan"], "step", "got nan"),
    (["--step", "0.3"], "bound", "(step=0.3)"),
    (["--sensitivity", "0.3"], "sensitivity", "sensitivity=0.3 is not a whole number"),
    (["--sensitivity", "nan"], "sensitivity", "got nan"),
    (["--sensitivity", "inf"], "sensitivity", "got inf"),
    (["--sensitivity", "9"], "sensitivity", "sensitivity=9.0"),
    (["--sampling-rate", "0"], "q", "got 0.0"),
    (["--sampling-rate", "1.5"], "q", "got 1.5"),
    (["--sampling-rate", "nan"], "q", "got nan"),
    (["--target-delta", "nan"], "target_delta", "got nan"),
    (["--target-delta", "1"], "target_delta", "got 1.0"),
    (["--target-delta=-0.1"], "target_delta", "got -0.1"),
    (["--epochs=-1"], "epochs", "got -1"),
    (["--epochs", "2.5"], "--epochs", "'2.5'"),
    (["--learning-rate", "nan"], "learning_rate", "got nan"),
    (["--learning-rate", "0"], "learning_rate", "got 0.0"),
    (["--learning-rate-decay", "1.5"], "learning_rate_decay", "got 1.5"),
    (["--utility-weight", "inf"], "utility_weight", "got inf"),
    (["--weight-half-life", "0"], "weight_half_life", "got 0.0"),
    (["--weight-min=-1"], "weight_min", "got -1.0"),
    (["--penalty", "nan"], "penalty", "got nan"),
    (["--sigmoids", "0"], "sigmoids", "got 0"),
    (["--seed=-1"], "seed", "got -1"),
    (["--checkpoint-every", "0"], "checkpoint_every", "got 0"),
    (["--utility", "L3"], "--utility", "'L3'"),
    (["--model", "mlp"], "--model", "'mlp'"),
    (["--resume"], "checkpoint", "got None"),
    (["--resume", "--checkpoint", "{tmp}/missing.ckpt"], "checkpoint", "does not exist"),
    (["--resume", "--checkpoint", "{tmp}/a_file"], "checkpoint", "not a checkpoint"),
    (["--checkpoint", "{tmp}/a_file/run.ckpt"], "--checkpoint", "a_file' is not a directory"),
    (["--checkpoint", "{tmp}"], "--checkpoint", "which is a directory"),
    (["--output", "{tmp}/a_file"], "--output", "a_file', which is a file"),
    (["--plot", "{tmp}/a_file/noise.png"], "--plot", "a_file' is not a directory"),
]


def _run_main(args: list[str], tmp_path: Path) -> tuple[int, str, str]:
    _pmf_files(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", CertificationWarning)
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def _assert_one_line(status: int, out: str, err: str, argument: str, shown: str) -> None:
    assert status == 2, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("accountant: error: "), lines[0]
    assert argument in lines[0] and shown in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "argument", "shown"),
    [pytest.param(a, n, s, id=" ".join(a)) for a, n, s in AUDIT_CASES],
)
def test_audit_bad_flag_exits_2_with_one_line(args, argument, shown, tmp_path):
    noise = [] if "--family" in args else GAUSSIAN
    status, out, err = _run_main(["audit", *SMALL_AUDIT, *noise, *args], tmp_path)
    _assert_one_line(status, out, err, argument, shown)


@pytest.mark.parametrize(
    ("args", "argument", "shown"),
    [pytest.param(a, n, s, id=" ".join(a)) for a, n, s in GRID_FREE_CASES],
)
def test_grid_free_audit_bad_flag_exits_2_with_one_line(args, argument, shown, tmp_path):
    status, out, err = _run_main(["audit", *GRID_FREE_RUN, *args], tmp_path)
    _assert_one_line(status, out, err, argument, shown)


@pytest.mark.skipif(torch is None, reason="accountant learn needs the [torch] extra")
@pytest.mark.parametrize(
    ("args", "argument", "shown"),
    [pytest.param(a, n, s, id=" ".join(a)) for a, n, s in LEARN_CASES],
)
def test_learn_bad_flag_exits_2_with_one_line(args, argument, shown, tmp_path):
    status, out, err = _run_main(["learn", *LEARN_RUN, *args], tmp_path)
    _assert_one_line(status, out, err, argument, shown)


def test_no_cli_case_repeats_tests_test_cli():
    from tests.report.test_cli import test_bad_arguments_exit_2_with_one_line as older

    (marker,) = [m for m in older.pytestmark if m.name == "parametrize"]
    older_args = {tuple(args) for args, _ in marker.args[1]}
    ours = {("audit", *args) for args, _, _ in AUDIT_CASES}
    ours |= {("learn", *args) for args, _, _ in LEARN_CASES}
    assert older_args and not (ours & older_args)
    assert len(AUDIT_CASES) == len({tuple(a) for a, _, _ in AUDIT_CASES})
    assert len(LEARN_CASES) == len({tuple(a) for a, _, _ in LEARN_CASES})


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["audit", *SMALL_AUDIT, *GAUSSIAN, "--plot", "{tmp}/a_file/curves.png"],
        pytest.param(
            ["learn", *LEARN_RUN, "--output", "{tmp}/a_file"],
            marks=pytest.mark.skipif(torch is None, reason="needs the [torch] extra"),
        ),
    ],
    ids=["audit-plot-in-a-file", "learn-output-is-a-file"],
)
def test_a_real_process_prints_one_line_and_no_traceback(args, tmp_path):
    _pmf_files(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = subprocess.run(
        [sys.executable, "-m", "accountant", *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
