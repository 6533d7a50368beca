"""Shared Hypothesis strategies for the accountant's tests.

Every pmf drawn here is normalised "exactly": the weights are divided by their
``math.fsum`` and the rounding residue is moved into the largest entry, so the total is
1 within 1e-12 (far inside the library's ``MASS_TOLERANCE`` of 1e-9), and no test has
to rely on the library renormalising anything (it never does).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from accountant import NoiseDistribution, WorstCasePair

__all__ = [
    "STEPS",
    "epsilons",
    "grid_noises",
    "noises_with_sensitivity",
    "normalise",
    "pair_lists",
    "pairs",
    "pmfs",
    "symmetric_monotone_noises",
    "worst_case_pairs",
]

#: Grid spacings used for random noise (all exact binary fractions).
STEPS = (0.5, 1.0, 0.25)

#: Smallest mass the strategies produce on purpose (still a normal float after dividing
#: by a total of at most 12).
TINY = 1e-300


def normalise(weights) -> np.ndarray:
    """``weights / fsum(weights)`` with the rounding residue put into the largest entry."""
    weights = np.asarray(weights, dtype=np.float64)
    total = math.fsum(weights.tolist())
    assert total > 0.0, "at least one weight must be positive"
    pmf = weights / total
    largest = int(np.argmax(pmf))
    pmf[largest] += 1.0 - math.fsum(pmf.tolist())
    assert abs(math.fsum(pmf.tolist()) - 1.0) <= 1e-12
    assert (pmf >= 0.0).all()
    return pmf


# One weight: an exact zero (a hole inside the support), a mass as small as 1e-300, a
# small-but-visible mass, or an ordinary one.
_weights = st.one_of(
    st.just(0.0),
    st.sampled_from([TINY, 1e-250, 1e-100]),
    st.floats(1e-12, 1e-6),
    st.floats(0.01, 1.0),
)


@st.composite
def pmfs(draw, min_size: int = 1, max_size: int = 12) -> np.ndarray:
    """A pmf of length ``min_size..max_size``: general (with zeros and tiny masses inside),
    a one-point mass (spike), or near-degenerate (one entry ~1, the rest <= 1e-6)."""
    size = draw(st.integers(min_size, max_size))
    shape = draw(st.sampled_from(["general", "spike", "near_degenerate"]))
    if shape == "spike":
        weights = np.zeros(size)
        weights[draw(st.integers(0, size - 1))] = 1.0
    elif shape == "near_degenerate":
        small = st.one_of(st.just(0.0), st.just(TINY), st.floats(1e-15, 1e-6))
        weights = np.array(draw(st.lists(small, min_size=size, max_size=size)))
        weights[draw(st.integers(0, size - 1))] = 1.0
    else:
        weights = np.array(draw(st.lists(_weights, min_size=size, max_size=size)))
        if not (weights > 0.0).any():
            weights[draw(st.integers(0, size - 1))] = 1.0
    return normalise(weights)


@st.composite
def _disjoint_pair(draw, min_size: int, max_size: int) -> tuple[np.ndarray, np.ndarray]:
    size = draw(st.integers(max(2, min_size), max_size))
    in_a = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    if in_a.all() or not in_a.any():
        in_a[0] = not in_a[0]
    a = np.zeros(size)
    b = np.zeros(size)
    a[in_a] = draw(pmfs(int(in_a.sum()), int(in_a.sum())))
    b[~in_a] = draw(pmfs(int((~in_a).sum()), int((~in_a).sum())))
    return a, b


@st.composite
def _shift_pair(draw, min_size: int, max_size: int) -> tuple[np.ndarray, np.ndarray]:
    steps = draw(st.integers(1, max(1, max_size - 1)))
    p = draw(pmfs(max(1, min_size - steps), max(1, max_size - steps)))
    a = np.concatenate([p, np.zeros(steps)])
    shifted = np.concatenate([np.zeros(steps), p])
    if draw(st.booleans()):
        return a, shifted
    q = draw(st.sampled_from([1.0, 0.5, 0.01, 1e-6]) | st.floats(0.001, 1.0))
    return a, (1.0 - q) * a + q * shifted


@st.composite
def worst_case_pairs(draw, min_size: int = 1, max_size: int = 10) -> WorstCasePair:
    """A WorstCasePair of ``min_size..max_size`` outcomes: two independent pmfs
    (asymmetric in general), disjoint supports, identical ``A = B``, or the additive /
    sub-sampled layout of a random noise."""
    kind = draw(st.sampled_from(["independent", "disjoint", "identical", "shift"]))
    if kind == "independent":
        size = draw(st.integers(min_size, max_size))
        a, b = draw(pmfs(size, size)), draw(pmfs(size, size))
    elif kind == "disjoint":
        a, b = draw(_disjoint_pair(min_size, max_size))
    elif kind == "identical":
        a = draw(pmfs(min_size, max_size))
        b = a.copy()
    else:
        a, b = draw(_shift_pair(min_size, max_size))
    if draw(st.booleans()):
        a, b = b, a
    return WorstCasePair(a, b, description=f"random {kind} pair")


def shift_pairs(min_size: int = 2, max_size: int = 10):
    """The additive or sub-sampled layout of a random noise: distinguishing events in
    (0, 1) far more often than the mixed :func:`worst_case_pairs`."""
    return _shift_pair(min_size, max_size).map(lambda ab: WorstCasePair(*ab, description="shift"))


#: Short alias (used by tests/moments/test_extended_ma.py).
pairs = worst_case_pairs


def pair_lists(max_pairs: int = 4, max_size: int = 10):
    """A non-empty list of pairs (of possibly different sizes)."""
    return st.lists(worst_case_pairs(max_size=max_size), min_size=1, max_size=max_pairs)


@st.composite
def grid_noises(draw, min_size: int = 1, max_size: int = 12) -> NoiseDistribution:
    """A NoiseDistribution with step in {0.5, 1, 0.25} whose grid starts at a whole number
    of steps in ``[-size, 0]`` (so it may or may not be centred on 0)."""
    pmf = draw(pmfs(min_size, max_size))
    step = draw(st.sampled_from(STEPS))
    start = step * draw(st.integers(-pmf.size, 0))
    return NoiseDistribution(pmf=pmf, step=step, start=start)


@st.composite
def symmetric_monotone_noises(draw, max_half: int = 6) -> NoiseDistribution:
    """Noise that is symmetric about 0 and never rises moving away from 0 (the premise of
    the paper's Theorem "Shift Invariance")."""
    half = np.array(
        sorted(
            draw(st.lists(_weights, min_size=1, max_size=max_half)),
            reverse=True,
        )
    )
    half[0] = max(half[0], 0.01)  # the centre carries mass
    weights = np.concatenate([half[:0:-1], half])
    pmf = weights / math.fsum(weights.tolist())
    centre = half.size - 1
    pmf[centre] += 1.0 - math.fsum(pmf.tolist())  # stays symmetric and the largest
    step = draw(st.sampled_from(STEPS))
    return NoiseDistribution(pmf=pmf, step=step, start=-step * centre)


@st.composite
def noises_with_sensitivity(
    draw, noise_strategy=None, max_steps: int = 4
) -> tuple[NoiseDistribution, float]:
    """``(noise, sensitivity)`` with the sensitivity a whole multiple ``m * step``, m >= 1."""
    noise = draw(grid_noises() if noise_strategy is None else noise_strategy)
    steps = draw(st.integers(1, max_steps))
    return noise, steps * noise.step


def epsilons(max_value: float = 5.0):
    """An epsilon in ``[0, max_value]`` (including the end points)."""
    return st.one_of(
        st.sampled_from([0.0, max_value]),
        st.floats(0.0, max_value, allow_nan=False, allow_infinity=False),
    )


# ---------------------------------------------------------------------------------------
# Special shapes for tests/guarantees: zeros inside the support, spikes, one-point noise
# and asymmetric pairs, each drawn on purpose (not only by chance as above).

#: Masses next to a spike: their total is at most ~1e-9 (so the spike is ~1 - 1e-9).
_SPIKE_REST = st.sampled_from([0.0, TINY, 1e-250, 1e-15, 1e-12, 1e-10, 2e-10])


@st.composite
def holey_pmfs(draw, min_size: int = 3, max_size: int = 6) -> np.ndarray:
    """A pmf whose first and last entries are positive with at least one exact zero
    between them (a hole inside the support)."""
    size = draw(st.integers(max(3, min_size), max(3, max_size)))
    weights = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=size, max_size=size)))
    holes = draw(st.sets(st.integers(1, size - 2), min_size=1, max_size=size - 2))
    weights[sorted(holes)] = 0.0
    return normalise(weights)


