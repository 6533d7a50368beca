"""``CertifiedPrivacyEngine``: Opacus's ``poisson_sampling=False`` certified for the data
loader's own epochs (shuffled or fixed order), through a real ``PrivacyEngine``, a tiny MLP
and a few real optimiser steps; the bounds are checked against
``accountant.shuffled_epochs_epsilon`` computed independently."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import (  # noqa: E402
    BatchSampler,
    DataLoader,
    RandomSampler,
    SequentialSampler,
    WeightedRandomSampler,
)

from accountant import (  # noqa: E402
    InvalidInputError,
    PrivacyBuckets,
    SamplerEpsilonBounds,
    SubsampledTruncatedGaussian,
    shuffled_epochs_epsilon,
)
from accountant.mechanisms import GaussianMechanism  # noqa: E402
from optimizers.opacus import (  # noqa: E402
    CertifiedGaussianAccountant,
    CertifiedPrivacyEngine,
    ShuffledEpochsAccountant,
    TruncatedPrivacyEngine,
)
from tests.optimizers.opacus.epoch_support import examples as _dataset  # noqa: E402
from tests.optimizers.opacus.epoch_support import mlp as _mlp  # noqa: E402
from tests.optimizers.opacus.epoch_support import private_epochs as _private  # noqa: E402
from tests.optimizers.opacus.epoch_support import train_passes as _train  # noqa: E402
from tests.optimizers.opacus.support import quietly  # noqa: E402

DELTA, SIGMA, BATCH, ACCURACY = 1e-5, 1.0, 16, 1e-3


def _shuffled(epochs: int, examples: int = 64) -> SamplerEpsilonBounds:
    return shuffled_epochs_epsilon(SIGMA, BATCH, examples, epochs, DELTA, accuracy=ACCURACY)


def _poisson_upper(steps: int, rate: float) -> float:
    gaussian = SubsampledTruncatedGaussian(sigma=SIGMA, sampling_rate=rate, cut=math.inf)
    return float(
        PrivacyBuckets(accuracy=ACCURACY).compose(gaussian, times=steps).epsilon(DELTA).upper
    )


def _engine() -> CertifiedPrivacyEngine:
    return quietly(CertifiedPrivacyEngine)


def _untouched(model) -> bool:
    return all(not m._forward_hooks and not m._backward_hooks for m in model.modules())


@pytest.fixture(scope="module")
def shuffled_run():
    engine = _engine()
    model, optimizer, loader = _private(engine, DataLoader(_dataset(), BATCH, shuffle=True))
    steps = _train(model, optimizer, loader, epochs=3)
    return engine, steps


def test_shuffled_loader_gets_the_certified_upper_bound_of_its_epochs(shuffled_run):
    engine, steps = shuffled_run
    accountant = engine.accountant
    assert isinstance(accountant, ShuffledEpochsAccountant)
    assert (accountant.sampler, accountant.dataset_size, accountant.batch_size) == (
        "shuffle",
        64,
        16,
    )
    assert steps == len(accountant) == 12 and accountant.history == [(SIGMA, 12)]
    expected = _shuffled(epochs=3)
    assert engine.get_epsilon(DELTA) == expected.upper
    bounds = accountant.epsilon_bounds(DELTA)
    assert (bounds.lower, bounds.upper, bounds.poisson) == (
        expected.lower,
        expected.upper,
        expected.poisson,
    )
    assert (bounds.epochs, bounds.steps, bounds.batches_per_epoch) == (3, 12, 4)
    assert 0.0 < bounds.lower <= bounds.upper
    # what accountant="certified" (Poisson at rate 1/len(loader)) claims for the same steps
    poisson = CertifiedGaussianAccountant()
    poisson.history = [(SIGMA, 0.25, 12)]
    assert engine.get_epsilon(DELTA) >= poisson.get_epsilon(DELTA) > 0.0
    assert bounds.poisson == pytest.approx(poisson.get_epsilon(DELTA), rel=1e-9)


def test_state_dict_round_trip_and_checkpoint(shuffled_run, tmp_path):
    engine, _ = shuffled_run
    state = engine.accountant.state_dict()
    assert state["mechanism"] == "shuffled-epochs" and state["history"] == [(SIGMA, 12)]
    fresh = ShuffledEpochsAccountant(sampler="shuffle", dataset_size=64, batch_size=16)
    fresh.load_state_dict(state)
    assert fresh.history == [(SIGMA, 12)]
    assert fresh.get_epsilon(DELTA) == engine.get_epsilon(DELTA)
    # Opacus's own checkpoint, into an engine made private with the same loader
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=nn.Linear(1, 1))
    other = _engine()
    _private(other, DataLoader(_dataset(), BATCH, shuffle=True))
    quietly(other.load_checkpoint, path=path, module=nn.Linear(1, 1))
    assert other.accountant.history == [(SIGMA, 12)]
    assert other.get_epsilon(DELTA) == engine.get_epsilon(DELTA)
    # a Poisson history is not continued with shuffled epochs, nor the reverse
    poisson = CertifiedGaussianAccountant()
    poisson.step(noise_multiplier=SIGMA, sample_rate=0.25)
    with pytest.raises(InvalidInputError, match=r"state_dict\['mechanism'\] is 'certified'"):
        fresh.load_state_dict(poisson.state_dict())
    with pytest.raises(InvalidInputError, match="got 'shuffled-epochs'"):
        poisson.load_state_dict(state)
    other_epochs = ShuffledEpochsAccountant(sampler="fixed-order", dataset_size=64, batch_size=16)
    with pytest.raises(InvalidInputError, match=r"state_dict\['sampler'\] must be 'fixed-order'"):
        other_epochs.load_state_dict(state)
    assert fresh.history == [(SIGMA, 12)] and poisson.history == [(SIGMA, 0.25, 1)]


def test_partial_epoch_counts_whole_in_the_upper_bound_and_not_in_the_lower():
    # 60 examples in batches of 16: 4 batches per epoch, the last one of 12
    engine = _engine()
    model, optimizer, loader = _private(engine, DataLoader(_dataset(60), BATCH, shuffle=True))
    assert _train(model, optimizer, loader, epochs=2, stop_after=2) == 6
    accountant = engine.accountant
    assert (accountant.epochs_started(), accountant.epochs_completed()) == (2, 1)
    bounds = accountant.epsilon_bounds(DELTA)
    assert bounds.upper == _shuffled(epochs=2, examples=60).upper == engine.get_epsilon(DELTA)
    assert bounds.lower == _shuffled(epochs=1, examples=60).lower
    assert bounds.poisson == pytest.approx(_poisson_upper(6, BATCH / 60), rel=1e-12)
    assert (bounds.epochs, bounds.steps) == (2, 6) and bounds.lower <= bounds.upper
    # a new pass not announced: its second batch of 16 arrives where the short one is due
    with pytest.raises(InvalidInputError, match="batch of 16 examples is larger than batch 3"):
        _train(model, optimizer, loader, epochs=1)
    assert len(accountant) == 7  # the refused step is not accounted
    accountant.start_epoch()
    assert _train(model, optimizer, loader, epochs=1) == 4
    assert accountant.history == [(SIGMA, 7), (SIGMA, 4)] and accountant.epochs_started() == 3


def test_fixed_order_is_the_gaussian_once_per_epoch():
    engine = _engine()
    model, optimizer, loader = _private(engine, DataLoader(_dataset(), BATCH, shuffle=False))
    assert engine.accountant.sampler == "fixed-order"
    _train(model, optimizer, loader, epochs=2)
    gaussian = GaussianMechanism(sigma=SIGMA, sensitivity=1.0)
    expected = PrivacyBuckets(accuracy=ACCURACY).compose(gaussian, times=2).epsilon(DELTA)
    bounds = engine.accountant.epsilon_bounds(DELTA)
    assert bounds.upper == expected.upper == _shuffled(epochs=2).upper == engine.get_epsilon(DELTA)
    assert bounds.lower == expected.lower and bounds.upper - bounds.lower < 0.01 * bounds.upper
    assert bounds.poisson == pytest.approx(_poisson_upper(8, 0.25), rel=1e-12)
    assert bounds.sampler == "fixed-order"


def test_fixed_order_drop_last_accounts_the_examples_it_uses():
    engine = _engine()
    _private(engine, DataLoader(_dataset(60), BATCH, shuffle=False, drop_last=True))
    assert (engine.accountant.dataset_size, engine.accountant.batches_per_epoch) == (48, 3)


def _custom_batches() -> DataLoader:
    batches = BatchSampler(SequentialSampler(range(64)), BATCH, drop_last=False)
    return DataLoader(_dataset(), batch_sampler=batches)


@pytest.mark.parametrize(
    ("loader", "message"),
    [
        (
            lambda: DataLoader(_dataset(), BATCH, sampler=WeightedRandomSampler([1.0] * 64, 64)),
            r"data_loader.sampler must be .* got torch.utils.data.sampler.WeightedRandomSampler",
        ),
        (
            lambda: DataLoader(
                _dataset(), BATCH, sampler=RandomSampler(range(64), replacement=True)
            ),
            r"data_loader.sampler must draw without replacement .* "
            r"RandomSampler\(replacement=True\)",
        ),
        (
            lambda: DataLoader(_dataset(), BATCH, sampler=RandomSampler(range(64), num_samples=32)),
            "data_loader.sampler must permute the whole dataset .* num_samples=32",
        ),
        (_custom_batches, "data_loader.batch_sampler must be .* custom BatchSampler"),
        (
            lambda: DataLoader(_dataset(60), BATCH, shuffle=True, drop_last=True),
            "data_loader.drop_last=True with shuffle=True leaves out a random 12 of the 60",
        ),
        (lambda: [(torch.zeros(16, 4), torch.zeros(16))], "data_loader must be a .* got list"),
    ],
    ids=["weighted", "replacement", "num_samples", "batch_sampler", "drop_last", "not_loader"],
)
def test_loaders_that_cannot_be_mapped_are_refused_before_the_model_is_touched(loader, message):
    engine = _engine()
    model, optimizer = _mlp()
    with pytest.raises(InvalidInputError, match=message):
        _private(engine, loader(), module=model, optimizer=optimizer)
    assert _untouched(model)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"clipping": "per_layer", "max_grad_norm": [1.0] * 4}, "clipping='per_layer' is not"),
        ({"grad_sample_mode": "ghost"}, "grad_sample_mode='ghost' is not supported"),
        ({"poisson_sampling": "no"}, "poisson_sampling must be True or False, got 'no'"),
    ],
)
def test_settings_that_cannot_be_accounted_are_refused(changes, message):
    with pytest.raises(InvalidInputError, match=message):
        _private(_engine(), DataLoader(_dataset(), BATCH, shuffle=True), **changes)


def test_steps_the_accountant_cannot_account_are_refused_at_the_hook():
    engine = _engine()
    model, optimizer, loader = _private(engine, DataLoader(_dataset(), BATCH, shuffle=True))
    _train(model, optimizer, loader, epochs=1, stop_after=1)
    optimizer.noise_multiplier = 2.0
    with pytest.raises(InvalidInputError, match=r"noise_multiplier must stay 1.0 .* got 2.0"):
        _train(model, optimizer, loader, epochs=1, stop_after=1)
    optimizer.noise_multiplier = SIGMA
    optimizer.zero_grad()
    for x, y in list(loader)[:2]:  # two batches accumulated into one step
        quietly(nn.functional.cross_entropy(model(x), y).backward)
    with pytest.raises(InvalidInputError, match=r"accumulated_iterations must be 1 .* got 2"):
        optimizer.step()
    assert engine.accountant.history == [(SIGMA, 1)]


def test_poisson_and_epoch_histories_do_not_mix_on_one_engine():
    engine = _engine()
    model, optimizer, loader = _private(
        engine, DataLoader(_dataset(), BATCH), poisson_sampling=True
    )
    _train(model, optimizer, loader, epochs=1, stop_after=1)
    with pytest.raises(InvalidInputError, match=r"poisson_sampling=False on an engine .* Poisson"):
        _private(engine, DataLoader(_dataset(), BATCH, shuffle=True))
    other = _engine()
    model, optimizer, loader = _private(other, DataLoader(_dataset(), BATCH, shuffle=True))
    _train(model, optimizer, loader, epochs=1, stop_after=1)
    with pytest.raises(InvalidInputError, match=r"poisson_sampling=True on an engine .* shuffle"):
        _private(other, DataLoader(_dataset(), BATCH), poisson_sampling=True)
    with pytest.raises(InvalidInputError, match="data_loader draws fixed-order epochs"):
        _private(other, DataLoader(_dataset(), BATCH, shuffle=False))


def test_poisson_sampling_is_exactly_the_certified_accountant():
    runs = []
    for engine in (_engine(), quietly(PrivacyEngine, accountant="certified")):
        model, optimizer, loader = _private(
            engine, DataLoader(_dataset(), BATCH), poisson_sampling=True
        )
        torch.manual_seed(1)  # the same Poisson batches for both engines
        _train(model, optimizer, loader, epochs=2)
        assert isinstance(engine.accountant, CertifiedGaussianAccountant)
        runs.append((engine.accountant.history, engine.get_epsilon(DELTA)))
        runs.append([p.detach().clone() for p in model.parameters()])
    assert runs[0] == runs[2] and runs[0][0] == [(SIGMA, 0.25, 8)]
    assert all(torch.equal(a, b) for a, b in zip(runs[1], runs[3], strict=True))


def test_opacus_engine_with_certified_and_no_poisson_sampling_is_refused():
    engine = quietly(PrivacyEngine, accountant="certified")
    with pytest.raises(InvalidInputError, match=r"use optimizers.opacus.CertifiedPrivacyEngine"):
        _private(engine, DataLoader(_dataset(), BATCH, shuffle=True))
    assert len(engine.accountant) == 0


def test_the_gaussian_epochs_accountant_refuses_truncated_noise():
    """A ``CertifiedPrivacyEngine``'s accountant (Gaussian noise) at the step of a truncated
    optimiser: refused, naming the engine that accounts it."""
    truncated = quietly(TruncatedPrivacyEngine, cut=8.0)
    _, optimizer, _ = _private(truncated, DataLoader(_dataset(), BATCH, shuffle=True))
    gaussian = ShuffledEpochsAccountant(sampler="shuffle", dataset_size=64, batch_size=16)
    with pytest.raises(InvalidInputError, match=r"built without settings\), got .* cut 8"):
        gaussian.check_step(optimizer)


@pytest.mark.parametrize(("shuffle", "sampler"), [(True, "shuffle"), (False, "fixed-order")])
def test_make_private_with_epsilon_calibrates_for_the_loaders_epochs(shuffle, sampler):
    """Opacus's call, unchanged but for ``poisson_sampling=False``: the noise multiplier is
    the one certified for the loader's own epochs (not Opacus's Poisson search), and after
    the epochs asked for, the certified eps meets the target."""
    model, optimizer = _mlp()
    engine = _engine()
    loader = DataLoader(_dataset(), BATCH, shuffle=shuffle)
    model, optimizer, loader = quietly(
        engine.make_private_with_epsilon,
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        target_epsilon=3.0,
        target_delta=DELTA,
        epochs=2,
        max_grad_norm=1.0,
        poisson_sampling=False,
    )
    found = engine.calibration
    assert found.sampler == sampler and found.epochs == 2 and found.batches_per_epoch == 4
    assert optimizer.noise_multiplier == found.sigma
    assert found.poisson_sigma < found.sigma  # what Opacus's search would have set
    assert _train(model, optimizer, loader, epochs=2) == 8
    assert isinstance(engine.accountant, ShuffledEpochsAccountant)
    assert engine.get_epsilon(DELTA) == pytest.approx(found.upper, rel=1e-9)
    assert engine.get_epsilon(DELTA) <= 3.0


def test_make_private_with_epsilon_names_what_it_misses():
    model, optimizer = _mlp()
    with pytest.raises(InvalidInputError, match="make_private_with_epsilon needs epochs"):
        _engine().make_private_with_epsilon(
            module=model,
            optimizer=optimizer,
            data_loader=DataLoader(_dataset(), BATCH, shuffle=True),
            target_epsilon=3.0,
            target_delta=DELTA,
            max_grad_norm=1.0,
            poisson_sampling=False,
        )
