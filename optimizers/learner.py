"""Learn truncated noise by gradient descent (paper, section "Approach"; SPEC section 5).

Each epoch evaluates the model's noise ``p``, the training bound ``l(p)`` (value and
gradient from :mod:`accountant` through :mod:`optimizers.autograd`) and the utility
loss ``U(p)``, and takes one Adam step on

* ``l(p) + w_t U(p)`` with ``w_t = max(w_0 / 2^(t / gamma), w_min)`` (the paper's
  objective), or, when the problem has a ``target_delta``,
* ``U(p) / U(p_0) + penalty * max(0, ln(l(p) / t))^2`` with
  ``t = target_delta * (1 - target_margin)``: the smallest utility loss whose training
  bound stays at (just below) the target.

The learning rate decays exponentially. The run keeps the best noise so far (lowest
objective under the current weights), writes checkpoints atomically, resumes from them
with identical results, and stops cleanly on Ctrl-C or SIGTERM, keeping what it learned.
The result is certified by :func:`accountant.learning.certification.certify` (PrivacyBuckets upper
bound; never the training loss) and compared with the best truncated Gaussian of the
same range and grid at the same certified delta. When the learned noise does not beat
it, the Gaussian is returned; a missed target or a returned Gaussian is said in the
result's fields and by a :class:`~optimizers.results.LearningWarning`.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np
import torch

from accountant.errors import (
    AccountantError,
    CertificationWarning,
    InfeasibleTargetError,
    InvalidInputError,
)
from accountant.learning.training_losses import noise_bound
from accountant.noise import NoiseDistribution, from_array, truncated_gaussian
from accountant.report.terminal import progress_enabled
from accountant.validation import check_positive_real
from optimizers.autograd import noise_bound_tensor
from optimizers.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from optimizers.comparison import certify_learned
from optimizers.devices import check_device
from optimizers.models import WARM_STARTABLE, build_model
from optimizers.problem import LearningProblem, Schedule, warm_start_noise
from optimizers.refinement import refine_width, starting_width
from optimizers.results import LearnedNoise, LearningWarning
from optimizers.run_state import RESTORED, BestNoise, RunState

__all__ = ["NoiseCollapseError", "learn"]

COLLAPSE_DELTA = 0.99
#: Least seconds between two redraws of the progress bar.
PROGRESS_INTERVAL = 0.5
#: Most progress lines a run writes when stderr is not a terminal (a log file, a pipe).
PROGRESS_LINES = 20


class NoiseCollapseError(AccountantError):
    """The learned noise collapsed: its training bound reached delta ~ 1."""


def _progress_bar(total: int, initial: int, enabled: bool):
    """A tqdm bar on stderr redrawn at most every :data:`PROGRESS_INTERVAL` seconds; when
    stderr is not a terminal, also at most :data:`PROGRESS_LINES` times in all."""
    if not enabled:
        return contextlib.nullcontext(None)
    from tqdm.auto import tqdm

    options: dict[str, Any] = {"mininterval": PROGRESS_INTERVAL}
    if not progress_enabled(sys.stderr):
        # tqdm's monitor thread would reset miniters after maxinterval seconds.
        every = max(1, math.ceil((total - initial) / PROGRESS_LINES))
        options |= {"miniters": every, "maxinterval": math.inf}
    return tqdm(
        total=total, initial=initial, unit="epoch", dynamic_ncols=True, leave=True, **options
    )


@contextlib.contextmanager
def _stop_requests() -> Iterator[dict[str, Any]]:
    """Turn SIGINT and SIGTERM into a flag checked between epochs (main thread only)."""
    flag: dict[str, Any] = {"signal": None}
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def request_stop(number: int, frame: Any) -> None:
        flag["signal"] = signal.Signals(number).name

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield flag
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _warm_start_gaussian(problem: LearningProblem, schedule: Schedule) -> NoiseDistribution:
    """The best truncated Gaussian meeting the training target ``target_delta * (1 -
    target_margin)`` (certified), else sigma = bound / 3 (or that one when no truncated
    Gaussian of the range meets the target)."""
    if problem.target_delta is not None:
        target = problem.target_delta * (1.0 - schedule.target_margin)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CertificationWarning)
                return problem.best_gaussian(target).noise
        except InfeasibleTargetError:
            pass
    return truncated_gaussian(problem.bound / 3.0, problem.bound, problem.step)


#: Smallest ratio to the centre of a warm start's weights: ``ln(1e-250) = -575.6``, a rise
#: the model's increments represent, while a Gaussian's tail on a wide grid underflows.
WARM_START_FLOOR = 1e-250


def _warm_start_pmf(noise: NoiseDistribution) -> np.ndarray:
    """The warm start's pmf, weights below ``WARM_START_FLOOR`` times the largest raised
    to it (only the model's starting point; what is certified is the learned noise)."""
    weights = np.maximum(noise.pmf, WARM_START_FLOOR * float(noise.pmf.max()))
    return weights / weights.sum()


def _initial_model(problem: LearningProblem, schedule: Schedule) -> torch.nn.Module:
    start = warm_start_noise(problem, schedule, _warm_start_gaussian)  # (checks the pair)
    if start is not None:
        return WARM_STARTABLE[schedule.model].from_pmf(_warm_start_pmf(start))
    return build_model(
        schedule.model,
        problem.half_size,
        problem.bound,
        seed=schedule.seed,
        sigmoids=schedule.sigmoids,
    )


class _Objective:
    """The training objective and the utility loss of a pmf tensor."""

    def __init__(self, problem: LearningProblem, schedule: Schedule, device: torch.device):
        self.problem = problem
        self.schedule = schedule
        grid = problem.step * torch.arange(-problem.half_size, problem.half_size + 1)
        self.grid = grid.to(torch.float64).to(device)
        self.options: dict[str, Any] = {"bound": problem.loss, "epsilon": problem.epsilon}
        self.options["times"] = problem.times
        if problem.loss == "MA":
            self.options["conversion"] = problem.conversion
        else:
            self.options["width"] = problem.bucket_width
        self.mapping = problem.pair_map
        self.utility_scale = 1.0

    def utility(self, pmf: torch.Tensor) -> torch.Tensor:
        if self.problem.utility == "L1":
            return (pmf * self.grid.abs()).sum()
        return torch.sqrt((pmf * self.grid**2).sum())

    def bound(self, pmf: torch.Tensor) -> torch.Tensor:
        return noise_bound_tensor(pmf, step=self.problem.step, mapping=self.mapping, **self.options)

    def bound_at(self, pmf: np.ndarray, width: float) -> float:
        """The training bound of ``pmf`` at bucket width ``width`` (the value
        :meth:`bound` gives at that width)."""
        options = self.options | {"width": width}
        return float(noise_bound(pmf, self.problem.step, self.mapping, **options).value)

    def combine(self, bound: float | torch.Tensor, utility: Any, epoch: int) -> Any:
        if self.problem.target_delta is None:
            return bound + self.schedule.utility_weight_at(epoch) * utility
        target = self.problem.target_delta * (1.0 - self.schedule.target_margin)
        excess: torch.Tensor | float
        if isinstance(bound, torch.Tensor):
            excess = torch.relu(torch.log(bound.clamp_min(1e-300) / target))
        else:
            excess = max(0.0, float(np.log(max(bound, 1e-300) / target)))
        return utility / self.utility_scale + self.schedule.penalty * excess**2


def _new_state(model: torch.nn.Module, schedule: Schedule) -> RunState:
    optimizer = torch.optim.Adam(model.parameters(), lr=schedule.learning_rate)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, schedule.learning_rate_decay)
    return RunState(optimizer, scheduler)


