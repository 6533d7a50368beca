"""A DP-SGD script written for Opacus's PRV accountant runs with one line changed, for
the certified Gaussian accountant and for the truncated engine, and reports a certified
eps inside the interval PRV itself certifies for the same steps."""

from __future__ import annotations

import pytest

pytest.importorskip("opacus")

from opacus import PrivacyEngine

from optimizers.opacus import CertifiedGaussianAccountant, TruncatedPrivacyEngine
from tests.optimizers.opacus.support import quietly, torch
from tests.optimizers.opacus.test_certified import prv_interval

DELTA = 1e-5


def opacus_script(privacy_engine) -> tuple[float, int]:
    """An Opacus training script as its tutorials write it (the engine is its one line
    that changes): an MLP on 1,000 x 20 synthetic examples, Poisson sampling at rate
    1/20, noise multiplier 1, clip 1, two epochs. Returns ``get_epsilon(DELTA)`` and the
    number of trainable parameters."""
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    generator = torch.Generator().manual_seed(0)
    features = torch.randn(1000, 20, generator=generator)
    labels = (features.sum(dim=1) > 0).long()
    data_loader = DataLoader(TensorDataset(features, labels), batch_size=50)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    model, optimizer, data_loader = privacy_engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=data_loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    for _ in range(2):
        for x, y in data_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return privacy_engine.get_epsilon(delta=DELTA), parameters


@pytest.fixture(scope="module")
def prv_run():
    engine = quietly(PrivacyEngine, accountant="prv")
    epsilon, _ = quietly(opacus_script, engine)
    return engine.accountant.history, epsilon


@pytest.mark.parametrize(
    "make_engine",
    [
        lambda: PrivacyEngine(accountant="certified"),  # the one line: was accountant="prv"
        lambda: TruncatedPrivacyEngine(cut=10.0),  # the one line for truncated noise
    ],
    ids=["certified", "truncated"],
)
def test_one_changed_line_reports_a_certified_eps_inside_prv_interval(make_engine, prv_run):
    prv_history, prv_epsilon = prv_run
    assert prv_history == [(1.0, 0.05, 40)]
    engine = quietly(make_engine)
    epsilon, parameters = quietly(opacus_script, engine)
    assert engine.accountant.history == prv_history
    bounds = engine.accountant.epsilon_bounds(DELTA)
    assert epsilon == bounds.upper
    lower, upper = prv_interval(prv_history, DELTA)
    assert upper == prv_epsilon
    assert lower <= bounds.lower <= bounds.upper <= upper
    if isinstance(engine, TruncatedPrivacyEngine):
        assert engine.accountant.dimension == parameters == 20 * 16 + 16 + 16 * 2 + 2
    else:
        assert isinstance(engine.accountant, CertifiedGaussianAccountant)
