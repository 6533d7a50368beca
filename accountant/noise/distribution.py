"""Noise functions: a probability mass function on an equidistant grid.

A :class:`NoiseDistribution` is the paper's *noise function* (Definition
"Noise Function and Sampling"): point masses ``pmf[i]`` at ``x_i = start + i*step``.
Sampling draws ``x_i`` with probability ``pmf[i]`` and then a uniform point of the
cell ``[x_i - step/2, x_i + step/2)``. The families below evaluate a density at
the grid points and normalise in log space (paper, Section "Sensitivity and
Additive Noise": "the integral is replaced with a sum"). Because of that, the
privacy loss of a Gaussian or Laplace family shifted by a whole number of grid
steps lies on a lattice, which the tests use for exact comparisons.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.validation import (
    MASS_TOLERANCE,
    check_finite_real,
    check_mass_tolerance,
    check_pmf,
    check_positive_int,
    check_positive_real,
    mass_tolerance_for,
)

__all__ = ["GRID_TOLERANCE", "NoiseDistribution", "check_noise", "from_array"]

#: Relative tolerance used to decide whether a length is a whole number of grid steps.
GRID_TOLERANCE = 1e-9


# Converters validate before converting, so strings, bools and objects are refused with
# a message naming the field instead of being coerced by numpy or ``float()``.
def _checked_pmf(value: object) -> np.ndarray:
    return check_pmf("pmf", value, tolerance=math.inf)  # read-only float64; sum checked later


def _checked_step(value: object) -> float:
    return check_positive_real("step", value)


def _checked_start(value: object) -> float:
    return check_finite_real("start", value)


@attrs.frozen(eq=False)
class NoiseDistribution:
    """Point masses ``pmf[i]`` at grid points ``x_i = start + i * step``.

    The pmf must be finite, non-negative and sum to 1 within ``mass_tolerance``
    (default :data:`accountant.validation.MASS_TOLERANCE`, 1e-9; :func:`from_array` widens it
    for float32 input); it is stored as a read-only float64 copy and never renormalised.
    """

    pmf: np.ndarray = attrs.field(converter=_checked_pmf)
    step: float = attrs.field(converter=_checked_step)
    start: float = attrs.field(converter=_checked_start)
    mass_tolerance: float = attrs.field(
        default=MASS_TOLERANCE,
        kw_only=True,
        converter=lambda v: check_mass_tolerance("mass_tolerance", v),
    )
    description: str = attrs.field(default="", kw_only=True, repr=False)
    """What the noise is, for histories and reports (the families name themselves)."""

    def __attrs_post_init__(self) -> None:
        check_pmf("pmf", self.pmf, tolerance=self.mass_tolerance)
        if not isinstance(self.description, str):
            raise InvalidInputError(
                f"description must be a string, got {type(self.description).__name__}"
            )
        if not self.description:
            shown = f"pmf on {self.size} grid points, step {self.step:g}"
            object.__setattr__(self, "description", shown)

    @property
    def size(self) -> int:
        """Number of grid points."""
        return int(self.pmf.size)

    @property
    def grid(self) -> np.ndarray:
        """The grid points ``x_i = start + i * step``."""
        return self.start + self.step * np.arange(self.size, dtype=np.float64)

    @property
    def utility_l1(self) -> float:
        """``U_L1 = sum_i |x_i| p_i`` (paper, Definition "Utility-loss")."""
        return float(np.dot(np.abs(self.grid), self.pmf))

    @property
    def utility_l2(self) -> float:
        """``U_L2 = sqrt(sum_i x_i^2 p_i)`` (SPEC section 4), the root mean square noise."""
        return float(math.sqrt(np.dot(self.grid**2, self.pmf)))

    def utility(self, kind: str = "L1") -> float:
        """Utility loss ``"L1"`` or ``"L2"``."""
        if kind == "L1":
            return self.utility_l1
        if kind == "L2":
            return self.utility_l2
        raise InvalidInputError(f"kind must be 'L1' or 'L2', got {kind!r}")

    def is_symmetric(self, rtol: float = 1e-9, atol: float = 1e-15) -> bool:
        """Whether ``p(x) = p(-x)`` on the grid (the grid itself must be symmetric about 0)."""
        grid = self.grid
        if not math.isclose(grid[0], -grid[-1], rel_tol=GRID_TOLERANCE, abs_tol=1e-12 * self.step):
            return False
        return bool(np.allclose(self.pmf, self.pmf[::-1], rtol=rtol, atol=atol))

    def is_monotone(self, rtol: float = 1e-12) -> bool:
        """Whether the pmf never rises when moving away from 0 (non-decreasing on
        ``x <= 0`` and non-increasing on ``x >= 0``), within a relative tolerance."""
        grid = self.grid
        left = self.pmf[grid <= 0.0]
        right = self.pmf[grid >= 0.0]
        rises_left = np.diff(left) < -rtol * left[1:] if left.size > 1 else np.zeros(0, bool)
        rises_right = np.diff(right) > rtol * right[:-1] if right.size > 1 else np.zeros(0, bool)
        return not (rises_left.any() or rises_right.any())

    def shift_steps(self, length: float, *, name: str = "sensitivity") -> int:
        """``length / step`` as a positive whole number, or a clear error listing valid lengths."""
        length = check_positive_real(name, length)
        ratio = length / self.step
        steps = round(ratio)
        if steps < 1 or abs(ratio - steps) > GRID_TOLERANCE * max(1.0, ratio):
            examples = ", ".join(f"{k * self.step:g}" for k in range(1, 4))
            raise InvalidInputError(
                f"{name}={length!r} is not a whole number of grid steps (step={self.step!r}); "
                f"possible values are multiples of the step: {examples}, ..."
            )
        return int(steps)

    def sample(
        self, size: int, rng: np.random.Generator | None = None, *, dimension: int = 1
    ) -> np.ndarray:
        """Draw noise as in SPEC section 1, for simulations: pick ``x_i`` with probability
        ``p_i``, then a uniform point of ``[x_i - step/2, x_i + step/2)``; shape ``(size,)``.

        Not for releasing noise: the draw uses floats and a seeded (or numpy's default)
        generator. Use :func:`accountant.release.release`, which draws exactly the
        audited law on the grid from a cryptographic source.

        ``dimension`` must be 1. Rotation-symmetric ``d``-dimensional noise (radius from
        this pmf, direction uniform) is withdrawn: its privacy is not that of the
        one-dimensional pair (for ``d = 2`` delta grows about 30-fold, see
        ``docs/guide/releasing.md``). Draw ``d`` independent coordinates instead
        (``sample(size * d).reshape(size, d)``) and compose ``d`` releases.
        """
        size = check_positive_int("size", size)
        dimension = check_positive_int("dimension", dimension)
        if dimension != 1:
            raise InvalidInputError(
                f"dimension={dimension}: rotation-symmetric noise is withdrawn, its privacy "
                "is not that of the one-dimensional pair; draw independent coordinates, "
                "sample(size * d).reshape(size, d), and compose d releases"
            )
        if rng is None:
            rng = np.random.default_rng()
        elif not isinstance(rng, np.random.Generator):
            raise InvalidInputError(f"rng must be a numpy.random.Generator, got {rng!r}")
        cumulative = np.cumsum(self.pmf)
        index = np.searchsorted(cumulative, rng.random(size) * cumulative[-1], side="right")
        index = np.minimum(index, self.size - 1)
        return self.grid[index] + self.step * (rng.random(size) - 0.5)


def check_noise(name: str, value: object) -> NoiseDistribution:
    """``value`` if it is a :class:`NoiseDistribution`, else
    :class:`~accountant.errors.InvalidInputError` naming ``name`` and the type given.

    Here, beside the class, rather than in :mod:`accountant.validation`, which lies below
    ``noise`` (issue 28: no import runs up the layers, not even inside a function).
    """
    if not isinstance(value, NoiseDistribution):
        raise InvalidInputError(f"{name} must be a NoiseDistribution, got {type(value).__name__}")
    return value


def from_array(pmf: np.ndarray, step: float, start: float | None = None) -> NoiseDistribution:
    """Noise from a user's pmf array (validated, never renormalised). A float32 (or
    float16) array is widened to float64 exactly and its sum checked with a tolerance that
    fits its precision (:func:`accountant.validation.mass_tolerance_for`).

    ``start`` is the position of ``pmf[0]``; by default the grid is centred on 0,
    which requires an odd length.
    """
    tolerance = mass_tolerance_for(pmf)
    values = check_pmf("pmf", pmf, tolerance=tolerance)
    step = check_positive_real("step", step)
    if start is None:
        if values.size % 2 == 0:
            raise InvalidInputError(
                f"pmf has even length {values.size}, so it cannot be centred on 0; pass start="
            )
        start = -step * (values.size // 2)
    start = check_finite_real("start", start)
    return NoiseDistribution(pmf=values, step=step, start=start, mass_tolerance=tolerance)