@st.composite
def spike_pmfs(draw, min_size: int = 1, max_size: int = 6) -> np.ndarray:
    """One entry ``1 - (at most ~1e-9)``, every other entry tiny (down to 1e-300) or 0."""
    size = draw(st.integers(min_size, max_size))
    weights = np.array(draw(st.lists(_SPIKE_REST, min_size=size, max_size=size)))
    weights[draw(st.integers(0, size - 1))] = 1.0
    return normalise(weights)


@st.composite
def one_point_pmfs(draw, min_size: int = 1, max_size: int = 6) -> np.ndarray:
    """All mass on one outcome."""
    size = draw(st.integers(min_size, max_size))
    weights = np.zeros(size)
    weights[draw(st.integers(0, size - 1))] = 1.0
    return weights


def special_pmfs(min_size: int = 1, max_size: int = 6):
    """A holey (needs ``max_size >= 3``), spike or one-point pmf of ``min_size..max_size``
    entries."""
    shapes = [spike_pmfs(min_size, max_size), one_point_pmfs(min_size, max_size)]
    if max_size >= 3:
        shapes.append(holey_pmfs(max(3, min_size), max_size))
    return st.one_of(*shapes)


@st.composite
def special_pairs(draw, max_size: int = 6) -> WorstCasePair:
    """A pair of at most ``max_size`` outcomes built from the special shapes:

    * ``additive``: a special pmf padded / shifted by ``m`` steps (noise with holes, a
      spike, or one-point noise, whose pair then has omega = 1);
    * ``subsampled``: the DP-SGD mixture of such a shift;
    * ``asymmetric``: A and B drawn independently from different special shapes.

    A and B are swapped at random."""
    kind = draw(st.sampled_from(["additive", "subsampled", "asymmetric"]))
    if kind == "asymmetric":
        size = draw(st.integers(3, max(3, max_size)))
        shapes = [holey_pmfs(size, size), spike_pmfs(size, size), one_point_pmfs(size, size)]
        first, second = draw(st.permutations(range(3)))[:2]
        a, b = draw(shapes[first]), draw(shapes[second])
    else:
        steps = draw(st.integers(1, max(1, max_size - 1)))
        p = draw(special_pmfs(1, max(1, max_size - steps)))
        a = np.concatenate([p, np.zeros(steps)])
        shifted = np.concatenate([np.zeros(steps), p])
        if kind == "additive":
            b = shifted
        else:
            q = draw(st.sampled_from([1e-6, 0.01, 0.5]) | st.floats(0.001, 1.0))
            b = (1.0 - q) * a + q * shifted
    if draw(st.booleans()):
        a, b = b, a
    return WorstCasePair(a, b, description=f"special {kind} pair")


