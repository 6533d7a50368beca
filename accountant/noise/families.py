"""Noise families on a symmetric grid ``-bound, ..., bound``: a density evaluated at the
grid points and normalised in log space (paper, Section "Sensitivity and Additive Noise":
"the integral is replaced with a sum"). A new grid family is one function here that
builds its log density and calls :func:`from_log_density`; export it in
:mod:`accountant.noise`.

A grid is sized before it is built: ``2 bound / step + 1`` points of
:data:`BYTES_PER_GRID_POINT` bytes each must fit into :func:`memory_limit`, else the
family is refused naming ``step``, ``bound`` and the memory (:func:`check_grid_size`),
instead of failing inside numpy after part of the work.
"""

from __future__ import annotations

import contextlib
import math
import os

import numpy as np

from accountant.errors import InvalidInputError
from accountant.noise.distribution import GRID_TOLERANCE, NoiseDistribution
from accountant.numerics.lazy import special
from accountant.validation import check_finite_real, check_positive_real

__all__ = [
    "BYTES_PER_GRID_POINT",
    "check_grid_size",
    "from_log_density",
    "grid_memory",
    "memory_limit",
    "normalised_from_log_density",
    "staircase",
    "symmetric_grid",
    "truncated_gaussian",
    "truncated_laplace",
    "uniform",
]

#: Bytes a family takes per grid point while it is built: the grid, its log density, the
#: pmf and their temporaries (float64), and the Python floats of the exact sum in
#: :func:`normalised_from_log_density` (measured: about 80 for a 10^7-point Gaussian).
BYTES_PER_GRID_POINT = 80


def memory_limit() -> int | None:
    """Bytes a process may use here, as far as the operating system says: the physical
    memory, lowered by an address-space limit (``ulimit -v``) if one is set; ``None``
    when neither can be read."""
    limits = []
    # no sysconf (Windows) or no such name; no resource module (Windows)
    with contextlib.suppress(AttributeError, ValueError, OSError):
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    with contextlib.suppress(ImportError, AttributeError, ValueError, OSError):
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    positive = [limit for limit in limits if limit > 0]
    return min(positive) if positive else None


def _gib(size: float) -> str:
    return f"{size / 2**30:.3g} GiB"


def _grid_half(bound: float, step: float, bound_name: str, step_name: str) -> tuple[int, float]:
    """``(half, ratio)``: the grid's points on each side of 0, and ``bound / step``."""
    bound = check_positive_real(bound_name, bound)
    step = check_positive_real(step_name, step)
    ratio = bound / step
    if not math.isfinite(ratio):  # a subnormal step
        raise InvalidInputError(
            f"{step_name}={step!r} with {bound_name}={bound!r} makes a grid of more than "
            "10^308 points; use a larger step or a smaller bound"
        )
    return round(ratio), ratio


def grid_memory(bound: float, step: float) -> int:
    """Bytes a family needs to build the grid ``-bound..bound`` of spacing ``step``:
    ``(2 round(bound / step) + 1) * BYTES_PER_GRID_POINT``."""
    half, _ = _grid_half(bound, step, "bound", "step")
    return (2 * half + 1) * BYTES_PER_GRID_POINT


def check_grid_size(
    bound: float, step: float, *, bound_name: str = "bound", step_name: str = "step"
) -> int:
    """The number of points of the grid ``-bound..bound`` of spacing ``step``, checked
    before anything is allocated: ``bound`` a whole number of steps, and the memory the
    family needs (:func:`grid_memory`) within :func:`memory_limit`. Refusals name the
    arguments as ``bound_name`` and ``step_name`` (the command line passes its options)."""
    half, ratio = _grid_half(bound, step, bound_name, step_name)
    if half < 1 or abs(ratio - half) > GRID_TOLERANCE * max(1.0, ratio):
        raise InvalidInputError(
            f"{bound_name}={float(bound)!r} must be a positive whole number of grid steps "
            f"({step_name}={float(step)!r})"
        )
    points = 2 * half + 1
    needed, limit = points * BYTES_PER_GRID_POINT, memory_limit()
    if limit is not None and needed > limit:
        raise InvalidInputError(
            f"{step_name}={float(step)!r} with {bound_name}={float(bound)!r} makes a grid of "
            f"{points:,} points, which needs about {_gib(needed)} of memory to build, more "
            f"than the {_gib(limit)} available; use a larger {step_name} or a smaller "
            f"{bound_name}"
        )
    return points


def symmetric_grid(bound: float, step: float) -> np.ndarray:
    """Grid ``-bound, -bound + step, ..., bound``; ``bound`` must be a multiple of ``step``,
    and the grid must fit into memory (:func:`check_grid_size`)."""
    half = check_grid_size(bound, step) // 2
    return float(step) * np.arange(-half, half + 1, dtype=np.float64)


