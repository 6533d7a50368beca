"""Noise whose probabilities are integers over a power of two: the law a sampler can draw
exactly, and therefore the law that is audited when noise is released.

A float pmf cannot be sampled exactly: an inverse-CDF draw from a float uniform carries
the rounding of the CDF and of the uniform. Quantised to ``bits`` bits, the pmf becomes
integer weights ``w_i`` with ``sum_i w_i = 2^bits``; a uniform integer ``u`` in
``[0, 2^bits)`` (exact from random bytes) and the integer CDF give outcome ``i`` with
probability exactly ``w_i / 2^bits``. For ``bits <= 53`` every ``w_i / 2^bits`` is a
float64 exactly, so :attr:`QuantisedNoise.noise` *is* the sampled law, and auditing it
audits what is released.

How far the audit can move: with ``t = TV(p, w / 2^bits)`` (:attr:`QuantisedNoise.total_variation`),
the worst-case pairs of both noises are ``t`` apart in total variation (a shift, or a
mixture with a shift, moves no mass between outcomes), ``n`` releases at most ``n t``
apart, and ``delta(eps) = sup_S [A(S) - e^eps B(S)]`` moves by at most

    |delta_quantised(eps) - delta_original(eps)| <= n t (1 + e^eps)

(:meth:`QuantisedNoise.delta_shift_bound`). The released mechanism is the quantised one,
so its certified delta is the number to report; the bound says how far it may lie from
the delta of the noise that was designed.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.errors import AccountantError, InvalidInputError
from accountant.noise.bits import DEFAULT_BITS, MAX_BITS, MIN_BITS
from accountant.noise.distribution import NoiseDistribution, check_noise
from accountant.noise.sampling import secure_indices, simulated_indices
from accountant.validation import check_epsilons, check_positive_int

__all__ = ["DEFAULT_BITS", "MAX_BITS", "MIN_BITS", "QuantisedNoise", "quantise"]


def _check_bits(value: object) -> int:
    bits = check_positive_int("bits", value)
    if not MIN_BITS <= bits <= MAX_BITS:
        raise InvalidInputError(f"bits must lie in [{MIN_BITS}, {MAX_BITS}], got {bits!r}")
    return bits


def _floored_weights(pmf: np.ndarray, bits: int) -> np.ndarray:
    """``floor(p_i 2^bits)`` (exact: a power-of-two scaling, then floor), raised to 1 where
    ``0 < p_i < 2^-bits`` so that the support is kept; 0 exactly where ``p_i = 0``. A
    non-decreasing function of ``p_i``: the weights keep the (weak) order of the masses."""
    weights = np.floor(np.ldexp(pmf, bits)).astype(np.int64)
    weights[(pmf > 0.0) & (weights < 1)] = 1
    return weights


def _crowded_message(positive: int, tiny: int, bits: int) -> str:
    """Why ``positive`` masses (``tiny`` of them below ``2^-bits``) cannot each get a
    weight of at least 1 out of ``2^bits``, and what the user can do about it."""
    more = f"use more bits (at most {MAX_BITS}), or " if bits < MAX_BITS else ""
    return (
        f"bits={bits} is too coarse for a pmf with {positive} positive masses: each needs a "
        f"weight of at least 1 out of 2^{bits}; {more}merge or drop masses below "
        f"2^-{bits} = {2.0**-bits:.3g} ({tiny} of them)"
    )


@attrs.frozen
class _Folded:
    """The weights to settle, folded: ``units[j]`` stands for ``count[j]`` points of equal
    weight (a mirrored pair of an exactly symmetric pmf counts 2, any other point 1);
    ``distance[j]`` orders the units from 0 outwards (larger: farther out); ``centre`` is
    the unit of the middle point of a symmetric pmf of odd size (else ``None``); ``peak``
    is the unit a shortfall goes to (:func:`_fold`)."""

    units: np.ndarray
    count: np.ndarray
    distance: np.ndarray
    centre: int | None
    peak: int


def _exactly_symmetric(noise: NoiseDistribution) -> bool:
    """Whether the pmf and the grid are symmetric bit for bit: ``p_i = p_{n-1-i}`` and
    ``x_i = -x_{n-1-i}`` exactly, no tolerance (a pmf symmetric only to within rounding
    is quantised point by point, and may come out asymmetric by a unit)."""
    pmf, grid = np.asarray(noise.pmf), noise.grid
    return bool(np.array_equal(pmf, pmf[::-1]) and np.array_equal(grid, -grid[::-1]))


def _innermost(noise: NoiseDistribution, weights: np.ndarray) -> int:
    """For a monotone pmf, the point whose weight may grow without breaking monotonicity:
    the grid point 0, else the heavier of the two points next to 0 (each is the innermost
    point of its side, so raising it keeps its side rising towards 0)."""
    grid = noise.grid
    left, right = np.flatnonzero(grid <= 0.0), np.flatnonzero(grid >= 0.0)
    candidates = [int(side[-1]) for side in (left,) if side.size]
    candidates += [int(side[0]) for side in (right,) if side.size]
    return max(candidates, key=lambda i: (int(weights[i]), -i))


def _fold(noise: NoiseDistribution, weights: np.ndarray) -> _Folded:
    """The floored ``weights`` as units (:class:`_Folded`): mirrored pairs of an exactly
    symmetric pmf, else the points themselves."""
    size = weights.size
    grid = noise.grid
    monotone = noise.is_monotone(rtol=0.0)
    if _exactly_symmetric(noise):
        half = size // 2
        units = weights[: half + size % 2].copy()
        count = np.full(units.size, 2, dtype=np.int64)
        centre = None
        if size % 2:
            centre = half
            count[centre] = 1
        peak = units.size - 1 if monotone else int(np.argmax(units))
        return _Folded(units, count, -np.arange(units.size), centre, peak)
    peak = _innermost(noise, weights) if monotone else int(np.argmax(weights))
    return _Folded(weights.copy(), np.ones(size, dtype=np.int64), np.abs(grid), None, peak)


def _settle(folded: _Folded, total: int) -> np.ndarray:
    """The units adjusted so that ``sum(count * units) == total``, every positive unit
    kept at 1 or more and every zero at 0, the shape kept (:func:`quantise`):

    * a shortfall goes to ``peak``; a pair takes half of it each, and an odd unit left
      over goes to the middle point, which is then positive (the total and the pairs are
      even, so an odd shortfall means an odd middle weight);
    * an excess (masses raised to 1, or a pmf summing a little above 1) comes off the
      top: every unit above the least level ``c`` whose cut does not exceed the excess is
      cut to ``c``, then the remainder, one each, off units at ``c`` (so ``c >= 2``),
      outermost first, pairs only (an odd remainder: one pair more and the middle point
      raised by 1). Cutting from the top keeps the order of the units; outermost first,
      and never the middle, keeps each side rising towards 0.

    The caller checked that every positive point has room (``count`` of them at most
    ``total``), which is exactly when cutting everything to 1 removes enough."""
    units, count = folded.units.copy(), folded.count
    miss = total - int(np.dot(count, units))
    if miss >= 0:
        share, odd = divmod(miss, int(count[folded.peak]))
        units[folded.peak] += share
        if odd:  # a pair took the share: the odd unit goes to the middle
            units[folded.centre] += 1
        return units
    excess = -miss

    def removed(level: int) -> int:
        return int(np.dot(count, np.maximum(units - level, 0)))

    low, high = 1, int(units.max())  # removed(high) = 0; the least level removing <= excess
    while low < high:
        middle = (low + high) // 2
        if removed(middle) <= excess:
            high = middle
        else:
            low = middle + 1
    remainder = excess - removed(low)
    units = np.minimum(units, low)
    if remainder % 2 and folded.centre is not None:
        units[folded.centre] += 1
        remainder += 1
    if remainder:
        at_level = np.flatnonzero(units == low)
        if folded.centre is not None:
            at_level = at_level[at_level != folded.centre]
        outermost_first = at_level[np.argsort(-folded.distance[at_level], kind="stable")]
        taken = int(np.searchsorted(np.cumsum(count[outermost_first]), remainder)) + 1
        units[outermost_first[:taken]] -= 1
    return units


def _unfold(folded: _Folded, units: np.ndarray, size: int) -> np.ndarray:
    """The weights of every point from the settled ``units`` (pairs mirrored)."""
    if units.size == size:
        return units
    half = units[: size // 2]
    return np.concatenate([half, units[size // 2 :], half[::-1]])


def quantise(noise: NoiseDistribution, bits: int = DEFAULT_BITS) -> QuantisedNoise:
    """``noise`` quantised to ``bits`` bits (module docstring): integer weights ``w_i``
    summing to ``2^bits``, where ``w_i = floor(p_i 2^bits)`` (at least 1 for a positive
    mass) but for the total's miss. Kept exactly, never within a tolerance:

    * the support: ``w_i > 0`` exactly where ``p_i > 0`` (no mass is ever created);
    * symmetry: when the pmf and the grid are symmetric bit for bit, so are the weights
      (the miss is shared by mirrored points);
    * monotonicity: when the pmf never rises moving away from 0
      (:meth:`NoiseDistribution.is_monotone` with ``rtol=0``), neither do the weights
      (flooring keeps the order; a shortfall goes to the innermost point, an excess comes
      off the top, outermost first);
    * a law already on the ``2^-bits`` lattice (a quantised law, at the same or fewer
      bits) is returned unchanged.

    Raises :class:`~accountant.errors.InvalidInputError` when ``2^bits`` is smaller than
    the number of positive masses (each needs a weight of at least 1), naming what to do.
    """
    noise = check_noise("noise", noise)
    bits = _check_bits(bits)
    pmf = np.asarray(noise.pmf)
    positive = int(np.count_nonzero(pmf))
    if positive > 1 << bits:
        tiny = int(np.count_nonzero((pmf > 0.0) & (pmf < 2.0**-bits)))
        raise InvalidInputError(_crowded_message(positive, tiny, bits))
    floored = _floored_weights(pmf, bits)
    folded = _fold(noise, floored)
    weights = _unfold(folded, _settle(folded, 1 << bits), pmf.size)
    if not (np.array_equal(weights > 0, pmf > 0) and int(weights.sum()) == 1 << bits):
        raise AccountantError(
            f"quantising to bits={bits} lost the support or the total; please report this "
            f"with the pmf ({noise.description})"
        )
    return QuantisedNoise(weights=weights, bits=bits, original=noise)


@attrs.frozen(eq=False)
class QuantisedNoise:
    """Integer weights ``w_i`` (``sum = 2^bits``) on the grid of ``original``: the law
    ``w_i / 2^bits`` that samplers draw exactly (build with :func:`quantise`)."""

    weights: np.ndarray = attrs.field(repr=False)
    bits: int
    original: NoiseDistribution = attrs.field(repr=False)
    cumulative: np.ndarray = attrs.field(init=False, repr=False)
    """``c_i = w_0 + ... + w_i`` as unsigned integers (``c_last = 2^bits``)."""

    def __attrs_post_init__(self) -> None:
        weights = np.array(self.weights, dtype=np.int64)
        weights.setflags(write=False)
        cumulative = np.cumsum(weights).astype(np.uint64)
        cumulative.setflags(write=False)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "cumulative", cumulative)

    @property
    def noise(self) -> NoiseDistribution:
        """The sampled law as a :class:`NoiseDistribution` (exact: ``bits <= 53``); audit
        this one for a release."""
        return NoiseDistribution(
            pmf=np.ldexp(self.weights.astype(np.float64), -self.bits),
            step=self.original.step,
            start=self.original.start,
            description=f"{self.original.description}, quantised to {self.bits} bits",
        )

    @property
    def total_variation(self) -> float:
        """``t = (1/2) sum_i |p_i - w_i / 2^bits|``, rounded up (an upper bound)."""
        exact = np.ldexp(self.weights.astype(np.float64), -self.bits)
        differences = np.abs(np.asarray(self.original.pmf) - exact).tolist()
        return math.nextafter(0.5 * math.fsum(differences), math.inf)

    def delta_shift_bound(self, epsilon: float | np.ndarray, releases: int = 1):
        """``n t (1 + e^eps)``: how far the delta at ``epsilon`` of ``releases``
        compositions of the quantised noise can lie from that of the original (module
        docstring), for the additive and the subsampled pairs."""
        eps = check_epsilons("epsilon", epsilon)
        n = check_positive_int("releases", releases)
        bound = n * self.total_variation * (1.0 + np.exp(np.minimum(eps, 700.0)))
        bound = np.where(eps > 700.0, np.inf, np.nextafter(bound, np.inf))
        return float(bound) if bound.ndim == 0 else bound

    # -- drawing --------------------------------------------------------------------------

    def draw_indices(self, size: int) -> np.ndarray:
        """``size`` grid indices ``i`` (noise ``start + i step``) with probability exactly
        ``w_i / 2^bits`` each, from the operating system's cryptographic source
        (:func:`~accountant.noise.sampling.secure_indices`). For releases."""
        return secure_indices(self.cumulative, self.bits, size)

    def draw(self, size: int) -> np.ndarray:
        """``size`` noise values, exactly grid points (``grid[i]`` for
        :meth:`draw_indices`), never outside the support. For releases."""
        return self.original.grid[self.draw_indices(size)]

    def simulate(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """As :meth:`draw`, from a seeded ``rng``: the same law, reproducible, for
        simulations and tests only, **not for releases**."""
        return self.original.grid[simulated_indices(self.cumulative, self.bits, size, rng)]
