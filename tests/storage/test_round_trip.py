"""A saved accountant loads back bit-identically: same settings, history, arrays, answers."""

from __future__ import annotations

import math
import warnings

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import (
    CertificationWarning,
    DPSGDAccountant,
    ExtendedMA,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
    WorstCasePair,
    load_accountant,
    mechanisms,
    privacy_loss_distribution,
    save_accountant,
)
from accountant.storage import registered_names
from tests.storage.cases import CASES, lopsided_pair, small_pair
from tests.strategies import worst_case_pairs

# Coarse accuracies keep these fast; the bounds stay certified, and equal is what counts.
pytestmark = pytest.mark.filterwarnings("ignore::accountant.errors.CertificationWarning")


def round_trip(accountant, directory):
    save_accountant(accountant, directory / "accountant.json")
    return load_accountant(directory / "accountant.json")


def same_arrays(mechanism, loaded) -> None:
    """Every array the mechanism holds came back with the same dtype and the same bits."""
    if isinstance(mechanism, list | tuple | WorstCasePair):
        originals = [mechanism] if isinstance(mechanism, WorstCasePair) else mechanism
        copies = [loaded] if isinstance(loaded, WorstCasePair) else loaded
        for p, q in zip(originals, copies, strict=True):
            for name in ("a", "b"):
                assert getattr(q, name).dtype == np.float64
                assert getattr(q, name).tobytes() == getattr(p, name).tobytes()


def identical(first, second) -> bool:
    """Two results of a query with the same fields, numbers equal to the last bit."""
    fields = attrs.fields(type(first))
    assert type(first) is type(second)
    for field in fields:
        x, y = getattr(first, field.name), getattr(second, field.name)
        if isinstance(x, str | None):
            assert x == y, field.name
        else:
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), (field.name, x, y)
    return True


def answer(query, *args):
    """The result of ``query(*args)``, or the message of the error it raised."""
    try:
        return query(*args)
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


def fresh(kind):
    """An empty accountant of ``kind``, PrivacyBuckets at a coarse accuracy (fast)."""
    return PrivacyBuckets(accuracy=1e-2) if kind is PrivacyBuckets else kind()


def same_answers(accountant, loaded, eps=(0.0, 1.0), delta=1e-2) -> None:
    assert type(loaded) is type(accountant)
    assert loaded.state_dict()["settings"] == accountant.state_dict()["settings"]
    assert loaded.history == accountant.history
    assert loaded.releases == accountant.releases
    for e in eps:
        for direction in ("max", "A/B", "B/A"):
            assert identical(loaded.delta(e, direction), accountant.delta(e, direction))
        assert identical(loaded.delta_pdp(e), accountant.delta_pdp(e))
    if accountant.releases:
        found, expected = answer(loaded.epsilon, delta), answer(accountant.epsilon, delta)
        assert found == expected if isinstance(found, str) else identical(found, expected)


@pytest.mark.parametrize("kind", [PrivacyBuckets, ExtendedMA])
def test_an_empty_accountant_round_trips(kind, tmp_path):
    accountant = kind()
    loaded = round_trip(accountant, tmp_path)
    assert loaded.history == "nothing"
    same_answers(accountant, loaded)


def test_settings_other_than_the_defaults_round_trip(tmp_path):
    buckets = PrivacyBuckets(accuracy=3e-3, max_buckets=1 << 20, tail_mass=1e-20)
    assert round_trip(buckets, tmp_path).state_dict() == buckets.state_dict()
    paper = ExtendedMA(conversion="paper").compose(small_pair(), 3)
    loaded = round_trip(paper, tmp_path)
    assert loaded.conversion == "paper"
    same_answers(paper, loaded)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_registered_type_round_trips_in_each_accountant_taking_it(name, tmp_path):
    mechanism, kinds = CASES[name]
    for kind in kinds:
        accountant = fresh(kind).compose(mechanism, times=3)
        loaded = round_trip(accountant, tmp_path)
        (component,) = loaded.components
        assert type(component.mechanism) is type(mechanism) or name == "WorstCasePairs"
        assert component.times == 3
        same_arrays(mechanism, component.mechanism)
        same_answers(accountant, loaded)


