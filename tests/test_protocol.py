"""The Accountant protocol: every accountant implements it, answers with the result types
it declares, and rebuilds from its state dict to the same numbers."""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import ExtendedMA, InvalidInputError, PrivacyBuckets, WorstCasePair, mechanisms
from accountant import noise as noise_families
from accountant.composition import Component, ComposedReleases
from accountant.protocol import Accountant
from accountant.results import Bounds, DeltaUpperBound, EpsilonBounds, EpsilonUpperBound

ACCOUNTANTS = [ExtendedMA(), ExtendedMA(conversion="paper"), PrivacyBuckets(accuracy=1e-3)]
MECHANISMS = [
    mechanisms.TruncatedGaussianMechanism(sigma=2.0, bound=10.0, sensitivity=1.0),
    mechanisms.LaplaceMechanism(scale=3.0),
    mechanisms.TruncatedDiscreteLaplaceMechanism(scale=2.0, bound=10),
    WorstCasePair.additive(noise_families.truncated_gaussian(2.0, 8.0, 0.5), 1.0),
]


@pytest.mark.parametrize("accountant", ACCOUNTANTS, ids=repr)
def test_every_accountant_implements_the_protocol_with_its_declared_types(accountant):
    composed = accountant.compose(MECHANISMS[0], times=3).compose(MECHANISMS[1])
    assert isinstance(composed, Accountant)
    assert composed.releases == 4 and composed.history.startswith("3 x truncated Gaussian")
    two_sided = isinstance(composed, PrivacyBuckets)
    delta, pdp, eps = composed.delta(0.5), composed.delta_pdp(0.5), composed.epsilon(1e-3)
    assert isinstance(delta, Bounds if two_sided else DeltaUpperBound)
    assert isinstance(pdp, Bounds if two_sided else DeltaUpperBound)
    assert isinstance(eps, EpsilonBounds if two_sided else EpsilonUpperBound)
    assert (delta.kind, pdp.kind, eps.kind) == ("ADP", "PDP", "ADP")
    assert delta.releases == pdp.releases == eps.releases == 4
    assert 0.0 < delta.upper <= pdp.upper <= 1.0  # ADP delta <= PDP delta
    assert not hasattr(delta, "lower") or two_sided


def test_extended_ma_is_an_upper_bound_on_the_buckets_bracket_in_both_kinds():
    mechanism = MECHANISMS[0]
    buckets = PrivacyBuckets().compose(mechanism, times=20)
    for accountant in ACCOUNTANTS[:2]:
        ma = accountant.compose(mechanism, times=20)
        for eps in (0.0, 0.5, 2.0):
            assert ma.delta(eps).upper >= buckets.delta(eps).lower
            assert ma.delta_pdp(eps).upper >= buckets.delta_pdp(eps).lower
        assert ma.epsilon(1e-4).upper >= buckets.epsilon(1e-4).lower


@settings(max_examples=15)
@given(
    accountant=st.sampled_from(ACCOUNTANTS),
    parts=st.lists(
        st.tuples(st.sampled_from(MECHANISMS), st.integers(1, 50)), min_size=0, max_size=3
    ),
)
def test_state_dict_rebuilds_the_same_accountant(accountant, parts):
    for mechanism, times in parts:
        accountant = accountant.compose(mechanism, times)
    state = accountant.state_dict()
    rebuilt = type(accountant).from_state_dict(state)
    assert rebuilt.state_dict()["settings"] == state["settings"]
    assert rebuilt.history == accountant.history and rebuilt.releases == accountant.releases
    assert [c.mechanism for c in rebuilt.components] == [c.mechanism for c in accountant.components]
    if parts:
        assert rebuilt.delta(0.7).upper == accountant.delta(0.7).upper


