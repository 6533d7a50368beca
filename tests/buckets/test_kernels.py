"""The numba kernels of the PrivacyBuckets engine against slow numpy / pure-Python oracles.

Oracles are the documented sums written out directly (``math.fsum`` over explicit
loops, or vectorised numpy formulas), independent of the kernels' loop structure:

* ``direct_convolve(x, y)[k] = sum_i x[i] y[k - i]`` (relative error per entry at most
  ``(min(len x, len y) + 1) u`` for non-negative inputs, its docstring);
* ``adp_scan`` / ``pdp_scan``: the per-bucket sums of ``accountant/buckets/_kernels.py``
  (SPEC section 2, "Upper bound" / "Lower bound").
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.buckets import _kernels
from accountant.buckets._kernels import adp_scan, direct_convolve, pdp_scan

U = 2.0**-53

# ---------------------------------------------------------------------------------------
# strategies

# Non-negative masses: exact zeros, tiny, small and ordinary values.
_masses = st.one_of(
    st.just(0.0),
    st.sampled_from([1e-300, 1e-200, 1e-100, 5e-324]),
    st.floats(1e-12, 1e-6),
    st.floats(0.0, 1.0, allow_nan=False),
    st.integers(0, 7).map(float),
)


def _arrays(min_size: int = 1, max_size: int = 40):
    return st.lists(_masses, min_size=min_size, max_size=max_size).map(np.array)


# ---------------------------------------------------------------------------------------
# direct_convolve


def convolve_oracle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``z[k] = fsum_i x[i] y[k - i]``: every product rounded once, the sum exact."""
    out = np.zeros(x.size + y.size - 1)
    for k in range(out.size):
        terms = [float(x[i]) * float(y[k - i]) for i in range(x.size) if 0 <= k - i < y.size]
        out[k] = math.fsum(terms)
    return out


@settings(max_examples=100, deadline=None)
@given(x=_arrays(), y=_arrays())
def test_direct_convolve_matches_oracle(x, y):
    got = direct_convolve(x, y)
    want = convolve_oracle(x, y)
    assert got.shape == want.shape == (x.size + y.size - 1,)
    assert (got >= 0.0).all()
    # documented relative error of the kernel, plus one rounding of the oracle's products
    # and one of its final sum; the absolute term covers subnormal underflow of products.
    tol = (min(x.size, y.size) + 3) * U * want + x.size * y.size * 5e-324
    np.testing.assert_array_less(np.abs(got - want), tol + 1e-320)
    # and against numpy's convolution (same tolerance)
    np.testing.assert_allclose(got, np.convolve(x, y), rtol=(min(x.size, y.size) + 3) * U * 2)