def normalised_from_log_density(log_density: np.ndarray) -> np.ndarray:
    """``p_i = exp(l_i - logsumexp(l))``, scaled by ``1 - 2^-50`` (repeatedly, rarely more
    than once) while the exact sum of the floats exceeds 1: afterwards it is at most 1 and
    within a few ulps of it. Masses are accounted exactly as given (``docs/theory/pld.md``),
    so a family whose floats summed to ``1 + 4e-16`` would carry that excess,
    ``(1 + 4e-16)^n``, into every composed bound. A common factor keeps every ratio
    ``p_i / p_j`` to within an ulp, so the losses of a shifted family stay on their lattice
    (adjusting one entry instead moves its losses by ``residual / p_i``, 7e-12 for
    60,001 points, and breaks the lattice)."""
    pmf = np.exp(log_density - special.logsumexp(log_density))
    for _ in range(64):
        if math.fsum([1.0, *(-pmf).tolist()]) >= 0.0:  # exact 1 - sum, correctly rounded
            break
        pmf *= 1.0 - 2.0**-50
    return pmf


def from_log_density(
    grid: np.ndarray, log_density: np.ndarray, description: str
) -> NoiseDistribution:
    # The step as given: grids come from symmetric_grid, whose point after 0 is exactly
    # 1 * step (``grid[1] - grid[0]`` would carry a rounding, e.g. 0.09999999999999964).
    step = float(grid[grid.size // 2 + 1])
    bound = float(grid[-1])
    return NoiseDistribution(
        pmf=normalised_from_log_density(log_density),
        step=step,
        start=float(grid[0]),
        description=f"{description}bound={bound:g}, step={step:g})",
    )


def truncated_gaussian(sigma: float, bound: float, step: float) -> NoiseDistribution:
    """Truncated Gaussian: ``p_i ∝ exp(-x_i^2 / (2 sigma^2))`` for ``|x_i| <= bound``
    (paper, Example "Truncated Gaussian Noise"), grid ``-bound..bound`` with spacing ``step``."""
    sigma = check_positive_real("sigma", sigma)
    grid = symmetric_grid(bound, step)
    with np.errstate(over="ignore"):  # a tiny sigma overflows to -inf
        log_density = -0.5 * (grid / sigma) ** 2  # log density: mass exactly 0, no warning
    return from_log_density(grid, log_density, f"truncated Gaussian(sigma={sigma:g}, ")


def truncated_laplace(scale: float, bound: float, step: float) -> NoiseDistribution:
    """Truncated Laplace: ``p_i ∝ exp(-|x_i| / scale)`` for ``|x_i| <= bound``."""
    scale = check_positive_real("scale", scale)
    grid = symmetric_grid(bound, step)
    return from_log_density(grid, -np.abs(grid) / scale, f"truncated Laplace(scale={scale:g}, ")


def staircase(
    sensitivity: float,
    epsilon: float,
    bound: float,
    step: float,
    gamma: float | None = None,
) -> NoiseDistribution:
    """Truncated staircase noise (Geng & Viswanath; SPEC section 4).

    Density ``a e^{-k eps}`` on ``|x| in [k D, (k + gamma) D)`` and
    ``a e^{-(k+1) eps}`` on ``|x| in [(k + gamma) D, (k + 1) D)``, with ``D`` the
    sensitivity and ``gamma`` defaulting to ``gamma* = 1 / (1 + e^{eps/2})``;
    evaluated at the grid points of ``[-bound, bound]`` and normalised (the constant
    ``a`` cancels).
    """
    sensitivity = check_positive_real("sensitivity", sensitivity)
    epsilon = check_positive_real("epsilon", epsilon)
    if gamma is None:
        # math.exp overflows for eps > ~1420; 1 / (1 + e^h) = e^-h there to within 1e-300
        # relative.
        half = epsilon / 2.0
        gamma = 1.0 / (1.0 + math.exp(half)) if half < 700.0 else math.exp(-half)
    gamma = check_finite_real("gamma", gamma)
    if not 0.0 <= gamma <= 1.0:
        raise InvalidInputError(f"gamma must lie in [0, 1], got {gamma!r}")
    grid = symmetric_grid(bound, step)
    scaled = np.abs(grid) / sensitivity
    # Guard against x = k D landing a hair below k D through rounding.
    k = np.floor(scaled + 1e-12)
    in_upper_part = (scaled - k) >= gamma - 1e-12
    log_density = -epsilon * (k + in_upper_part)
    name = f"staircase(sensitivity={sensitivity:g}, eps={epsilon:g}, gamma={gamma:.4g}, "
    return from_log_density(grid, log_density, name)


def uniform(bound: float, step: float) -> NoiseDistribution:
    """Uniform noise on the grid ``-bound..bound``."""
    grid = symmetric_grid(bound, step)
    return from_log_density(grid, np.zeros_like(grid), "uniform(")