def test_the_cases_cover_every_registered_type_and_every_analytic_mechanism():
    assert set(CASES) == set(registered_names())
    assert set(mechanisms.__all__) <= set(registered_names())


@pytest.mark.parametrize("kind", [PrivacyBuckets, ExtendedMA])
def test_a_heterogeneous_composition_round_trips_in_order(kind, tmp_path):
    accountant = (
        fresh(kind)
        .compose(small_pair(), 5)
        .compose(mechanisms.TruncatedGaussianMechanism(2.0, 10.0, 1.0), 2)
        .compose(lopsided_pair(), 1)
        .compose(mechanisms.TruncatedDiscreteLaplaceMechanism(scale=3.0, bound=10), 4)
    )
    loaded = round_trip(accountant, tmp_path)
    assert [c.times for c in loaded.components] == [5, 2, 1, 4]
    assert [c.description for c in loaded.components] == [
        c.description for c in accountant.components
    ]
    same_answers(accountant, loaded)


def test_loading_twice_and_saving_again_gives_the_same_files(tmp_path):
    accountant = PrivacyBuckets(accuracy=1e-2).compose(small_pair(), 2).compose(lopsided_pair(), 3)
    first = save_accountant(accountant, tmp_path / "first.json")
    text, arrays = first.description.read_bytes(), first.sidecar.read_bytes()
    same = save_accountant(load_accountant(first.description), first.description)
    assert (same.description.read_bytes(), same.sidecar.read_bytes()) == (text, arrays)
    assert same.digest == first.digest
    again = save_accountant(load_accountant(first.description), tmp_path / "again.json")
    assert again.sha256 == first.sha256
    assert first.sidecar.read_bytes() == again.sidecar.read_bytes()
    # the sidecar's name is part of the description, so the digest differs with it
    assert again.digest != first.digest
    text = first.description.read_text().replace("first.npz", "again.npz")
    assert text.replace(first.digest, again.digest) == again.description.read_text()


@settings(deadline=None, max_examples=12)
@given(
    pairs=st.lists(worst_case_pairs(max_size=8), min_size=1, max_size=3),
    times=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    eps=st.floats(0.0, 3.0),
)
def test_random_small_grid_pairs_round_trip_bit_identically(tmp_path_factory, pairs, times, eps):
    directory = tmp_path_factory.mktemp("random")
    for kind in (PrivacyBuckets(accuracy=1e-3), ExtendedMA()):
        accountant = kind
        for pair, n in zip(pairs, times, strict=False):
            accountant = accountant.compose(pair, n)
        loaded = round_trip(accountant, directory)
        for original, back in zip(accountant.components, loaded.components, strict=True):
            same_arrays(original.mechanism, back.mechanism)
            assert back.mechanism.description == original.mechanism.description
            assert back.times == original.times
        assert loaded.history == accountant.history
        assert identical(loaded.delta(eps), accountant.delta(eps))
        assert identical(loaded.delta_pdp(eps), accountant.delta_pdp(eps))


@settings(max_examples=6)
@given(
    segments=st.lists(
        st.tuples(
            st.floats(0.8, 3.0),
            st.floats(0.01, 0.5),
            st.sampled_from([6.0, 8.0, math.inf]),
            st.integers(1, 8),
        ),
        min_size=1,
        max_size=3,
    ),
    dimension=st.integers(1, 10**6),
    truncation=st.sampled_from(["renormalised", "clamped"]),
)
@pytest.mark.slow
def test_random_dpsgd_runs_round_trip_bit_identically(
    tmp_path_factory, segments, dimension, truncation
):
    accountant = DPSGDAccountant(dimension=dimension, accuracy=1e-2)
    for sigma, rate, cut, steps in segments:
        step = SubsampledTruncatedGaussian(
            sigma=sigma, sampling_rate=rate, cut=cut, truncation=truncation
        )
        accountant = accountant.compose(step, steps)
    loaded = round_trip(accountant, tmp_path_factory.mktemp("dpsgd"))
    assert isinstance(loaded, DPSGDAccountant) and loaded.dimension == dimension
    assert loaded.history == accountant.history
    assert [c.mechanism for c in loaded.components] == [c.mechanism for c in accountant.components]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        assert identical(loaded.delta(2.0), accountant.delta(2.0))


