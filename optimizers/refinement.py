"""Correct the smooth training loss's bias by refining its bucket width (issue 16).

The smooth PrivacyBuckets loss (:mod:`accountant.learning.smooth_loss`) spreads each
outcome's mass over two neighbouring buckets of width ``w``; at ``w`` about 0.005 it
overestimates the delta of many releases (18 % at n = 128, 3x at n = 1024), so a run
with a target delta stops well below its target. It can also underestimate: a noise
whose privacy losses sit just above eps is counted partly below it, and a learner can
exploit that (``l^PDP`` trained from the single-release optimum reached a smooth PDP of
0.0518 for a certified ADP delta of 0.0786, ``docs/learning-beyond.md``); both
directions are corrected. With ``Schedule.refine_every = K``, the
learner calls :func:`refine_width` every ``K`` epochs: it certifies the best noise so far
(PrivacyBuckets upper bound of the training loss's kind, accuracy :data:`CHECK_ACCURACY`)
and, while the training bias ``b = l_w(p) / delta_upper(p)`` is outside ``[1 - TOLERANCE,
1 + TOLERANCE]``, halves ``w`` (never below :data:`WIDTH_FLOOR`) and recomputes
``l_w(p)``. Training continues at the new width. The check reads only the best pmf and
the width, both saved in checkpoints, so a resumed run refines exactly as an
uninterrupted one.

The check's certificate only steers the width: a
:class:`~accountant.errors.CertificationWarning` from it (requested accuracy not reached,
the bound still certified) is not passed on; the result's own certificate is computed
afresh at the end of the run and its warnings are.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accountant.errors import CertificationWarning
from accountant.learning.certification import certify
from accountant.learning.smooth_loss import default_smooth_width
from accountant.noise import from_array
from optimizers.problem import LearningProblem

__all__ = [
    "CHECK_ACCURACY",
    "TOLERANCE",
    "WIDTH_FLOOR",
    "Refinement",
    "refine_width",
    "starting_width",
    "training_bias",
]

#: The width is halved while the training bias exceeds ``1 + TOLERANCE``.
TOLERANCE = 0.02
#: The finest width a refinement reaches (halving stops before going below it).
WIDTH_FLOOR = 1e-4
#: Accuracy of the check's PrivacyBuckets certificate.
CHECK_ACCURACY = 1e-3


def training_bias(training_bound: float, certified_delta: float) -> float | None:
    """``training_bound / certified_delta``; ``None`` when the certified delta is 0 (the
    ratio is undefined, or infinite)."""
    if certified_delta <= 0.0:
        return None
    return training_bound / certified_delta


def starting_width(problem: LearningProblem) -> float:
    """The smooth loss's width before any refinement: ``problem.bucket_width``, else
    :func:`~accountant.learning.smooth_loss.default_smooth_width` of its eps."""
    if problem.bucket_width is not None:
        return problem.bucket_width
    return default_smooth_width(problem.epsilon)


@attrs.frozen
class Refinement:
    """One halving of the bucket width at the end of epoch ``epoch``: the training bound
    of the best noise at ``width`` was ``training_bound``, ``bias`` times its certified
    delta ``certified_delta``; training continues at ``new_width = width / 2``."""

    epoch: int
    width: float
    new_width: float
    training_bound: float
    certified_delta: float

    @property
    def bias(self) -> float | None:
        """``training_bound / certified_delta`` (:func:`training_bias`)."""
        return training_bias(self.training_bound, self.certified_delta)

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for checkpoints and JSON."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Refinement:
        """Inverse of :meth:`to_dict`."""
        return cls(
            epoch=int(values["epoch"]),
            width=float(values["width"]),
            new_width=float(values["new_width"]),
            training_bound=float(values["training_bound"]),
            certified_delta=float(values["certified_delta"]),
        )


def _off(training_bound: float, certified_delta: float) -> bool:
    """Whether the bias is outside ``[1 - TOLERANCE, 1 + TOLERANCE]``."""
    bias = training_bias(training_bound, certified_delta)
    if bias is None:
        return training_bound > 0.0
    return abs(bias - 1.0) > TOLERANCE


def refine_width(
    pmf: np.ndarray,
    problem: LearningProblem,
    width: float,
    training_bound: float,
    bound_at: Callable[[float], float],
    epoch: int,
) -> list[Refinement]:
    """The halvings of ``width`` at the end of ``epoch`` (module docstring), in order;
    empty when the bias is within tolerance or ``width / 2`` would fall below
    :data:`WIDTH_FLOOR`. ``training_bound``: the training bound of ``pmf`` at ``width``;
    ``bound_at(w)``: the training bound of ``pmf`` at width ``w``."""
    if not math.isfinite(training_bound):
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        certified = certify(
            from_array(np.asarray(pmf, dtype=np.float64), problem.step),
            problem.pair_map,
            epsilon=problem.epsilon,
            times=problem.times,
            kind="PDP" if problem.loss == "PDP" else "ADP",
            accuracy=CHECK_ACCURACY,
        ).delta_upper
    steps: list[Refinement] = []
    while _off(training_bound, certified) and width / 2.0 >= WIDTH_FLOOR:
        step = Refinement(epoch, width, width / 2.0, training_bound, certified)
        steps.append(step)
        width = step.new_width
        training_bound = float(bound_at(width))
    return steps
