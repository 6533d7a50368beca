"""Composition of bucketed PLDs (accountant/buckets/convolution.py).

* The FFT path: ``_fft_convolve`` returns ``(z, bound)`` and claims ``|z - x*y|_2 <= bound``
  (module docstring; Higham, *Accuracy and Stability of Numerical Algorithms*, Thm. 24.2).
  The reference is ``np.convolve`` in extended precision (``np.longdouble``), whose own
  error (at most ``(min(len) + 1) u_ld |x| * |y|`` entrywise for non-negative inputs, with
  ``u_ld`` the unit roundoff of longdouble) is added to the allowance; where longdouble is
  just float64 that term is still a rigorous bound.

  Largest observed ratio ``|z - x*y|_2 / bound`` over the inputs below (random, heavy
  tailed 1e-300..1, constants, spikes, Gaussians, geometric decays, lengths 1..2^18;
  1,500 Hypothesis examples plus the long cases): 0.0124 (1x1 and 2x2 inputs; results of
  length ~2^18 stay below 0.0035), i.e. the bound has a margin of about 80x.
  ``test_fft_error_ratio_report`` re-measures it on a fixed grid.
* ``compose_power`` equals repeated ``compose_pair`` for n = 1..9, indices and offsets add,
  ``mass_logs`` add, ``lost_a`` composes to ``(1-w)^n - (1-w-l)^n`` (the
  A-mass of outcomes with a lost component and no distinguishing one).
* The error model of ``bucketed.py`` survives FFT composition: stored masses ``m`` and
  true masses ``t`` satisfy ``|m - t| <= rel * t + e`` with ``|e|_2 <= error_a``.
"""

from __future__ import annotations

import math

import attrs
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import WorstCasePair
from accountant.buckets.bucketed import BucketedPLD, bucket_pld
from accountant.buckets.convolution import (
    _fft_convolve,
    compose_pair,
    compose_power,
)
from accountant.noise import truncated_gaussian
from accountant.numerics.directed import MassLogs
from accountant.pairs.pld import privacy_loss_distribution
from tests.strategies import worst_case_pairs

U = 2.0**-53
U_LONG = float(np.finfo(np.longdouble).eps) / 2.0
#: Absolute slack for subnormal underflow of products of masses near 1e-300: every
#: product or sum that underflows loses at most 2^-1074, far below anything else here.
UNDERFLOW = 1e-300

# ---------------------------------------------------------------------------------------
# FFT path against a direct convolution


def _reference(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """``x * y`` in longdouble and a rigorous 2-norm bound of its own error."""
    exact = np.convolve(x.astype(np.longdouble), y.astype(np.longdouble))
    own = (min(x.size, y.size) + 2) * U_LONG * float(np.linalg.norm(exact.astype(np.float64)))
    return exact, own


def _make(kind: str, size: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return rng.random(size)
    if kind == "heavy":  # magnitudes spread over 1e-300 .. 1
        return 10.0 ** rng.uniform(-300.0, 0.0, size)
    if kind == "heavy_sparse":
        return 10.0 ** rng.uniform(-300.0, 0.0, size) * (rng.random(size) < 0.3)
    if kind == "ones":
        return np.ones(size)
    if kind == "spike":
        x = np.zeros(size)
        x[rng.integers(size)] = 1.0
        return x
    if kind == "gauss":
        t = np.linspace(-8.0, 8.0, size)
        return np.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi)
    if kind == "geometric":
        return 0.5 ** np.arange(size, dtype=np.float64)
    if kind == "pmf":
        x = rng.random(size) ** 4
        return x / x.sum()
    raise AssertionError(kind)


KINDS = ("uniform", "heavy", "heavy_sparse", "ones", "spike", "gauss", "geometric", "pmf")


def _fft_error_ratio(x: np.ndarray, y: np.ndarray) -> float:
    result, bound = _fft_convolve(x, y)
    exact, own = _reference(x, y)
    assert result.shape == exact.shape
    assert (result >= 0.0).all()
    error = float(np.linalg.norm((result.astype(np.longdouble) - exact).astype(np.float64)))
    assert error <= bound + own, (error, bound, own)
    return error / bound if bound > 0.0 else 0.0


@settings(max_examples=150, deadline=None)
@given(
    kind_x=st.sampled_from(KINDS),
    kind_y=st.sampled_from(KINDS),
    size_x=st.integers(1, 3000),
    size_y=st.integers(1, 600),
    seed=st.integers(0, 2**32 - 1),
)
def test_fft_convolve_within_its_bound(kind_x, kind_y, size_x, size_y, seed):
    rng = np.random.default_rng(seed)
    x = _make(kind_x, size_x, rng)
    y = _make(kind_y, size_y, rng)
    _fft_error_ratio(x, y)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["uniform", "heavy", "ones", "gauss", "pmf"])