@pytest.mark.slow
def test_a_dpsgd_accountant_round_trips(tmp_path):
    step = SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.01, cut=8.0)
    accountant = DPSGDAccountant(dimension=1000, accuracy=1e-3).compose(step, 20)
    save_accountant(accountant, tmp_path / "dpsgd.json")
    loaded = load_accountant(tmp_path / "dpsgd.json")
    assert isinstance(loaded, DPSGDAccountant) and loaded.dimension == 1000
    assert loaded.history == accountant.history
    assert loaded.delta(1.0).upper == accountant.delta(1.0).upper


def heterogeneous_buckets() -> PrivacyBuckets:
    """A privacy-loss distribution from arrays 70 times, a Gaussian 70 times, a pair once."""
    pair = WorstCasePair.from_arrays(
        np.array([0.26, 0.25, 0.25, 0.24]), np.array([0.24, 0.25, 0.25, 0.26]), "four outcomes"
    )
    return (
        PrivacyBuckets(accuracy=1e-2)
        .compose(privacy_loss_distribution(pair), 70)
        .compose(mechanisms.GaussianMechanism(3.0), 70)
        .compose(small_pair(), 1)
    )


def dpsgd_run() -> DPSGDAccountant:
    """Two DP-SGD segments on 5 coordinates."""
    return (
        DPSGDAccountant(dimension=5, accuracy=1e-2)
        .compose(SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.01, cut=6.0), 10)
        .compose(SubsampledTruncatedGaussian(sigma=0.9, sampling_rate=0.02, cut=6.0), 3)
    )


#: (query, arguments), asked in this order of the original
QUERIES = [
    ("delta", (0.0,)),
    ("delta", (1.0,)),
    ("epsilon", (1e-3,)),
    ("delta", (0.5, "B/A")),
    ("delta_pdp", (0.5,)),
]


def same(found, expected) -> bool:
    """The same answer to the last bit (or the same refusal)."""
    if isinstance(expected, str):
        return found == expected
    return identical(found, expected)


@pytest.mark.parametrize(
    ("build", "queries"),
    [
        (heterogeneous_buckets, QUERIES),
        # PDP of more than one coordinate is certified from below only: left out
        pytest.param(dpsgd_run, QUERIES[:4], marks=pytest.mark.slow),
    ],
)
def test_a_loaded_accountant_answers_as_the_original_whatever_was_asked_before(
    build, queries, tmp_path
):
    """Every answer of a loaded accountant equals the original's to the last bit, whatever
    queries either was asked before: the original is asked first and saved after its
    queries (the same file as saved before any); the loaded copy is asked in the reverse
    order, a second copy the epsilon query alone."""
    original = build()
    before = save_accountant(original, tmp_path / "before.json")
    expected = [answer(getattr(original, name), *arguments) for name, arguments in queries]
    after = save_accountant(original, tmp_path / "after.json")
    assert after.sidecar.read_bytes() == before.sidecar.read_bytes()
    text = after.description.read_text().replace("after.npz", "before.npz")
    assert text.replace(after.digest, before.digest) == before.description.read_text()

    loaded = load_accountant(after.description)
    backwards = [answer(getattr(loaded, name), *args) for name, args in reversed(queries)]
    for found, wanted in zip(reversed(backwards), expected, strict=True):
        assert same(found, wanted)
    name, arguments = queries[2]
    assert name == "epsilon"
    copy = load_accountant(before.description)
    assert same(answer(getattr(copy, name), *arguments), expected[2])
