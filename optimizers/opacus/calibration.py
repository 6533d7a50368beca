"""The noise multiplier for a privacy target, certified: Opacus's ``get_noise_multiplier``
with this library's calibration.

Opacus's ``opacus.accountants.utils.get_noise_multiplier`` bisects on the eps its
accountant reports; it builds the accountant by name, without a model, so it cannot
know the number of noised coordinates a truncated bound depends on.
:func:`get_noise_multiplier` takes the dimension and calls
:func:`accountant.calibrate_noise_multiplier`: the smallest noise multiplier found whose
certified delta at the target eps is at most the target delta, with a neighbour certified
to fail within ``tolerance``. With ``cut=math.inf`` it calibrates Opacus's untruncated
Gaussian (no dimension needed; the certified counterpart of
``get_noise_multiplier(accountant="certified")``, found by the library's search instead
of Opacus's bisection).
"""

from __future__ import annotations

from typing import Any

from accountant import InvalidInputError, calibrate_noise_multiplier
from accountant.validation import (
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)
from optimizers.opacus.settings import DEFAULT_CUT, DEFAULT_TRUNCATION

__all__ = ["get_noise_multiplier"]

#: Relative distance from an integer within which ``epochs / sample_rate`` counts as it
#: (``1 / (1 / n)`` is not always ``n`` in floating point).
_ROUNDING = 1e-9


def _steps(sample_rate: float, epochs: Any, steps: Any) -> int:
    """``steps``, or ``epochs / sample_rate`` rounded to the integer it is within
    rounding error of (else down, as Opacus): exactly one of them must be given."""
    if (epochs is None) == (steps is None):
        raise InvalidInputError(
            f"exactly one of epochs and steps must be given, got epochs={epochs!r}, steps={steps!r}"
        )
    if steps is not None:
        return check_positive_int("steps", steps)
    exact = check_positive_int("epochs", epochs) / sample_rate
    nearest = round(exact)
    count = nearest if abs(exact - nearest) <= _ROUNDING * exact else int(exact)
    if count < 1:
        raise InvalidInputError(
            f"epochs / sample_rate must be at least one step, got {epochs!r} / {sample_rate!r}"
        )
    return count


def get_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: int | None = None,
    steps: int | None = None,
    cut: float = DEFAULT_CUT,
    dimension: int | None = None,
    truncation: str = DEFAULT_TRUNCATION,
    tolerance: float = 1e-3,
) -> float:
    """The noise multiplier of :func:`accountant.calibrate_noise_multiplier` in Opacus's
    terms (Opacus's ``get_noise_multiplier`` returns one float too): its certified
    ``(target_epsilon, target_delta)`` holds after ``steps`` steps (or ``epochs /
    sample_rate``) at Poisson sampling rate ``sample_rate`` with noise cut at ``cut``
    standard deviations (``math.inf``: no cut) on ``dimension`` coordinates (the model's
    trainable parameters; required with a finite cut). ``tolerance``: the relative width
    ``sigma / sigma_low - 1`` sought (``sigma_low`` certified to fail)."""
    rate = check_probability("sample_rate", sample_rate)
    return calibrate_noise_multiplier(
        epsilon=check_positive_real("target_epsilon", target_epsilon),
        delta=check_target_delta("target_delta", target_delta),
        sampling_rate=rate,
        steps=_steps(rate, epochs, steps),
        cut=cut,
        dimension=dimension,
        truncation=truncation,
        tolerance=tolerance,
    ).sigma
