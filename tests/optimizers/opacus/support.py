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


def private(engine, method: str = "make_private", seed: int = 0, **changes):
    """``engine.make_private`` (or ``engine.make_private_with_epsilon``) of a fresh
    :func:`model_and_optimizer` and :func:`loader`: noise multiplier 1 (or target eps 3,
    delta 1e-5, 2 epochs), clip 1; ``changes`` replace or add arguments."""
    model, optimizer = model_and_optimizer(seed)
    values = {"module": model, "optimizer": optimizer, "data_loader": loader(seed)}
    values["max_grad_norm"] = 1.0
    if method == "make_private":
        values["noise_multiplier"] = 1.0
    else:
        values |= {"target_epsilon": 3.0, "target_delta": 1e-5, "epochs": 2}
    return quietly(getattr(engine, method), **(values | changes))


def quietly(call, *args, **kwargs):
    """``call`` with Opacus's secure-RNG notice silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return call(*args, **kwargs)


def train(
    model, optimizer, data, epochs: int = 1, zero_gradients: bool = False, criterion=None
) -> list:
    """Train; return ``p.grad`` of every parameter after every step (copies).
    ``criterion``: the loss (Opacus's ghost-clipping wrapper), else cross-entropy."""
    criterion = nn.functional.cross_entropy if criterion is None else criterion
    grads = []
    for _ in range(epochs):
        for x, y in data:
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out * 0.0 if zero_gradients else out, y)
            quietly(loss.backward)
            optimizer.step()
            grads.append([p.grad.detach().clone() for p in model.parameters()])
    return grads
