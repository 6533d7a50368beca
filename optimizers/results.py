"""The result of a learning run: the learned noise and its certificate, the
truncated-Gaussian baseline, which of the two is returned, whether the target was met,
and the run's history; saved as ``noise.npz`` plus ``result.json``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.learning.certification import Certificate
from accountant.learning.gaussian_baseline import GaussianBaseline
from accountant.noise import NoiseDistribution, truncated_gaussian
from optimizers.problem import LearningProblem, Schedule
from optimizers.refinement import Refinement, training_bias

__all__ = ["LearnedNoise", "LearningWarning", "learned_beats"]

NOISE_FILE = "noise.npz"
RESULT_FILE = "result.json"
#: The learned noise beats the baseline when its utility loss is smaller by more than this
#: relative amount; closer is a tie (e.g. a learned noise that stayed at its Gaussian
#: warm start), which the baseline wins.
BEAT_RTOL = 1e-9
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


class LearningWarning(UserWarning):
    """A learning run returned less than was asked: the certified delta of what it
    returns misses the target delta, or the learned noise does not beat the best
    truncated Gaussian (which is then what it returns)."""


def learned_beats(learned: Certificate, baseline: GaussianBaseline) -> bool:
    """Whether ``learned`` has a smaller utility loss (of the baseline's kind) than the
    ``baseline``, by more than a relative :data:`BEAT_RTOL`."""
    return learned.utility(baseline.utility_kind) < baseline.utility * (1.0 - BEAT_RTOL)


def _refinements(values: Iterable[Refinement]) -> tuple[Refinement, ...]:
    return tuple(values)


def _check_beats(instance: LearnedNoise, attribute: attrs.Attribute, value: Any) -> None:
    """``beats_baseline`` must agree with the certificates it summarises."""
    if value is not None and not isinstance(value, bool):
        raise InvalidInputError(f"beats_baseline must be True, False or None, got {value!r}")
    baseline = instance.baseline
    if baseline is None:
        if value is False:
            raise InvalidInputError("beats_baseline=False needs a baseline, got baseline=None")
        return
    kind = baseline.utility_kind
    if value is not learned_beats(instance.learned, baseline):
        raise InvalidInputError(
            f"beats_baseline={value!r} contradicts the utility losses: learned "
            f"{instance.learned.utility(kind)!r}, baseline {baseline.utility!r}"
        )


@attrs.frozen(eq=False)
class LearnedNoise:
    """A learning run's outcome and everything needed to trust it.

    ``learned``: the certified PrivacyBuckets ADP bounds of the learned noise at the
    problem's eps and n (``learned.noise`` is the learned pmf), kept whatever is returned.
    ``baseline``: the truncated Gaussian of the same range and grid with the smallest
    utility loss at a certified delta no larger than the learned noise's (``None`` when
    there is none; ``baseline_note`` says why). ``beats_baseline``: ``True`` when the
    learned noise has the smaller utility loss (by more than a relative
    :data:`BEAT_RTOL`: a tie goes to the baseline), or no truncated Gaussian of the range
    reaches its certified delta; ``False`` when the baseline's utility loss is no larger;
    ``None`` when no comparison was made.

    What is returned (:attr:`returned`, and what :attr:`noise`, :attr:`certificate`,
    :attr:`delta` and :attr:`utility` describe) is the learned noise, unless it does not
    beat the baseline: then the baseline, which is then at least as good on both counts.
    :attr:`met_target` says whether the returned noise's certified delta meets the
    problem's ``target_delta``; :attr:`notes` says in words what fell short.
    ``history``: training bound, utility loss and objective per epoch. ``stopped_by``:
    the signal (or ``"time limit"``) that ended the run early, if any.

    ``training_bound``: the training bound ``l(p)`` of the learned noise at its best
    epoch (the smooth bucket delta at ``training_width``, or the Extended MA delta,
    ``training_width`` then ``None``); :attr:`training_bias` is ``l(p)`` over the learned
    noise's certified delta ``learned.delta_upper``. For ``loss="ADP"`` it measures the
    smooth loss's bias (above 1: the run optimised too pessimistic a bound and its noise
    is larger than needed); for ``"PDP"`` and ``"MA"``, different (larger) bounds than the
    ADP delta certified, it also includes that bound's own gap. ``refinements``: the
    halvings of the bucket width during training (``Schedule.refine_every``,
    :mod:`optimizers.refinement`). ``None`` and ``()`` in results saved before these
    fields existed.
    """

    learned: Certificate
    problem: LearningProblem
    schedule: Schedule
    baseline: GaussianBaseline | None
    baseline_note: str
    beats_baseline: bool | None = attrs.field(validator=_check_beats)
    epochs_run: int
    best_epoch: int
    seconds: float
    stopped_by: str | None
    history: dict[str, np.ndarray] = attrs.field(repr=False)
    training_bound: float | None = None
    training_width: float | None = None
    refinements: tuple[Refinement, ...] = attrs.field(default=(), converter=_refinements)

    @property
    def training_bias(self) -> float | None:
        """``training_bound / learned.delta_upper`` (``None`` without a training bound or
        when the certified delta is 0)."""
        if self.training_bound is None:
            return None
        return training_bias(self.training_bound, self.learned.delta_upper)

    @property
    def returned(self) -> str:
        """``"baseline"`` when the learned noise does not beat it, else ``"learned"``."""
        return "baseline" if self.beats_baseline is False else "learned"

    @property
    def certificate(self) -> Certificate:
        """The certificate of the returned noise."""
        if self.returned == "baseline":
            return cast(GaussianBaseline, self.baseline).certificate
        return self.learned

    @property
    def noise(self) -> NoiseDistribution:
        """The returned noise (the learned one, or the baseline that beats it)."""
        return self.certificate.noise

    @property
    def delta(self) -> float:
        """Certified upper bound on the ADP delta of the returned noise."""
        return self.certificate.delta_upper

    @property
    def utility(self) -> float:
        """Utility loss of the problem's kind of the returned noise."""
        return self.certificate.utility(self.problem.utility)

    @property
    def target_delta(self) -> float | None:
        """The problem's target delta (``None``: the paper's objective, no target)."""
        return self.problem.target_delta

    @property
    def met_target(self) -> bool | None:
        """Whether the returned noise's certified delta is at most the target delta
        (``None`` when the problem has no target)."""
        if self.target_delta is None:
            return None
        return self.delta <= self.target_delta

    @property
    def notes(self) -> list[str]:
        """One sentence per shortfall: a missed target, a returned baseline."""
        notes = []
        kind = f"U_{self.problem.utility}"
        if self.returned == "baseline":
            base = cast(GaussianBaseline, self.baseline)
            learned = self.learned.utility(self.problem.utility)
            notes.append(
                f"the learned noise ({kind} {learned:.6g} at certified delta "
                f"{self.learned.delta_upper:.4g}) does not beat the best truncated Gaussian "
                f"(sigma {base.sigma:.4g}, {kind} {base.utility:.6g} at certified delta "
                f"{base.certificate.delta_upper:.4g}); the truncated Gaussian is returned "
                "and the learned noise kept as 'learned'"
            )
        if self.met_target is False:
            which = "learned noise" if self.returned == "learned" else "returned Gaussian"
            notes.append(
                f"the {which}'s certified delta {self.delta:.6g} misses the "
                f"target delta {self.target_delta:.6g}; train longer or at a lower learning "
                "rate, widen the range, or raise the target"
            )
        return notes

    def summary(self) -> dict[str, Any]:
        """Plain values for tables and JSON (schema: docs/guide/learning.md)."""
        baseline = self.baseline
        return {
            "returned": self.returned,
            "delta_certified": self.delta,
            "utility": self.utility,
            "utility_kind": self.problem.utility,
            "target_delta": self.target_delta,
            "met_target": self.met_target,
            "beats_baseline": self.beats_baseline,
            "learned_delta_certified": self.learned.delta_upper,
            "learned_utility": self.learned.utility(self.problem.utility),
            "gaussian_sigma": None if baseline is None else baseline.sigma,
            "gaussian_delta_certified": None
            if baseline is None
            else baseline.certificate.delta_upper,
            "gaussian_utility": None if baseline is None else baseline.utility,
            "baseline_note": self.baseline_note,
            "epochs_run": self.epochs_run,
            "best_epoch": self.best_epoch,
            "training_bound": self.training_bound,
            "training_bias": self.training_bias,
            "training_width": self.training_width,
            "refinements": [r.to_dict() for r in self.refinements],
            "seconds": self.seconds,
            "stopped_by": self.stopped_by,
            "notes": self.notes,
        }

    def save(self, directory: str | Path) -> Path:
        """Write ``noise.npz`` (the returned ``pmf``, its grid, the ``learned_pmf`` and the
        history) and ``result.json`` to ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        np.savez(
            directory / NOISE_FILE,
            pmf=self.noise.pmf,
            step=self.noise.step,
            start=self.noise.start,
            learned_pmf=self.learned.noise.pmf,
            # numpy's stubs: a ** mapping might fill savez's allow_pickle (ours never does)
            **{f"history_{k}": v for k, v in self.history.items()},  # type: ignore[arg-type]
        )
        record = {
            "problem": self.problem.to_dict(),
            "schedule": self.schedule.to_dict(),
            "learned": _certificate_record(self.learned),
            "baseline": None if self.baseline is None else _baseline_record(self.baseline),
            **self.summary(),
        }
        (directory / RESULT_FILE).write_text(json.dumps(record, indent=2) + "\n")
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> LearnedNoise:
        """Read a result written by :meth:`save` (no recomputation)."""
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
            pmf=arrays["pmf" if "learned_pmf" not in arrays.files else "learned_pmf"],
            step=float(arrays["step"]),
            start=float(arrays["start"]),
        )
        history = {
            k[len("history_") :]: arrays[k] for k in arrays.files if k.startswith("history_")
        }
        baseline = None
        if record["baseline"] is not None:
            baseline = _baseline_from_record(record["baseline"], problem)
        if "learned" in record:
            learned = Certificate(noise=noise, **record["learned"])
            beats = record["beats_baseline"]
        else:  # written before results said what they return: the learned noise was
            learned = Certificate(noise=noise, **record["certificate"])
            beats = None if baseline is None else learned_beats(learned, baseline)
        return cls(
            learned=learned,
            problem=problem,
            schedule=Schedule.from_dict(record["schedule"]),
            baseline=baseline,
            baseline_note=record["baseline_note"],
            beats_baseline=beats,
            epochs_run=record["epochs_run"],
            best_epoch=record["best_epoch"],
            seconds=record["seconds"],
            stopped_by=record["stopped_by"],
            history=history,
            training_bound=record.get("training_bound"),
            training_width=record.get("training_width"),
            refinements=[Refinement.from_dict(r) for r in record.get("refinements", [])],
        )


def _certificate_record(certificate: Certificate) -> dict[str, Any]:
    return {k: getattr(certificate, k) for k in _CERTIFICATE_FIELDS}


def _baseline_record(baseline: GaussianBaseline) -> dict[str, Any]:
    return {
        "sigma": baseline.sigma,
        "utility_kind": baseline.utility_kind,
        "target_delta": baseline.target_delta,
        "certificate": _certificate_record(baseline.certificate),
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