def _checkpoint_payload(problem, schedule, model, state: RunState) -> dict[str, Any]:
    return {
        "problem": problem.to_dict(),
        "schedule": schedule.to_dict(),
        "model": model.state_dict(),
        **state.checkpoint_entries(),
    }


def _restore(path, problem, schedule, model, state: RunState) -> None:
    saved = load_checkpoint(path, problem, schedule)
    # A checkpoint with the right header but missing entries, or with tensors that do not
    # fit the model, is a one-line CheckpointError (not a bare KeyError or the multi-line
    # RuntimeError of load_state_dict).
    missing = [k for k in ("model", "optimizer", "scheduler", *RESTORED) if k not in saved]
    if missing:
        raise CheckpointError(
            f"checkpoint={str(path)!r} is incomplete (missing {', '.join(missing)})"
        )
    try:
        model.load_state_dict(saved["model"])
        state.optimizer.load_state_dict(saved["optimizer"])
        state.scheduler.load_state_dict(saved["scheduler"])
    except (RuntimeError, ValueError, KeyError, TypeError) as exc:
        detail = " ".join(str(exc).split())
        detail = detail if len(detail) <= 200 else detail[:197] + "..."
        raise CheckpointError(
            f"checkpoint={str(path)!r} does not fit this run's model ({detail})"
        ) from exc
    state.restore(saved)


