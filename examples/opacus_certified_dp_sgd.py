"""Opacus's own DP-SGD, certified: a script written for Opacus's PRV accountant with one
line changed, ``PrivacyEngine(accountant="certified")``.

An MLP (20 -> 32 -> 2) on 10,000 synthetic examples of 20 features, Poisson-sampled
batches of 100 on average (sampling rate 1/100), noise multiplier 1, clip norm 1, trained
with Opacus's untouched ``make_private``. ``privacy_engine.get_epsilon`` is then the
certified upper bound on eps at delta = 1e-5 and ``privacy_engine.accountant.
epsilon_bounds`` the certified bracket, printed beside what Opacus's PRV and RDP
accountants report for the same steps (PRV: an estimate plus its error allowance;
RDP: a looser bound). Then ``make_private_with_epsilon`` for eps = 2, also untouched:
Opacus's own search, on the certified eps.

Run from the repository root (needs the [opacus] extra)::

    python examples/opacus_certified_dp_sgd.py          # 5 epochs
    python examples/opacus_certified_dp_sgd.py --fast   # 2 epochs, 2,000 examples

It writes no files. How long a run takes: ``docs/user-timings.md``.
"""

from __future__ import annotations

import argparse
import warnings

import torch
from opacus import PrivacyEngine
from opacus.accountants import PRVAccountant, RDPAccountant
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import optimizers.opacus  # noqa: F401  (registers accountant="certified")

DELTA = 1e-5


def synthetic_data(examples: int, seed: int = 0) -> DataLoader:
    """``examples`` examples of 20 features, labelled by a noisy linear rule; batches of
    100."""
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(examples, 20, generator=generator)
    rule = features @ torch.linspace(-1.0, 1.0, 20)
    labels = (rule + 0.5 * torch.randn(examples, generator=generator) > 0).long()
    return DataLoader(TensorDataset(features, labels), batch_size=100)


def fresh_model(seed: int = 0) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 2))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


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


def opacus_estimates(history: list) -> tuple[float, float]:
    """What Opacus's PRV and RDP accountants report for the same steps."""
    prv, rdp = PRVAccountant(), RDPAccountant()
    prv.history, rdp.history = list(history), list(history)
    return prv.get_epsilon(DELTA), rdp.get_epsilon(DELTA)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--fast", action="store_true", help="2 epochs on 2,000 examples instead of 5 on 10,000"
    )
    fast = parser.parse_args(argv).fast
    epochs, examples = (2, 2_000) if fast else (5, 10_000)
    warnings.filterwarnings("ignore", message="Secure RNG turned off")
    warnings.filterwarnings("ignore", message="Full backward hook")
    warnings.filterwarnings("ignore", message="Optimal order is the")  # Opacus's RDP notice

    privacy_engine = PrivacyEngine(accountant="certified")  # the one line: was "prv"
    model, optimizer = fresh_model()
    model, optimizer, data_loader = privacy_engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=synthetic_data(examples),
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    accuracy = train(model, optimizer, data_loader, epochs)
    epsilon = privacy_engine.get_epsilon(DELTA)
    bounds = privacy_engine.accountant.epsilon_bounds(DELTA)
    prv, rdp = opacus_estimates(privacy_engine.accountant.history)
    print(f"1. make_private, noise multiplier 1.0, {examples:,} examples, {epochs} epochs")
    print(f"   history {privacy_engine.accountant.history}, training accuracy {accuracy:.3f}")
    print(f"   privacy_engine.get_epsilon({DELTA:g}) = {epsilon:.5f} (certified upper bound)")
    print(f"   certified bracket: eps in [{bounds.lower:.5f}, {bounds.upper:.5f}]")
    print(f"   Opacus on the same steps: PRV {prv:.5f}, RDP {rdp:.5f}")

    privacy_engine = PrivacyEngine(accountant="certified")
    model, optimizer = fresh_model()
    model, optimizer, data_loader = privacy_engine.make_private_with_epsilon(
        module=model,
        optimizer=optimizer,
        data_loader=synthetic_data(examples),
        target_epsilon=2.0,
        target_delta=DELTA,
        epochs=epochs,
        max_grad_norm=1.0,
    )
    accuracy = train(model, optimizer, data_loader, epochs)
    print(f"2. make_private_with_epsilon for eps=2, delta={DELTA:g}")
    print(f"   noise multiplier {optimizer.noise_multiplier:.5f} (Opacus's search, certified eps)")
    print(f"   training accuracy {accuracy:.3f}")
    print(f"   privacy_engine.get_epsilon({DELTA:g}) = {privacy_engine.get_epsilon(DELTA):.5f}")


if __name__ == "__main__":
    main()
