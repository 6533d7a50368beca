"""Trainable symmetric noise models (torch modules with float64 parameters): monotone
ones, and one that need not be monotone (:class:`SymmetricWeightModel`, last section).

Every model describes a noise pmf on the centred grid of ``2H + 1`` points
``x_i = (i - H) * step``, ``i = 0..2H``, where ``H = half_size`` is the number of
points strictly left of 0. A model computes left-half log-weights
``r_0 <= r_1 <= ... <= r_H`` (``r_H`` belongs to the centre ``x = 0``) and returns

    ``pmf = softmax(r_0, ..., r_{H-1}, r_H, r_{H-1}, ..., r_0)``.

So for *any* parameter values the pmf is strictly positive, sums to 1, is exactly
symmetric (``pmf[i] == pmf[2H - i]``: both halves are the same tensor) and is
non-decreasing from the left edge to the centre (``r`` is non-decreasing by
construction and softmax preserves the order). To keep ``pmf > 0`` in float64 the
log-weights are floored at ``r_H - 690`` (no underflow of ``exp``); this only matters
for centre-to-edge ratios beyond ``e^690``. These are the properties under which
the full-sensitivity shift bounds every smaller shift (paper, Theorem "Shift
Invariance"), so training never has to enforce them.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch

from accountant.errors import InvalidInputError
from accountant.validation import check_pmf, check_positive_int, check_positive_real

__all__ = ["LogIncrementModel", "SigmoidStackModel", "SymmetricWeightModel", "build_model"]

#: Floor on ``|A|`` and ``|B_j|`` before taking logs, so that ``log 0`` never appears.
_MAGNITUDE_FLOOR = 1e-300
#: Floor on log-increments in :meth:`LogIncrementModel.from_pmf` (``softplus^-1(0) = -inf``).
_INCREMENT_FLOOR = 1e-12
#: Relative tolerance of the monotonicity check of :meth:`LogIncrementModel.from_pmf`.
_MONOTONE_RTOL = 1e-12
#: Relative tolerance of the symmetry check of :meth:`LogIncrementModel.from_pmf`.
_SYMMETRY_RTOL = 1e-9
#: Log-weights are floored at ``r_H - 690``: ``exp`` then never underflows to 0, so the
#: pmf stays positive (its centre-to-edge ratio is capped at ``e^690``, a no-op in practice).
_LOG_RATIO_FLOOR = 690.0
#: Default total rise ``r_H - r_0`` of the log-weights of :class:`LogIncrementModel`.
_DEFAULT_LOG_RISE = 4.0
#: Standard deviation of the seeded perturbation of :class:`LogIncrementModel`'s ``theta``.
_INIT_NOISE = 0.1

MODEL_NAMES = ("sigmoid", "increments", "symmetric")


def _check_generator(generator: Any) -> torch.Generator | None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise InvalidInputError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    return generator


def _inverse_softplus(y: torch.Tensor) -> torch.Tensor:
    """``softplus^-1(y) = log(e^y - 1) = y + log(-expm1(-y))`` for ``y > 0`` (stable)."""
    return y + torch.log(-torch.expm1(-y))


def _softplus(x: torch.Tensor) -> torch.Tensor:
    """``softplus(x) = log(1 + e^x)`` without torch's ``threshold`` cut-off (exact for all x)."""
    return torch.logaddexp(x, torch.zeros_like(x))


class _SymmetricLogWeightModel(torch.nn.Module):
    """Base class: mirrors left-half log-weights ``r_0..r_H`` into a symmetric pmf."""

    half_size: int

    def half_log_weights(self) -> torch.Tensor:
        """Non-decreasing log-weights ``r_0..r_H`` (length ``H + 1``; ``r_H`` is the centre)."""
        raise NotImplementedError

    def full_log_weights(self) -> torch.Tensor:
        """``(r'_0, ..., r'_H, r'_{H-1}, ..., r'_0)`` with ``r'_i = max(r_i, r_H - 690)``.

        The floor keeps ``r'`` non-decreasing and every ``exp(r'_i - logsumexp)`` > 0.
        """
        r = self.half_log_weights()
        r = torch.maximum(r, r[-1] - _LOG_RATIO_FLOOR)
        return torch.cat([r, torch.flip(r[:-1], dims=(0,))])

    def log_pmf(self) -> torch.Tensor:
        """``log pmf_i = w_i - logsumexp(w)`` with ``w`` the full log-weights."""
        return torch.log_softmax(self.full_log_weights(), dim=0)

    def forward(self) -> torch.Tensor:
        """``pmf = softmax(w)``: positive, symmetric, monotone towards 0, length ``2H + 1``."""
        return torch.softmax(self.full_log_weights(), dim=0)


