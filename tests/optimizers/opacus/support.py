"""A tiny model and data set trained through a real Opacus ``PrivacyEngine``."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

EXAMPLES, BATCH = 64, 16  # sample rate 1/4, expected batch size 16 (a power of two)


def loader(seed: int = 0) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(EXAMPLES, 4, generator=generator)
    labels = torch.randint(0, 2, (EXAMPLES,), generator=generator)
    return DataLoader(TensorDataset(features, labels), batch_size=BATCH)


def model_and_optimizer(seed: int = 0, lr: float = 0.1):
    torch.manual_seed(seed)
    model = nn.Linear(4, 2)
    return model, torch.optim.SGD(model.parameters(), lr=lr)


def quietly(call, *args, **kwargs):
    """``call`` with Opacus's secure-RNG notice silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return call(*args, **kwargs)


def train(model, optimizer, data, epochs: int = 1, zero_gradients: bool = False) -> list:
    """Train; return ``p.grad`` of every parameter after every step (copies)."""
    grads = []
    for _ in range(epochs):
        for x, y in data:
            optimizer.zero_grad()
            out = model(x)
            loss = (out * 0.0).sum() if zero_gradients else nn.functional.cross_entropy(out, y)
            quietly(loss.backward)
            optimizer.step()
            grads.append([p.grad.detach().clone() for p in model.parameters()])
    return grads
