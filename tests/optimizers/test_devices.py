"""``learn(..., device=...)``, ``accountant learn --device`` and ``accountant sweep
--device`` (issue 16). Tested on the CPU path only: ``"cpu"`` gives bit-identical
results to the default, an unavailable or unknown device is refused in one line naming
``device`` and the value, before any work."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant.errors import InvalidInputError  # noqa: E402
from accountant.report.cli import main  # noqa: E402
from optimizers.devices import check_device  # noqa: E402
from optimizers.learner import learn  # noqa: E402
from optimizers.problem import LearningProblem, Schedule  # noqa: E402
from optimizers.sweep import SweepTask, run_sweep, run_task  # noqa: E402
from tests.optimizers.sweep.conftest import tiny_spec  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::optimizers.results.LearningWarning")

NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
SMALL = ["--bound", "4", "--step", "0.25", "--epsilon", "1", "-n", "2", "--target-delta", "0.2"]


def _problem(**changes) -> LearningProblem:
    values = {"bound": 4.0, "step": 0.25, "epsilon": 1.0, "times": 2, "target_delta": 0.2}
    return LearningProblem(**(values | changes))


def _schedule(**changes) -> Schedule:
    values = {"epochs": 15, "learning_rate": 0.1, "checkpoint_every": 4}
    return Schedule(**(values | changes))


def _same(one, other) -> None:
    np.testing.assert_array_equal(one.learned.noise.pmf, other.learned.noise.pmf)
    for key in ("bound", "utility", "objective"):
        np.testing.assert_array_equal(one.history[key], other.history[key])
    assert one.learned.delta_upper == other.learned.delta_upper
    assert one.training_bound == other.training_bound


@pytest.mark.parametrize("device", [None, "cpu", "cpu:0", torch.device("cpu")])
def test_check_device_accepts_the_cpu(device):
    assert check_device(device).type == "cpu"


@pytest.mark.parametrize("model", ["increments", "sigmoid"])
def test_training_on_the_cpu_device_is_bit_identical_to_the_default(model):
    schedule = _schedule(model=model, sigmoids=20, warm_start="model")
    default = learn(_problem(), schedule, progress=False, compare=False)
    for device in ("cpu", torch.device("cpu")):
        _same(learn(_problem(), schedule, progress=False, compare=False, device=device), default)


def test_a_checkpoint_resumes_on_another_device_argument(tmp_path):
    whole = learn(_problem(), _schedule(), progress=False, compare=False)
    path = tmp_path / "run.ckpt"
    learn(_problem(), _schedule(epochs=6), checkpoint=path, progress=False, compare=False)
    resumed = learn(
        _problem(),
        _schedule(),
        checkpoint=path,
        resume=True,
        progress=False,
        compare=False,
        device="cpu",
    )
    _same(resumed, whole)


@NO_GPU
@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda")])
def test_cuda_without_a_gpu_is_refused_before_any_work(device, tmp_path):
    path = tmp_path / "run.ckpt"
    with pytest.raises(InvalidInputError) as info:
        learn(_problem(), _schedule(), checkpoint=path, progress=False, device=device)
    message = str(info.value)
    assert "\n" not in message and f"device={str(device)!r}" in message
    assert "torch.cuda.is_available() is False" in message
    assert not path.exists()  # refused before the first epoch


@pytest.mark.parametrize(
    ("device", "shown"),
    [
        ("gpu", "device='gpu' is not a device torch knows"),
        ("", "device='' is not a device torch knows"),
        ("mps", "device='mps' is not supported"),
        ("meta", "device='meta' is not supported"),
        (0, "got int: 0"),
    ],
)
def test_unknown_or_unsupported_devices_are_refused(device, shown):
    with pytest.raises(InvalidInputError) as info:
        learn(_problem(), _schedule(), progress=False, device=device)
    assert "\n" not in str(info.value) and shown in str(info.value)


def test_with_a_gpu_reported_cuda_passes_and_a_missing_index_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("cuda") == torch.device("cuda")
    assert check_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(InvalidInputError, match=r"device='cuda:2' does not exist: .* 2 CUDA"):
        check_device("cuda:2")


def test_availability_is_not_checked_when_asked_not_to():
    # run_sweep with a Dask scheduler: the workers, not the client, must have the GPU.
    assert check_device("cuda:3", available=False) == torch.device("cuda:3")
    with pytest.raises(InvalidInputError, match="not supported"):
        check_device("mps", available=False)


@NO_GPU
def test_the_learn_command_refuses_cuda_with_exit_2(capsys):
    assert main(["learn", *SMALL, "--epochs", "2", "--no-progress", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "device='cuda'" in err


def test_the_learn_command_trains_on_the_cpu_device(tmp_path, capsys):
    outputs = []
    for extra in ([], ["--device", "cpu"]):
        directory = tmp_path / f"out{len(outputs)}"
        args = ["learn", *SMALL, "--epochs", "5", "--no-progress", "--no-compare"]
        assert main([*args, "--output", str(directory), *extra]) == 0
        with np.load(directory / "noise.npz") as arrays:
            outputs.append(arrays["learned_pmf"].copy())
    capsys.readouterr()
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_a_sweep_task_on_the_cpu_device_gives_the_same_result_and_id():
    task = tiny_spec().tasks()[0]
    default, on_cpu = run_task(task), run_task(task, device="cpu")
    np.testing.assert_array_equal(default.learned_pmf, on_cpu.learned_pmf)
    assert default.delta_certified == on_cpu.delta_certified
    assert on_cpu.run_id == task.run_id == SweepTask.from_parameters(task.parameters()).run_id


@NO_GPU
def test_a_sweep_on_cuda_without_a_gpu_is_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(InvalidInputError, match="device='cuda' needs a CUDA GPU"):
        run_sweep(tiny_spec(), tmp_path / "store", device="cuda", progress=False)
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())
    store = str(tmp_path / "cli")
    argv = ["sweep", "--epsilons", "1", "--times", "2", "--target-deltas", "0.2"]
    assert (
        main([*argv, "--bound", "4", "--step", "0.25", "--store", store, "--device", "cuda"]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "device='cuda'" in err
