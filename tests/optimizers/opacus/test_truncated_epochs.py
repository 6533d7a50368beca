"""``TruncatedPrivacyEngine`` with ``poisson_sampling=False``: truncated noise over the data
loader's own epochs (shuffled or fixed order), through a real ``PrivacyEngine``, a tiny MLP
and real optimiser steps; the bounds are checked against
``accountant.shuffled_epochs_epsilon`` with the same cut, truncation and dimension, computed
independently, and the noise the optimiser adds against the cut."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from torch import nn  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from accountant import (  # noqa: E402
    InvalidInputError,
    SamplerEpsilonBounds,
    shuffled_epochs_epsilon,
)
from accountant.learning.shuffled_calibration import SamplerCalibration  # noqa: E402
from optimizers.opacus import (  # noqa: E402
    CertifiedPrivacyEngine,
    ShuffledEpochsAccountant,
    TruncatedAccountant,
    TruncatedPrivacyEngine,
)
from optimizers.opacus.optimizer import TruncatedDPOptimizer  # noqa: E402
from optimizers.opacus.settings import TruncationSettings  # noqa: E402
from tests.optimizers.opacus.epoch_support import examples as _dataset  # noqa: E402
from tests.optimizers.opacus.epoch_support import mlp as _mlp  # noqa: E402
from tests.optimizers.opacus.epoch_support import private_epochs as _private  # noqa: E402
from tests.optimizers.opacus.epoch_support import train_passes as _train  # noqa: E402
from tests.optimizers.opacus.support import quietly  # noqa: E402

DELTA, SIGMA, BATCH, CUT, ACCURACY = 1e-5, 1.0, 16, 8.0, 1e-4
#: The MLP's trainable coordinates: 4 x 8 + 8 + 8 x 2 + 2.
DIMENSION = 58


def _engine(**settings) -> TruncatedPrivacyEngine:
    return quietly(TruncatedPrivacyEngine, **({"cut": CUT} | settings))


def _expected(epochs: int, examples: int = 64, **run) -> SamplerEpsilonBounds:
    return shuffled_epochs_epsilon(
        SIGMA,
        BATCH,
        examples,
        epochs,
        DELTA,
        cut=CUT,
        dimension=DIMENSION,
        accuracy=ACCURACY,
        **run,
    )


@pytest.fixture(scope="module")
def shuffled_run():
    engine = _engine()
    model, optimizer, loader = _private(engine, DataLoader(_dataset(), BATCH, shuffle=True))
    steps = _train(model, optimizer, loader, epochs=3)
    return engine, optimizer, steps


def test_shuffled_loader_gets_the_cut_bracket_of_its_epochs(shuffled_run):
    engine, optimizer, steps = shuffled_run
    accountant = engine.accountant
    assert isinstance(accountant, ShuffledEpochsAccountant)
    assert isinstance(optimizer, TruncatedDPOptimizer)
    assert optimizer.truncation_settings == accountant.settings == engine.settings
    assert accountant.settings.cut == CUT and accountant.dimension == DIMENSION
    assert steps == len(accountant) == 12
    expected = _expected(epochs=3)
    bounds = accountant.epsilon_bounds(DELTA)
    assert bounds == expected and engine.get_epsilon(DELTA) == expected.upper
    assert (bounds.cut, bounds.dimension, bounds.truncation) == (CUT, DIMENSION, "renormalised")
    # the cut costs something beside the Gaussian's bracket, and the lower end stays real
    gaussian = shuffled_epochs_epsilon(SIGMA, BATCH, 64, 3, DELTA, accuracy=ACCURACY)
    assert gaussian.upper < bounds.upper and 0.0 < bounds.lower <= gaussian.lower


def test_the_noise_added_stays_inside_the_cut():
    """The optimiser of a shuffled engine adds truncated noise: with every gradient zero
    (learning rate 1, a zero loss), each step moves every parameter by at most ``cut *
    sigma * C / batch``, Opacus's averaging of the summed gradient."""
    engine = _engine(cut=0.6)
    model, optimizer = _mlp()
    model, optimizer, loader = _private(
        engine, DataLoader(_dataset(), BATCH, shuffle=True), module=model, optimizer=optimizer
    )
    before = [p.detach().clone() for p in model.parameters()]
    x, _ = next(iter(loader))
    optimizer.zero_grad()
    quietly((0.0 * model(x).sum()).backward)
    optimizer.step()
    moved = max(
        float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), before, strict=True)
    )
    assert 0.0 < moved <= 0.6 * SIGMA * 1.0 / BATCH * 0.1 * (1 + 1e-6)


