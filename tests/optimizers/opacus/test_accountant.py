"""TruncatedAccountant on its own: Opacus's interface, history, state, certified answers."""

from __future__ import annotations

import pytest

from accountant.dpsgd import DPSGDAccountant

pytest.importorskip("opacus")

from opacus import PrivacyEngine
from opacus.accountants import IAccountant, create_accountant

from accountant import (
    EpsilonBounds,
    InvalidInputError,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
)
from optimizers.opacus import (
    DEFAULT_CUT,
    DEFAULT_TRUNCATION,
    TruncatedAccountant,
    TruncationSettings,
    get_noise_multiplier,
)
from tests.optimizers.opacus.support import quietly


def test_opacus_cannot_make_it_by_name():
    """``PrivacyEngine(accountant="truncated")`` would pair it with Opacus's own
    ``make_private`` (untruncated noise): refused when the engine is made."""
    with pytest.raises(InvalidInputError, match=r"use optimizers.opacus.TruncatedPrivacyEngine"):
        create_accountant(mechanism="truncated")
    with pytest.raises(InvalidInputError, match="accountant='truncated' cannot be made"):
        quietly(PrivacyEngine, accountant="truncated")


def test_built_with_the_defaults():
    built = TruncatedAccountant()
    assert isinstance(built, IAccountant)
    assert built.mechanism() == "truncated"
    assert built.settings == TruncationSettings(cut=DEFAULT_CUT, truncation=DEFAULT_TRUNCATION)
    assert (built.settings.cut, built.settings.truncation) == (10.0, "renormalised")
    assert built.history == [] and len(built) == 0 and built.get_epsilon(1e-5) == 0.0


def test_history_merges_repeated_steps_like_opacus_rdp():
    accountant = TruncatedAccountant(dimension=1)
    for sigma, rate in [(1.0, 0.1), (1.0, 0.1), (2.0, 0.1), (2.0, 0.1), (1.0, 0.1), (1.0, 0.2)]:
        accountant.step(noise_multiplier=sigma, sample_rate=rate)
    assert accountant.history == [(1.0, 0.1, 2), (2.0, 0.1, 2), (1.0, 0.1, 1), (1.0, 0.2, 1)]
    assert len(accountant) == 6
    # one mechanism object per distinct (sigma, q): three components, counts 3, 2, 1
    components = accountant.privacy_accountant().components
    assert [c.times for c in components] == [3, 2, 1]
    assert [(c.mechanism.sigma, c.mechanism.sampling_rate) for c in components] == [
        (1.0, 0.1),
        (2.0, 0.1),
        (1.0, 0.2),
    ]


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_get_epsilon_is_the_certified_upper_bound_of_the_same_composition(truncation):
    accountant = TruncatedAccountant(cut=6.0, truncation=truncation, accuracy=1e-3, dimension=1)
    for _ in range(5):
        accountant.step(noise_multiplier=1.2, sample_rate=0.1)
    direct = (
        PrivacyBuckets(accuracy=1e-3)
        .compose(
            SubsampledTruncatedGaussian(
                sigma=1.2, sampling_rate=0.1, cut=6.0, truncation=truncation
            ),
            times=5,
        )
        .epsilon(1e-5)
    )
    bounds = accountant.epsilon_bounds(1e-5)
    assert isinstance(bounds, EpsilonBounds) and bounds.releases == 5
    assert accountant.get_epsilon(1e-5) == direct.upper
    assert (bounds.lower, bounds.upper) == (direct.lower, direct.upper)
    assert 0.0 < bounds.lower <= bounds.upper


def test_a_later_step_raises_epsilon():
    accountant = TruncatedAccountant(accuracy=1e-3, dimension=100)
    accountant.step(noise_multiplier=1.0, sample_rate=0.2)
    before = accountant.get_epsilon(1e-5)
    accountant.step(noise_multiplier=1.0, sample_rate=0.2)
    assert accountant.epsilon_bounds(1e-5).lower > before * 1.05


def test_state_dict_round_trip():
    accountant = TruncatedAccountant(cut=5.0, truncation="clamped", accuracy=1e-3, dimension=1)
    for sigma in (1.0, 1.0, 1.5):
        accountant.step(noise_multiplier=sigma, sample_rate=0.1)
    state = accountant.state_dict()
    assert state["mechanism"] == "truncated"
    assert state["history"] == [(1.0, 0.1, 2), (1.5, 0.1, 1)]
    assert state["settings"] == {"cut": 5.0, "truncation": "clamped"}
    assert state["dimension"] == 1
    loaded = TruncatedAccountant(cut=5.0, truncation="clamped", accuracy=1e-3)
    loaded.load_state_dict(state)
    assert loaded.dimension == 1
    assert loaded.history == accountant.history and len(loaded) == 3
    assert loaded.get_epsilon(1e-5) == accountant.get_epsilon(1e-5)
    loaded.step(noise_multiplier=1.5, sample_rate=0.1)  # continues the last entry
    assert loaded.history[-1] == (1.5, 0.1, 2)


def test_a_refused_state_leaves_the_accountant_unchanged():
    accountant = TruncatedAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.1)
    state = accountant.state_dict()
    state["history"] = [(1.0, 0.1, 3), (1.0, 2.0, 1)]
    with pytest.raises(InvalidInputError, match=r"\[1\] sample_rate must lie in \(0, 1\], got 2.0"):
        accountant.load_state_dict(state)
    assert accountant.history == [(1.0, 0.1, 1)] and len(accountant) == 1


