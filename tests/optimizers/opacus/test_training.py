"""A tiny model trained through a real ``TruncatedPrivacyEngine`` (Opacus's
``PrivacyEngine`` with truncated noise) with Poisson sampling: the epsilon reported is the
certified one, the noise added is cut, with flat, per-layer and ghost clipping; what
cannot be accounted is refused before the model is touched."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("opacus")

from opacus import PrivacyEngine
from opacus.data_loader import DPDataLoader
from scipy import stats

from accountant import InvalidInputError, SubsampledTruncatedGaussian
from accountant.dpsgd import DPSGDAccountant
from optimizers.opacus import (
    CertifiedGaussianAccountant,
    TruncatedAccountant,
    TruncatedDPOptimizer,
    TruncatedPrivacyEngine,
)
from optimizers.opacus.optimizer import (
    TruncatedDPOptimizerFastGradientClipping,
    TruncatedDPPerLayerOptimizer,
)
from tests.optimizers.opacus.support import (
    BATCH,
    model_and_optimizer,
    private,
    quietly,
    torch,
    train,
)


def _private(engine, sigma=1.0, clip=1.0, seed=0, **kw):
    generator = torch.Generator().manual_seed(seed + 1)
    return private(
        engine,
        seed=seed,
        noise_multiplier=sigma,
        max_grad_norm=clip,
        noise_generator=generator,
        **kw,
    )


def _noise(grads) -> np.ndarray:
    """The noise of zero-gradient steps: ``p.grad`` times the expected batch size (16, a
    power of two: exact)."""
    return np.concatenate([g.double().numpy().ravel() for step in grads for g in step]) * BATCH


def test_reported_epsilon_is_the_certified_upper_bound():
    engine = quietly(TruncatedPrivacyEngine)
    model, optimizer, data = _private(engine, sigma=1.1)
    assert isinstance(optimizer, TruncatedDPOptimizer) and isinstance(data, DPDataLoader)
    coordinates = sum(p.numel() for p in model.parameters())
    assert engine.accountant.dimension == coordinates > 1  # known before any step
    grads = train(model, optimizer, data, epochs=2)
    assert len(grads) == 8 and engine.accountant.history == [(1.1, 0.25, 8)]
    direct = DPSGDAccountant(dimension=coordinates).compose(
        SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.25, cut=10.0), times=8
    )
    assert engine.get_epsilon(1e-5) == direct.epsilon(1e-5).upper
    bounds = engine.accountant.epsilon_bounds(1e-5)
    assert bounds.lower <= bounds.upper == engine.get_epsilon(1e-5)


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_noise_added_stays_within_the_cut_and_has_the_truncated_law(truncation):
    """With zero gradients ``p.grad`` is the noise divided by the expected batch size
    (``DPOptimizer.scale_grad``)."""
    sigma, clip, cut = 1.0, 2.0, 1.2
    engine = quietly(TruncatedPrivacyEngine, cut=cut, truncation=truncation)
    model, optimizer, data = _private(engine, sigma=sigma, clip=clip)
    assert optimizer.expected_batch_size == BATCH
    noise = _noise(train(model, optimizer, data, epochs=25, zero_gradients=True))
    assert noise.size == 100 * 10
    bound = cut * sigma * clip
    assert np.abs(noise).max() <= bound
    law = stats.truncnorm(-cut, cut, scale=sigma * clip)
    if truncation == "clamped":
        on_cut = np.abs(noise) >= bound * (1 - 1e-6)  # the cut rounded down to float32
        assert np.mean(on_cut) > 0.15  # 2 Phi(-1.2) = 0.23 on the cut
        noise = noise[~on_cut]
    assert stats.kstest(noise, law.cdf).pvalue > 1e-3


def test_per_layer_clipping_cuts_at_the_l2_norm_of_the_clip_norms():
    """Opacus's per-layer clipping noises with ``max_grad_norm = ||(C_i)||_2`` (the L2
    sensitivity): here ``sqrt(1 + 4)``; the noise is cut there and accounted in units
    of it."""
    engine = quietly(TruncatedPrivacyEngine, cut=1.2, truncation="clamped")
    model, optimizer, data = _private(engine, clip=[1.0, 2.0], clipping="per_layer")
    assert isinstance(optimizer, TruncatedDPPerLayerOptimizer)
    assert optimizer.max_grad_norms == [1.0, 2.0]
    assert optimizer.max_grad_norm == pytest.approx(math.sqrt(5.0))
    noise = _noise(train(model, optimizer, data, epochs=5, zero_gradients=True))
    bound = 1.2 * optimizer.max_grad_norm
    assert np.abs(noise).max() <= bound
    assert np.mean(np.abs(noise) >= bound * (1 - 1e-6)) > 0.15  # the clamp's atoms
    assert engine.accountant.history == [(1.0, 0.25, 20)] and engine.accountant.dimension == 10
    train(model, optimizer, data)  # real gradients: clipped per layer, then noised
    assert len(engine.accountant) == 24


def test_ghost_clipping_adds_the_truncated_noise():
    engine = quietly(TruncatedPrivacyEngine, cut=1.2, truncation="clamped")
    model, optimizer, criterion, data = _private(
        engine, grad_sample_mode="ghost", criterion=torch.nn.CrossEntropyLoss()
    )
    assert isinstance(optimizer, TruncatedDPOptimizerFastGradientClipping)
    assert criterion.optimizer is optimizer  # the two backward passes step this one
    noise = _noise(
        train(model, optimizer, data, epochs=5, zero_gradients=True, criterion=criterion)
    )
    assert np.abs(noise).max() <= 1.2
    assert np.mean(np.abs(noise) >= 1.2 * (1 - 1e-6)) > 0.15
    before = [p.detach().clone() for p in model.parameters()]
    train(model, optimizer, data, criterion=criterion)
    assert not all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert engine.accountant.history == [(1.0, 0.25, 24)] and engine.accountant.dimension == 10


def _untouched(model) -> bool:
    """No Opacus hook on ``model`` (``GradSampleModule`` adds forward hooks)."""
    return all(not m._forward_hooks and not m._backward_hooks for m in model.modules())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"poisson_sampling": "no"}, "poisson_sampling must be True or False, got 'no'"),
        (
            {"poisson_sampling": False, "clipping": "per_layer", "clip": [1.0, 1.0]},
            "clipping='per_layer' is not supported with poisson_sampling=False",
        ),
        ({"poisson_sampling": False, "sigma": 0.04}, "cut"),
        ({"clipping": "adaptive"}, "clipping='adaptive' is not supported"),
        ({"grad_sample_mode": "ghost_fsdp"}, "grad_sample_mode='ghost_fsdp' with Linear: FSDP"),
        ({"clipping": "per_layer", "grad_sample_mode": "ghost"}, "Opacus refuses it"),
        ({"clip": [1.0, 1.0]}, r"max_grad_norm must be a real number, got \[1.0, 1.0\]"),
        (
            {"clipping": "per_layer", "clip": [1.0]},
            r"max_grad_norm must be a list of 2 clip norms .* got \[1.0\]",
        ),
        ({"clipping": "per_layer", "clip": [1.0, -1.0]}, r"max_grad_norm\[1\] must be > 0"),
        ({"sigma": 0.04}, "cut"),  # cut 10 x sigma 0.04 <= 1/2
    ],
)
def test_what_cannot_be_accounted_is_refused_before_the_model_is_touched(changes, message):
    engine = quietly(TruncatedPrivacyEngine)
    model, optimizer = model_and_optimizer()
    kw = {"sigma": 1.0, "clip": 1.0} | changes
    sigma, clip = kw.pop("sigma"), kw.pop("clip")
    with pytest.raises(InvalidInputError, match=message):
        private(
            engine,
            module=model,
            optimizer=optimizer,
            noise_multiplier=sigma,
            max_grad_norm=clip,
            **kw,
        )
    assert _untouched(model) and engine.accountant.dimension is None


def test_another_model_on_the_same_engine_is_refused():
    engine = quietly(TruncatedPrivacyEngine)
    _private(engine)
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(InvalidInputError, match="trainable coordinates differ from the 10"):
        private(engine, module=model, optimizer=optimizer)
    assert _untouched(model)


def test_a_replaced_accountant_must_account_truncated_noise():
    engine = quietly(TruncatedPrivacyEngine)
    engine.accountant = CertifiedGaussianAccountant()
    with pytest.raises(InvalidInputError, match="must be a TruncatedAccountant, got Certified"):
        _private(engine)
    engine.accountant = TruncatedAccountant(cut=4.0, truncation="clamped")  # other settings
    _, optimizer, _ = _private(engine)
    assert optimizer.truncation_settings is engine.accountant.settings


def test_a_truncated_accountant_on_opacus_own_engine_refuses_the_first_step():
    """The last line of defence: a ``TruncatedAccountant`` put on Opacus's own engine by
    hand sees Opacus's ``DPOptimizer`` (untruncated noise) at the first step, before the
    model is updated."""
    engine = quietly(PrivacyEngine, accountant="certified")
    engine.accountant = TruncatedAccountant()
    model, optimizer, data = private(engine)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(InvalidInputError, match="got DPOptimizer with untruncated Gaussian"):
        train(model, optimizer, data)
    assert len(engine.accountant) == 0
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


@pytest.mark.slow
def test_calibrated_noise_meets_the_target_certified():
    engine = quietly(TruncatedPrivacyEngine, accuracy=1e-3)
    model, optimizer, data = private(engine, "make_private_with_epsilon", tolerance=1e-2)
    calibration = engine.calibration
    assert optimizer.noise_multiplier == calibration.sigma
    assert (calibration.steps, calibration.sampling_rate, calibration.cut) == (8, 0.25, 10.0)
    assert calibration.dimension == engine.accountant.dimension == 10
    assert calibration.delta_upper <= 1e-5
    assert calibration.sigma_low is not None and calibration.sigma_low_delta_lower > 1e-5
    train(model, optimizer, data, epochs=2)
    assert len(engine.accountant) == 8
    assert engine.accountant.privacy_accountant().delta(3.0).upper <= 1e-5
    assert engine.get_epsilon(1e-5) <= 3.0
    with pytest.raises(InvalidInputError, match="has already accounted 8 steps"):
        private(engine, "make_private_with_epsilon", module=model, optimizer=optimizer)


def test_calibration_refuses_an_optimizer_without_trainable_parameters():
    engine = quietly(TruncatedPrivacyEngine)
    model, optimizer = model_and_optimizer()
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(InvalidInputError, match="dimension is unknown: optimizer has no train"):
        private(engine, "make_private_with_epsilon", module=model, optimizer=optimizer)


def test_checkpoint_round_trip_through_the_privacy_engine(tmp_path):
    engine = quietly(TruncatedPrivacyEngine, cut=8.0, truncation="clamped", accuracy=1e-3)
    model, optimizer, data = _private(engine)
    train(model, optimizer, data)
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=optimizer)

    restored = quietly(TruncatedPrivacyEngine, cut=8.0, truncation="clamped", accuracy=1e-3)
    model2, optimizer2, _ = _private(restored, seed=5)
    restored.load_checkpoint(path=path, module=model2, optimizer=optimizer2)
    assert restored.accountant.history == engine.accountant.history == [(1.0, 0.25, 4)]
    assert restored.get_epsilon(1e-5) == engine.get_epsilon(1e-5)

    other = quietly(TruncatedPrivacyEngine, cut=6.0)  # renormalised: other noise
    model3, optimizer3, _ = _private(other, seed=6)
    with pytest.raises(InvalidInputError, match="cut 8 sigma, clamped, but this accountant"):
        other.load_checkpoint(path=path, module=model3, optimizer=optimizer3)
    assert other.accountant.history == []
