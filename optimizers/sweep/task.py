"""One run of a sweep: a pure, picklable task and the record of its result.

A :class:`SweepTask` is everything a run needs (its
:class:`~optimizers.problem.LearningProblem` and :class:`~optimizers.problem.Schedule`),
with a stable :attr:`~SweepTask.run_id`: the first 16 hex digits of the sha256 of the
task's canonical JSON (sorted keys, no spaces). Equal parameters give equal ids, in
any process and on any machine; any changed parameter (the number of epochs included)
gives another id.

:func:`run_task` runs one task in the calling process (a worker of a process pool or a
Dask worker) and returns a :class:`RunResult` (or a :class:`StoppedRun` when the run
was interrupted; its checkpoint, if any, is where it continues). Nothing is written
here except the checkpoint: the caller stores the result.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from accountant.errors import CertificationWarning, InvalidInputError
from accountant.validation import shown
from optimizers.checkpoints import CheckpointError, load_checkpoint
from optimizers.learner import learn
from optimizers.problem import LearningProblem, Schedule
from optimizers.results import LearningWarning

__all__ = ["RunResult", "StoppedRun", "SweepTask", "run_task"]

#: Bumped when what a run computes from the same parameters changes.
TASK_VERSION = 1
ID_DIGITS = 16
#: Fields added to the parameters after :data:`TASK_VERSION` 1 and the defaults at which
#: :meth:`SweepTask.canonical_json` leaves them out: runs stored before a field existed
#: keep their ids (a field changed from its default gives a new id).
LATER_FIELDS: dict[str, dict[str, Any]] = {"schedule": {"refine_every": None}}
#: The warnings of a run kept as its result's ``notes`` (others are passed on).
NOTES = (LearningWarning, CertificationWarning)


def _is(kind: type):
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not isinstance(value, kind):
            raise InvalidInputError(
                f"{attribute.name} must be a {kind.__name__}, got {type(value).__name__}: "
                f"{shown(value)}"
            )

    return check


@attrs.frozen(kw_only=True)
class SweepTask:
    """One learning run of a sweep: ``problem`` learned by ``schedule``."""

    problem: LearningProblem = attrs.field(validator=_is(LearningProblem))
    schedule: Schedule = attrs.field(validator=_is(Schedule))

    def parameters(self) -> dict[str, Any]:
        """The task as plain values: ``{"problem": ..., "schedule": ...}``."""
        return {"problem": self.problem.to_dict(), "schedule": self.schedule.to_dict()}

    def canonical_json(self) -> str:
        """The parameters as JSON with sorted keys and no spaces (what the id hashes), less
        the :data:`LATER_FIELDS` at their defaults."""
        record: dict[str, Any] = {"task_version": TASK_VERSION, **self.parameters()}
        for section, defaults in LATER_FIELDS.items():
            record[section] = {
                key: value
                for key, value in record[section].items()
                if key not in defaults or value != defaults[key]
            }
        return json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def run_id(self) -> str:
        """The first :data:`ID_DIGITS` hex digits of the sha256 of :meth:`canonical_json`."""
        digest = hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()
        return digest[:ID_DIGITS]

    @property
    def seed(self) -> int:
        """The schedule's seed."""
        return self.schedule.seed

    @classmethod
    def from_parameters(cls, values: dict[str, Any]) -> SweepTask:
        """Inverse of :meth:`parameters`."""
        return cls(
            problem=LearningProblem.from_dict(values["problem"]),
            schedule=Schedule.from_dict(values["schedule"]),
        )