def test_a_state_of_other_settings_is_refused():
    state = TruncatedAccountant(cut=3.0).state_dict()
    with pytest.raises(InvalidInputError, match=r"cut 3 sigma, renormalised.*cut 10 sigma"):
        TruncatedAccountant().load_state_dict(state)
    # "resampled" is another name of the same law: accepted
    state = TruncatedAccountant(truncation="resampled").state_dict()
    TruncatedAccountant().load_state_dict(state)


def test_the_hook_refuses_an_optimizer_adding_other_noise():
    class Coordinates:
        def numel(self):
            return 3

    class Plain:  # what Opacus's own DPOptimizer looks like to the hook
        noise_multiplier, accumulated_iterations = 1.0, 1
        params = (Coordinates(), Coordinates())

    accountant = TruncatedAccountant()
    hook = accountant.get_optimizer_hook_fn(sample_rate=0.1)
    with pytest.raises(InvalidInputError, match="got Plain with untruncated Gaussian noise"):
        hook(Plain())

    class Other(Plain):
        truncation_settings = TruncationSettings(cut=3.0)

    with pytest.raises(InvalidInputError, match="optimizer must add noise with cut 10 sigma"):
        hook(Other())
    assert accountant.history == []

    class Same(Plain):
        truncation_settings = TruncationSettings(truncation="resampled")

    hook(Same())
    assert accountant.history == [(1.0, 0.1, 1)] and accountant.dimension == 6

    class Bigger(Same):
        params = (Coordinates(),) * 3

    with pytest.raises(InvalidInputError, match="dimension must stay 6"):
        hook(Bigger())


def test_assigning_or_editing_history_is_accounted():
    """Opacus's ``get_noise_multiplier`` assigns ``accountant.history`` directly."""
    stepped = TruncatedAccountant(accuracy=1e-3, dimension=1)
    stepped.step(noise_multiplier=1.0, sample_rate=0.1, steps=4)
    assigned = TruncatedAccountant(accuracy=1e-3, dimension=1)
    assigned.history = [(1.0, 0.1, 4)]
    assert len(assigned) == 4
    assert assigned.get_epsilon(1e-5) == stepped.get_epsilon(1e-5) > 0.0
    assigned.history.append((1.0, 0.1, 4))  # in place: accounted at the next query
    assert assigned.privacy_accountant().releases == 8
    assert assigned.get_epsilon(1e-5) > stepped.get_epsilon(1e-5)
    with pytest.raises(InvalidInputError, match=r"history\[0\] sample_rate must lie in"):
        assigned.history = [(1.0, 1.5, 4)]
    assert assigned.history == [(1.0, 0.1, 4), (1.0, 0.1, 4)]


def test_opacus_noise_search_is_refused_and_ours_takes_the_dimension():
    """Opacus's ``get_noise_multiplier`` builds the accountant by name, without a model, so
    the number of noised coordinates is unknown: refused by name. Ours takes it."""
    from opacus.accountants.utils import get_noise_multiplier as opacus_search

    with pytest.raises(InvalidInputError, match=r"get_noise_multiplier\(\.\.\., dimension="):
        opacus_search(
            target_epsilon=2.0, target_delta=1e-5, sample_rate=0.25, steps=8, accountant="truncated"
        )
    with pytest.raises(InvalidInputError, match="dimension must be given with a finite cut"):
        get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.25, steps=8)
    sigma = get_noise_multiplier(
        target_epsilon=2.0,
        target_delta=1e-5,
        sample_rate=0.25,
        epochs=2,
        cut=10.0,
        dimension=10,
        tolerance=1e-2,
    )
    accountant = TruncatedAccountant(cut=10.0, accuracy=1e-3, dimension=10)
    accountant.step(noise_multiplier=sigma, sample_rate=0.25, steps=8)  # epochs 2 / rate 1/4
    assert accountant.privacy_accountant().delta(2.0).upper <= 1e-5
    accountant.history = [(sigma * 0.97, 0.25, 8)]  # 3 % less noise: certified to fail
    assert accountant.privacy_accountant().delta(2.0).lower > 1e-5


def test_many_coordinates_are_bounded_by_the_dpsgd_accountant():
    accountant = TruncatedAccountant(cut=7.0, accuracy=1e-3, dimension=1000)
    accountant.step(noise_multiplier=1.2, sample_rate=0.1, steps=5)
    step = SubsampledTruncatedGaussian(sigma=1.2, sampling_rate=0.1, cut=7.0)
    direct = DPSGDAccountant(dimension=1000, accuracy=1e-3).compose(step, 5).epsilon(1e-5)
    one = PrivacyBuckets(accuracy=1e-3).compose(step, 5).epsilon(1e-5)
    assert accountant.get_epsilon(1e-5) == direct.upper > one.upper
    assert accountant.epsilon_bounds(1e-5).lower == one.lower


def test_a_state_of_another_dimension_is_refused():
    state = TruncatedAccountant(dimension=10).state_dict()
    with pytest.raises(InvalidInputError, match=r"state_dict\['dimension'\] must be 20"):
        TruncatedAccountant(dimension=20).load_state_dict(state)
    state.pop("dimension")
    with pytest.raises(InvalidInputError, match="lacks the key 'dimension'"):
        TruncatedAccountant().load_state_dict(state)
