"""The learner never loses work: SIGTERM (from the command line and through the Python
API) stops it with a checkpoint from which a resumed run gives exactly the uninterrupted
result with the same seed; corrupted or mismatched checkpoints are refused in one line;
checkpoint writes are atomic (never a partial file, no temporary files left behind).

Complements ``tests/optimizers/test_learner.py`` (resume equality, SIGINT, epsilon and
learning-rate mismatches, a truncated file, a missing file)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.report.cli import build_parser, main  # noqa: E402
from optimizers.checkpoints import (  # noqa: E402
    FORMAT,
    VERSION,
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from optimizers.cli import _problem as cli_problem  # noqa: E402
from optimizers.cli import _schedule as cli_schedule  # noqa: E402
from optimizers.learner import learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402

SMALL = ["--bound", "4", "--step", "0.25", "--epsilon", "1", "-n", "2", "--target-delta", "0.2"]
QUIET = ["--no-progress", "--no-compare"]
#: Generous upper limit for waiting on a subprocess or a file (never reached in practice).
PATIENCE = 600.0


def _problem(**changes) -> LearningProblem:
    values = {"bound": 4.0, "step": 0.25, "epsilon": 1.0, "times": 2, "target_delta": 0.2}
    return LearningProblem(**(values | changes))


def _schedule(**changes) -> Schedule:
    values = {"epochs": 30, "learning_rate": 0.1, "checkpoint_every": 7}
    return Schedule(**(values | changes))


def _learn_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "accountant", "learn", *SMALL, *QUIET, *args]


def _wait_for(path: Path, process: subprocess.Popen) -> None:
    """Poll until ``path`` exists (the learner writes it only inside its training loop,
    after its signal handlers are installed)."""
    deadline = time.monotonic() + PATIENCE
    while not path.exists():
        if process.poll() is not None:
            _out, err = process.communicate()
            pytest.fail(f"learn exited with {process.returncode} before checkpointing: {err}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no checkpoint at {path} within {PATIENCE} s")
        time.sleep(0.02)


def _saved_pmf(directory: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(directory / "noise.npz") as arrays:
        return arrays["pmf"].copy(), arrays["history_objective"].copy()


def _cli_run(args: list[str]) -> tuple[LearningProblem, Schedule]:
    parsed = build_parser().parse_args(["learn", *SMALL, *args])
    return cli_problem(parsed), cli_schedule(parsed)


# ---------------------------------------------------------------------------------------
# (a) SIGTERM through the command line, then --resume


@pytest.mark.slow
def test_sigterm_from_the_command_line_then_resume_equals_an_uninterrupted_run(tmp_path):
    checkpoint, stopped_out = tmp_path / "run.ckpt", tmp_path / "out"
    long_run = ["--epochs", "1000000", "--checkpoint", str(checkpoint), "--output"]
    process = subprocess.Popen(
        _learn_command(*long_run, str(stopped_out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(checkpoint, process)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=PATIENCE)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip() == ""  # --no-progress: nothing on stderr
    reports = [line for line in out.splitlines() if "stopped by" in line]
    assert len(reports) == 1 and reports[0].startswith("stopped by SIGTERM after "), out
    assert (stopped_out / "noise.npz").is_file()  # the stopped run's best noise is kept

    # The checkpoint is a full, loadable checkpoint of this run.
    problem, schedule = _cli_run(long_run[:-1])
    state = load_checkpoint(checkpoint, problem, schedule)
    raw = torch.load(checkpoint, map_location="cpu", weights_only=True)
    epoch = int(raw["epoch"])
    assert state["format"] == FORMAT and 0 < epoch < 1_000_000
    assert epoch == int(reports[0].split("after ")[1].split()[0])
    assert len(state["history"]["objective"]) == epoch

    # Resume to epoch + 10 and, concurrently, run the same 10 + epoch epochs uninterrupted.
    total = str(epoch + 10)
    resumed_out, whole_out = tmp_path / "resumed", tmp_path / "whole"
    resume_args = ["--epochs", total, "--checkpoint", str(checkpoint), "--resume"]
    resume = subprocess.Popen(
        _learn_command(*resume_args, "--output", str(resumed_out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    whole = subprocess.run(
        _learn_command("--epochs", total, "--output", str(whole_out)),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    resume_out, resume_err = resume.communicate(timeout=PATIENCE)
    assert resume.returncode == 0, resume_err
    assert whole.returncode == 0, whole.stderr
    assert f"{total} epochs in" in resume_out and f"{total} epochs in" in whole.stdout
    resumed_pmf, resumed_objective = _saved_pmf(resumed_out)
    whole_pmf, whole_objective = _saved_pmf(whole_out)
    np.testing.assert_array_equal(resumed_pmf, whole_pmf)
    np.testing.assert_array_equal(resumed_objective, whole_objective)
    assert int(torch.load(checkpoint, weights_only=True)["epoch"]) == epoch + 10


# ---------------------------------------------------------------------------------------
# (b) SIGTERM through the Python API


def test_sigterm_through_the_api_stops_cleanly_and_resumes(tmp_path):
    problem = _problem()
    path = tmp_path / "run.ckpt"
    stop_sent = threading.Event()

    def terminate_after_first_checkpoint() -> None:
        # The first checkpoint is written inside the training loop, so the learner's
        # SIGTERM handler is installed by then.
        deadline = time.monotonic() + PATIENCE
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)
        stop_sent.set()

    def refuse_to_die(number, frame) -> None:  # a safety net: never kill the test runner
        raise AssertionError("SIGTERM arrived outside learn()")

    previous = signal.signal(signal.SIGTERM, refuse_to_die)
    watcher = threading.Thread(target=terminate_after_first_checkpoint, daemon=True)
    try:
        watcher.start()
        stopped = learn(
            problem,
            _schedule(epochs=10**6, checkpoint_every=1),
            checkpoint=path,
            progress=False,
            compare=False,
            time_limit=PATIENCE,  # fails the assertions below instead of hanging
        )
        watcher.join(PATIENCE)
        assert signal.getsignal(signal.SIGTERM) is refuse_to_die  # handler restored
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stop_sent.is_set()
    assert stopped.stopped_by == "SIGTERM"
    assert 0 < stopped.epochs_run < 10**6
    saved = torch.load(path, weights_only=True)
    assert saved["epoch"] == stopped.epochs_run  # the final checkpoint has every epoch

    total = stopped.epochs_run + 10
    resumed = learn(
        problem,
        _schedule(epochs=total),  # checkpoint_every may change on resume
        checkpoint=path,
        resume=True,
        progress=False,
        compare=False,
    )
    whole = learn(problem, _schedule(epochs=total), progress=False, compare=False)
    np.testing.assert_array_equal(resumed.noise.pmf, whole.noise.pmf)
    np.testing.assert_array_equal(resumed.history["objective"], whole.history["objective"])
    assert resumed.epochs_run == whole.epochs_run == total


# ---------------------------------------------------------------------------------------
# (b2) a run refining its bucket width (Schedule.refine_every) resumes exactly

# ---------------------------------------------------------------------------------------
# (c) corrupted or mismatched checkpoints


@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory) -> Path:
    """A valid checkpoint of ``_problem()`` / ``_schedule()`` after 7 epochs."""
    path = tmp_path_factory.mktemp("checkpoints") / "good.ckpt"
    learn(_problem(), _schedule(epochs=7), checkpoint=path, progress=False, compare=False)
    return path


def _copy(source: Path, target: Path, transform=None) -> Path:
    data = source.read_bytes()
    target.write_bytes(data if transform is None else transform(data))
    return target


def _tampered(source: Path, target: Path, change) -> Path:
    state = torch.load(source, weights_only=True)
    change(state)
    torch.save(state, target)
    return target


@pytest.mark.parametrize(
    ("schedule_changes", "field", "shown"),
    [
        ({"seed": 1}, "seed", "seed: checkpoint 0, now 1"),
        ({"model": "sigmoid", "sigmoids": 20}, "model", "model: checkpoint 'increments', now"),
        ({"warm_start": "model"}, "warm_start", "warm_start: checkpoint 'gaussian', now 'model'"),
        ({"penalty": 50.0}, "penalty", "penalty: checkpoint 100.0, now 50.0"),
        ({"refine_every": 5}, "refine_every", "refine_every: checkpoint None, now 5"),
    ],
)
def test_a_checkpoint_of_another_run_is_refused_naming_the_field(
    good_checkpoint, schedule_changes, field, shown
):
    with pytest.raises(CheckpointError) as info:
        learn(
            _problem(),
            _schedule(**schedule_changes),
            checkpoint=good_checkpoint,
            resume=True,
            progress=False,
            compare=False,
        )
    message = str(info.value)
    assert "\n" not in message and field in message and shown in message
    assert "belongs to another run" in message and str(good_checkpoint) in message


def test_a_checkpoint_of_another_problem_is_refused_naming_the_field(good_checkpoint):
    with pytest.raises(CheckpointError, match=r"times: checkpoint 2, now 3") as info:
        learn(_problem(times=3), _schedule(), checkpoint=good_checkpoint, resume=True)
    assert "\n" not in str(info.value)


BROKEN = {
    "garbage": (lambda good, path: path.write_bytes(b"not a checkpoint at all"), "corrupted"),
    "empty": (lambda good, path: path.write_bytes(b""), "corrupted"),
    "truncated_half": (
        lambda good, path: _copy(good, path, lambda data: data[: len(data) // 2]),
        "corrupted",
    ),
    "flipped_bytes": (
        lambda good, path: _copy(good, path, lambda data: data[:40] + b"\xff" * 64 + data[104:]),
        "corrupted",
    ),
    "torch_pickle_of_something_else": (
        lambda good, path: torch.save({"x": 1}, path),
        "is not a learning checkpoint",
    ),
    "torch_pickle_of_a_list": (
        lambda good, path: torch.save([1, 2, 3], path),
        "is not a learning checkpoint",
    ),
    "other_format_version": (
        lambda good, path: _tampered(good, path, lambda s: s.update(version=VERSION + 1)),
        f"has format version {VERSION + 1}; this version reads {VERSION}",
    ),
    "missing_entries": (
        lambda good, path: _tampered(good, path, lambda s: [s.pop("model"), s.pop("best")]),
        "is incomplete (missing model, best)",
    ),
    "tensors_that_do_not_fit": (
        lambda good, path: _tampered(
            good, path, lambda s: s.update(model={"theta": torch.zeros(3, dtype=torch.float64)})
        ),
        "does not fit this run's model (",
    ),
    "a_directory": (lambda good, path: path.mkdir(), "does not exist"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_checkpoint_is_refused_in_one_line(good_checkpoint, tmp_path, kind):
    make, needle = BROKEN[kind]
    path = tmp_path / "broken.ckpt"
    make(good_checkpoint, path)
    with pytest.raises(CheckpointError) as info:
        learn(_problem(), _schedule(), checkpoint=path, resume=True, progress=False)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "\n" not in message
    assert message.startswith(f"checkpoint={str(path)!r} ") and needle in message


@pytest.mark.parametrize(
    ("kind", "extra", "needle"),
    [
        ("garbage", [], "is corrupted or not a checkpoint"),
        ("torch_pickle_of_something_else", [], "is not a learning checkpoint"),
        ("good", ["--seed", "3"], "seed: checkpoint 0, now 3"),
        ("good", ["--learning-rate-decay", "0.5"], "learning_rate_decay: checkpoint 0.999"),
    ],
)
def test_the_command_line_refuses_bad_checkpoints_with_exit_2(
    good_checkpoint, tmp_path, capsys, kind, extra, needle
):
    if kind == "good":
        # a checkpoint the command line itself would write: CLI defaults, seed 0
        path = tmp_path / "cli.ckpt"
        problem, schedule = _cli_run(["--epochs", "3"])
        learn(problem, schedule, checkpoint=path, progress=False, compare=False)
    else:
        path = tmp_path / "broken.ckpt"
        BROKEN[kind][0](good_checkpoint, path)
    args = ["learn", *SMALL, *QUIET, "--epochs", "5", "--checkpoint", str(path), "--resume"]
    status = main([*args, *extra])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("accountant: error: checkpoint=") and needle in lines[0]


def test_resume_without_a_checkpoint_is_refused(capsys):
    with pytest.raises(ValueError, match=r"checkpoint must be a file path when resume=True"):
        learn(_problem(), _schedule(), resume=True)
    assert main(["learn", *SMALL, *QUIET, "--resume"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["accountant: error: checkpoint must be a file path when resume=True, got None"]


# ---------------------------------------------------------------------------------------
# (d) atomic checkpoint writes


def _temporary_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_failing_write_keeps_the_previous_checkpoint_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "run.ckpt"
    save_checkpoint(path, {"epoch": 1, "values": torch.arange(4.0)})
    before = path.read_bytes()
    real_save = torch.save

    def write_some_bytes_then_fail(obj, stream, *args, **kwargs):
        real_save(obj, stream, *args, **kwargs)  # the whole new payload is on disk ...
        stream.write(b"partial")
        raise OSError("disk full (simulated)")  # ... but the write does not finish

    monkeypatch.setattr(torch, "save", write_some_bytes_then_fail)
    with pytest.raises(OSError, match="simulated"):
        save_checkpoint(path, {"epoch": 2, "values": torch.arange(8.0)})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert torch.load(path, weights_only=True)["epoch"] == 1
    assert _temporary_files(tmp_path) == []


def test_an_interrupted_write_inside_learn_leaves_a_resumable_checkpoint(tmp_path, monkeypatch):
    problem = _problem()
    path = tmp_path / "run.ckpt"
    learn(problem, _schedule(epochs=7), checkpoint=path, progress=False, compare=False)
    real_save = torch.save
    calls = []

    def fail_on_the_third_write(obj, stream, *args, **kwargs):
        calls.append(obj["epoch"])
        if len(calls) == 3:
            stream.write(b"\x80\x02half a pickle")
            raise KeyboardInterrupt  # e.g. a second Ctrl-C in the middle of a write
        return real_save(obj, stream, *args, **kwargs)

    monkeypatch.setattr(torch, "save", fail_on_the_third_write)
    with pytest.raises(KeyboardInterrupt):
        learn(
            problem,
            _schedule(epochs=40, checkpoint_every=1),
            checkpoint=path,
            resume=True,
            progress=False,
            compare=False,
        )
    monkeypatch.undo()
    assert calls == [8, 9, 10]
    assert _temporary_files(tmp_path) == []
    assert load_checkpoint(path, problem, _schedule())["epoch"] == 9  # the last full write
    resumed = learn(
        problem, _schedule(epochs=40), checkpoint=path, resume=True, progress=False, compare=False
    )
    whole = learn(problem, _schedule(epochs=40), progress=False, compare=False)
    np.testing.assert_array_equal(resumed.noise.pmf, whole.noise.pmf)


def test_a_concurrent_reader_never_sees_a_partial_checkpoint(tmp_path):
    """While a run checkpoints every epoch, a second thread loads the file over and over:
    every read is a complete checkpoint of this run (``os.replace`` is atomic)."""
    problem, schedule = _problem(), _schedule(epochs=60, checkpoint_every=1)
    path = tmp_path / "run.ckpt"
    done = threading.Event()
    epochs_seen: list[int] = []
    failures: list[BaseException] = []

    def read_repeatedly() -> None:
        while not done.is_set():
            if not path.exists():
                time.sleep(0.001)
                continue
            try:
                state = load_checkpoint(path, problem, schedule)
                if len(state["history"]["bound"]) != state["epoch"]:
                    raise AssertionError(f"history and epoch disagree at {state['epoch']}")
            except BaseException as exc:  # every failure is reported
                failures.append(exc)
                return
            epochs_seen.append(int(state["epoch"]))

    reader = threading.Thread(target=read_repeatedly, daemon=True)
    reader.start()
    try:
        learn(problem, schedule, checkpoint=path, progress=False, compare=False)
    finally:
        done.set()
        reader.join(PATIENCE)
    assert failures == []
    final = load_checkpoint(path, problem, schedule)
    epochs_seen.append(int(final["epoch"]))
    assert epochs_seen == sorted(epochs_seen) and epochs_seen[-1] == 60
    assert _temporary_files(tmp_path) == []