__all__ += [  # the special shapes above
    "holey_pmfs",
    "one_point_pmfs",
    "special_pairs",
    "special_pmfs",
    "spike_pmfs",
]


# ---------------------------------------------------------------------------------------
# Symmetric, nearly symmetric and monotone pmfs, for the quantiser (tests/noise): exact
# symmetry bit for bit, or a symmetry that holds only within a tolerance.


@st.composite
def symmetric_pmfs(draw, max_half: int = 6) -> np.ndarray:
    """An exactly symmetric pmf (``p[i] == p[-1 - i]`` bit for bit) of odd or even length,
    with zeros and tiny masses anywhere, the middle included."""
    half = draw(st.lists(_weights, min_size=1, max_size=max_half))
    middle = draw(st.lists(_weights, min_size=0, max_size=1))
    weights = np.array([*half, *middle, *half[::-1]])
    if not (weights > 0.0).any():
        weights[:] = 1.0
    return weights / math.fsum(weights.tolist())  # one division per entry: still symmetric


@st.composite
def nearly_symmetric_pmfs(draw, max_half: int = 6) -> np.ndarray:
    """A pmf that :meth:`NoiseDistribution.is_symmetric` (rtol 1e-9, atol 1e-15) calls
    symmetric but that is not bit for bit: a symmetric pmf with an exact 0 and a tiny mass
    (<= 5e-16, taken from the largest mass) inserted at mirrored places, or with a
    relative 1e-12..1e-10 of one mass moved to its mirror point."""
    pmf = draw(symmetric_pmfs(max_half))
    if draw(st.booleans()):
        tiny = draw(st.sampled_from([1e-16, 2.0**-60, 5e-16, TINY]))
        pair = [0.0, tiny] if draw(st.booleans()) else [tiny, 0.0]
        at = draw(st.integers(0, pmf.size // 2))
        pmf = np.concatenate(
            [pmf[:at], pair[:1], pmf[at : pmf.size - at], pair[1:], pmf[pmf.size - at :]]
        )
        pmf[int(np.argmax(pmf))] -= tiny
    else:
        pmf = pmf.copy()
        index = draw(st.integers(0, pmf.size - 1))
        moved = pmf[index] * draw(st.floats(1e-12, 1e-10))
        pmf[index] -= moved
        pmf[pmf.size - 1 - index] += moved
    assert (pmf >= 0.0).all() and (pmf > 0.0).any()
    return pmf


@st.composite
def monotone_pmfs(draw, max_side: int = 6) -> tuple[np.ndarray, int]:
    """``(pmf, zero)``: a pmf that never rises moving away from index ``zero`` (exactly:
    non-decreasing up to it, non-increasing after), the two sides of different lengths
    and values (asymmetric in general), ties and tiny masses included."""
    left = sorted(draw(st.lists(_weights, min_size=0, max_size=max_side)))
    right = sorted(draw(st.lists(_weights, min_size=0, max_size=max_side)), reverse=True)
    peak = max([0.01, *left, *right])
    weights = np.array([*left, peak, *right])
    pmf = weights / math.fsum(weights.tolist())  # monotone in, monotone out
    return pmf, len(left)


__all__ += ["monotone_pmfs", "nearly_symmetric_pmfs", "symmetric_pmfs"]
