"""One FFT per release, powers, one inverse FFT: values and the certified entry error."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft

from accountant.buckets import vector_kernels
from accountant.buckets.fft_power import FFT_CONSTANT, _accumulate_power, power_spectrum


def _exact_power(parts: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Linear convolution of the copies in long double (the reference)."""
    result = np.ones(1, dtype=np.longdouble)
    for values, times in parts:
        for _ in range(times):
            result = np.convolve(result, values.astype(np.longdouble))
    return result


@pytest.mark.parametrize("power_work", [vector_kernels.POWER_WORK, 0], ids=["numpy", "numba"])
@pytest.mark.parametrize("seed", range(6))
def test_powers_match_long_double_convolutions_within_the_certified_error(
    seed, power_work, monkeypatch
):
    """Whichever kernel powers the spectrum (numpy below ``POWER_WORK``, numba above)."""
    monkeypatch.setattr(vector_kernels, "POWER_WORK", power_work)
    rng = np.random.default_rng(seed)
    parts = [(rng.random(rng.integers(3, 9)) ** 6, int(rng.integers(1, 40))) for _ in range(2)]
    parts = [(v / v.sum(), n) for v, n in parts]
    exact = _exact_power(parts)
    size = scipy.fft.next_fast_len(exact.size, real=True)
    powered = power_spectrum(parts, size)
    error = np.abs(powered.masses[: exact.size].astype(np.longdouble) - exact)
    assert float(error.max()) <= powered.entry_error
    assert (powered.masses[exact.size :] <= powered.entry_error).all()  # nothing wraps
    # the bound is honest but not absurd: within a few orders of the observed error
    assert powered.entry_error < 1e-11


def test_the_fft_constant_covers_long_double_references():
    """The componentwise bound c u (log2 N + 1) |x|_1 against long-double FFTs."""
    rng = np.random.default_rng(1)
    u = 2.0**-53
    for size in (4096, 65536, 1 << 20, 3 * (1 << 18), 1000003):
        x = rng.random(size) ** 8
        x /= x.sum()
        observed = np.max(np.abs(scipy.fft.rfft(x) - scipy.fft.rfft(x.astype(np.longdouble))))
        assert float(observed) <= 0.1 * FFT_CONSTANT * u * (math.log2(size) + 1) * x.sum()


def test_a_composition_by_powers_bounds_every_entry_and_coarsening_keeps_it():
    from accountant import WorstCasePair
    from accountant.buckets.coarsen import coarsen
    from accountant.buckets.rounded_plan import RoundedPlan, compose_releases
    from accountant.buckets.rounding import round_to_lattice
    from accountant.pairs.pld import privacy_loss_distribution

    pair = WorstCasePair.from_arrays([0.30, 0.35, 0.35], [0.29, 0.357, 0.353])
    single = round_to_lattice(privacy_loss_distribution(pair, "A/B"), 1e-3, 0.0, 1e-30)
    plan = RoundedPlan.build(lambda index: single, [500], 1e-30, 1 << 22)
    composed = compose_releases(plan, lambda index: single)
    assert composed is not None and math.isfinite(composed.entry_error)
    assert composed.error_a >= composed.entry_error  # the norm bound covers one entry
    counted = 10
    assert composed.absolute_error(counted) == counted * composed.entry_error
    assert composed.absolute_error(counted) < math.sqrt(counted) * composed.error_a
    assert coarsen(composed).entry_error == 2.0 * composed.entry_error
    assert math.isclose(float(composed.mass_a.sum()), 1.0, rel_tol=1e-9)


def test_a_release_with_no_finite_outcome_composes_to_nothing_without_a_warning():
    # disjoint supports: every A-mass is distinguishing, the rounded release is all zeros
    powered = power_spectrum([(np.zeros(5), 200)], 1024)
    assert not powered.masses.any() and powered.entry_error == 0.0


def test_both_power_kernels_do_the_same_operations():
    """numpy's binary powering multiplies in the numba kernel's order: the same products
    and bounds, up to the last bits of the two libraries' complex moduli."""
    rng = np.random.default_rng(3)
    spectrum = rng.normal(size=257) + 1j * rng.normal(size=257)
    spectrum /= np.abs(spectrum).max()
    results = []
    for kernel in (vector_kernels.accumulate_power, _accumulate_power):
        product = np.full(257, 0.5 + 0.25j)
        upper, slope = np.ones(257), np.zeros(257)
        kernel(spectrum, 1234567, 1e-15, product, upper, slope)
        results.append((product, upper, slope))
    (p1, u1, s1), (p2, u2, s2) = results
    np.testing.assert_allclose(p1, p2, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(u1, u2, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(s1, s2, rtol=1e-13)