def _is_better(objective: _Objective, best: BestNoise | None, bound: float, utility, epoch):
    if best is None:
        return True
    now = objective.combine(bound, utility, epoch)
    return now < objective.combine(best.bound, best.utility, epoch)


def _refine(objective: _Objective, state: RunState) -> None:
    """Halve the smooth loss's width while the best noise's training bias is too large
    (:func:`optimizers.refinement.refine_width`); the best noise's bound is then
    recomputed at the new width, so that later epochs compare like with like."""
    best = cast(BestNoise, state.best)
    pmf = best.pmf.detach().cpu().numpy().astype(np.float64)
    width = cast(float, state.bucket_width)

    def bound_at(new_width: float) -> float:
        return objective.bound_at(pmf, new_width)

    steps = refine_width(pmf, objective.problem, width, best.bound, bound_at, state.epoch)
    if steps:
        state.refinements.extend(steps)
        state.bucket_width = steps[-1].new_width
        objective.options["width"] = state.bucket_width
        state.best = attrs.evolve(best, bound=bound_at(state.bucket_width))


def _check_collapse(bound: float, utility: float, epoch: int) -> None:
    if not np.isfinite(bound) or not np.isfinite(utility) or bound >= COLLAPSE_DELTA:
        raise NoiseCollapseError(
            f"the noise collapsed at epoch {epoch}: training delta {bound:.4g}, utility loss "
            f"{utility:.4g}; lower learning_rate or utility_weight (or set a target_delta), "
            "then resume from the last checkpoint or start again"
        )


def _check_arguments(problem, schedule, checkpoint, resume, time_limit, accuracy) -> None:
    """Every argument checked before any work: wrong types, a NaN or negative
    time_limit, resume without a checkpoint and a bad certify_accuracy raise
    InvalidInputError here, not deep inside or after the whole training run."""
    if not isinstance(problem, LearningProblem):
        raise InvalidInputError(f"problem must be a LearningProblem, got {type(problem).__name__}")
    if not isinstance(schedule, Schedule):
        raise InvalidInputError(
            f"schedule must be a Schedule or None, got {type(schedule).__name__}"
        )
    if checkpoint is not None and not isinstance(checkpoint, str | os.PathLike):
        raise InvalidInputError(
            f"checkpoint must be a file path or None, got {type(checkpoint).__name__}"
        )
    if not isinstance(resume, bool):
        raise InvalidInputError(f"resume must be True or False, got {resume!r}")
    if resume and checkpoint is None:
        raise InvalidInputError("checkpoint must be a file path when resume=True, got None")
    if time_limit is not None:
        check_positive_real("time_limit", time_limit)
    if check_positive_real("certify_accuracy", accuracy) >= 1.0:
        raise InvalidInputError(f"certify_accuracy must lie in (0, 1), got {accuracy!r}")
    if schedule.refine_every is not None and problem.loss == "MA":
        raise InvalidInputError(
            f"refine_every={schedule.refine_every!r} refines the bucket width of a smooth "
            "bucket loss, so it needs problem.loss 'ADP' or 'PDP', got loss='MA'"
        )


