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

from accountant.errors import InvalidInputError
from accountant.noise.distribution import NoiseDistribution
from accountant.noise.sampling import secure_indices, simulated_indices
from accountant.validation import check_epsilons, check_noise, check_positive_int

__all__ = ["DEFAULT_BITS", "MAX_BITS", "QuantisedNoise", "quantise"]

#: Default precision: probabilities are multiples of 2^-48 (about 3.6e-15).
DEFAULT_BITS = 48
#: Largest precision for which every ``w_i / 2^bits`` is a float64 exactly.
MAX_BITS = 53
#: Smallest precision accepted (a coarser table would mostly measure itself).
MIN_BITS = 8


def _check_bits(value: object) -> int:
    bits = check_positive_int("bits", value)
    if not MIN_BITS <= bits <= MAX_BITS:
        raise InvalidInputError(f"bits must lie in [{MIN_BITS}, {MAX_BITS}], got {bits!r}")
    return bits


def _floored_weights(pmf: np.ndarray, bits: int) -> np.ndarray:
    """``floor(p_i 2^bits)`` (exact: a power-of-two scaling, then floor), at least 1 where
    ``p_i > 0`` so that the support is kept, 0 where ``p_i = 0``. Flooring keeps the order
    of the masses and leaves the total at or below ``2^bits`` (but for the raised tiny
    masses), so the miss is added to the peak."""
    weights = np.floor(np.ldexp(pmf, bits)).astype(np.int64)
    weights[(pmf > 0.0) & (weights < 1)] = 1
    weights[pmf == 0.0] = 0
    return weights


def _settle_symmetric(pmf: np.ndarray, bits: int) -> np.ndarray:
    """Weights of a symmetric pmf, symmetric themselves: the left half floored and
    mirrored; the miss goes to the middle point (odd size) or half to each of the two
    middle points (even size: the miss is then even)."""
    size = pmf.size
    half = _floored_weights(pmf[: size // 2], bits)
    miss = (1 << bits) - 2 * int(half.sum())
    if size % 2:
        return np.concatenate([half, np.array([miss], dtype=np.int64), half[::-1]])
    half = half.copy()
    half[-1] += miss // 2
    return np.concatenate([half, half[::-1]])


def _settle_general(pmf: np.ndarray, bits: int, peak: int) -> np.ndarray:
    """Weights floored one by one, the total's miss put on the weight at ``peak``."""
    weights = _floored_weights(pmf, bits)
    weights[peak] += (1 << bits) - int(weights.sum())
    return weights


def _peak(noise: NoiseDistribution) -> int:
    """Where the miss goes: the grid point 0 of a monotone noise (its largest mass, which
    stays the largest), else the largest mass."""
    zero = np.flatnonzero(np.isclose(noise.grid, 0.0, rtol=0.0, atol=1e-12 * noise.step))
    if noise.is_monotone() and zero.size:
        return int(zero[0])
    return int(np.argmax(noise.pmf))


def quantise(noise: NoiseDistribution, bits: int = DEFAULT_BITS) -> QuantisedNoise:
    """``noise`` quantised to ``bits`` bits (module docstring): integer weights summing to
    ``2^bits``, positive exactly where ``noise.pmf`` is, symmetric when ``noise`` is
    (:meth:`NoiseDistribution.is_symmetric` with the default tolerance, which is then
    kept exactly), and never rising away from 0 where ``noise`` does not
    (:meth:`NoiseDistribution.is_monotone`).

    Raises :class:`~accountant.errors.InvalidInputError` when ``bits`` is too coarse for
    the support (the weights of the positive masses, at least 1 each, leave nothing for
    the largest)."""
    noise = check_noise("noise", noise)
    bits = _check_bits(bits)
    pmf = np.asarray(noise.pmf)
    if noise.is_symmetric():
        weights = _settle_symmetric(pmf, bits)
    else:
        weights = _settle_general(pmf, bits, _peak(noise))
    if (weights[pmf > 0.0] < 1).any() or int(weights.sum()) != 1 << bits:
        raise InvalidInputError(
            f"bits={bits} is too coarse for a pmf with {int((pmf > 0).sum())} positive "
            "masses; use more bits"
        )
    if noise.is_monotone() and not _never_rises(weights, noise):
        raise InvalidInputError(
            f"bits={bits} is too coarse to keep the noise monotone; use more bits"
        )
    return QuantisedNoise(weights=weights, bits=bits, original=noise)


def _never_rises(weights: np.ndarray, noise: NoiseDistribution) -> bool:
    grid = noise.grid
    left, right = weights[grid <= 0.0], weights[grid >= 0.0]
    return bool((np.diff(left) >= 0).all() and (np.diff(right) <= 0).all())


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
