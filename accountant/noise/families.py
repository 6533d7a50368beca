"""Noise families on a symmetric grid ``-bound, ..., bound``: a density evaluated at the
grid points and normalised in log space (paper, Section "Sensitivity and Additive Noise":
"the integral is replaced with a sum"). A new grid family is one function here that
builds its log density and calls :func:`from_log_density`; export it in
:mod:`accountant.noise`.
"""

from __future__ import annotations

import math

import numpy as np

from accountant.errors import InvalidInputError
from accountant.noise.distribution import GRID_TOLERANCE, NoiseDistribution
from accountant.numerics.lazy import special
from accountant.validation import check_finite_real, check_positive_real

__all__ = [
    "from_log_density",
    "normalised_from_log_density",
    "staircase",
    "symmetric_grid",
    "truncated_gaussian",
    "truncated_laplace",
    "uniform",
]


def symmetric_grid(bound: float, step: float) -> np.ndarray:
    """Grid ``-bound, -bound + step, ..., bound``; ``bound`` must be a multiple of ``step``."""
    bound = check_positive_real("bound", bound)
    step = check_positive_real("step", step)
    ratio = bound / step
    half = round(ratio)
    if half < 1 or abs(ratio - half) > GRID_TOLERANCE * max(1.0, ratio):
        raise InvalidInputError(
            f"bound={bound!r} must be a positive whole number of grid steps (step={step!r})"
        )
    return step * np.arange(-half, half + 1, dtype=np.float64)


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
