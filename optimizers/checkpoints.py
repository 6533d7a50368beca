"""Checkpoints of a learning run: written atomically, refused when corrupted or when they
belong to another problem or schedule."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import torch

from accountant.errors import InvalidInputError
from optimizers.problem import LearningProblem, Schedule

__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]

FORMAT = "truncated-noise-accountant learning checkpoint"
VERSION = 1
# Schedule fields a resumed run may change: how long it runs and how often it saves.
RESUMABLE_CHANGES = ("epochs", "checkpoint_every")


class CheckpointError(InvalidInputError):
    """A checkpoint that cannot be resumed: unreadable, corrupted, or for another run."""


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` (tensors and plain values) to ``path`` atomically: a reader sees
    either the previous checkpoint or the new one, never a partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": FORMAT, "version": VERSION, **state}
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            torch.save(payload, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _differences(stored: dict[str, Any], wanted: dict[str, Any], ignore: tuple[str, ...]) -> list:
    """Every key of either dict whose values differ (a key one of them lacks counts as
    ``None`` there: a field added later, at its default ``None``, matches an older file)."""
    keys = list(wanted) + [key for key in stored if key not in wanted]
    return [
        f"{key}: checkpoint {stored.get(key)!r}, now {wanted.get(key)!r}"
        for key in keys
        if key not in ignore and stored.get(key) != wanted.get(key)
    ]


def load_checkpoint(
    path: str | Path, problem: LearningProblem, schedule: Schedule
) -> dict[str, Any]:
    """The state saved at ``path``, after checking it is a readable checkpoint of the same
    ``problem`` and ``schedule`` (only ``epochs`` and ``checkpoint_every`` may differ)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint={str(path)!r} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError) as exc:
        raise CheckpointError(
            f"checkpoint={str(path)!r} is corrupted or not a checkpoint ({type(exc).__name__})"
        ) from exc
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint={str(path)!r} is not a learning checkpoint")
    if state.get("version") != VERSION:
        raise CheckpointError(
            f"checkpoint={str(path)!r} has format version {state.get('version')!r}; "
            f"this version reads {VERSION}"
        )
    mismatched = _differences(state.get("problem", {}), problem.to_dict(), ())
    mismatched += _differences(state.get("schedule", {}), schedule.to_dict(), RESUMABLE_CHANGES)
    if mismatched:
        raise CheckpointError(
            f"checkpoint={str(path)!r} belongs to another run ({'; '.join(mismatched)})"
        )
    return state