@pytest.mark.parametrize(("size_x", "size_y"), [((1 << 18) - 40, 41), (1 << 12, 1 << 12)])
def test_fft_convolve_long_arrays_within_bound(kind, size_x, size_y):
    """Results of length ~2^18 (FFT size 2^18) and two 4096-long arrays."""
    rng = np.random.default_rng(size_x + size_y)
    ratio = _fft_error_ratio(_make(kind, size_x, rng), _make(kind, size_y, rng))
    assert ratio <= 1.0


def test_fft_error_ratio_report():
    """Re-measure the largest error/bound ratio on a fixed grid of inputs; the docstring
    quotes it (about 0.012). Fails if the bound is violated anywhere, and if the margin
    shrinks below 10x (which would mean the bound is no longer comfortably generous)."""
    rng = np.random.default_rng(2024)
    worst = 0.0
    for kind in KINDS:
        for size_x, size_y in [(2, 2), (3, 5), (100, 100), (1000, 300), (5000, 17)]:
            ratio = _fft_error_ratio(_make(kind, size_x, rng), _make(kind, size_y, rng))
            worst = max(worst, ratio)
    assert worst < 0.1, worst


def test_fft_convolve_exact_small_cases():
    result, bound = _fft_convolve(np.array([1.0]), np.array([1.0]))
    assert result.shape == (1,)
    assert abs(result[0] - 1.0) <= bound
    result, bound = _fft_convolve(np.zeros(7), np.ones(3))
    np.testing.assert_array_equal(result, np.zeros(9))
    assert bound == 0.0


# ---------------------------------------------------------------------------------------
# compose_power against repeated compose_pair


def _bucketed(pair: WorstCasePair, direction: str, width: float) -> BucketedPLD:
    pld = privacy_loss_distribution(pair, direction)
    anchor = float(pld.losses[np.argmax(pld.mass_a)]) if pld.losses.size else 0.0
    return bucket_pld(pld, width, anchor, 0.0)


def _assert_masses_agree(x: BucketedPLD, y: BucketedPLD) -> None:
    """Both claim ``|m - t| <= rel t + e``; so ``|m_x - m_y| <= (rel_x + rel_y) max + e``."""
    assert x.first_index == y.first_index
    assert x.size == y.size
    for mx, my, ex, ey in (
        (x.mass_a, y.mass_a, x.error_a, y.error_a),
        (x.mass_b, y.mass_b, x.error_b, y.error_b),
    ):
        rel = (x.relative_error + y.relative_error) * 1.01
        excess = np.maximum(0.0, np.abs(mx - my) - rel * np.maximum(mx, my) - UNDERFLOW)
        assert float(np.linalg.norm(excess)) <= ex + ey


