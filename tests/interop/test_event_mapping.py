"""event_releases walks a DpEvent tree down to its releases and their counts."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("dp_accounting")  # the [dp-accounting] extra; CI installs it

from dp_accounting import dp_event

from accountant import InvalidInputError, mechanisms
from accountant.interop.event_mapping import (
    EventNotSupportedError,
    EventReleases,
    event_releases,
    mechanism_of,
)

GAUSSIAN = dp_event.GaussianDpEvent(2.0)
LAPLACE = dp_event.LaplaceDpEvent(3.0)


def test_counts_multiply_down_the_tree():
    inner = dp_event.ComposedDpEvent([GAUSSIAN, dp_event.SelfComposedDpEvent(LAPLACE, 3)])
    tree = dp_event.SelfComposedDpEvent(
        dp_event.ComposedDpEvent([inner, dp_event.NoOpDpEvent()]), 2
    )
    assert event_releases(tree, 5) == EventReleases(((GAUSSIAN, 10), (LAPLACE, 30)))


def test_count_zero_checks_the_structure_and_releases_nothing():
    assert event_releases(dp_event.NonPrivateDpEvent(), 0) == EventReleases()
    assert event_releases(GAUSSIAN, 0) == EventReleases()
    with pytest.raises(EventNotSupportedError) as info:
        event_releases(dp_event.ComposedDpEvent([GAUSSIAN, dp_event.UnsupportedDpEvent()]), 0)
    assert info.value.event == dp_event.UnsupportedDpEvent()


def test_mechanisms_in_units_of_the_sensitivity():
    assert mechanism_of(GAUSSIAN) == mechanisms.GaussianMechanism(sigma=2.0, sensitivity=1.0)
    assert mechanism_of(LAPLACE) == mechanisms.LaplaceMechanism(scale=3.0, sensitivity=1.0)
    sampled = mechanism_of(dp_event.PoissonSampledDpEvent(0.25, GAUSSIAN))
    assert (sampled.sigma, sampled.sampling_rate, sampled.cut) == (2.0, 0.25, math.inf)
    with pytest.raises(InvalidInputError, match="event"):
        mechanism_of(dp_event.NoOpDpEvent())
