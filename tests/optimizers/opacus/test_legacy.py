"""The first integration's functions keep working (deprecated): they are
``TruncatedPrivacyEngine`` and its methods under their first contract."""

from __future__ import annotations

import pytest

pytest.importorskip("opacus")

from opacus import PrivacyEngine

from accountant import InvalidInputError, NoiseCalibration
from optimizers.opacus import (
    TruncatedAccountant,
    TruncatedDPOptimizer,
    TruncatedPrivacyEngine,
    make_private_truncated,
    make_private_truncated_with_epsilon,
    truncated_privacy_engine,
)
from tests.optimizers.opacus.support import loader, model_and_optimizer, quietly, train


def _private(engine, call=make_private_truncated, **kw):
    model, optimizer = model_and_optimizer()
    values = {"module": model, "optimizer": optimizer, "data_loader": loader()}
    values |= {"max_grad_norm": 1.0}
    if call is make_private_truncated:
        values["noise_multiplier"] = 1.0
    return quietly(call, engine, **(values | kw))


def test_the_engine_function_builds_the_engine():
    engine = quietly(truncated_privacy_engine, 4.0, "clamped", 1e-3)
    assert isinstance(engine, TruncatedPrivacyEngine)
    assert (engine.settings.cut, engine.settings.truncation) == (4.0, "clamped")
    assert engine.accountant.accuracy == 1e-3


def test_make_private_truncated_is_the_engine_make_private():
    engine = quietly(truncated_privacy_engine, cut=4.0)
    model, optimizer, data = _private(engine, cut=4.0, truncation="resampled")  # same law
    assert type(optimizer) is TruncatedDPOptimizer
    assert optimizer.truncation_settings is engine.accountant.settings
    train(model, optimizer, data)
    assert engine.accountant.history == [(1.0, 0.25, 4)] and engine.accountant.dimension == 10


@pytest.mark.slow
def test_make_private_truncated_with_epsilon_returns_the_calibration():
    engine = quietly(truncated_privacy_engine, accuracy=1e-3)
    made = _private(
        engine,
        make_private_truncated_with_epsilon,
        target_epsilon=3.0,
        target_delta=1e-5,
        epochs=2,
        tolerance=1e-2,
    )
    assert len(made) == 4 and isinstance(made[3], NoiseCalibration)
    assert made[3] is engine.calibration and made[1].noise_multiplier == made[3].sigma


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"cut": 3.0}, r"cut=3.0, truncation='renormalised' do not match"),
        ({"truncation": "clamped"}, "truncation='clamped' do not match"),
        ({"clipping": "per_layer"}, "TruncatedPrivacyEngine.make_private takes clipping="),
        ({"grad_sample_mode": "ghost"}, "TruncatedPrivacyEngine.make_private takes 'ghost'"),
    ],
)
def test_the_first_contract_is_kept(kw, message):
    engine = quietly(truncated_privacy_engine, cut=4.0)
    with pytest.raises(InvalidInputError, match=message):
        _private(engine, **kw)


def test_opacus_own_engine_is_refused_even_with_a_truncated_accountant():
    engine = quietly(PrivacyEngine, accountant="rdp")
    with pytest.raises(InvalidInputError, match=r"got <opacus\.accountants\.rdp\.RDPAccountant"):
        _private(engine)
    engine.accountant = TruncatedAccountant()
    with pytest.raises(InvalidInputError, match=r"\(.*\), got PrivacyEngine$"):
        _private(engine)
