"""A tiny model trained through a real ``opacus.PrivacyEngine(accountant="truncated")``
with Poisson sampling: the epsilon reported is the certified one, the noise added is cut."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opacus")

from opacus import PrivacyEngine
from opacus.data_loader import DPDataLoader
from scipy import stats

from accountant import InvalidInputError, SubsampledTruncatedGaussian
from accountant.dpsgd import DPSGDAccountant
from optimizers.opacus import (
    TruncatedDPOptimizer,
    make_private_truncated,
    make_private_truncated_with_epsilon,
    truncated_privacy_engine,
)
from tests.optimizers.opacus.support import (
    BATCH,
    loader,
    model_and_optimizer,
    quietly,
    torch,
    train,
)


def _private(engine, sigma=1.0, clip=1.0, seed=0, **kw):
    model, optimizer = model_and_optimizer(seed)
    return quietly(
        make_private_truncated,
        engine,
        module=model,
        optimizer=optimizer,
        data_loader=loader(seed),
        noise_multiplier=sigma,
        max_grad_norm=clip,
        noise_generator=torch.Generator().manual_seed(seed + 1),
        **kw,
    )


def test_reported_epsilon_is_the_certified_upper_bound():
    engine = quietly(PrivacyEngine, accountant="truncated")
    model, optimizer, data = _private(engine, sigma=1.1)
    assert isinstance(optimizer, TruncatedDPOptimizer) and isinstance(data, DPDataLoader)
    grads = train(model, optimizer, data, epochs=2)
    assert len(grads) == 8 and engine.accountant.history == [(1.1, 0.25, 8)]
    coordinates = sum(p.numel() for p in model.parameters())
    assert engine.accountant.dimension == coordinates > 1
    direct = DPSGDAccountant(dimension=coordinates).compose(
        SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.25, cut=10.0), times=8
    )
    assert engine.get_epsilon(1e-5) == direct.epsilon(1e-5).upper
    bounds = engine.accountant.epsilon_bounds(1e-5)
    assert bounds.lower <= bounds.upper == engine.get_epsilon(1e-5)


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_noise_added_stays_within_the_cut_and_has_the_truncated_law(truncation):
    """With zero gradients ``p.grad`` is the noise divided by the expected batch size
    (``DPOptimizer.scale_grad``; 16, a power of two: the division is exact)."""
    sigma, clip, cut = 1.0, 2.0, 1.2
    engine = quietly(truncated_privacy_engine, cut=cut, truncation=truncation)
    model, optimizer, data = _private(engine, sigma=sigma, clip=clip)
    assert optimizer.expected_batch_size == BATCH
    grads = train(model, optimizer, data, epochs=25, zero_gradients=True)
    noise = np.concatenate([g.double().numpy().ravel() for step in grads for g in step]) * BATCH
    assert noise.size == 100 * 10
    bound = cut * sigma * clip
    assert np.abs(noise).max() <= bound
    law = stats.truncnorm(-cut, cut, scale=sigma * clip)
    if truncation == "clamped":
        on_cut = np.abs(noise) >= bound * (1 - 1e-6)  # the cut rounded down to float32
        assert np.mean(on_cut) > 0.15  # 2 Phi(-1.2) = 0.23 on the cut
        noise = noise[~on_cut]
    assert stats.kstest(noise, law.cdf).pvalue > 1e-3


def test_opacus_own_optimizer_is_refused_before_its_step():
    engine = quietly(PrivacyEngine, accountant="truncated")
    model, optimizer = model_and_optimizer()
    model, optimizer, data = quietly(
        engine.make_private,
        module=model,
        optimizer=optimizer,
        data_loader=loader(),
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(InvalidInputError, match="got DPOptimizer with untruncated Gaussian"):
        train(model, optimizer, data)
    assert len(engine.accountant) == 0
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_a_mismatched_cut_is_refused():
    engine = quietly(truncated_privacy_engine, cut=4.0)
    with pytest.raises(InvalidInputError, match=r"cut=3.0, truncation='renormalised' do not"):
        _private(engine, cut=3.0)
    with pytest.raises(InvalidInputError, match="truncation='clamped' do not match"):
        _private(engine, truncation="clamped")
    _, optimizer, _ = _private(engine, cut=4.0, truncation="resampled")  # the same law
    assert optimizer.truncation_settings is engine.accountant.settings


def test_calibrated_noise_meets_the_target_certified():
    engine = quietly(truncated_privacy_engine, cut=6.0, accuracy=1e-3)
    model, optimizer = model_and_optimizer()
    model, optimizer, data, calibration = quietly(
        make_private_truncated_with_epsilon,
        engine,
        module=model,
        optimizer=optimizer,
        data_loader=loader(),
        target_epsilon=3.0,
        target_delta=1e-5,
        epochs=2,
        max_grad_norm=1.0,
        tolerance=1e-2,
    )
    assert optimizer.noise_multiplier == calibration.sigma
    assert (calibration.steps, calibration.sampling_rate, calibration.cut) == (8, 0.25, 6.0)
    assert calibration.delta_upper <= 1e-5
    assert calibration.sigma_low is not None and calibration.sigma_low_delta_lower > 1e-5
    train(model, optimizer, data, epochs=2)
    assert len(engine.accountant) == 8
    assert engine.accountant.privacy_accountant().delta(3.0).upper <= 1e-5
    assert calibration.dimension == engine.accountant.dimension
    assert engine.get_epsilon(1e-5) <= 3.0


def test_checkpoint_round_trip_through_the_privacy_engine(tmp_path):
    engine = quietly(truncated_privacy_engine, cut=8.0, truncation="clamped", accuracy=1e-3)
    model, optimizer, data = _private(engine)
    train(model, optimizer, data)
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=optimizer)

    restored = quietly(truncated_privacy_engine, cut=8.0, truncation="clamped", accuracy=1e-3)
    model2, optimizer2, _ = _private(restored, seed=5)
    restored.load_checkpoint(path=path, module=model2, optimizer=optimizer2)
    assert restored.accountant.history == engine.accountant.history == [(1.0, 0.25, 4)]
    assert restored.get_epsilon(1e-5) == engine.get_epsilon(1e-5)

    other = quietly(truncated_privacy_engine, cut=6.0)  # renormalised: other noise
    model3, optimizer3, _ = _private(other, seed=6)
    with pytest.raises(InvalidInputError, match="cut 8 sigma, clamped, but this accountant"):
        other.load_checkpoint(path=path, module=model3, optimizer=optimizer3)
    assert other.accountant.history == []