def test_direct_convolve_small_integers_exact():
    """Small integers convolve exactly (every product and partial sum is representable)."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        x = rng.integers(0, 5, size=rng.integers(1, 30)).astype(float)
        y = rng.integers(0, 5, size=rng.integers(1, 30)).astype(float)
        np.testing.assert_array_equal(direct_convolve(x, y), np.convolve(x, y))


@pytest.mark.parametrize(
    ("x", "y", "want"),
    [
        ([1.0], [1.0], [1.0]),
        ([0.0], [3.0], [0.0]),
        ([2.0], [1.0, 0.5, 0.25], [2.0, 1.0, 0.5]),
        ([1.0, 0.5, 0.25], [2.0], [2.0, 1.0, 0.5]),
        ([0.0, 0.0, 0.0], [1.0, 2.0], [0.0, 0.0, 0.0, 0.0]),
        # zeros inside x are skipped but still shift the later entries
        ([1.0, 0.0, 0.0, 1.0], [1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0]),
        ([0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]),
    ],
)
def test_direct_convolve_examples(x, y, want):
    got = direct_convolve(np.array(x), np.array(y))
    np.testing.assert_array_equal(got, np.array(want))


def test_direct_convolve_is_a_convolution_of_pmfs():
    """Convolving two pmfs gives a pmf (sum 1 up to the documented rounding)."""
    rng = np.random.default_rng(7)
    x = rng.random(300)
    x /= x.sum()
    y = rng.random(57)
    y /= y.sum()
    z = direct_convolve(x, y)
    assert abs(z.sum() - 1.0) < 1e-12


# ---------------------------------------------------------------------------------------
# adp_scan / pdp_scan


def adp_oracle(a, b, low, high, eps):
    """The six documented sums of ``adp_scan``, with explicit per-bucket formulas."""
    scale = math.exp(eps)
    upper_sum, upper_a_only, lower_sum, counted_a, lower_a_only = [], [], [], [], []
    counted = 0
    for ak, bk, lo, hi in zip(a, b, low, high, strict=True):
        if not hi > eps:  # a bucket whose losses are all <= eps contributes nothing
            continue
        a_part = ak * -math.expm1(eps - hi)  # A (1 - e^{eps - upper edge})
        diff = ak - scale * bk
        upper_a_only.append(a_part)
        upper_sum.append(max(diff, 0.0) if lo >= eps else a_part)
        lower_sum.append(max(diff, 0.0))
        counted_a.append(ak)
        counted += 1
        if lo >= eps:  # surely above eps: A (1 - e^{eps - lower edge}) without B
            lower_a_only.append(ak * -math.expm1(eps - lo))
    return (
        math.fsum(upper_sum),
        math.fsum(upper_a_only),
        math.fsum(lower_sum),
        math.fsum(counted_a),
        counted,
        math.fsum(lower_a_only),
    )


def pdp_oracle(a, low, high, eps):
    possibly = math.fsum(ak for ak, hi in zip(a, high, strict=True) if hi > eps)
    surely = math.fsum(ak for ak, lo, hi in zip(a, low, high, strict=True) if hi > eps < lo)
    counted = int(np.count_nonzero(np.asarray(high) > eps))
    return possibly, surely, counted


@st.composite
def _buckets(draw, max_size: int = 16):
    """Masses and loss intervals ``[low, high]``; edges drawn from a small set so many of
    them coincide with each other and with ``eps``."""
    size = draw(st.integers(1, max_size))
    a = np.array(draw(st.lists(_masses, min_size=size, max_size=size)))
    b = np.array(draw(st.lists(_masses, min_size=size, max_size=size)))
    points = st.one_of(
        st.sampled_from([-2.0, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5, 3.0]),
        st.floats(-5.0, 6.0, allow_nan=False),
    )
    low = np.array(draw(st.lists(points, min_size=size, max_size=size)))
    width = np.array(
        draw(
            st.lists(
                st.sampled_from([0.0, 0.25, 0.5]) | st.floats(0.0, 2.0),
                min_size=size,
                max_size=size,
            )
        )
    )
    eps = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 3.0]) | st.floats(0.0, 5.0))
    return a, b, low, low + width, eps


def _close(got: float, want: float, terms: float) -> bool:
    """``got`` within the rounding of a sequential sum of ``terms`` (sum of |terms|)."""
    return abs(got - want) <= 4.0 * (terms + 2) * U * abs(want) + 1e-300


@settings(max_examples=100, deadline=None)
@given(buckets=_buckets())
def test_adp_scan_matches_oracle(buckets):
    a, b, low, high, eps = buckets
    got = adp_scan(a, b, low, high, eps)
    want = adp_oracle(a, b, low, high, eps)
    assert len(got) == 6
    assert got[4] == want[4]
    # every sum is of non-negative terms
    for g, w in [*zip(got[:4], want[:4], strict=True), (got[5], want[5])]:
        assert g >= 0.0
        assert _close(g, w, a.size), (got, want)


@settings(max_examples=100, deadline=None)
@given(buckets=_buckets())
def test_pdp_scan_matches_oracle(buckets):
    a, _, low, high, eps = buckets
    got = pdp_scan(a, low, high, eps)
    want = pdp_oracle(a, low, high, eps)
    assert got[2] == want[2]
    assert _close(got[0], want[0], a.size)
    assert _close(got[1], want[1], a.size)
    assert got[1] <= got[0]


def test_adp_scan_vectorised_oracle():
    """A second, vectorised oracle on long random inputs (edges on a coarse grid so many
    equal eps exactly)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        size = int(rng.integers(1, 5000))
        a = rng.random(size) * (rng.random(size) < 0.8)
        b = rng.random(size) * (rng.random(size) < 0.8)
        low = np.round(rng.uniform(-3, 3, size), 1)
        high = low + np.round(rng.uniform(0, 1, size), 1)
        eps = float(np.round(rng.uniform(0, 3), 1))
        mask = high > eps
        a_part = a * -np.expm1(eps - high)
        diff = np.maximum(a - np.exp(eps) * b, 0.0)
        surely = mask & (low >= eps)
        want = (
            np.sum(np.where(low >= eps, diff, a_part)[mask]),
            np.sum(a_part[mask]),
            np.sum(diff[mask]),
            np.sum(a[mask]),
            int(mask.sum()),
            np.sum(a[surely] * -np.expm1(eps - low[surely])),
        )
        got = adp_scan(a, b, low, high, eps)
        assert got[4] == want[4]
        np.testing.assert_allclose(got[:4], want[:4], rtol=size * U * 4, atol=0.0)
        np.testing.assert_allclose(got[5], want[5], rtol=size * U * 4, atol=0.0)
        possibly, surely, counted = pdp_scan(a, low, high, eps)
        assert counted == want[4]
        np.testing.assert_allclose(possibly, want[3], rtol=size * U * 4)
        np.testing.assert_allclose(surely, np.sum(a[low > eps]), rtol=size * U * 4)


