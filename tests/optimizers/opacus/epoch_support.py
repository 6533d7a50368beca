"""A tiny MLP and data set made private with ``poisson_sampling=False`` (the data loader's
own epochs) and trained in whole or partial passes over the loader."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from torch import nn  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

from tests.optimizers.opacus.support import quietly  # noqa: E402

#: The noise multiplier :func:`private_epochs` uses unless told otherwise.
SIGMA = 1.0


def examples(count: int = 64) -> TensorDataset:
    """``count`` examples of 4 features and a binary label (seeded)."""
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(
        torch.randn(count, 4, generator=generator),
        torch.randint(0, 2, (count,), generator=generator),
    )


def mlp() -> tuple[nn.Module, torch.optim.Optimizer]:
    """A 4-8-2 MLP (58 trainable coordinates) and its SGD optimiser (seeded)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def private_epochs(engine, data_loader, **changes):
    """``engine.make_private`` of a fresh :func:`mlp` over ``data_loader`` with
    ``poisson_sampling=False``, noise multiplier :data:`SIGMA`, clip 1; ``changes`` replace
    or add arguments."""
    model, optimizer = mlp()
    values = {
        "module": model,
        "optimizer": optimizer,
        "data_loader": data_loader,
        "noise_multiplier": SIGMA,
        "max_grad_norm": 1.0,
        "poisson_sampling": False,
    }
    return quietly(engine.make_private, **(values | changes))


def train_passes(model, optimizer, loader, epochs: int = 1, stop_after: int | None = None) -> int:
    """Train ``epochs`` passes over ``loader`` (the last one stopped after ``stop_after``
    steps if given); return the steps taken."""
    steps = 0
    for epoch in range(epochs):
        for index, (x, y) in enumerate(loader):
            if stop_after is not None and epoch == epochs - 1 and index == stop_after:
                break
            optimizer.zero_grad()
            quietly(nn.functional.cross_entropy(model(x), y).backward)
            optimizer.step()
            steps += 1
    return steps
