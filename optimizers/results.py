"""The result of a learning run: the noise, its certificate, the truncated-Gaussian
baseline, and the run's history; saved as ``noise.npz`` plus ``result.json``."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from accountant.certification import Certificate, GaussianBaseline, best_truncated_gaussian, certify
from accountant.errors import CertificationWarning, InfeasibleTargetError, InvalidInputError
from accountant.noise import NoiseDistribution, truncated_gaussian
from optimizers.problem import LearningProblem, Schedule

__all__ = ["LearnedNoise", "certify_learned"]

NOISE_FILE = "noise.npz"
RESULT_FILE = "result.json"
_CERTIFICATE_FIELDS = (
    "epsilon",
    "times",
    "kind",
    "delta_upper",
    "delta_lower",
    "utility_l1",
    "utility_l2",
    "accuracy_achieved",
    "description",
)


@attrs.frozen(eq=False)
class LearnedNoise:
    """A learned noise and everything needed to trust it.

    ``certificate``: certified PrivacyBuckets ADP bounds of the noise (the reported
    delta is ``certificate.delta_upper``). ``baseline``: the truncated Gaussian of the
    same range and grid with the smallest utility loss at a certified delta no larger
    (``None`` when none reaches it; ``baseline_note`` says why). ``history``: training
    bound, utility loss and objective per epoch. ``stopped_by``: the signal that ended
    the run early, if any.
    """

    noise: NoiseDistribution
    problem: LearningProblem
    schedule: Schedule
    certificate: Certificate
    baseline: GaussianBaseline | None
    baseline_note: str
    epochs_run: int
    best_epoch: int
    seconds: float
    stopped_by: str | None
    history: dict[str, np.ndarray] = attrs.field(repr=False)

    @property
    def delta(self) -> float:
        """Certified upper bound on the ADP delta at the problem's eps and n."""
        return self.certificate.delta_upper

    @property
    def utility(self) -> float:
        """Utility loss of the problem's kind."""
        return self.certificate.utility(self.problem.utility)

    def summary(self) -> dict[str, Any]:
        """Plain numbers for tables and JSON."""
        baseline = self.baseline
        return {
            "delta_certified": self.delta,
            "utility": self.utility,
            "utility_kind": self.problem.utility,
            "gaussian_sigma": None if baseline is None else baseline.sigma,
            "gaussian_delta_certified": None
            if baseline is None
            else baseline.certificate.delta_upper,
            "gaussian_utility": None if baseline is None else baseline.utility,
            "baseline_note": self.baseline_note,
            "epochs_run": self.epochs_run,
            "best_epoch": self.best_epoch,
            "seconds": self.seconds,
            "stopped_by": self.stopped_by,
        }

    def save(self, directory: str | Path) -> Path:
        """Write ``noise.npz`` (pmf, grid and history) and ``result.json`` to ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        np.savez(
            directory / NOISE_FILE,
            pmf=self.noise.pmf,
            step=self.noise.step,
            start=self.noise.start,
            **{f"history_{k}": v for k, v in self.history.items()},
        )
        record = {
            "problem": self.problem.to_dict(),
            "schedule": self.schedule.to_dict(),
            "certificate": {k: getattr(self.certificate, k) for k in _CERTIFICATE_FIELDS},
            "baseline": None if self.baseline is None else _baseline_record(self.baseline),
            **self.summary(),
        }
        (directory / RESULT_FILE).write_text(json.dumps(record, indent=2) + "\n")
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> LearnedNoise:
        """Read a result written by :meth:`save` (no recomputation)."""
        # Reliability fix: a non-path argument raised TypeError, and a readable but
        # incomplete or malformed result.json raised KeyError / TypeError; every unreadable
        # directory is now refused with one InvalidInputError naming it.
        if not isinstance(directory, str | os.PathLike):
            raise InvalidInputError(
                f"directory must be a path, got {type(directory).__name__}: {directory!r}"
            )
        directory = Path(directory)
        try:
            return cls._load(directory)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            reason = f"missing entry {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InvalidInputError(
                f"directory={str(directory)!r} holds no readable learned noise ({reason})"
            ) from exc

    @classmethod
    def _load(cls, directory: Path) -> LearnedNoise:
        record = json.loads((directory / RESULT_FILE).read_text())
        arrays = np.load(directory / NOISE_FILE)
        problem = LearningProblem.from_dict(record["problem"])
        noise = NoiseDistribution(
            pmf=arrays["pmf"], step=float(arrays["step"]), start=float(arrays["start"])
        )
        history = {
            k[len("history_") :]: arrays[k] for k in arrays.files if k.startswith("history_")
        }
        baseline = None
        if record["baseline"] is not None:
            baseline = _baseline_from_record(record["baseline"], problem)
        return cls(
            noise=noise,
            problem=problem,
            schedule=Schedule.from_dict(record["schedule"]),
            certificate=Certificate(noise=noise, **record["certificate"]),
            baseline=baseline,
            baseline_note=record["baseline_note"],
            epochs_run=record["epochs_run"],
            best_epoch=record["best_epoch"],
            seconds=record["seconds"],
            stopped_by=record["stopped_by"],
            history=history,
        )


def _baseline_record(baseline: GaussianBaseline) -> dict[str, Any]:
    certificate = {k: getattr(baseline.certificate, k) for k in _CERTIFICATE_FIELDS}
    return {
        "sigma": baseline.sigma,
        "utility_kind": baseline.utility_kind,
        "target_delta": baseline.target_delta,
        "certificate": certificate,
    }


def _baseline_from_record(record: dict[str, Any], problem: LearningProblem) -> GaussianBaseline:
    noise = truncated_gaussian(record["sigma"], problem.bound, problem.step)
    return GaussianBaseline(
        sigma=record["sigma"],
        noise=noise,
        certificate=Certificate(noise=noise, **record["certificate"]),
        utility_kind=record["utility_kind"],
        target_delta=record["target_delta"],
    )


def _baseline(noise_delta: float, problem: LearningProblem, accuracy: float):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificationWarning)
            baseline = best_truncated_gaussian(
                bound=problem.bound,
                step=problem.step,
                pair_map=problem.pair_map,
                epsilon=problem.epsilon,
                times=problem.times,
                target_delta=noise_delta,
                utility=problem.utility,
                accuracy=accuracy,
            )
    except InfeasibleTargetError as exc:
        return None, f"no truncated Gaussian of this range and grid reaches it: {exc}"
    return baseline, ""


def certify_learned(
    noise: NoiseDistribution,
    problem: LearningProblem,
    schedule: Schedule,
    state: dict[str, Any],
    *,
    stopped_by: str | None,
    accuracy: float,
    compare: bool,
) -> LearnedNoise:
    """Certify the learned ``noise`` (PrivacyBuckets ADP upper bound at the problem's eps
    and n) and find its truncated-Gaussian baseline at the certified delta."""
    certificate = certify(
        noise, problem.pair_map, epsilon=problem.epsilon, times=problem.times, accuracy=accuracy
    )
    baseline, note = None, "comparison not requested"
    if compare:
        if 0.0 < certificate.delta_upper < 1.0:
            baseline, note = _baseline(certificate.delta_upper, problem, accuracy)
        else:
            note = f"certified delta {certificate.delta_upper!r} is not in (0, 1)"
    history = {k: np.asarray(v, dtype=np.float64) for k, v in state["history"].items()}
    return LearnedNoise(
        noise=noise,
        problem=problem,
        schedule=schedule,
        certificate=certificate,
        baseline=baseline,
        baseline_note=note,
        epochs_run=int(state["epoch"]),
        best_epoch=int(state["best"]["epoch"]),
        seconds=float(state["seconds"]),
        stopped_by=stopped_by,
        history=history,
    )