@attrs.frozen(kw_only=True, eq=False)
class RunResult:
    """What one finished run gives: ``task``; the certified delta (PrivacyBuckets upper
    bound at the problem's eps and n) and utility loss of the returned noise
    (``returned``: ``"learned"``, or ``"baseline"`` when the best truncated Gaussian
    beats the learned noise); ``met_target`` (``None`` without a target delta); the
    learned noise's own certified delta and utility; the truncated-Gaussian baseline's
    sigma, certified delta and utility (``None`` when there is none); ``epochs_run``,
    ``best_epoch``, ``training_seconds`` (the learner's, across resumes),
    ``wall_seconds`` (this task's last attempt, certification included),
    ``resumed_from_epoch`` (0: started from scratch), ``notes`` (the run's
    :class:`~optimizers.results.LearningWarning` and
    :class:`~accountant.errors.CertificationWarning` messages) and ``learned_pmf`` (the
    learned noise on the problem's grid); ``training_bound``, ``training_bias`` and
    ``training_width``: the learned noise's training bound at its best epoch, its ratio to
    ``learned_delta_certified`` and the smooth loss's final bucket width
    (:class:`~optimizers.results.LearnedNoise`; ``None`` in results stored before they
    existed). Compared by identity (it holds an array); compare :meth:`summary` and
    ``learned_pmf`` instead."""

    task: SweepTask
    delta_certified: float
    utility: float
    returned: str
    met_target: bool | None
    learned_delta_certified: float
    learned_utility: float
    gaussian_sigma: float | None
    gaussian_delta_certified: float | None
    gaussian_utility: float | None
    epochs_run: int
    best_epoch: int
    training_seconds: float
    wall_seconds: float
    resumed_from_epoch: int
    notes: tuple[str, ...]
    learned_pmf: np.ndarray = attrs.field(repr=False)
    training_bound: float | None = None
    training_bias: float | None = None
    training_width: float | None = None

    @property
    def run_id(self) -> str:
        """The task's id."""
        return self.task.run_id

    @property
    def seed(self) -> int:
        """The task's seed."""
        return self.task.seed

    def summary(self) -> dict[str, Any]:
        """Plain values (everything but the pmf), as stored in the run's JSON file."""
        values = attrs.asdict(self, recurse=False)
        values.pop("task")
        values.pop("learned_pmf")
        values["notes"] = list(self.notes)
        return values


@attrs.frozen(kw_only=True)
class StoppedRun:
    """A run stopped before its last epoch (``stopped_by``: the signal), after
    ``epochs_run`` epochs; not a result. With a checkpoint it continues from there."""

    task: SweepTask
    stopped_by: str
    epochs_run: int

    @property
    def run_id(self) -> str:
        """The task's id."""
        return self.task.run_id


def _checkpoint_epoch(path: Path, task: SweepTask) -> int | None:
    """The epoch saved in ``path`` if it is a checkpoint of ``task``, else ``None``."""
    if not path.is_file():
        return None
    try:
        return int(load_checkpoint(path, task.problem, task.schedule)["epoch"])
    except (CheckpointError, KeyError, TypeError, ValueError):
        return None


def run_task(
    task: SweepTask, checkpoint: str | None = None, device: str | None = None
) -> RunResult | StoppedRun:
    """Run ``task`` (no progress bar) on the torch ``device`` (``None``: the CPU; not part
    of the task: see :func:`optimizers.learner.learn`); with ``checkpoint`` (a file path),
    checkpoints are written there and a readable checkpoint of this task found there is
    resumed (one that is unreadable or of another run is replaced: the run starts from
    scratch)."""
    started = time.perf_counter()
    path = None if checkpoint is None else Path(checkpoint)
    resumed = 0 if path is None else _checkpoint_epoch(path, task)
    if path is not None and resumed is None:
        path.unlink(missing_ok=True)
    with warnings.catch_warnings(record=True) as caught:
        for category in NOTES:
            warnings.simplefilter("always", category)
        result = learn(
            task.problem,
            task.schedule,
            checkpoint=path,
            resume=bool(resumed),
            progress=False,
            device=device,
        )
    if result.stopped_by is not None:
        return StoppedRun(task=task, stopped_by=result.stopped_by, epochs_run=result.epochs_run)
    notes = dict.fromkeys(
        " ".join(str(w.message).split()) for w in caught if issubclass(w.category, NOTES)
    )
    for other in (w for w in caught if not issubclass(w.category, NOTES)):
        warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    baseline = result.baseline
    return RunResult(
        task=task,
        delta_certified=float(result.delta),
        utility=float(result.utility),
        returned=result.returned,
        met_target=result.met_target,
        learned_delta_certified=float(result.learned.delta_upper),
        learned_utility=float(result.learned.utility(task.problem.utility)),
        gaussian_sigma=None if baseline is None else float(baseline.sigma),
        gaussian_delta_certified=None
        if baseline is None
        else float(baseline.certificate.delta_upper),
        gaussian_utility=None if baseline is None else float(baseline.utility),
        epochs_run=int(result.epochs_run),
        best_epoch=int(result.best_epoch),
        training_seconds=float(result.seconds),
        wall_seconds=time.perf_counter() - started,
        resumed_from_epoch=resumed or 0,
        notes=tuple(notes),
        learned_pmf=np.asarray(result.learned.noise.pmf, dtype=np.float64),
        training_bound=result.training_bound,
        training_bias=result.training_bias,
        training_width=result.training_width,
    )
