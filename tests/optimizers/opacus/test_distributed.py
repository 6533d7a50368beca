"""Truncated noise under ``DistributedDataParallel``: a real two-process ``gloo`` group on
the CPU (``torch.multiprocessing.spawn``), Opacus's ``DPDDP`` model, Poisson sampling
split over the ranks.

Opacus's distributed optimisers draw the noise on rank 0 only and sum the ranks'
gradients, so each step adds one truncated draw: with zero gradients every rank ends the
step with the same ``p.grad``, the noise over the expected batch size, every coordinate
within the cut (two draws summed would leave it), the clamped cut's atoms on it; rank 1's
noise generator is never drawn from. Each rank's accountant counts every step on the
whole model's coordinates. Flat and per-layer clipping, ghost clipping, and the
certified Gaussian accountant with Opacus's own optimiser run in the one group.
"""

from __future__ import annotations

import math
import socket
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from torch import multiprocessing  # noqa: E402

CUT, SIGMA, EPOCHS, WORLD = 1.2, 1.0, 3, 2
#: name -> (truncated?, make_private keywords)
RUNS = {
    "flat": (True, {"max_grad_norm": 1.0}),
    "per_layer": (True, {"max_grad_norm": [1.0, 2.0], "clipping": "per_layer"}),
    "ghost": (True, {"max_grad_norm": 1.0, "grad_sample_mode": "ghost"}),
    "certified": (False, {"max_grad_norm": 1.0}),
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(rank: int, name: str) -> dict:
    """One training run on this rank: 3 epochs with zero gradients (the noise alone),
    then one epoch of real gradients; what the parent checks."""
    from opacus import PrivacyEngine
    from opacus.distributed import DifferentiallyPrivateDistributedDataParallel

    from optimizers.opacus import TruncatedPrivacyEngine
    from tests.optimizers.opacus.support import loader, model_and_optimizer, train

    truncated, kw = RUNS[name]
    if truncated:
        engine = TruncatedPrivacyEngine(cut=CUT, truncation="clamped", accuracy=1e-3)
    else:
        engine = PrivacyEngine(accountant="certified")
    model, optimizer = model_and_optimizer(seed=rank)  # DPDDP broadcasts rank 0's weights
    model = DifferentiallyPrivateDistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 + rank)
    start = generator.get_state()
    if name == "ghost":
        kw = kw | {"criterion": torch.nn.CrossEntropyLoss()}
    made = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader(seed=0),
        noise_multiplier=SIGMA,
        noise_generator=generator,
        **kw,
    )
    model, optimizer, data = made[0], made[1], made[-1]
    criterion = made[2] if name == "ghost" else None
    noise = train(model, optimizer, data, epochs=EPOCHS, zero_gradients=True, criterion=criterion)
    train(model, optimizer, data, criterion=criterion)
    return {
        "optimizer": type(optimizer).__name__,
        "noise_std": optimizer.noise_multiplier * optimizer.max_grad_norm,
        "expected_batch_size": optimizer.expected_batch_size,
        "grads": [[g.numpy() for g in step] for step in noise],
        "weights": [p.detach().numpy().copy() for p in model.parameters()],
        "history": list(engine.accountant.history),
        "dimension": getattr(engine.accountant, "dimension", None),
        # the cut at 1.2 sigma leaves distinguishing mass above any delta: no eps there
        "epsilon": None if truncated else engine.get_epsilon(1e-5),
        "releases": engine.accountant.privacy_accountant().releases,
        "generator_drawn": not torch.equal(start, generator.get_state()),
    }


def _worker(rank: int, port: int, results: dict) -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    torch.distributed.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    try:
        results[rank] = {name: _run(rank, name) for name in RUNS}
    finally:
        torch.distributed.destroy_process_group()


@pytest.fixture(scope="module")
def ranks() -> list[dict]:
    with multiprocessing.Manager() as manager:
        results = manager.dict()
        multiprocessing.spawn(_worker, args=(_free_port(), results), nprocs=WORLD, join=True)
        return [dict(results[rank]) for rank in range(WORLD)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["flat", "per_layer", "ghost"])
def test_truncated_noise_is_added_once_per_step_and_cut(ranks, name):
    first, second = (r[name] for r in ranks)
    twin = {
        "flat": "TruncatedDistributedDPOptimizer",
        "per_layer": "TruncatedDistributedPerLayerOptimizer",
        "ghost": "TruncatedDistributedDPOptimizerFastGradientClipping",
    }[name]
    assert first["optimizer"] == second["optimizer"] == twin
    # Opacus divides by the per-rank expected batch size and then by the world size
    scale = first["expected_batch_size"] * WORLD
    assert scale == 16
    std = first["noise_std"]
    assert std == pytest.approx(SIGMA * (math.sqrt(5.0) if name == "per_layer" else 1.0))
    steps = len(first["grads"])
    assert steps == len(second["grads"]) == EPOCHS * 4
    noise = []
    for a, b in zip(first["grads"], second["grads"], strict=True):
        for ga, gb in zip(a, b, strict=True):
            np.testing.assert_array_equal(ga, gb)  # one noisy gradient on both ranks
            noise.append(ga.astype(np.float64).ravel() * scale)
    noise = np.concatenate(noise)
    assert noise.size == steps * 10
    bound = CUT * std
    assert np.abs(noise).max() <= bound  # one draw, cut per coordinate
    assert np.mean(np.abs(noise) >= bound * (1 - 1e-6)) > 0.1  # the clamp's atoms (0.23)
    assert first["generator_drawn"] and not second["generator_drawn"]  # rank 0 draws
    for wa, wb in zip(first["weights"], second["weights"], strict=True):
        np.testing.assert_array_equal(wa, wb)  # the ranks stay in step
    for rank in (first, second):
        assert rank["history"] == [(SIGMA, 0.25, steps + 4)]
        assert rank["dimension"] == 10  # the whole model on every rank
    assert first["releases"] == second["releases"] == steps + 4


@pytest.mark.slow
def test_the_certified_accountant_accounts_opacus_distributed_optimizer(ranks):
    first, second = (r["certified"] for r in ranks)
    assert first["optimizer"] == second["optimizer"] == "DistributedDPOptimizer"
    assert first["history"] == second["history"] == [(SIGMA, 0.25, EPOCHS * 4 + 4)]
    assert first["epsilon"] == second["epsilon"] > 0.0
    for wa, wb in zip(first["weights"], second["weights"], strict=True):
        np.testing.assert_array_equal(wa, wb)
