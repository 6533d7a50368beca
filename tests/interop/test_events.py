"""TruncatedNoiseDpEvent: a frozen dp_accounting DpEvent, validated, with its pairs."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

pytest.importorskip("dp_accounting")  # the [dp-accounting] extra; CI installs it

from dp_accounting import dp_event

from accountant import InvalidInputError, WorstCasePair, noise
from accountant.interop import TruncatedNoiseDpEvent


@pytest.fixture(scope="module")
def grid_noise():
    return noise.truncated_gaussian(2.0, 10.0, 0.5)


def test_is_a_frozen_dp_event_equal_by_noise_and_sensitivity(grid_noise):
    event = TruncatedNoiseDpEvent(grid_noise, sensitivity=1.0)
    assert isinstance(event, dp_event.DpEvent)
    assert event == TruncatedNoiseDpEvent(grid_noise, 1.0)
    assert hash(event) == hash(TruncatedNoiseDpEvent(grid_noise, 1.0))
    assert event != TruncatedNoiseDpEvent(grid_noise, 1.5)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.sensitivity = 2.0  # type: ignore[misc]
    # dp_accounting's ledger keeps it like its own events
    composed = dp_event.SelfComposedDpEvent(event, 3)
    assert composed.event is event


def test_pairs_are_the_library_pairs(grid_noise):
    event = TruncatedNoiseDpEvent(grid_noise, sensitivity=1.0)
    np.testing.assert_array_equal(event.pair().b, WorstCasePair.additive(grid_noise, 1.0).b)
    expected = WorstCasePair.subsampled(grid_noise, 0.1, clip=1.0)
    np.testing.assert_array_equal(event.subsampled_pair(0.1).b, expected.b)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"noise": "gaussian"}, "noise"),
        ({"sensitivity": 0.0}, "sensitivity"),
        ({"sensitivity": float("nan")}, "sensitivity"),
        ({"sensitivity": 0.75}, "sensitivity=0.75 is not a whole number of grid steps"),
    ],
)
def test_bad_arguments_are_refused_by_name(grid_noise, arguments, named):
    with pytest.raises(InvalidInputError, match=named):
        TruncatedNoiseDpEvent(**{"noise": grid_noise, **arguments})