def learn(
    problem: LearningProblem,
    schedule: Schedule | None = None,
    *,
    checkpoint: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
    certify_accuracy: float = 1e-3,
    compare: bool = True,
    time_limit: float | None = None,
    device: str | torch.device | None = None,
) -> LearnedNoise:
    """Learn noise for ``problem`` by ``schedule`` (module docstring), certify it and
    compare it with the best truncated Gaussian (``compare``).

    ``checkpoint``: file written every ``schedule.checkpoint_every`` epochs and when the
    run stops; with ``resume=True`` the run continues from it (refused with
    :class:`~optimizers.checkpoints.CheckpointError` if it is corrupted or belongs to
    another problem or schedule). ``time_limit``: seconds of training after which the
    run stops as if interrupted (``stopped_by="time limit"``). ``progress``: a progress
    bar on stderr (throttled: see :func:`_progress_bar`). Raises
    :class:`NoiseCollapseError` when the training bound reaches ``0.99``. ``device``: where
    the model and the training tensors live (``None``: the CPU; ``"cuda"``, ``"cuda:1"``
    or a :class:`torch.device`, see :func:`optimizers.devices.check_device`); the training
    bound and the certificate are computed on the CPU whatever the device.

    Issues a :class:`~optimizers.results.LearningWarning` for each of the result's
    ``notes``: its certified delta misses ``problem.target_delta``, or the learned noise
    does not beat the truncated Gaussian, which is then what is returned.
    """
    schedule = Schedule() if schedule is None else schedule
    _check_arguments(problem, schedule, checkpoint, resume, time_limit, certify_accuracy)
    device = check_device(device)
    torch.manual_seed(schedule.seed)
    model = _initial_model(problem, schedule).to(device)
    objective = _Objective(problem, schedule, device)
    state = _new_state(model, schedule)
    if resume:
        _restore(checkpoint, problem, schedule, model, state)
    else:
        with torch.no_grad():
            state.utility_scale = float(objective.utility(model()))
    objective.utility_scale = state.utility_scale
    if schedule.refine_every is not None and state.bucket_width is None:
        state.bucket_width = starting_width(problem)
    if state.bucket_width is not None:
        objective.options["width"] = state.bucket_width

    def save() -> None:
        if checkpoint is not None:
            save_checkpoint(checkpoint, _checkpoint_payload(problem, schedule, model, state))

    stopped_by = None
    started = time.perf_counter() - state.seconds
    with _stop_requests() as stop, _progress_bar(schedule.epochs, state.epoch, progress) as bar:
        while state.epoch < schedule.epochs:
            epoch = state.epoch
            state.optimizer.zero_grad()
            pmf = model()
            bound = objective.bound(pmf)
            utility = objective.utility(pmf)
            loss = objective.combine(bound, utility, epoch)
            loss.backward()
            values = (bound.item(), utility.item(), loss.item())
            _check_collapse(values[0], values[1], epoch)
            if _is_better(objective, state.best, values[0], values[1], epoch):
                state.best = BestNoise(pmf.detach().clone(), values[0], values[1], epoch)
            state.history.append(*values)
            state.optimizer.step()
            state.scheduler.step()
            state.epoch = epoch + 1
            if schedule.refine_every is not None and state.epoch % schedule.refine_every == 0:
                _refine(objective, state)
            state.seconds = time.perf_counter() - started
            if bar is not None:
                bar.update(1)
                postfix = {"delta": f"{values[0]:.3g}", "utility": f"{values[1]:.4g}"}
                bar.set_postfix(postfix, refresh=False)
            if state.epoch % schedule.checkpoint_every == 0:
                save()
            if time_limit is not None and state.seconds >= time_limit:
                stop["signal"] = "time limit"
            if stop["signal"] is not None:
                stopped_by = stop["signal"]
                break
    save()
    # the first epoch sets it (and a resumed run restores it): learn runs >= 1 epoch
    assert state.best is not None
    best_pmf = state.best.pmf.detach().cpu().numpy().astype(np.float64)
    noise: NoiseDistribution = from_array(best_pmf, problem.step)
    result = certify_learned(
        noise,
        problem,
        schedule,
        state,
        stopped_by=stopped_by,
        accuracy=certify_accuracy,
        compare=compare,
    )
    width = state.bucket_width or starting_width(problem)
    result = attrs.evolve(
        result,
        training_bound=state.best.bound,
        training_width=None if problem.loss == "MA" else width,
        refinements=tuple(state.refinements),
    )
    for note in result.notes:
        warnings.warn(LearningWarning(note), stacklevel=2)
    return result