def test_fixed_order_and_a_partial_epoch():
    # 60 examples in batches of 16 in a fixed order: 4 batches per epoch, the last of 12
    engine = _engine(truncation="clamped")
    model, optimizer, loader = _private(engine, DataLoader(_dataset(60), BATCH, shuffle=False))
    assert _train(model, optimizer, loader, epochs=2, stop_after=2) == 6
    accountant = engine.accountant
    assert accountant.sampler == "fixed-order"
    expected = _expected(
        epochs=2, examples=60, sampler="fixed-order", truncation="clamped", steps=6
    )
    bounds = accountant.epsilon_bounds(DELTA)
    assert bounds == expected and (bounds.epochs, bounds.completed_epochs, bounds.steps) == (
        2,
        1,
        6,
    )
    assert bounds.upper - bounds.lower < 0.01 * bounds.upper  # a fixed order is ~exact


def test_state_dict_keeps_the_noise_and_refuses_other_noise(shuffled_run, tmp_path):
    engine, _, _ = shuffled_run
    state = engine.accountant.state_dict()
    assert state["settings"] == {"cut": CUT, "truncation": "renormalised"}
    assert state["dimension"] == DIMENSION and state["history"] == [(SIGMA, 12)]
    fresh = ShuffledEpochsAccountant(
        sampler="shuffle",
        dataset_size=64,
        batch_size=16,
        accuracy=ACCURACY,
        settings=TruncationSettings(cut=CUT),
    )
    fresh.load_state_dict(state)
    assert fresh.dimension == DIMENSION and fresh.epsilon_bounds(DELTA) == (
        engine.accountant.epsilon_bounds(DELTA)
    )
    # Opacus's own checkpoint into a new engine made private with the same loader
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=nn.Linear(1, 1))
    other = _engine()
    _private(other, DataLoader(_dataset(), BATCH, shuffle=True))
    quietly(other.load_checkpoint, path=path, module=nn.Linear(1, 1))
    assert other.get_epsilon(DELTA) == engine.get_epsilon(DELTA)
    gaussian = ShuffledEpochsAccountant(sampler="shuffle", dataset_size=64, batch_size=16)
    with pytest.raises(InvalidInputError, match=r"state_dict\['settings'\] describes \{'cut'"):
        gaussian.load_state_dict(state)
    wider = ShuffledEpochsAccountant(
        sampler="shuffle", dataset_size=64, batch_size=16, settings=TruncationSettings(cut=9.0)
    )
    with pytest.raises(InvalidInputError, match="describes noise with cut 8 sigma"):
        wider.load_state_dict(state)
    with pytest.raises(InvalidInputError, match="describes Gaussian noise"):
        wider.load_state_dict(gaussian.state_dict())
    other_model = ShuffledEpochsAccountant(
        sampler="shuffle",
        dataset_size=64,
        batch_size=16,
        settings=TruncationSettings(cut=CUT),
        dimension=10,
    )
    with pytest.raises(InvalidInputError, match=r"state_dict\['dimension'\] must be 10"):
        other_model.load_state_dict(state)
    assert len(gaussian) == len(wider) == len(other_model) == 0