class SigmoidStackModel(_SymmetricLogWeightModel):
    """The paper's noise model (section "noise model"): a stack of ``K`` steep sigmoids.

    On the left-half points ``x_i = (i - H) * bound / H`` (``i = 0..H``, so ``x_0 = -bound``,
    ``x_H = 0``) the log-weights are

        ``r_i = ln[ A^2 + sum_{j=1}^{K} B_j^2 * sigmoid(C * (x_i - F_j)) ]``

    with learned ``A`` (init 10), ``B_j`` (init uniform in ``[0, 1)`` drawn from
    ``generator``) and ``F_j`` (init equidistant in ``[-bound, 0]``) and the fixed
    slope ``C`` (``slope``, in units of ``1 / x``; not a parameter). As ``A^2, B_j^2 >= 0``
    and the sigmoid is increasing, ``r`` is non-decreasing in ``x`` whatever the
    parameters. The sum is evaluated stably in log space as
    ``logsumexp(2 ln|A|, 2 ln|B_j| + logsigmoid(C (x_i - F_j)))`` with ``|A|, |B_j|``
    floored at ``1e-300``, so ``r`` is always finite (never NaN or ``-inf``).

    Difference from the paper: the paper evaluates the density on ``2N`` points with
    no point at 0; here the grid has ``2H + 1`` points including the centre ``x = 0``
    (step ``bound / H``), matching the accountant's symmetric grids.

    Cost per forward pass: ``O(H * K)`` time and memory (an ``(H + 1) x K`` matrix).
    """

    left_grid: torch.Tensor  # a buffer (register_buffer in __init__)

    def __init__(
        self,
        half_size: int,
        bound: float,
        sigmoids: int = 1000,
        slope: float = 500.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.half_size = check_positive_int("half_size", half_size)
        self.bound = check_positive_real("bound", bound)
        self.sigmoids = check_positive_int("sigmoids", sigmoids)
        self.slope = check_positive_real("slope", slope)
        generator = _check_generator(generator)
        self.step = self.bound / self.half_size
        # x_i = (i - H) * step: x_0 = -bound (up to rounding), x_H = 0 exactly.
        left = self.step * torch.arange(-self.half_size, 1, dtype=torch.float64)
        self.register_buffer("left_grid", left)
        k = self.sigmoids
        self.A = torch.nn.Parameter(torch.tensor(10.0, dtype=torch.float64))
        self.B = torch.nn.Parameter(torch.rand(k, dtype=torch.float64, generator=generator))
        self.F = torch.nn.Parameter(torch.linspace(-self.bound, 0.0, k, dtype=torch.float64))

    @property
    def grid(self) -> torch.Tensor:
        """The full grid ``x_i = (i - H) * step``, ``i = 0..2H`` (exactly symmetric)."""
        left = self.left_grid
        return torch.cat([left, -torch.flip(left[:-1], dims=(0,))])

    def half_log_weights(self) -> torch.Tensor:
        """``r_i = logsumexp(2 ln|A|, 2 ln|B_j| + logsigmoid(C (x_i - F_j)))``, ``i = 0..H``."""
        log_a2 = 2.0 * torch.log(self.A.abs().clamp_min(_MAGNITUDE_FLOOR))
        log_b2 = 2.0 * torch.log(self.B.abs().clamp_min(_MAGNITUDE_FLOOR))
        z = self.slope * (self.left_grid[:, None] - self.F[None, :])  # (H + 1, K)
        terms = log_b2[None, :] + torch.nn.functional.logsigmoid(z)
        constant = log_a2.expand(self.half_size + 1, 1)
        return torch.logsumexp(torch.cat([constant, terms], dim=1), dim=1)

    def extra_repr(self) -> str:
        """The model's sizes and constants, shown by ``repr``."""
        return (
            f"half_size={self.half_size}, bound={self.bound}, "
            f"sigmoids={self.sigmoids}, slope={self.slope}"
        )


def _as_increments(half_size: int, value: Any) -> torch.Tensor:
    """``init_increments`` as ``H`` finite values ``>= 0`` (a scalar is broadcast)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().to(torch.float64).numpy()
    if isinstance(value, str | bytes | bool):
        raise InvalidInputError(f"init_increments must be numbers, got {value!r}")
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"init_increments must be numbers, got {value!r}") from exc
    if array.ndim == 0:
        array = np.full(half_size, float(array))
    if array.shape != (half_size,):
        raise InvalidInputError(
            f"init_increments must be a scalar or have shape ({half_size},) (half_size), "
            f"got shape {array.shape}"
        )
    bad = ~np.isfinite(array) | (array < 0.0)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"init_increments must be finite and >= 0, got {float(array[index])!r} at index {index}"
        )
    return torch.tensor(np.maximum(array, _INCREMENT_FLOOR), dtype=torch.float64)


def _symmetric_pmf(pmf: torch.Tensor | np.ndarray) -> np.ndarray:
    """``pmf`` as float64 values: odd length ``2H + 1 >= 3``, positive, summing to 1 and
    symmetric to relative tolerance ``1e-9`` (refused in one line otherwise)."""
    if isinstance(pmf, torch.Tensor):
        pmf = pmf.detach().cpu().to(torch.float64).numpy()
    values = check_pmf("pmf", pmf)
    if values.size % 2 == 0 or values.size < 3:
        raise InvalidInputError(
            f"pmf must have an odd length 2H + 1 >= 3 (a centre point), got length {values.size}"
        )
    if (values <= 0.0).any():
        index = int(np.flatnonzero(values <= 0.0)[0])
        raise InvalidInputError(
            f"pmf must be positive everywhere, got {float(values[index])!r} at index {index}"
        )
    if not np.allclose(values, values[::-1], rtol=_SYMMETRY_RTOL, atol=0.0):
        gap = np.abs(values - values[::-1]) / np.maximum(values, values[::-1])
        index = int(np.argmax(gap))
        raise InvalidInputError(
            f"pmf must be symmetric (rtol {_SYMMETRY_RTOL:g}), got relative difference "
            f"{float(gap[index]):.3g} between index {index} and index {values.size - 1 - index}"
        )
    return values


class LogIncrementModel(_SymmetricLogWeightModel):
    """Fast model with cost linear in the grid: non-negative log-increments.

        ``r_0 = 0``,  ``r_i = sum_{k=1}^{i} softplus(theta_k)``  (``i = 1..H``)

    with ``H`` learned ``theta_k`` (one ``torch.cumsum``, ``O(H)`` time and memory).
    ``softplus >= 0`` makes ``r`` non-decreasing whatever ``theta`` is. The model
    knows no step or bound: it only lives on the index grid ``i = 0..2H``.

    Initialisation: increments ``init_increments`` (a scalar or ``H`` values ``>= 0``,
    floored at ``1e-12``); by default all equal to ``c = 4 / H`` so that ``r`` rises
    gently by 4 from the edge to the centre. ``theta = softplus^-1(increments)``; if a
    ``generator`` is given, ``0.1 * N(0, 1)`` noise drawn from it is added to ``theta``.
    """

    def __init__(
        self,
        half_size: int,
        generator: torch.Generator | None = None,
        init_increments: Any = None,
    ) -> None:
        super().__init__()
        self.half_size = check_positive_int("half_size", half_size)
        generator = _check_generator(generator)
        if init_increments is None:
            init_increments = _DEFAULT_LOG_RISE / self.half_size
        theta = _inverse_softplus(_as_increments(self.half_size, init_increments))
        if generator is not None:
            noise = torch.randn(self.half_size, dtype=torch.float64, generator=generator)
            theta = theta + _INIT_NOISE * noise
        self.theta = torch.nn.Parameter(theta)

    def half_log_weights(self) -> torch.Tensor:
        """``r = (0, cumsum(softplus(theta)))``, length ``H + 1``."""
        increments = _softplus(self.theta)
        return torch.cat([increments.new_zeros(1), torch.cumsum(increments, dim=0)])

    @classmethod
    def from_pmf(cls, pmf: torch.Tensor | np.ndarray) -> LogIncrementModel:
        """Warm start reproducing a symmetric pmf that is monotone towards its centre.

        ``pmf`` has odd length ``2H + 1``, positive entries summing to 1, is symmetric
        (relative tolerance ``1e-9``) and non-decreasing up to the centre (relative
        tolerance ``1e-12``). With ``d_i = ln p_i - ln p_{i-1}`` (``i = 1..H``, left
        half) the model gets ``theta_i = softplus^-1(max(d_i, 1e-12))``, so its
        ``forward()`` returns ``pmf`` to about ``1e-9`` relative (exactly flat parts
        are off by the ``1e-12`` floor per step).
        """
        values = _symmetric_pmf(pmf)
        half = values.size // 2
        left = values[: half + 1]
        falls = np.diff(left) < -_MONOTONE_RTOL * left[1:]
        if falls.any():
            index = int(np.flatnonzero(falls)[0]) + 1
            raise InvalidInputError(
                f"pmf must be non-decreasing towards its centre, got pmf[{index - 1}] = "
                f"{float(left[index - 1])!r} > pmf[{index}] = {float(left[index])!r}"
            )
        increments = np.maximum(np.diff(np.log(left)), 0.0)
        return cls(half, init_increments=increments)


class SymmetricWeightModel(_SymmetricLogWeightModel):
    """Symmetric noise that need not be monotone: free left-half log-weights.

        ``pmf = softmax(w'_0, ..., w'_{H-1}, w'_H, w'_{H-1}, ..., w'_0)``,
        ``w'_i = max(w_i, max_k w_k - 690)``

    with ``H + 1`` learned ``w_i`` (``w_H`` the centre). The pmf is positive, sums to 1 and
    is exactly symmetric for any ``w``, but it may rise away from 0, so the full-sensitivity
    shift no longer bounds the smaller ones: learn it only for problems that train and
    certify over every shift (``LearningProblem(all_shifts=True)``). Cost ``O(H)``.

    Initialisation: ``w_i = -4 (H - i) / H`` (a rise of 4 from the edge to the centre, as
    :class:`LogIncrementModel`), plus ``0.1 * N(0, 1)`` noise drawn from ``generator`` if
    one is given; :meth:`from_pmf` starts from a given symmetric pmf.
    """

    def __init__(self, half_size: int, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.half_size = check_positive_int("half_size", half_size)
        generator = _check_generator(generator)
        rise = torch.arange(self.half_size + 1, dtype=torch.float64) - self.half_size
        weights = _DEFAULT_LOG_RISE * rise / self.half_size
        if generator is not None:
            noise = torch.randn(self.half_size + 1, dtype=torch.float64, generator=generator)
            weights = weights + _INIT_NOISE * noise
        self.weights = torch.nn.Parameter(weights)

    def half_log_weights(self) -> torch.Tensor:
        """The free log-weights ``w_0..w_H`` (length ``H + 1``; not ordered)."""
        return self.weights

    def full_log_weights(self) -> torch.Tensor:
        """``(w'_0, ..., w'_H, w'_{H-1}, ..., w'_0)`` with ``w'_i = max(w_i, max w - 690)``
        (every ``exp(w'_i - logsumexp)`` stays > 0)."""
        w = self.half_log_weights()
        w = torch.maximum(w, w.max().detach() - _LOG_RATIO_FLOOR)
        return torch.cat([w, torch.flip(w[:-1], dims=(0,))])

    def forward(self) -> torch.Tensor:
        """``pmf = softmax(w')``: positive, symmetric, length ``2H + 1``; not necessarily
        monotone towards 0."""
        return torch.softmax(self.full_log_weights(), dim=0)

    @classmethod
    def from_pmf(cls, pmf: torch.Tensor | np.ndarray) -> SymmetricWeightModel:
        """Warm start reproducing a symmetric pmf (odd length ``2H + 1``, positive entries
        summing to 1, symmetric to relative tolerance ``1e-9``; monotone or not):
        ``w_i = ln p_i`` on the left half, so ``forward()`` returns ``pmf`` to rounding
        (its ratios to the largest entry are kept down to ``e^-690``)."""
        values = _symmetric_pmf(pmf)
        half = values.size // 2
        model = cls(half)
        with torch.no_grad():
            model.weights.copy_(torch.tensor(np.log(values[: half + 1]), dtype=torch.float64))
        return model


#: The models a warm start can set to a given pmf (their ``from_pmf``), by name.
WARM_STARTABLE: dict[str, type[LogIncrementModel] | type[SymmetricWeightModel]] = {
    "increments": LogIncrementModel,
    "symmetric": SymmetricWeightModel,
}


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def build_model(
    name: str,
    half_size: int,
    bound: float,
    *,
    seed: int,
    sigmoids: int = 1000,
) -> torch.nn.Module:
    """A noise model by name, initialised reproducibly from ``seed``.

    ``"sigmoid"``: :class:`SigmoidStackModel` with ``sigmoids`` sigmoids on
    ``[-bound, 0]``; ``"increments"``: :class:`LogIncrementModel` and ``"symmetric"``:
    :class:`SymmetricWeightModel` (not monotone) (``bound`` is then only validated: these
    models live on the index grid, step ``bound / half_size``).
    """
    if not isinstance(name, str) or name not in MODEL_NAMES:
        raise InvalidInputError(
            f"name must be one of {', '.join(repr(n) for n in MODEL_NAMES)}, got {name!r}"
        )
    half_size = check_positive_int("half_size", half_size)
    bound = check_positive_real("bound", bound)
    sigmoids = check_positive_int("sigmoids", sigmoids)
    generator = torch.Generator().manual_seed(_check_seed(seed))
    if name == "sigmoid":
        return SigmoidStackModel(half_size, bound, sigmoids=sigmoids, generator=generator)
    if name == "symmetric":
        return SymmetricWeightModel(half_size, generator=generator)
    return LogIncrementModel(half_size, generator=generator)
