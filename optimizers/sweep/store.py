"""The results store of a sweep: a directory with one JSON file per finished run.

Layout of a store directory::

    <run_id>.json            one finished run (written last: its presence means "done")
    <run_id>.npy             the learned noise's pmf on the problem's grid (float64)
    checkpoints/<run_id>.pt  the checkpoint of a run not finished yet (removed when done)

``<run_id>`` is :attr:`optimizers.sweep.task.SweepTask.run_id` (16 hex digits). Every
file is written atomically (a temporary file in the same directory, flushed, then moved
over the target by :func:`os.replace`, see :func:`accountant.storage.replaced_atomically`),
the ``.npy`` before the ``.json``, so a crash never leaves a half-written file nor a
JSON file without its pmf. A run's JSON file holds::

    {"format": "truncated-noise-accountant sweep run", "version": 1,
     "run_id": "...", "task": {"problem": {...}, "schedule": {...}},
     "result": {"delta_certified": ..., "utility": ..., "returned": ..., ...},
     "pmf_file": "<run_id>.npy", "finished_at": "2026-01-01T00:00:00+00:00"}

``task`` is :meth:`~optimizers.sweep.task.SweepTask.parameters` (the fields of
:class:`~optimizers.problem.LearningProblem` and :class:`~optimizers.problem.Schedule`)
and ``result`` is :meth:`~optimizers.sweep.task.RunResult.summary`. A sweep resumes from
its store: a run whose JSON file exists is never run again; a run with a checkpoint
continues from it. Several sweeps may share one store (ids never collide).
"""

from __future__ import annotations

import datetime
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from accountant.errors import InvalidInputError
from accountant.storage import replaced_atomically
from accountant.validation import shown
from optimizers.sweep.task import ID_DIGITS, RunResult, SweepTask

__all__ = ["FORMAT", "VERSION", "SweepStore"]

FORMAT = "truncated-noise-accountant sweep run"
VERSION = 1
CHECKPOINTS = "checkpoints"
_RUN_ID = re.compile(f"[0-9a-f]{{{ID_DIGITS}}}")


class SweepStore:
    """The store in ``directory`` (module docstring); created if missing."""

    def __init__(self, directory: str | os.PathLike) -> None:
        if isinstance(directory, bytes) or not isinstance(directory, str | os.PathLike):
            raise InvalidInputError(
                f"store must be a directory path, got {type(directory).__name__}: "
                f"{shown(directory)}"
            )
        path = Path(directory)
        if str(directory) == "" or (path.exists() and not path.is_dir()):
            raise InvalidInputError(f"store={str(directory)!r} is not a directory")
        path.mkdir(parents=True, exist_ok=True)
        self.directory = path

    def __repr__(self) -> str:
        return f"SweepStore({str(self.directory)!r})"

    def result_path(self, run_id: str) -> Path:
        """The JSON file of run ``run_id``."""
        return self.directory / f"{run_id}.json"

    def pmf_path(self, run_id: str) -> Path:
        """The ``.npy`` file of run ``run_id``'s learned pmf."""
        return self.directory / f"{run_id}.npy"

    def checkpoint_path(self, run_id: str) -> Path:
        """Where run ``run_id`` keeps its checkpoint until it is finished."""
        return self.directory / CHECKPOINTS / f"{run_id}.pt"

    def finished_ids(self) -> set[str]:
        """The ids of the runs with a result file."""
        return {p.stem for p in self.directory.glob("*.json") if _RUN_ID.fullmatch(p.stem)}

    def is_finished(self, run_id: str) -> bool:
        """Whether run ``run_id`` has a result file."""
        return self.result_path(run_id).is_file()

    def save(self, result: RunResult) -> Path:
        """Write ``result`` (pmf, then JSON; both atomically) and drop its checkpoint;
        returns the JSON file's path."""
        run_id = result.run_id
        buffer = io.BytesIO()
        np.save(buffer, result.learned_pmf, allow_pickle=False)
        with replaced_atomically(self.pmf_path(run_id)) as stream:
            stream.write(buffer.getvalue())
        record = {
            "format": FORMAT,
            "version": VERSION,
            "run_id": run_id,
            "task": result.task.parameters(),
            "result": result.summary(),
            "pmf_file": self.pmf_path(run_id).name,
            "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        text = json.dumps(record, indent=2, allow_nan=False) + "\n"
        with replaced_atomically(self.result_path(run_id)) as stream:
            stream.write(text.encode("utf-8"))
        self.checkpoint_path(run_id).unlink(missing_ok=True)
        return self.result_path(run_id)

    def load(self, run_id: str) -> RunResult:
        """The stored result of run ``run_id``; a file that is not a run of this format,
        or whose content does not match its name, is refused naming the file."""
        path = self.result_path(run_id)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            return _result_from(record, run_id, self.directory)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            reason = f"missing entry {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InvalidInputError(
                f"store file {str(path)!r} is not a readable sweep result ({reason}); "
                "delete it (and its .npy) to run it again"
            ) from exc

    def results(self) -> list[RunResult]:
        """Every stored result, ordered by run id."""
        return [self.load(run_id) for run_id in sorted(self.finished_ids())]


def _result_from(record: dict[str, Any], run_id: str, directory: Path) -> RunResult:
    if record.get("format") != FORMAT or record.get("version") != VERSION:
        raise ValueError(f"format {record.get('format')!r} version {record.get('version')!r}")
    task = SweepTask.from_parameters(record["task"])
    if task.run_id != run_id or record["run_id"] != run_id:
        raise ValueError(f"its parameters have run id {task.run_id!r}, not {run_id!r}")
    values = dict(record["result"])
    values["notes"] = tuple(values["notes"])
    pmf = np.load(directory / record["pmf_file"], allow_pickle=False)
    return RunResult(task=task, learned_pmf=pmf, **values)