def test_a_gaussian_state_without_noise_fields_still_loads():
    """States written before truncated noise was accounted have no ``settings``: they are
    Gaussian, and load into a Gaussian accountant only."""
    gaussian = ShuffledEpochsAccountant(sampler="shuffle", dataset_size=64, batch_size=16)
    gaussian.step(noise_multiplier=SIGMA, sample_rate=0.25, steps=4)
    state = dict(gaussian.state_dict())
    del state["settings"], state["dimension"]
    fresh = ShuffledEpochsAccountant(sampler="shuffle", dataset_size=64, batch_size=16)
    fresh.load_state_dict(state)
    assert fresh.history == [(SIGMA, 4)]
    cut = ShuffledEpochsAccountant(
        sampler="shuffle", dataset_size=64, batch_size=16, settings=TruncationSettings(cut=CUT)
    )
    with pytest.raises(InvalidInputError, match="describes Gaussian noise"):
        cut.load_state_dict(state)


def test_an_optimiser_without_the_accountants_noise_is_refused_at_its_step():
    engine = quietly(CertifiedPrivacyEngine)
    _, optimizer, _ = _private(engine, DataLoader(_dataset(), BATCH, shuffle=True))
    cut = ShuffledEpochsAccountant(
        sampler="shuffle", dataset_size=64, batch_size=16, settings=TruncationSettings(cut=CUT)
    )
    with pytest.raises(InvalidInputError, match="got DPOptimizer with untruncated Gaussian"):
        cut.check_step(optimizer)
    with pytest.raises(InvalidInputError, match="dimension is unknown"):
        cut.step(noise_multiplier=SIGMA, sample_rate=0.25)
        cut.epsilon_bounds(DELTA)


def test_make_private_with_epsilon_calibrates_the_cut_noise_for_the_loaders_epochs():
    model, optimizer = _mlp()
    engine = _engine()
    model, optimizer, loader = quietly(
        engine.make_private_with_epsilon,
        module=model,
        optimizer=optimizer,
        data_loader=DataLoader(_dataset(), BATCH, shuffle=True),
        target_epsilon=3.0,
        target_delta=DELTA,
        epochs=2,
        max_grad_norm=1.0,
        poisson_sampling=False,
    )
    found = engine.calibration
    assert isinstance(found, SamplerCalibration)
    assert (found.cut, found.dimension, found.sampler) == (CUT, DIMENSION, "shuffle")
    assert optimizer.noise_multiplier == found.sigma and found.poisson_sigma < found.sigma
    assert _train(model, optimizer, loader, epochs=2) == 8
    assert engine.get_epsilon(DELTA) == pytest.approx(found.upper, rel=1e-9)
    assert engine.get_epsilon(DELTA) <= 3.0


def test_poisson_and_epoch_histories_do_not_mix_on_one_truncated_engine():
    engine = _engine()
    model, optimizer, loader = _private(engine, DataLoader(_dataset(), BATCH, shuffle=True))
    _train(model, optimizer, loader, epochs=1, stop_after=1)
    with pytest.raises(InvalidInputError, match=r"poisson_sampling=True on an engine .* shuffle"):
        _private(engine, DataLoader(_dataset(), BATCH), poisson_sampling=True)
    poisson = _engine()
    model, optimizer, loader = _private(
        poisson, DataLoader(_dataset(), BATCH), poisson_sampling=True
    )
    assert isinstance(poisson.accountant, TruncatedAccountant)
    _train(model, optimizer, loader, epochs=1, stop_after=1)
    with pytest.raises(InvalidInputError, match=r"poisson_sampling=False on an engine .* Poisson"):
        _private(poisson, DataLoader(_dataset(), BATCH, shuffle=True))
    # an engine made private with no step yet switches freely
    fresh = _engine()
    _private(fresh, DataLoader(_dataset(), BATCH, shuffle=True))
    _private(fresh, DataLoader(_dataset(), BATCH), poisson_sampling=True)
    assert isinstance(fresh.accountant, TruncatedAccountant)
    assert fresh.accountant.settings.cut == CUT
