"""Issue 27's dp_accounting events: Poisson-sampled Laplace, sampling without replacement and
the replace-one relation, each accounted as the mechanism its mapping names, next to
dp_accounting's own accountants; what is refused, by name and with the reason; answers kept
per target."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("dp_accounting")  # the [dp-accounting] extra; CI installs it

from dp_accounting import dp_event
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation, UnsupportedEventError
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

from accountant import InvalidInputError, PrivacyBuckets, WorstCasePair, mechanisms, noise
from accountant.interop import CertifiedAccountant, TruncatedNoiseDpEvent
from accountant.interop.event_mapping import POISSON_REPLACE_ONE, event_releases, mechanism_of
from accountant.mechanisms.without_replacement import without_replacement_pair

REPLACE = NeighboringRelation.REPLACE_ONE
EPSILONS = [0.5, 1.0, 2.0]
#: dp_accounting's discretisation (h = 1e-4 per release) and our bracket are far inside it.
SLACK = 1e-2


def _brackets(ours: CertifiedAccountant, theirs, epsilons=EPSILONS, slack=SLACK) -> None:
    for eps in epsilons:
        bounds, reference = ours.delta_bounds(eps), theirs.get_delta(eps)
        assert bounds.lower <= reference * (1 + slack)
        assert reference <= bounds.upper * (1 + slack) + 1e-14  # (dp_accounting's floor)


def test_poisson_sampled_laplace_is_the_subsampled_laplace_mechanism():
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.1, dp_event.LaplaceDpEvent(2.0)), 20
    )
    ours = CertifiedAccountant(accuracy=1e-3).compose(event)
    (component,) = ours.buckets.components
    assert component.mechanism == mechanisms.SubsampledLaplace(scale=2.0, sampling_rate=0.1)
    _brackets(ours, PLDAccountant().compose(event), [0.0, 0.1, 0.3])


def test_poisson_sampled_laplace_edge_rates():
    laplace = dp_event.LaplaceDpEvent(2.0)
    assert mechanism_of(dp_event.PoissonSampledDpEvent(1.0, laplace)) == (
        mechanisms.LaplaceMechanism(2.0)
    )
    assert event_releases(dp_event.PoissonSampledDpEvent(0.0, laplace), 3).releases == ()
    zero = dp_event.PoissonSampledDpEvent(0.5, dp_event.LaplaceDpEvent(0.0))
    assert CertifiedAccountant().compose(zero).get_epsilon(1e-5) == math.inf


def test_replace_one_gaussian_is_twice_the_sensitivity():
    event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(10.0), 50)
    ours = CertifiedAccountant(REPLACE, accuracy=1e-3).compose(event)
    (component,) = ours.buckets.components
    assert component.mechanism == mechanisms.GaussianMechanism(10.0, sensitivity=2.0)
    _brackets(ours, PLDAccountant(REPLACE).compose(event))


def test_replace_one_laplace_and_grid_noise_are_twice_the_sensitivity():
    grid = noise.truncated_gaussian(2.0, 10.0, 0.05)
    ours = CertifiedAccountant(REPLACE).compose(
        dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(3.0), TruncatedNoiseDpEvent(grid)])
    )
    direct = (
        PrivacyBuckets()
        .compose(mechanisms.LaplaceMechanism(3.0, sensitivity=2.0))
        .compose(WorstCasePair.additive(grid, 2.0))
    )
    eps = np.array(EPSILONS)
    np.testing.assert_array_equal(ours.delta_bounds(eps).upper, direct.delta(eps).upper)
    # dp_accounting refuses the Laplace event under REPLACE_ONE; the bound here is plain
    assert not PLDAccountant(REPLACE).supports(dp_event.LaplaceDpEvent(3.0))


def test_without_replacement_gaussian_is_below_the_rdp_bound():
    """dp_accounting's RdpAccountant reads the noise multiplier of this event relative to the
    replace-one sensitivity (its ``q = 1`` case is ``alpha / (2 sigma^2)``), its PLDAccountant
    reads a ``GaussianDpEvent`` under ``REPLACE_ONE`` relative to the clip (a shift of twice
    it), as DP-SGD does and as here: ours at ``sigma`` is the RDP bound's at ``sigma / 2``."""
    event = dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(1000, 20, dp_event.GaussianDpEvent(2.0)), 30
    )
    ours = CertifiedAccountant(REPLACE, accuracy=1e-3).compose(event)
    (component,) = ours.buckets.components
    assert component.mechanism == mechanisms.WithoutReplacementGaussian(
        sigma=2.0, sampling_rate=0.02
    )
    halved = dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(1000, 20, dp_event.GaussianDpEvent(1.0)), 30
    )
    rdp = RdpAccountant(neighboring_relation=REPLACE).compose(halved)
    assert ours.get_epsilon(1e-5) <= rdp.get_epsilon(1e-5)