@settings(max_examples=60, deadline=None)
@given(
    pair=worst_case_pairs(max_size=8),
    times=st.integers(1, 9),
    width=st.sampled_from([0.05, 0.3, 1.0]),
    direction=st.sampled_from(["A/B", "B/A"]),
)
def test_compose_power_equals_repeated_compose_pair(pair, times, width, direction):
    single = _bucketed(pair, direction, width)
    power = compose_power(single, times, 0.0, force_direct=True)
    repeated = single
    for _ in range(times - 1):
        repeated = compose_pair(repeated, single, 0.0, force_direct=True)
    _assert_masses_agree(power, repeated)
    # indices and offsets add
    assert power.first_index == times * single.first_index
    assert power.size == times * (single.size - 1) + 1
    for got, one in (
        (power.offset_low, single.offset_low),
        (power.offset_high, single.offset_high),
    ):
        assert math.isclose(got, times * one, rel_tol=1e-14, abs_tol=1e-300)
    assert power.offset_low <= power.offset_high
    # the mass logs compose as n times those of one release (outward rounding only)
    for got, one in (
        (power.mass_logs.total, single.mass_logs.total),
        (power.mass_logs.finite_fraction, single.mass_logs.finite_fraction),
    ):
        assert got.low <= times * one.low or got.low == one.low == -math.inf
        assert got.high >= times * one.high
        assert math.isclose(got.low, times * one.low, rel_tol=1e-14, abs_tol=1e-300) or (
            got.low == one.low == -math.inf
        )
    assert power.releases == times == repeated.releases
    assert power.lost_a == repeated.lost_a == 0.0
    # the total A-mass of the finite part is (1 - omega)^n (mass is conserved)
    keep = single.finite_mass
    total = float(np.sum(power.mass_a))
    expected = float(np.sum(single.mass_a)) ** times
    assert abs(total - expected) <= 1e-12 * keep**times + UNDERFLOW


@pytest.mark.parametrize("times", range(1, 10))
def test_compose_power_matches_compose_pair_on_a_gaussian(times):
    """n = 1..9 on a realistic release, through the default (direct or FFT) paths."""
    pair = WorstCasePair.additive(truncated_gaussian(1.0, 6.0, 0.05), 0.5)
    single = _bucketed(pair, "A/B", 10 * 0.05**2)
    power = compose_power(single, times, 0.0)
    repeated = single
    for _ in range(times - 1):
        repeated = compose_pair(repeated, single, 0.0)
    _assert_masses_agree(power, repeated)
    assert power.first_index == repeated.first_index == times * single.first_index
    assert math.isclose(power.offset_high, times * single.offset_high, rel_tol=1e-13)
    assert math.isclose(power.offset_low, times * single.offset_low, rel_tol=1e-13)


def _with_loss(pld: BucketedPLD, lost: float, omega: float) -> BucketedPLD:
    """``pld`` with its finite part scaled to ``1 - omega - lost``, ``lost`` A-mass lost and
    distinguishing mass ``omega`` (a consistent single release)."""
    scale = (1.0 - omega - lost) / float(np.sum(pld.mass_a))
    return attrs.evolve(
        pld,
        mass_a=pld.mass_a * scale,
        lost_a=lost,
        mass_logs=MassLogs.of((0.0, 0.0), (omega, omega)),
    )


@pytest.mark.parametrize("times", range(1, 10))
@pytest.mark.parametrize(("lost", "omega"), [(1e-3, 0.0), (1e-6, 1e-2), (0.2, 0.3), (0.0, 0.5)])
def test_lost_and_distinguishing_mass_compose_as_documented(times, lost, omega):
    pair = WorstCasePair(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]))
    base = _bucketed(pair, "A/B", 0.1)
    single = _with_loss(base, lost, omega)
    power = compose_power(single, times, 0.0)
    mpmath.mp.prec = 200
    keep = 1 - mpmath.mpf(omega)
    # outcomes with at least one lost component and no distinguishing one
    exact_lost = keep**times - (keep - mpmath.mpf(lost)) ** times
    assert mpmath.mpf(power.lost_a) >= exact_lost  # never understated
    assert power.lost_a <= float(exact_lost) * (1 + 1e-13)
    exact_log_keep = times * mpmath.log(keep)
    fraction = power.mass_logs.finite_fraction
    assert fraction.low <= exact_log_keep <= fraction.high
    assert fraction.high - fraction.low <= 1e-14 * (1 + abs(exact_log_keep))
    assert math.isclose(power.distinguishing_mass, float(1 - keep**times), rel_tol=1e-13)