def test_scan_edges_equal_to_eps():
    """A bucket whose upper edge equals eps is ignored (its losses are <= eps); one whose
    lower edge equals eps counts as surely above for ADP (``A - e^eps B`` exact) and as
    straddling for PDP (``L = eps`` is not ``> eps``)."""
    eps = 0.5
    a = np.array([0.2, 0.3, 0.5])
    b = np.array([0.1, 0.05, 0.1])
    low = np.array([0.0, 0.5, 0.25])
    high = np.array([0.5, 1.0, 0.75])
    upper_sum, upper_a_only, lower_sum, counted_a, counted, lower_a_only = adp_scan(
        a, b, low, high, eps
    )
    e = math.exp(eps)
    # bucket 0 (high == eps) is skipped
    assert counted == 2
    assert counted_a == pytest.approx(0.8, rel=4 * U)
    straddling = 0.5 * (1.0 - math.exp(eps - 0.75))
    surely = 0.3 - e * 0.05
    assert upper_sum == pytest.approx(surely + straddling, rel=8 * U)
    assert upper_a_only == pytest.approx(0.3 * (1.0 - math.exp(-0.5)) + straddling, rel=8 * U)
    assert lower_sum == pytest.approx(surely + (0.5 - e * 0.1), rel=8 * U)
    assert lower_a_only == 0.0  # the only bucket with low >= eps has low == eps: 1 - e^0
    possibly, surely_pdp, counted_pdp = pdp_scan(a, low, high, eps)
    assert counted_pdp == 2
    assert possibly == pytest.approx(0.8, rel=4 * U)
    assert surely_pdp == 0.0  # low == eps is not surely > eps


@pytest.mark.parametrize("eps", [0.0, 1.0, 2.5])
def test_scans_size_one_and_zeros(eps):
    one = np.array([1.0])
    zero = np.array([0.0])
    # all mass in one bucket far above eps: ADP = 1 - e^eps * B exactly, PDP = 1
    got = adp_scan(one, np.array([1e-3]), np.array([10.0]), np.array([10.0]), eps)
    assert got[4] == 1
    assert got[2] == pytest.approx(1.0 - math.exp(eps) * 1e-3, rel=4 * U)
    assert got[0] == got[2]
    assert got[5] == pytest.approx(1.0 - math.exp(eps - 10.0), rel=4 * U)
    assert pdp_scan(one, np.array([10.0]), np.array([10.0]), eps) == (1.0, 1.0, 1)
    # zero masses: counted but contribute nothing
    got = adp_scan(zero, zero, np.array([10.0]), np.array([11.0]), eps)
    assert got == (0.0, 0.0, 0.0, 0.0, 1, 0.0)
    # everything below eps: nothing counted
    got = adp_scan(one, one, np.array([eps - 1.0]), np.array([eps]), eps)
    assert got == (0.0, 0.0, 0.0, 0.0, 0, 0.0)
    assert pdp_scan(one, np.array([eps - 1.0]), np.array([eps]), eps) == (0.0, 0.0, 0)


