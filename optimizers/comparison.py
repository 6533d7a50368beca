"""Certify a learned noise and compare it with the best truncated Gaussian of the same
range and grid at the same certified delta (the baseline of the paper's experiments)."""

from __future__ import annotations

import warnings
from typing import cast

import numpy as np

from accountant.errors import CertificationWarning, InfeasibleTargetError
from accountant.learning.certification import certify
from accountant.learning.gaussian_baseline import GaussianBaseline
from accountant.noise import NoiseDistribution
from optimizers.problem import LearningProblem, Schedule
from optimizers.results import LearnedNoise, learned_beats
from optimizers.run_state import BestNoise, RunState

__all__ = ["certify_learned"]


def _baseline(
    noise_delta: float, problem: LearningProblem, accuracy: float
) -> tuple[GaussianBaseline | None, str]:
    """The truncated Gaussian with the smallest utility loss at a certified delta at most
    ``noise_delta``, or ``None`` and why."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificationWarning)
            baseline = problem.best_gaussian(noise_delta, accuracy)
    except InfeasibleTargetError as exc:
        return None, f"no truncated Gaussian of this range and grid reaches it: {exc}"
    return baseline, ""


def certify_learned(
    noise: NoiseDistribution,
    problem: LearningProblem,
    schedule: Schedule,
    state: RunState,
    *,
    stopped_by: str | None,
    accuracy: float,
    compare: bool,
) -> LearnedNoise:
    """Certify the learned ``noise`` (PrivacyBuckets ADP upper bound at the problem's eps
    and n; with ``problem.all_shifts`` the largest over every mix of query differences
    ``1..sensitivity / step`` grid steps the releases can have, see
    :mod:`accountant.learning.certification`), find its truncated-Gaussian baseline at the
    certified delta (``compare``) and decide which of the two is returned
    (:class:`~optimizers.results.LearnedNoise`).

    The learned noise beats the baseline when its utility loss is smaller
    (:func:`~optimizers.results.learned_beats`), or when no truncated Gaussian of the
    range and grid reaches its certified delta.
    """
    certificate = certify(
        noise, problem.pair_map, epsilon=problem.epsilon, times=problem.times, accuracy=accuracy
    )
    baseline, note, beats = None, "comparison not requested", None
    if compare:
        if 0.0 < certificate.delta_upper < 1.0:
            baseline, note = _baseline(certificate.delta_upper, problem, accuracy)
            beats = baseline is None or learned_beats(certificate, baseline)
        else:
            note = f"certified delta {certificate.delta_upper!r} is not in (0, 1)"
    history = {k: np.asarray(v, dtype=np.float64) for k, v in state.history.to_dict().items()}
    return LearnedNoise(
        learned=certificate,
        problem=problem,
        schedule=schedule,
        baseline=baseline,
        baseline_note=note,
        beats_baseline=beats,
        epochs_run=state.epoch,
        # a trained run has a best noise (learn calls this after its epochs)
        best_epoch=cast(BestNoise, state.best).epoch,
        seconds=state.seconds,
        stopped_by=stopped_by,
        history=history,
    )
