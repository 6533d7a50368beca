"""DP-SGD in Opacus with truncated Gaussian noise, accounted by certified PrivacyBuckets.

A logistic regression (``nn.Linear(8, 2)``) on 1,024 synthetic examples, Poisson-sampled
batches of 64 on average (sampling rate 1/16), clip norm 1. The noise of every step is
cut at 8 standard deviations per coordinate (redrawn beyond: ``"renormalised"``).

The engine is ``TruncatedPrivacyEngine(cut=8, truncation="renormalised")``, Opacus's
``PrivacyEngine`` with truncated noise; the rest is an Opacus script as written for
Opacus's own engine:

1. ``make_private`` with noise multiplier 1.0: train, then the certified bracket on eps
   at delta = 1e-5 (``privacy_engine.get_epsilon`` is its upper end).
2. ``make_private_with_epsilon``: the smallest noise multiplier found whose certified
   delta at eps = 2 after the planned steps is at most 1e-5 on the model's coordinates
   (``accountant.calibrate_noise_multiplier``; ``privacy_engine.calibration``), then
   train with it.

Run from the repository root (needs the [opacus] extra)::

    python examples/opacus_truncated_dp_sgd.py          # 5 epochs
    python examples/opacus_truncated_dp_sgd.py --fast   # 2 epochs, coarser accounting

It writes no files. How long a run takes: ``docs/user-timings.md``.
"""

from __future__ import annotations

import argparse
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from optimizers.opacus import TruncatedPrivacyEngine

DELTA = 1e-5
CUT = 8.0


def synthetic_data(seed: int = 0) -> DataLoader:
    """1,024 examples of a noisy linear rule, batches of 64."""
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(1024, 8, generator=generator)
    labels = (features @ torch.linspace(-1.0, 1.0, 8) > 0).long()
    return DataLoader(TensorDataset(features, labels), batch_size=64)


def train(model: nn.Module, optimizer, data: DataLoader, epochs: int) -> float:
    """Plain training loop; returns the accuracy on the whole data set afterwards."""
    for _ in range(epochs):
        for x, y in data:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    x, y = data.dataset.tensors
    with torch.no_grad():
        return float((model(x).argmax(dim=1) == y).float().mean())


def fresh_model(seed: int = 0) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = nn.Linear(8, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--fast",
        action="store_true",
        help="2 epochs instead of 5, accuracy 1e-3 and calibration tolerance 1e-2",
    )
    fast = parser.parse_args(argv).fast
    epochs = 2 if fast else 5
    accuracy, tolerance = (1e-3, 1e-2) if fast else (1e-4, 1e-3)
    warnings.filterwarnings("ignore", message="Secure RNG turned off")
    warnings.filterwarnings("ignore", message="Full backward hook")

    engine = TruncatedPrivacyEngine(cut=CUT, truncation="renormalised", accuracy=accuracy)
    model, optimizer = fresh_model()
    model, optimizer, data = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=synthetic_data(),
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        noise_generator=torch.Generator().manual_seed(1),
    )
    print(f"1. noise multiplier 1.0, cut {CUT:g} sigma, {epochs} epochs")
    accuracy = train(model, optimizer, data, epochs)
    bounds = engine.accountant.epsilon_bounds(DELTA)
    print(f"   steps {len(engine.accountant)}, history {engine.accountant.history}")
    print(f"   noised coordinates per step: {engine.accountant.dimension}")
    print(f"   training accuracy {accuracy:.3f}")
    print(f"   certified eps at delta={DELTA:g}: [{bounds.lower:.4f}, {bounds.upper:.4f}]")
    print(f"   privacy_engine.get_epsilon({DELTA:g}) = {engine.get_epsilon(DELTA):.4f}")

    engine = TruncatedPrivacyEngine(cut=CUT, truncation="renormalised", accuracy=accuracy)
    model, optimizer = fresh_model()
    model, optimizer, data = engine.make_private_with_epsilon(
        module=model,
        optimizer=optimizer,
        data_loader=synthetic_data(),
        target_epsilon=2.0,
        target_delta=DELTA,
        epochs=epochs,
        max_grad_norm=1.0,
        tolerance=tolerance,
        noise_generator=torch.Generator().manual_seed(2),
    )
    calibration = engine.calibration
    print(f"2. calibrated for eps=2, delta={DELTA:g} over {calibration.steps} steps")
    print(
        f"   noise multiplier {calibration.sigma:.4f} (certified delta <= "
        f"{calibration.delta_upper:.3g}); {calibration.sigma_low:.4f} certified to fail"
    )
    accuracy = train(model, optimizer, data, epochs)
    print(f"   training accuracy {accuracy:.3f}")
    print(f"   privacy_engine.get_epsilon({DELTA:g}) = {engine.get_epsilon(DELTA):.4f}")


if __name__ == "__main__":
    main()