@settings(max_examples=100, deadline=None)
@given(
    data=st.data(),
    size=st.integers(1, 8),
    eps=st.sampled_from([0.0, 0.5, 1.0]) | st.floats(0.0, 4.0),
)
def test_scans_bracket_outcomes_inside_the_intervals(data, size, eps):
    """What the sums are for: for outcomes whose losses lie in their bucket's interval,
    ``max(lower_sum, lower_a_only) <= sum_o max(0, A - e^eps B) <= min(upper_sum,
    upper_a_only)`` and
    ``surely <= P_A[L > eps] <= possibly`` (rounding aside)."""
    lows = np.array(data.draw(st.lists(st.floats(-3, 4), min_size=size, max_size=size)))
    widths = np.array(data.draw(st.lists(st.floats(0, 1.5), min_size=size, max_size=size)))
    highs = lows + widths
    mass_a, mass_b = np.zeros(size), np.zeros(size)
    exact_adp, exact_pdp = [], []
    for k in range(size):
        for _ in range(data.draw(st.integers(1, 3))):
            a = data.draw(st.floats(1e-6, 1.0))
            where = data.draw(st.floats(0.0, 1.0))
            loss = lows[k] + where * widths[k]
            b = a * math.exp(-loss)
            mass_a[k] += a
            mass_b[k] += b
            exact_adp.append(max(0.0, a - math.exp(eps) * b))
            exact_pdp.append(a if loss > eps else 0.0)
    upper_sum, upper_a_only, lower_sum, _, _, lower_a_only = adp_scan(
        mass_a, mass_b, lows, highs, eps
    )
    truth = math.fsum(exact_adp)
    slack = 1e-12 * (1.0 + mass_a.sum())
    assert lower_sum <= truth + slack
    assert lower_a_only <= truth + slack
    assert truth <= upper_sum + slack
    assert truth <= upper_a_only + slack
    possibly, surely, _ = pdp_scan(mass_a, lows, highs, eps)
    truth_pdp = math.fsum(exact_pdp)
    assert surely <= truth_pdp + slack
    assert truth_pdp <= possibly + slack


# -- bucketing and log-MGF kernels ----------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    losses=st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=40),
    anchor=st.floats(-1.0, 1.0),
    width=st.floats(1e-3, 2.0),
)
def test_bucket_indices_match_numpy_oracle(losses, anchor, width):
    values = np.sort(np.array(losses))
    position = (values - anchor) / width
    nearest = np.round(position)
    expected = np.where(np.abs(position - nearest) <= 1e-6, nearest, np.ceil(position))
    got = _kernels.bucket_indices(values, anchor, width, 1e-6)
    np.testing.assert_array_equal(got, expected.astype(np.int64))
    # every loss lies in (J - 1) width + anchor .. J width + anchor, up to the snap
    assert np.all(values <= anchor + got * width + 1e-6 * width + 1e-12)
    assert np.all(values > anchor + (got - 1) * width - 1e-12)


def test_bucket_sums_match_bincount():
    rng = np.random.default_rng(3)
    index = np.sort(rng.integers(-7, 9, size=200))
    mass_a, mass_b = rng.random(200), rng.random(200)
    first, count = int(index[0]), int(index[-1] - index[0] + 1)
    sums_a, sums_b, most = _kernels.bucket_sums(index, first, count, mass_a, mass_b)
    np.testing.assert_allclose(sums_a, np.bincount(index - first, mass_a, count), rtol=1e-14)
    np.testing.assert_allclose(sums_b, np.bincount(index - first, mass_b, count), rtol=1e-14)
    assert most == np.bincount(index - first).max()


def test_log_moment_generating_matches_scipy_logsumexp():
    from scipy.special import logsumexp

    rng = np.random.default_rng(5)
    log_mass = np.log(rng.random(50)) - 300.0
    losses = rng.normal(size=50)
    lambdas = np.geomspace(1e-3, 1e6, 17)
    expected = [logsumexp(log_mass + lam * losses) for lam in lambdas]
    got = _kernels.log_moment_generating(log_mass, losses, lambdas)
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    assert np.all(
        _kernels.log_moment_generating(np.array([-np.inf]), np.zeros(1), lambdas) == -np.inf
    )
