"""The tiny sweep the sweep tests share: 4 runs of a few epochs each (~1-3 s a run)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")  # the [torch] extra; CI installs it

from optimizers.problem import Schedule
from optimizers.sweep import SweepSpec

#: The problem of tests/optimizers/test_learner.py, at two eps and two training bounds.
TINY = {
    "epsilons": [0.5, 1.0],
    "times": [2],
    "losses": ["ADP", "MA"],
    "bound": 4.0,
    "step": 0.25,
    "target_deltas": [0.2],
    "schedule": Schedule(epochs=30, learning_rate=0.1, checkpoint_every=10),
}


def tiny_spec(**changes) -> SweepSpec:
    return SweepSpec(**(TINY | changes))