def test_without_replacement_edge_sizes_and_grid_noise():
    gaussian = dp_event.GaussianDpEvent(2.0)
    every = dp_event.SampledWithoutReplacementDpEvent(10, 10, gaussian)
    assert mechanism_of(every, REPLACE) == mechanisms.GaussianMechanism(2.0, sensitivity=2.0)
    none = dp_event.SampledWithoutReplacementDpEvent(10, 0, gaussian)
    assert event_releases(none, 4, REPLACE).releases == ()
    grid = noise.truncated_gaussian(2.0, 10.0, 0.05)
    sampled = dp_event.SampledWithoutReplacementDpEvent(100, 5, TruncatedNoiseDpEvent(grid))
    pair = mechanism_of(sampled, REPLACE)
    expected = without_replacement_pair(grid, 1.0, 0.05)
    np.testing.assert_array_equal(pair.a, expected.a)
    np.testing.assert_array_equal(pair.b, expected.b)


@pytest.mark.parametrize(
    ("relation", "event", "reason"),
    [
        (
            REPLACE,
            dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(1.0)),
            "REPLACE_ONE",
        ),
        (
            REPLACE,
            dp_event.SampledWithoutReplacementDpEvent(100, 10, dp_event.LaplaceDpEvent(1.0)),
            "GaussianDpEvent or a TruncatedNoiseDpEvent",
        ),
        (
            NeighboringRelation.ADD_OR_REMOVE_ONE,
            dp_event.SampledWithoutReplacementDpEvent(100, 10, dp_event.GaussianDpEvent(1.0)),
            "REPLACE_ONE only",
        ),
        (
            REPLACE,
            dp_event.SampledWithReplacementDpEvent(100, 10, dp_event.GaussianDpEvent(1.0)),
            "SampledWithReplacementDpEvent",
        ),
    ],
    ids=["poisson-replace", "wor-laplace", "wor-add-remove", "with-replacement"],
)
def test_refused_by_name_with_the_reason(relation, event, reason):
    accountant = CertifiedAccountant(relation)
    assert not accountant.supports(event)
    with pytest.raises(UnsupportedEventError, match=reason):
        accountant.compose(event)
    assert accountant.buckets.releases == 0


def test_the_poisson_refusal_names_the_way_out():
    assert "ADD_OR_REMOVE_ONE" in POISSON_REPLACE_ONE
    assert "without replacement" in POISSON_REPLACE_ONE


@pytest.mark.parametrize(
    ("event", "named"),
    [
        (
            dp_event.SampledWithoutReplacementDpEvent(10, 11, dp_event.GaussianDpEvent(1.0)),
            "sample_size",
        ),
        (
            dp_event.SampledWithoutReplacementDpEvent(-1, 0, dp_event.GaussianDpEvent(1.0)),
            "source_dataset_size",
        ),
        (
            dp_event.SampledWithoutReplacementDpEvent(10, 2, dp_event.GaussianDpEvent(-1.0)),
            "noise_multiplier",
        ),
    ],
)
def test_malformed_sampling_is_refused_naming_the_field(event, named):
    with pytest.raises(InvalidInputError, match=named):
        CertifiedAccountant(REPLACE).compose(event)


def test_answers_are_kept_per_target_until_the_next_compose():
    accountant = CertifiedAccountant().compose(dp_event.GaussianDpEvent(3.0), 4)
    first = accountant.delta_bounds(1.0)
    assert accountant.delta_bounds(1.0) is first
    eps = accountant.epsilon_bounds(1e-5)
    assert accountant.epsilon_bounds(1e-5) is eps
    accountant.compose(dp_event.GaussianDpEvent(3.0))
    assert accountant.delta_bounds(1.0).upper > first.upper
    assert accountant.buckets.tail_mass is not None  # one tail for every query
