"""Bad-input cases for ``calibrate_noise_multiplier`` (issue 12's calibration): every
argument, each refused before any accountant query with a message naming it and the value."""

from __future__ import annotations

from accountant import calibrate_noise_multiplier
from tests.bad_inputs.catalogue import INF, NAN, POSITIVE_INT, POSITIVE_REAL, each

_VALID = {
    "epsilon": 3.0,
    "delta": 1e-5,
    "sampling_rate": 0.01,
    "steps": 100,
    "cut": 8.0,
    "dimension": 1,
}


def _call(**changed):
    return calibrate_noise_multiplier(**(_VALID | changed))


_UNIT_OPEN = [(0.0, "got 0.0"), (1.0, "got 1.0"), (NAN, "got nan"), ("0.1", "got '0.1'")]

CALIBRATION_CASES = [
    *each("calibrate_noise_multiplier", "epsilon", lambda v: _call(epsilon=v), POSITIVE_REAL),
    *each("calibrate_noise_multiplier", "delta", lambda v: _call(delta=v), _UNIT_OPEN),
    *each(
        "calibrate_noise_multiplier",
        "sampling_rate",
        lambda v: _call(sampling_rate=v),
        [(0.0, "got 0.0"), (1.5, "got 1.5"), (NAN, "got nan"), (INF, "got inf")],
    ),
    *each("calibrate_noise_multiplier", "steps", lambda v: _call(steps=v), POSITIVE_INT),
    *each(
        "calibrate_noise_multiplier",
        "cut",
        lambda v: _call(cut=v),
        [(0.0, "got 0.0"), (-8.0, "got -8.0"), (NAN, "got nan")],
    ),
    *each("calibrate_noise_multiplier", "clip", lambda v: _call(clip=v), [(0.0, "got 0.0")]),
    *each(
        "calibrate_noise_multiplier",
        "truncation",
        lambda v: _call(truncation=v),
        [("cut", "got 'cut'"), (None, "got None")],
    ),
    *each("calibrate_noise_multiplier", "tolerance", lambda v: _call(tolerance=v), POSITIVE_REAL),
    *each("calibrate_noise_multiplier", "accuracy", lambda v: _call(accuracy=v), _UNIT_OPEN[:3]),
    *each(
        "calibrate_noise_multiplier",
        "max_sigma",
        lambda v: _call(max_sigma=v),
        [(-1.0, "got -1.0"), (NAN, "got nan")],
    ),
    *each(
        "calibrate_noise_multiplier",
        "max_evaluations",
        lambda v: _call(max_evaluations=v),
        POSITIVE_INT,
    ),
]

__all__ = ["CALIBRATION_CASES"]
