"""The noise models output valid symmetric, monotone pmfs for any parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant import noise  # noqa: E402
from accountant.errors import InvalidInputError  # noqa: E402
from optimizers.models import LogIncrementModel, SigmoidStackModel, build_model  # noqa: E402

H = 20
BOUND = 10.0


def _sigmoid_model(seed: int = 0, sigmoids: int = 5) -> SigmoidStackModel:
    generator = torch.Generator().manual_seed(seed)
    return SigmoidStackModel(H, BOUND, sigmoids=sigmoids, generator=generator)


def _increment_model(seed: int = 0) -> LogIncrementModel:
    return LogIncrementModel(H, generator=torch.Generator().manual_seed(seed))


MAKERS = {"sigmoid": _sigmoid_model, "increments": _increment_model}


def _assert_valid_pmf(pmf: torch.Tensor, half_size: int) -> None:
    assert pmf.dtype == torch.float64
    assert pmf.shape == (2 * half_size + 1,)
    assert not torch.isnan(pmf).any()
    assert (pmf > 0).all()
    assert abs(pmf.sum().item() - 1.0) < 1e-12
    assert torch.equal(pmf, torch.flip(pmf, dims=(0,)))
    left = pmf[: half_size + 1]
    assert (left[:-1] <= left[1:]).all(), "not monotone towards the centre"


def _perturb(model: torch.nn.Module, seed: int, scale: float) -> None:
    generator = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for parameter in model.parameters():
            noise_ = torch.randn(parameter.shape, dtype=torch.float64, generator=generator)
            parameter.add_(scale * noise_)


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("scale", [0.0, 1.0, 30.0, 1e4])
def test_random_parameters_give_valid_pmf(name, seed, scale):
    model = MAKERS[name](seed)
    _perturb(model, seed, scale)
    with torch.no_grad():
        pmf = model()
        log_pmf = model.log_pmf()
    _assert_valid_pmf(pmf, H)
    assert torch.allclose(log_pmf.exp(), pmf, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize(
    ("a", "b", "f"),
    [
        (0.0, 1.0, None),  # no constant term
        (0.0, 0.0, None),  # all weights zero: A^2, B_j^2 floored alike
        (0.0, 1e100, None),  # huge range of log-weights: the floor keeps pmf > 0
        (1e-200, 1e-150, None),
        (-3.0, -2.0, None),  # signs do not matter: only squares enter
        (1.0, 5.0, 1e6),  # sigmoid centres far away
        (1.0, 5.0, -1e300),  # slope * (x - F) overflows to +inf
        (0.0, 5.0, 1e300),  # ... and to -inf, with A = 0
    ],
)
def test_sigmoid_model_extreme_parameters(a, b, f):
    model = _sigmoid_model()
    with torch.no_grad():
        model.A.fill_(a)
        model.B.fill_(b)
        if f is not None:
            model.F.fill_(f)
        pmf = model()
    _assert_valid_pmf(pmf, H)
    if a == 0.0 and b == 0.0:  # weights ∝ 1 + sum_j sigmoid: 1 + 1/2 at x = -10, 1 + 4 + 1/2 at 0
        assert (pmf[H] / pmf[0]).item() == pytest.approx(5.5 / 1.5, rel=1e-12)


@pytest.mark.parametrize("theta", [-1e3, -30.0, 0.0, 50.0, 1e3])
def test_increment_model_extreme_parameters(theta):
    model = LogIncrementModel(H)
    with torch.no_grad():
        model.theta.fill_(theta)
        pmf = model()
    _assert_valid_pmf(pmf, H)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_gradients_reach_every_parameter(name):
    model = MAKERS[name](3)
    x = torch.arange(-H, H + 1, dtype=torch.float64) * (BOUND / H)
    loss = (model() * x.abs()).sum()
    loss.backward()
    names = [n for n, _ in model.named_parameters()]
    assert names == (["A", "B", "F"] if name == "sigmoid" else ["theta"])
    for parameter_name, parameter in model.named_parameters():
        grad = parameter.grad
        assert grad is not None, parameter_name
        assert torch.isfinite(grad).all(), parameter_name
        assert (grad != 0).all(), parameter_name


@pytest.mark.parametrize("name", ["sigmoid", "increments"])
def test_seed_reproducibility(name):
    first = build_model(name, H, BOUND, seed=7, sigmoids=8)()
    again = build_model(name, H, BOUND, seed=7, sigmoids=8)()
    other = build_model(name, H, BOUND, seed=8, sigmoids=8)()
    assert torch.equal(first, again)
    assert not torch.allclose(first, other, rtol=1e-6, atol=0.0)


def test_build_model_types_and_defaults():
    sigmoid = build_model("sigmoid", 4, 2.0, seed=0)
    assert isinstance(sigmoid, SigmoidStackModel)
    assert sigmoid.B.shape == (1000,) and sigmoid.A.item() == 10.0
    assert torch.equal(sigmoid.F.detach(), torch.linspace(-2.0, 0.0, 1000, dtype=torch.float64))
    assert torch.equal(sigmoid.grid, 0.5 * torch.arange(-4, 5, dtype=torch.float64))
    assert ((sigmoid.B >= 0) & (sigmoid.B < 1)).all()
    increments = build_model("increments", 4, 2.0, seed=0)
    assert isinstance(increments, LogIncrementModel) and increments.half_size == 4
    assert all(p.dtype == torch.float64 for p in (*sigmoid.parameters(), increments.theta))


def test_increment_default_init_rises_by_four():
    pmf = LogIncrementModel(H)().detach()
    assert math.log(pmf[H] / pmf[0]) == pytest.approx(4.0, rel=1e-12)
    ratios = pmf[1 : H + 1] / pmf[:H]
    assert torch.allclose(ratios, torch.full_like(ratios, math.exp(4.0 / H)), rtol=1e-12)


@pytest.mark.parametrize("slope", [500.0, 1e4])
def test_single_steep_sigmoid_is_a_two_level_step(slope):
    half, bound, a, b, f = 10, 5.0, 2.0, 3.0, -2.25  # f lies between grid points -2.5 and -2
    model = SigmoidStackModel(half, bound, sigmoids=1, slope=slope)
    with torch.no_grad():
        model.A.fill_(a)
        model.B.fill_(b)
        model.F.fill_(f)
        pmf = model().numpy()
    x = 0.5 * np.arange(-half, half + 1)
    left_x = -np.abs(x)  # the right half mirrors the left one
    weights = a**2 + b**2 * special.expit(slope * (left_x - f))
    np.testing.assert_allclose(pmf, weights / weights.sum(), rtol=1e-12, atol=0.0)
    inner = np.abs(x) <= 2.0
    z = 9 * (a**2 + b**2) + 12 * a**2  # 9 inner points, 12 outer points
    np.testing.assert_allclose(pmf[inner], (a**2 + b**2) / z, rtol=1e-12)
    np.testing.assert_allclose(pmf[~inner], a**2 / z, rtol=1e-12)


@pytest.mark.parametrize(
    ("distribution", "rtol"),
    [
        (noise.truncated_gaussian(sigma=3.0, bound=10.0, step=0.5), 1e-9),
        (noise.truncated_laplace(scale=2.0, bound=10.0, step=0.5), 1e-9),
        (noise.uniform(bound=3.0, step=0.5), 1e-9),
        (noise.staircase(sensitivity=1.0, epsilon=0.3, bound=5.0, step=0.05), 1e-8),
    ],
    ids=["gaussian", "laplace", "uniform", "staircase"],
)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_from_pmf_round_trips(distribution, rtol, as_tensor):
    target = distribution.pmf
    source = torch.tensor(target) if as_tensor else target
    model = LogIncrementModel.from_pmf(source)
    assert model.half_size == target.size // 2
    pmf = model().detach().numpy()
    np.testing.assert_allclose(pmf, target, rtol=rtol, atol=0.0)
    _assert_valid_pmf(model(), model.half_size)


def test_gaussian_round_trip_has_expected_size():
    p = noise.truncated_gaussian(sigma=3.0, bound=10.0, step=0.5).pmf
    assert p.size == 41
    assert LogIncrementModel.from_pmf(p).theta.shape == (20,)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: SigmoidStackModel(0, 1.0, sigmoids=3), "half_size.*0"),
        (lambda: SigmoidStackModel(2.0, 1.0, sigmoids=3), "half_size.*2.0"),
        (lambda: SigmoidStackModel(4, -1.0, sigmoids=3), "bound.*-1.0"),
        (lambda: SigmoidStackModel(4, math.inf, sigmoids=3), "bound.*inf"),
        (lambda: SigmoidStackModel(4, math.nan, sigmoids=3), "bound.*nan"),
        (lambda: SigmoidStackModel(4, 1.0, sigmoids=0), "sigmoids.*0"),
        (lambda: SigmoidStackModel(4, 1.0, sigmoids=2.5), "sigmoids.*2.5"),
        (lambda: SigmoidStackModel(4, 1.0, sigmoids=3, slope=0.0), "slope.*0.0"),
        (lambda: SigmoidStackModel(4, 1.0, sigmoids=3, slope=math.inf), "slope.*inf"),
        (lambda: SigmoidStackModel(4, 1.0, generator=3), "generator.*int"),
        (lambda: LogIncrementModel(-1), "half_size.*-1"),
        (lambda: LogIncrementModel(3, init_increments=[1.0, -1.0, 1.0]), "init_increments.*-1"),
        (lambda: LogIncrementModel(3, init_increments=[1.0, 1.0]), "init_increments.*shape"),
        (lambda: LogIncrementModel(3, init_increments=math.nan), "init_increments.*nan"),
        (lambda: build_model("nope", 4, 1.0, seed=0), "name.*'sigmoid'.*'increments'.*'nope'"),
        (lambda: build_model("sigmoid", 0, 1.0, seed=0), "half_size.*0"),
        (lambda: build_model("increments", 4, 0.0, seed=0), "bound.*0.0"),
        (lambda: build_model("sigmoid", 4, 1.0, seed=0, sigmoids=-2), "sigmoids.*-2"),
        (lambda: build_model("sigmoid", 4, 1.0, seed=-1), "seed.*-1"),
        (lambda: build_model("increments", 4, 1.0, seed=1.5), "seed.*1.5"),
    ],
)
def test_bad_model_arguments(make, match):
    with pytest.raises(InvalidInputError, match=match):
        make()


@pytest.mark.parametrize(
    ("pmf", "match"),
    [
        ([0.25, 0.25, 0.25, 0.25], "pmf.*odd.*4"),
        ([1.0], "pmf.*odd.*1"),
        ([0.2, 0.5, 0.3], "pmf.*symmetric.*index 0"),
        ([0.2, 0.1, 0.4, 0.1, 0.2], r"pmf.*non-decreasing.*pmf\[1\]"),
        ([0.0, 1.0, 0.0], "pmf.*positive.*0.0.*index 0"),
        ([0.2, 0.3, 0.2], "pmf.*sum"),
        ([[0.5, 0.5]], "pmf.*one-dimensional"),
    ],
)
def test_from_pmf_rejects_bad_pmfs(pmf, match):
    with pytest.raises(InvalidInputError, match=match):
        LogIncrementModel.from_pmf(np.array(pmf))
