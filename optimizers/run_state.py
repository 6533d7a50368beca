"""The state of one learning run (:func:`optimizers.learner.learn`), typed, and its
checkpoint form.

A checkpoint stores the state as plain dicts and lists (the format of
:mod:`optimizers.checkpoints`, unchanged); :meth:`RunState.checkpoint_entries` writes
them and :meth:`RunState.restore` reads them back, refusing an incomplete checkpoint.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch

from optimizers.refinement import Refinement

__all__ = ["BestNoise", "RunState", "TrainingHistory"]

#: The state entries a checkpoint holds besides the model, optimizer and scheduler.
RESTORED = ("epoch", "best", "history", "seconds", "utility_scale")
#: Entries added later: a checkpoint without them restores their defaults.
OPTIONAL = ("bucket_width", "refinements")


@attrs.frozen
class BestNoise:
    """The best noise so far: its pmf, training bound and utility loss, and its epoch."""

    pmf: torch.Tensor
    bound: float
    utility: float
    epoch: int

    def to_dict(self) -> dict[str, Any]:
        return {"pmf": self.pmf, "bound": self.bound, "utility": self.utility, "epoch": self.epoch}

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> BestNoise:
        return cls(
            saved["pmf"], float(saved["bound"]), float(saved["utility"]), int(saved["epoch"])
        )


@attrs.define(slots=True)
class TrainingHistory:
    """Per-epoch training bound, utility loss and objective."""

    bound: list[float] = attrs.field(factory=list)
    utility: list[float] = attrs.field(factory=list)
    objective: list[float] = attrs.field(factory=list)

    def append(self, bound: float, utility: float, objective: float) -> None:
        self.bound.append(bound)
        self.utility.append(utility)
        self.objective.append(objective)

    def to_dict(self) -> dict[str, list[float]]:
        return {"bound": self.bound, "utility": self.utility, "objective": self.objective}

    @classmethod
    def from_dict(cls, saved: dict[str, list[float]]) -> TrainingHistory:
        return cls(list(saved["bound"]), list(saved["utility"]), list(saved["objective"]))


@attrs.define(slots=True)
class RunState:
    """Optimizer and scheduler, the epochs done, the best noise so far, the history, the
    training seconds, the utility scale ``U(p_0)`` of the target-delta objective, the
    smooth loss's current ``bucket_width`` (``None``: the problem's, never refined) and
    the ``refinements`` of it so far (:mod:`optimizers.refinement`)."""

    optimizer: torch.optim.Optimizer
    scheduler: Any
    epoch: int = 0
    best: BestNoise | None = None
    history: TrainingHistory = attrs.field(factory=TrainingHistory)
    seconds: float = 0.0
    utility_scale: float = 1.0
    bucket_width: float | None = None
    refinements: list[Refinement] = attrs.field(factory=list)

    def checkpoint_entries(self) -> dict[str, Any]:
        """The checkpoint's entries for this state (plain dicts and lists)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "epoch": self.epoch,
            "best": None if self.best is None else self.best.to_dict(),
            "history": self.history.to_dict(),
            "seconds": self.seconds,
            "utility_scale": self.utility_scale,
            "bucket_width": self.bucket_width,
            "refinements": [r.to_dict() for r in self.refinements],
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Take the entries of :data:`RESTORED` and :data:`OPTIONAL` from a loaded
        checkpoint (the optimizer's and scheduler's are loaded by the caller, with the
        model)."""
        self.epoch = int(saved["epoch"])
        self.best = None if saved["best"] is None else BestNoise.from_dict(saved["best"])
        self.history = TrainingHistory.from_dict(saved["history"])
        self.seconds = float(saved["seconds"])
        self.utility_scale = float(saved["utility_scale"])
        width = saved.get("bucket_width")
        self.bucket_width = None if width is None else float(width)
        self.refinements = [Refinement.from_dict(r) for r in saved.get("refinements", [])]