@pytest.mark.parametrize(
    ("state", "match"),
    [
        ([], "state must be a dict"),
        ({"kind": "ExtendedMA", "version": 1, "settings": {}, "components": []}, "not a Priv"),
        ({"kind": "PrivacyBuckets", "version": 99}, "version 99"),
        (
            {"kind": "PrivacyBuckets", "version": 1, "settings": {"accuracy": 1e-4}},
            "settings must have exactly the keys",
        ),
        (
            {
                "kind": "PrivacyBuckets",
                "version": 1,
                "settings": {"accuracy": 1e-4, "max_buckets": 1 << 20, "tail_mass": 1e-24},
                "components": [{"mechanism": MECHANISMS[0]}],
            },
            "components must be a list",
        ),
    ],
)
def test_a_foreign_or_broken_state_is_refused_in_one_line(state, match):
    with pytest.raises(InvalidInputError, match=match):
        PrivacyBuckets.from_state_dict(state)


def test_a_state_with_a_bad_setting_is_refused_by_the_accountant_itself():
    state = PrivacyBuckets().state_dict()
    state["settings"]["accuracy"] = -1.0
    with pytest.raises(InvalidInputError, match="accuracy"):
        PrivacyBuckets.from_state_dict(state)
    state = ExtendedMA().state_dict()
    state["settings"]["conversion"] = "loose"
    with pytest.raises(InvalidInputError, match="conversion"):
        ExtendedMA.from_state_dict(state)


# ---------------------------------------------------------------------------------------
# the architecture page's worked example: a new accountant is one protocol


def _gaussian_only(mechanism):
    if not isinstance(mechanism, mechanisms.GaussianMechanism):
        raise InvalidInputError(f"mechanism must be a GaussianMechanism, got {mechanism!r}")
    return mechanism


ORDERS = np.linspace(1.01, 400.0, 20_000)


@attrs.frozen
class GaussianRDP(ComposedReleases):
    """Renyi DP of the Gaussian mechanism, ``rho(alpha) = alpha s^2 / (2 sigma^2)`` per
    release, converted by the Chernoff bound ``delta <= exp((alpha - 1)(R(alpha) - eps))``
    (valid for ADP and PDP alike) minimised over a grid of orders."""

    components: tuple[Component, ...] = ()

    SETTINGS: ClassVar[tuple[str, ...]] = ()
    source_of = staticmethod(_gaussian_only)

    def _renyi(self) -> np.ndarray:
        rho = sum(
            c.times * c.mechanism.sensitivity**2 / (2 * c.mechanism.sigma**2)
            for c in self.components
        )
        return ORDERS * rho

    def delta(self, epsilon, direction="max"):
        log_delta = np.min((ORDERS - 1) * (self._renyi() - epsilon))
        return DeltaUpperBound(
            min(1.0, math.exp(log_delta)), epsilon, "ADP", direction, self.releases
        )

    def delta_pdp(self, epsilon, direction="max"):
        return attrs.evolve(self.delta(epsilon, direction), kind="PDP")

    def epsilon(self, delta, direction="max"):
        eps = np.min(self._renyi() + math.log(1 / delta) / (ORDERS - 1))
        return EpsilonUpperBound(max(0.0, float(eps)), delta, "ADP", direction, self.releases)


def test_a_new_accountant_is_one_class_on_the_shared_bookkeeping():
    gaussian = mechanisms.GaussianMechanism(sigma=3.0)
    rdp = GaussianRDP().compose(gaussian, 10).compose(gaussian, 5)
    assert isinstance(rdp, Accountant)
    assert rdp.releases == 15 and rdp.history.startswith("15 x ")
    assert GaussianRDP.from_state_dict(rdp.state_dict()).delta(1.0).upper == rdp.delta(1.0).upper
    with pytest.raises(InvalidInputError, match="mechanism must be a GaussianMechanism"):
        rdp.compose(mechanisms.LaplaceMechanism(scale=1.0))
    buckets = PrivacyBuckets(accuracy=1e-3).compose(gaussian, 15)
    for eps in (0.5, 1.0, 3.0):
        assert rdp.delta(eps).upper >= buckets.delta(eps).lower
        assert rdp.delta_pdp(eps).upper >= buckets.delta_pdp(eps).lower
    assert rdp.epsilon(1e-5).upper >= buckets.epsilon(1e-5).lower