def test_lost_mass_heterogeneous_pair():
    base = _bucketed(WorstCasePair(np.array([0.6, 0.4]), np.array([0.4, 0.6])), "A/B", 0.1)
    x = _with_loss(base, 0.01, 0.05)
    y = _with_loss(base, 0.2, 0.001)
    z = compose_pair(x, y, 0.0)
    keep_x, keep_y = 0.95, 0.999
    exact = keep_x * keep_y - (keep_x - 0.01) * (keep_y - 0.2)
    assert exact <= z.lost_a <= exact * (1 + 1e-13)
    fraction = z.mass_logs.finite_fraction
    exact = mpmath.log(1 - mpmath.mpf(0.05)) + mpmath.log(1 - mpmath.mpf(0.001))
    assert fraction.low <= exact <= fraction.high


def test_compose_pair_coarsens_power_of_two_widths_and_rejects_others():
    pair = WorstCasePair(np.array([0.6, 0.4]), np.array([0.4, 0.6]))
    composed = compose_pair(_bucketed(pair, "A/B", 0.1), _bucketed(pair, "A/B", 0.2), 0.0)
    assert composed.width == pytest.approx(0.2)
    with pytest.raises(ValueError, match="widths differ"):
        compose_pair(_bucketed(pair, "A/B", 0.1), _bucketed(pair, "A/B", 0.3), 0.0)


def test_tail_trim_counts_cut_mass_as_lost():
    """Cutting tails moves (at least) the cut A-mass into ``lost_a``; the kept buckets are
    the corresponding slice of the untrimmed composition."""
    pair = WorstCasePair.additive(truncated_gaussian(1.0, 8.0, 0.1), 1.0)
    single = _bucketed(pair, "A/B", 0.1)
    full = compose_pair(single, single, 0.0)
    cut = compose_pair(single, single, 1e-6)
    assert cut.size < full.size
    start = cut.first_index - full.first_index
    np.testing.assert_array_equal(cut.mass_a, full.mass_a[start : start + cut.size])
    outside = np.concatenate([full.mass_a[:start], full.mass_a[start + cut.size :]])
    removed = math.fsum(outside.tolist())
    assert cut.lost_a >= removed
    assert cut.lost_a <= 2e-6 * (1 + 1e-12)


# ---------------------------------------------------------------------------------------
# the error model after FFT composition


def _gaussian_release(step: float) -> BucketedPLD:
    """A truncated Gaussian release with one bucket per lattice loss (~4000 buckets)."""
    noise = truncated_gaussian(1.0, 10.0, step)
    pair = WorstCasePair.additive(noise, 10 * step)
    return _bucketed(pair, "A/B", 10 * step * step)


@pytest.mark.slow
@pytest.mark.parametrize("times", [2, 3, 4])
def test_fft_composition_keeps_the_error_model(times):
    """FFT-composed masses stay within ``rel * t + e`` (``|e|_2 <= error``) of the direct
    composition, whose own error is purely relative."""
    single = _gaussian_release(0.005)
    assert single.size > 3000  # large enough for the FFT path
    fft = compose_power(single, times, 0.0)
    direct = compose_power(single, times, 0.0, force_direct=True)
    assert fft.error_a > 0.0 and fft.error_b > 0.0  # the FFT path was taken
    assert direct.error_a == direct.error_b == 0.0
    _assert_masses_agree(fft, direct)
    # the bound is not vacuous: it is far below the masses that matter
    assert fft.error_a < 1e-12


@settings(max_examples=25, deadline=None)
@given(
    kind_a=st.sampled_from(["uniform", "heavy", "pmf", "gauss"]),
    size=st.integers(2100, 2600),
    seed=st.integers(0, 2**32 - 1),
)
def test_fft_compose_pair_error_model_random_buckets(kind_a, size, seed):
    """Random (heavy-tailed) bucket masses: the FFT composition against the direct one."""
    rng = np.random.default_rng(seed)
    a = _make(kind_a, size, rng)
    b = _make("heavy" if kind_a != "heavy" else "pmf", size, rng)
    pld = BucketedPLD(0.1, -3, a / a.sum(), b / b.sum(), -0.05, 0.0, MassLogs())
    fft = compose_pair(pld, pld, 0.0)
    direct = compose_pair(pld, pld, 0.0, force_direct=True)
    assert fft.error_a > 0.0  # 2100^2 > DIRECT_BUDGET: FFT path
    _assert_masses_agree(fft, direct)
