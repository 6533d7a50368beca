"""Worst-case pairs ``(A, B)``: two pmfs on one common outcome index set (SPEC section 1).

``A`` is the output distribution of the mechanism on one input, ``B`` on its
neighbour. Everything downstream (privacy-loss distributions, the Extended
Moments Accountant, PrivacyBuckets) reads only these two arrays.
"""

from __future__ import annotations

import math
import warnings

import attrs
import numpy as np

from accountant.errors import InvalidInputError, ShiftInvarianceWarning
from accountant.noise import NoiseDistribution
from accountant.noise.distribution import check_noise
from accountant.validation import (
    MASS_TOLERANCE,
    check_mass_tolerance,
    check_pmf,
    check_probability,
    mass_tolerance_for,
)

__all__ = ["WorstCasePair", "additive_shift_pairs"]


def _pmf_a(value: np.ndarray) -> np.ndarray:
    return check_pmf("a", value, tolerance=math.inf)  # the sum is checked after init


def _pmf_b(value: np.ndarray) -> np.ndarray:
    return check_pmf("b", value, tolerance=math.inf)  # the sum is checked after init


def _same_length(instance: WorstCasePair, attribute: attrs.Attribute, value: np.ndarray):
    if value.shape != instance.a.shape:
        raise InvalidInputError(
            f"a and b must have the same length, got len(a)={instance.a.size} "
            f"and len(b)={value.size}"
        )


def _shifted(pmf: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``(p padded by steps zeros on the right, p shifted right by steps)``."""
    unshifted = np.concatenate([pmf, np.zeros(steps)])
    shifted = np.concatenate([np.zeros(steps), pmf])
    return unshifted, shifted


@attrs.frozen(eq=False)
class WorstCasePair:
    """Two pmfs ``a`` (under input ``D0``) and ``b`` (under ``D1``) on common outcomes.

    Both are validated like every pmf (finite, non-negative, summing to 1 within
    ``mass_tolerance``, never renormalised) and stored read-only.
    """

    a: np.ndarray = attrs.field(converter=_pmf_a)
    b: np.ndarray = attrs.field(converter=_pmf_b, validator=_same_length)
    description: str = attrs.field(default="pair", kw_only=True)
    mass_tolerance: float = attrs.field(
        default=MASS_TOLERANCE,
        kw_only=True,
        converter=lambda v: check_mass_tolerance("mass_tolerance", v),
    )

    def __attrs_post_init__(self) -> None:
        check_pmf("a", self.a, tolerance=self.mass_tolerance)
        check_pmf("b", self.b, tolerance=self.mass_tolerance)

    @property
    def size(self) -> int:
        """Number of outcomes."""
        return int(self.a.size)

    def flipped(self) -> WorstCasePair:
        """The pair with the roles of ``A`` and ``B`` swapped."""
        return WorstCasePair(
            self.b,
            self.a,
            description=f"flipped({self.description})",
            mass_tolerance=self.mass_tolerance,
        )

    @classmethod
    def from_arrays(cls, a: np.ndarray, b: np.ndarray, description: str = "pair") -> WorstCasePair:
        """A pair from two raw pmf arrays of equal length (float32 arrays are checked with
        a tolerance that fits their precision, as in :func:`accountant.noise.from_array`)."""
        tolerance = max(mass_tolerance_for(a), mass_tolerance_for(b))
        return cls(a, b, description=description, mass_tolerance=tolerance)

    @classmethod
    def additive(cls, noise: NoiseDistribution, sensitivity: float) -> WorstCasePair:
        """Additive noise with sensitivity ``s = m * step`` (SPEC section 1):
        ``A = p`` padded by ``m`` zeros on the right, ``B = p`` shifted right by ``m``.

        This single pair bounds every smaller shift only for symmetric noise that
        falls monotonically from 0 (paper, Theorem "Shift Invariance"). For other
        noise a :class:`~accountant.errors.ShiftInvarianceWarning` is issued; use
        :func:`additive_shift_pairs` to audit every shift ``1..m``.
        """
        noise = check_noise("noise", noise)
        steps = noise.shift_steps(sensitivity)
        if not (noise.is_symmetric() and noise.is_monotone()):
            warnings.warn(
                "noise is not symmetric and monotone, so the shift by the full sensitivity "
                "does not bound smaller shifts; use additive_shift_pairs() to cover shifts "
                f"1..{steps}",
                ShiftInvarianceWarning,
                stacklevel=2,
            )
        return cls._additive(noise, steps)

    @classmethod
    def _additive(cls, noise: NoiseDistribution, steps: int) -> WorstCasePair:
        a, b = _shifted(noise.pmf, steps)
        shift = steps * noise.step
        return cls(
            a,
            b,
            description=f"{noise.description}, sensitivity {shift:g} ({steps} grid steps)",
            mass_tolerance=noise.mass_tolerance,
        )

    @classmethod
    def subsampled(cls, noise: NoiseDistribution, q: float, clip: float) -> WorstCasePair:
        """DP-SGD with Poisson sub-sampling rate ``q`` and clipping norm ``clip = m * step``
        (SPEC section 1; paper, eq. "DP-SGD worst-case distributions"):
        ``A = p``, ``B = (1 - q) p + q (p shifted by m)``, both padded to one length."""
        noise = check_noise("noise", noise)
        q = check_probability("q", q)
        steps = noise.shift_steps(clip, name="clip")
        a, shifted = _shifted(noise.pmf, steps)
        b = (1.0 - q) * a + q * shifted
        return cls(
            a,
            b,
            description=f"DP-SGD with {noise.description}, q={q:g}, clip {clip:g} ({steps} steps)",
            mass_tolerance=noise.mass_tolerance,
        )


def additive_shift_pairs(noise: NoiseDistribution, sensitivity: float) -> tuple[WorstCasePair, ...]:
    """The pairs an additive audit must cover for query differences up to ``sensitivity``.

    Symmetric noise falling monotonically from 0 needs only the full shift ``m``
    (paper, Theorem "Shift Invariance"): returns one pair. Any other noise needs
    the worst case over every grid shift ``1..m`` (SPEC section 4): returns ``m``
    pairs. Negative shifts are the flipped pairs, which every bound covers by
    taking both directions.
    """
    noise = check_noise("noise", noise)
    steps = noise.shift_steps(sensitivity)
    if noise.is_symmetric() and noise.is_monotone():
        return (WorstCasePair._additive(noise, steps),)
    return tuple(WorstCasePair._additive(noise, k) for k in range(1, steps + 1))
