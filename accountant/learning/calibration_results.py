"""What :func:`accountant.learning.calibration.calibrate_noise_multiplier` returns, and its
JSON form.

The JSON Schema shipped as ``accountant/schemas/calibrate.schema.json`` describes exactly
what :meth:`NoiseCalibration.to_dict` returns (a test checks one against the other)::

    {"schema_version": 1,
     "mechanism": {"description", "sampling_rate", "steps", "cut", "clip", "truncation"},
     "target": {"epsilon", "delta", "tolerance"},
     "result": {"sigma", "delta_lower", "delta_upper", "sigma_low",
                "sigma_low_delta_lower", "relative_bracket", "converged", "evaluations"},
     "points": [{"sigma", "lower", "upper", "accuracy", "achieved_accuracy"}, ...],
     "notes": [...], "seconds": ...}

``cut`` is the string ``"inf"`` for the untruncated mechanism; ``sigma_low``, its lower
delta and ``relative_bracket`` are ``null`` when no sigma was certified to fail.
"""

from __future__ import annotations

import math

import attrs

from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian

__all__ = ["CALIBRATION_SCHEMA_VERSION", "CalibrationPoint", "NoiseCalibration"]

#: Version of the JSON layout; raised whenever a key is renamed, moved or removed.
CALIBRATION_SCHEMA_VERSION = 1


@attrs.frozen
class CalibrationPoint:
    """One PrivacyBuckets query of the calibration: certified ``lower <= delta(eps) <=
    upper`` at noise multiplier ``sigma``, asked with ``accuracy``, reached
    ``achieved_accuracy`` (``(upper - lower) / upper``)."""

    sigma: float
    lower: float
    upper: float
    accuracy: float
    achieved_accuracy: float

    def to_dict(self) -> dict:
        return attrs.asdict(self)


@attrs.frozen
class NoiseCalibration:
    """A calibrated noise multiplier with its certificate.

    ``sigma``: the smallest noise multiplier found whose certified upper delta at
    ``epsilon`` is ``delta_upper <= delta`` (``delta_lower`` the certified lower bound
    there). ``sigma_low``: a noise multiplier whose certified lower delta
    ``sigma_low_delta_lower`` exceeds ``delta`` (``None`` if none was found; see
    :mod:`accountant.learning.calibration` for why smaller ones fail too). ``converged``: whether
    ``sigma / sigma_low - 1 <= tolerance``; if not, ``notes`` says why. ``points``: every
    PrivacyBuckets query, in order. The mechanism settings are those given.
    """

    sigma: float
    sigma_low: float | None
    delta_lower: float
    delta_upper: float
    sigma_low_delta_lower: float | None
    epsilon: float
    delta: float
    sampling_rate: float
    steps: int
    dimension: int
    cut: float
    clip: float
    truncation: str
    tolerance: float
    converged: bool
    points: tuple[CalibrationPoint, ...]
    notes: tuple[str, ...] = ()

    @property
    def evaluations(self) -> int:
        """Number of PrivacyBuckets queries (each a full composition of ``steps``)."""
        return len(self.points)

    @property
    def relative_bracket(self) -> float:
        """``sigma / sigma_low - 1`` (``inf`` without ``sigma_low``)."""
        return math.inf if self.sigma_low is None else self.sigma / self.sigma_low - 1.0

    @property
    def mechanism(self) -> SubsampledTruncatedGaussian:
        """The calibrated mechanism, at ``sigma``."""
        return SubsampledTruncatedGaussian(
            sigma=self.sigma,
            sampling_rate=self.sampling_rate,
            cut=self.cut,
            clip=self.clip,
            truncation=self.truncation,
        )

    def to_dict(self, seconds: float | None = None) -> dict:
        """The JSON form (module docstring); ``seconds``: the wall time, if measured."""
        bracket = None if self.sigma_low is None else self.relative_bracket
        return {
            "schema_version": CALIBRATION_SCHEMA_VERSION,
            "mechanism": {
                "description": self.mechanism.description,
                "sampling_rate": self.sampling_rate,
                "steps": self.steps,
                "dimension": self.dimension,
                "cut": self.cut if math.isfinite(self.cut) else "inf",
                "clip": self.clip,
                "truncation": self.truncation,
            },
            "target": {"epsilon": self.epsilon, "delta": self.delta, "tolerance": self.tolerance},
            "result": {
                "sigma": self.sigma,
                "delta_lower": self.delta_lower,
                "delta_upper": self.delta_upper,
                "sigma_low": self.sigma_low,
                "sigma_low_delta_lower": self.sigma_low_delta_lower,
                "relative_bracket": bracket,
                "converged": self.converged,
                "evaluations": self.evaluations,
            },
            "points": [p.to_dict() for p in self.points],
            "notes": list(self.notes),
            "seconds": seconds,
        }
