"""How a worst-case pair is built from a noise pmf, and the chain rule back to the noise.

Both constructions of SPEC section 1 are linear in the noise pmf ``p`` (length ``N``),
so the gradient of any bound with respect to ``p`` is the transpose of that linear map
applied to the gradients with respect to the pair's masses ``A`` and ``B``:

* additive shift by ``m`` grid steps: ``A = (p, 0_m)``, ``B = (0_m, p)``, so
  ``d/dp_i = d/dA_i + d/dB_{i+m}``;
* DP-SGD mixture (paper, eq. "DP-SGD worst-case distributions"):
  ``A = (p, 0_m)``, ``B = (1 - q) A + q (0_m, p)``, so
  ``d/dp_i = d/dA_i + (1 - q) d/dB_i + q d/dB_{i+m}``.

A learner holds one of these maps and asks it for the pair of the current noise and
for the noise gradient of a bound; it never builds pairs itself.

:class:`AllShiftsPairMap` stands for every additive shift ``1..m`` at once (SPEC section 4:
noise that is not symmetric and monotone must be audited over every grid shift a query of
sensitivity ``m * step`` can make); it hands out one :class:`AdditivePairMap` per shift,
and the bounds built on it (:func:`~accountant.learning.training_losses.noise_bound`,
:func:`~accountant.learning.certification.certify`) take the worst case.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.noise import GRID_TOLERANCE, NoiseDistribution
from accountant.noise.distribution import check_noise
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import (
    check_positive_int,
    check_positive_real,
    check_probability,
    shown,
)

__all__ = ["AdditivePairMap", "AllShiftsPairMap", "SubsampledPairMap", "pair_map"]


def _check_gradient(name: str, gradient: np.ndarray, size: int, steps: int) -> np.ndarray:
    # Non-numeric input, NaN (it would become a NaN noise gradient) and arrays no longer
    # than the shift (an empty gradient) are refused naming the argument. Infinite
    # entries stay allowed: they are an honest overflow of a huge derivative.
    try:
        values = np.asarray(gradient, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        text = shown(gradient)
        raise InvalidInputError(f"{name} must be an array of numbers, got {text}") from exc
    if values.shape != (size,):
        raise InvalidInputError(
            f"{name} must have shape ({size},) (noise size + shift), got {values.shape}"
        )
    if size <= steps:
        raise InvalidInputError(
            f"{name} must be longer than the shift of {steps} steps (noise size + shift), "
            f"got length {size}"
        )
    if np.isnan(values).any():
        index = int(np.flatnonzero(np.isnan(values))[0])
        raise InvalidInputError(f"{name} must not contain NaN, got nan at index {index}")
    return values


def check_flag(name: str, value: object) -> bool:
    """``True`` or ``False`` (numpy bools too), never read as truthiness."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {shown(value)}")
    return bool(value)


def _optional_step(value: object) -> float | None:
    return None if value is None else check_positive_real("step", value)


def _check_grid(
    mapping: AdditivePairMap | SubsampledPairMap | AllShiftsPairMap, noise: object
) -> NoiseDistribution:
    """The noise, if its grid step is the one the map was built for (a map built with
    :func:`pair_map` counts its shift in steps of that grid: on another grid the same
    ``steps`` would be another sensitivity, and the audit would silently be of it)."""
    noise = check_noise("noise", noise)
    if mapping.step is not None and not math.isclose(
        noise.step, mapping.step, rel_tol=GRID_TOLERANCE
    ):
        length = mapping.steps * mapping.step
        raise InvalidInputError(
            f"noise has grid step {noise.step!r}, but the pair map was built for step "
            f"{mapping.step!r} (a shift of {mapping.steps} steps = {length:g}); on this grid "
            f"that shift would be {mapping.steps * noise.step:g}. Build the map with "
            f"pair_map(step={noise.step!r}, ...)"
        )
    return noise


@attrs.frozen
class AdditivePairMap:
    """Additive noise shifted by ``steps`` grid steps (sensitivity ``steps * step``).

    ``step``: the grid spacing the map was built for (by :func:`pair_map`); noise on any
    other grid is refused. ``None`` (the default when built directly) accepts any grid
    and shifts it by ``steps`` of its own spacing.
    """

    steps: int = attrs.field(converter=lambda v: check_positive_int("steps", v))
    step: float | None = attrs.field(default=None, kw_only=True, converter=_optional_step)

    def pair(self, noise: NoiseDistribution) -> WorstCasePair:
        """``A = (p, 0_m)``, ``B = (0_m, p)``."""
        return WorstCasePair._additive(_check_grid(self, noise), self.steps)

    def noise_gradient(self, grad_a: np.ndarray, grad_b: np.ndarray) -> np.ndarray:
        """``d/dp_i = d/dA_i + d/dB_{i+m}`` for gradients over the pair's outcomes."""
        size = np.asarray(grad_a).size
        grad_a = _check_gradient("grad_a", grad_a, size, self.steps)
        grad_b = _check_gradient("grad_b", grad_b, size, self.steps)
        return grad_a[: size - self.steps] + grad_b[self.steps :]


