"""Learning the truncation range together with the shape (issue 16; the paper left it
out for "numerical reasons")::

    python benchmarks/range_learning.py            # about 3 minutes
    python benchmarks/range_learning.py --quick    # 200 epochs per run

Problem: n = 8 releases at eps 0.3, sensitivity 1, U_L1, certified ADP delta 1e-6, on
the paper's grid ``[-500, 500]`` (step 0.5): the ``n8-L1`` point of
``docs/learning.md``. The model is the learner's monotone log-increment model
(``optimizers.models.LogIncrementModel``, warm-started from the best truncated Gaussian
for the target) times a soft cut at a learned range ``R``::

    p(x) ∝ w(x) · sigmoid((R - |x|) / tau),    R = bound · sigmoid(rho),

``tau`` = 2 grid steps, trained by Adam on the learner's objective (utility loss plus a
penalty on the smooth ADP delta above the target; ``optimizers.learner``). The soft cut
keeps the loss differentiable in ``R``; what is certified is the learned pmf itself
(mass beyond ``R`` included) and the same pmf cut hard at ``R`` (renormalised), each by
PrivacyBuckets (ADP, both directions). Started from several ranges ``R_0``; compared
with shapes learned on fixed ranges (``benchmarks/sweep_curves.py --parts range``).
Writes ``docs/range-learning.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from accountant import PrivacyBuckets  # noqa: E402
from accountant.noise import from_array  # noqa: E402
from optimizers import LearningProblem, Schedule  # noqa: E402
from optimizers.autograd import noise_bound_tensor  # noqa: E402
from optimizers.models import LogIncrementModel  # noqa: E402

PROBLEM = LearningProblem(
    bound=500.0, step=0.5, epsilon=0.3, times=8, target_delta=1e-6, bucket_width=0.001
)
SCHEDULE = Schedule()  # the learner's defaults: 3,000 epochs, lr 0.01, decay 0.999
TAU_STEPS = 2.0


class RangeModel(torch.nn.Module):
    """``w(x) · sigmoid((R - |x|) / tau)``, normalised; ``R = bound · sigmoid(rho)``."""

    def __init__(self, start: np.ndarray, range_start: float) -> None:
        super().__init__()
        self.shape = LogIncrementModel.from_pmf(start)
        fraction = range_start / PROBLEM.bound
        self.rho = torch.nn.Parameter(torch.tensor(math.log(fraction / (1 - fraction))))
        half = PROBLEM.half_size
        self.grid = PROBLEM.step * torch.arange(-half, half + 1, dtype=torch.float64)

    @property
    def range(self) -> torch.Tensor:
        return PROBLEM.bound * torch.sigmoid(self.rho)

    def forward(self) -> torch.Tensor:
        tau = TAU_STEPS * PROBLEM.step
        log_mask = torch.nn.functional.logsigmoid((self.range - self.grid.abs()) / tau)
        log_weights = torch.log(self.shape()) + log_mask
        return torch.softmax(log_weights, dim=0)


def _certify(pmf: np.ndarray) -> float:
    noise = from_array(pmf, PROBLEM.step)
    pair = PROBLEM.pair_map.pair(noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buckets = PrivacyBuckets(accuracy=1e-3).compose(pair, PROBLEM.times)
        return float(buckets.delta(PROBLEM.epsilon).upper)


def _utility(pmf: np.ndarray) -> float:
    grid = PROBLEM.step * np.arange(-PROBLEM.half_size, PROBLEM.half_size + 1)
    return float(np.sum(pmf * np.abs(grid)))


def _hard_cut(pmf: np.ndarray, limit: float) -> np.ndarray:
    grid = PROBLEM.step * np.arange(-PROBLEM.half_size, PROBLEM.half_size + 1)
    cut = np.where(np.abs(grid) <= limit, pmf, 0.0)
    return cut / cut.sum()


def learn_with_range(range_start: float, epochs: int) -> dict:
    """One run from ``R_0 = range_start`` (module docstring)."""
    start = PROBLEM.best_gaussian(PROBLEM.target_delta * (1 - SCHEDULE.target_margin))
    weights = np.maximum(start.noise.pmf, 1e-250 * start.noise.pmf.max())
    model = RangeModel(weights / weights.sum(), range_start)
    optimizer = torch.optim.Adam(model.parameters(), lr=SCHEDULE.learning_rate)
    decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, SCHEDULE.learning_rate_decay)
    target = PROBLEM.target_delta * (1 - SCHEDULE.target_margin)
    options = {"bound": "ADP", "epsilon": PROBLEM.epsilon, "times": PROBLEM.times,
               "width": PROBLEM.bucket_width}  # fmt: skip
    with torch.no_grad():
        scale = float((model() * model.grid.abs()).sum())
    best, ranges = None, []
    for epoch in range(epochs):
        optimizer.zero_grad()
        pmf = model()
        bound = noise_bound_tensor(pmf, step=PROBLEM.step, mapping=PROBLEM.pair_map, **options)
        utility = (pmf * model.grid.abs()).sum()
        excess = torch.relu(torch.log(bound.clamp_min(1e-300) / target))
        loss = utility / scale + SCHEDULE.penalty * excess**2
        loss.backward()
        meets = bound.item() <= target
        if meets and (best is None or utility.item() < best[1]):
            best = (pmf.detach().numpy().copy(), utility.item(), epoch, model.range.item())
        ranges.append(model.range.item())
        optimizer.step()
        decay.step()
    if best is None:
        return {"range_start": range_start, "met_training_target": False,
                "range_end": ranges[-1]}  # fmt: skip
    pmf, _, epoch, limit = best
    cut = _hard_cut(pmf, limit)
    return {
        "range_start": range_start,
        "met_training_target": True,
        "best_epoch": epoch,
        "range_at_best": limit,
        "range_end": ranges[-1],
        "range_min": min(ranges),
        "range_max": max(ranges),
        "soft_certified_delta": _certify(pmf),
        "soft_u_l1": _utility(pmf),
        "mass_beyond_range": float(pmf[np.abs(model.grid.numpy()) > limit].sum()),
        "hard_cut_certified_delta": _certify(cut),
        "hard_cut_u_l1": _utility(cut),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", default=str(ROOT / "docs" / "range-learning.json"))
    args = parser.parse_args(argv)
    epochs = 200 if args.quick else SCHEDULE.epochs
    runs = []
    for range_start in (100.0, 150.0, 250.0, 450.0):
        started = time.perf_counter()
        run = learn_with_range(range_start, epochs) | {"epochs": epochs}
        run["seconds"] = time.perf_counter() - started
        runs.append(run)
        print(json.dumps(run), flush=True)
    Path(args.output).write_text(json.dumps({"problem": PROBLEM.to_dict(), "runs": runs},
                                            indent=1) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