@attrs.frozen
class SubsampledPairMap:
    """DP-SGD: Poisson sub-sampling with rate ``q``, clipping norm ``steps * step``
    (``step`` as for :class:`AdditivePairMap`)."""

    steps: int = attrs.field(converter=lambda v: check_positive_int("steps", v))
    q: float = attrs.field(converter=lambda v: check_probability("q", v))
    step: float | None = attrs.field(default=None, kw_only=True, converter=_optional_step)

    def pair(self, noise: NoiseDistribution) -> WorstCasePair:
        """``A = (p, 0_m)``, ``B = (1 - q) A + q (0_m, p)``."""
        noise = _check_grid(self, noise)
        return WorstCasePair.subsampled(noise, self.q, self.steps * noise.step)

    def noise_gradient(self, grad_a: np.ndarray, grad_b: np.ndarray) -> np.ndarray:
        """``d/dp_i = d/dA_i + (1 - q) d/dB_i + q d/dB_{i+m}``."""
        size = np.asarray(grad_a).size
        grad_a = _check_gradient("grad_a", grad_a, size, self.steps)
        grad_b = _check_gradient("grad_b", grad_b, size, self.steps)
        head = size - self.steps
        return grad_a[:head] + (1.0 - self.q) * grad_b[:head] + self.q * grad_b[self.steps :]


@attrs.frozen
class AllShiftsPairMap:
    """Additive noise under every query difference of ``1..steps`` grid steps (a query of
    sensitivity ``steps * step`` moves by any of them; ``step`` as for
    :class:`AdditivePairMap`).

    The pair of shift ``s`` is ``A = (p, 0_s)``, ``B = (0_s, p)``; the negative shift
    ``-s`` gives the flipped pair ``(B, A)`` up to relabelling outcomes, and for symmetric
    noise the same pair as ``+s``. Symmetric noise falling monotonically from 0 needs only
    the full shift (paper, Theorem "Shift Invariance"): :meth:`shifts` then returns
    ``(steps,)``. That shortcut is taken only for exact symmetry and monotonicity
    (no tolerance), so every other noise is audited over all ``steps`` shifts.
    """

    steps: int = attrs.field(converter=lambda v: check_positive_int("steps", v))
    step: float | None = attrs.field(default=None, kw_only=True, converter=_optional_step)

    @property
    def full_shift(self) -> AdditivePairMap:
        """The map of the shift by the whole sensitivity (``steps`` grid steps)."""
        return AdditivePairMap(self.steps, step=self.step)

    def shift_map(self, shift: int) -> AdditivePairMap:
        """The map of the shift by ``shift`` grid steps, ``1 <= shift <= steps``."""
        shift = check_positive_int("shift", shift)
        if shift > self.steps:
            raise InvalidInputError(
                f"shift must be at most the sensitivity's {self.steps} grid steps, got {shift}"
            )
        return AdditivePairMap(shift, step=self.step)

    def shifts(self, noise: NoiseDistribution) -> tuple[int, ...]:
        """The shifts (in grid steps) an audit of ``noise`` must cover: ``(steps,)`` for
        exactly symmetric noise that never rises away from 0, else ``1..steps``."""
        noise = _check_grid(self, noise)
        if noise.is_symmetric(rtol=0.0, atol=0.0) and noise.is_monotone(rtol=0.0):
            return (self.steps,)
        return tuple(range(1, self.steps + 1))

    def pairs(self, noise: NoiseDistribution) -> tuple[WorstCasePair, ...]:
        """The pair of every shift of :meth:`shifts`, in that order."""
        noise = _check_grid(self, noise)
        return tuple(WorstCasePair._additive(noise, s) for s in self.shifts(noise))


def pair_map(
    step: float, sensitivity: float, q: float | None = None, *, all_shifts: bool = False
) -> AdditivePairMap | SubsampledPairMap | AllShiftsPairMap:
    """The pair map for noise on a grid with spacing ``step``: additive with
    ``sensitivity`` (a whole number of steps), or the DP-SGD mixture with sampling rate
    ``q`` and clipping norm ``sensitivity`` when ``q`` is given. With ``all_shifts``
    (additive only): every shift ``1..sensitivity / step`` grid steps
    (:class:`AllShiftsPairMap`). The map remembers ``step`` and refuses noise on another
    grid."""
    all_shifts = check_flag("all_shifts", all_shifts)
    probe = NoiseDistribution(pmf=np.ones(1), step=step, start=0.0)
    if q is None:
        steps = probe.shift_steps(sensitivity)
        if all_shifts:
            return AllShiftsPairMap(steps, step=probe.step)
        return AdditivePairMap(steps, step=probe.step)
    if all_shifts:
        raise InvalidInputError(
            f"all_shifts=True is for additive noise only, got q={shown(q)} (DP-SGD)"
        )
    return SubsampledPairMap(probe.shift_steps(sensitivity, name="clip"), q, step=probe.step)
