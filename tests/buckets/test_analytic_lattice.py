"""Analytic releases rounded onto a lattice (``accountant.buckets.analytic_lattice``) by the
dominating ("connect-the-dots") split: the masses against mpmath (the split actually
computed, within its certified error, and the ideal split at the exact lattice points, within
the drift), total A-mass and B-mass kept, the numba kernel against a numpy oracle, and the
engine taking the lattice path."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from accountant import mechanisms
from accountant.buckets import analytic_lattice
from accountant.buckets._kernels import log_moment_generating
from accountant.buckets._lattice_kernel import gl_order, gl_tables, split_kernel
from accountant.buckets.bucketed import BucketBudgetError
from accountant.buckets.lattice_quadrature import SmoothLaw, two_difference
from accountant.buckets.merged_lattice import dominated_point_moments
from accountant.buckets.rounding import MEAN_STEP
from accountant.buckets.tails import LAMBDA_GRID, chernoff_window
from accountant.buckets.vector_kernels import split_masses
from accountant.mechanisms.gaussian import gaussian_law
from accountant.mechanisms.subsampled_gaussian_masses import subsampled_law
from tests.buckets import lattice_reference as ref

U = 2.0**-53
WIDTH, ANCHOR, TAIL = 1e-3, 3e-4, 1e-24

MECHANISMS = {
    "mnist": mechanisms.SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.0042667, cut=8.0),
    "q0.5": mechanisms.SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.5, cut=3.0),
    "clamped": mechanisms.SubsampledTruncatedGaussian(
        sigma=1.0, sampling_rate=0.5, cut=3.0, truncation="clamped"
    ),
    "uncut": mechanisms.SubsampledTruncatedGaussian(sigma=0.8, sampling_rate=0.01, cut=math.inf),
    "q1": mechanisms.SubsampledTruncatedGaussian(sigma=2.0, sampling_rate=1.0, cut=4.0),
    "gaussian": mechanisms.GaussianMechanism(sigma=2.0, sensitivity=1.0),
    "truncated": mechanisms.TruncatedGaussianMechanism(sigma=1.0, sensitivity=1.0, bound=3.0),
}
CASES = [(name, d) for name in MECHANISMS for d in ("A/B", "B/A")]


def _subsampled(m) -> bool:
    return isinstance(m, mechanisms.SubsampledTruncatedGaussian)


def _rounding(name: str, direction: str):
    """``(release, BucketedPLD, LawRounding, first index)`` at ``WIDTH``, ``ANCHOR``."""
    m = MECHANISMS[name]
    release = m.bucket_release()
    pld = release.lattice(direction, WIDTH, ANCHOR, TAIL)
    stats = release.statistics(direction, TAIL)
    step = Fraction(WIDTH)
    first = math.floor((Fraction(stats.low) - Fraction(ANCHOR)) / step)
    last = max(first + 1, math.ceil((Fraction(stats.high) - Fraction(ANCHOR)) / step))
    flip = direction == "B/A" and _subsampled(m)
    if _subsampled(m):
        part, _ = subsampled_law(m, release._weights(direction)[0])
    else:
        part = gaussian_law(m, release._bound, release._log_z)
    k0, k1, anchor = (-last, -first, -ANCHOR) if flip else (first, last, ANCHOR)
    return m, pld, part.round_onto(anchor, k0, k1, WIDTH, mirrored=flip), flip


def _split_drift(pld) -> float:
    """How far the split points may lie from the lattice points: the release's drift less the
    largest mean of a rounding step (``hoeffding_drift = MEAN_STEP w^2 + drift``)."""
    step = MEAN_STEP * pld.width * pld.width
    return max(pld.hoeffding_drift - step, 0.0) + 4.0 * U * step


def _ab_point(pld, index: int, flip: bool):
    """The A/B loss of lattice entry ``index`` of ``pld`` (mpf)."""
    point = mp.mpf(ANCHOR) + (pld.first_index + index) * mp.mpf(WIDTH)
    return -point if flip else point


def _picks(masses: np.ndarray, count: int = 6) -> list[int]:
    heavy = np.flatnonzero(masses > 1e-9 * masses.max())
    return sorted({int(i) for i in heavy[np.linspace(0, heavy.size - 1, count).astype(int)]})


@pytest.mark.parametrize(("name", "direction"), CASES)
def test_masses_match_the_computed_split_within_the_certified_error(name, direction):
    """Each rounded mass against mpmath's integral of the split the code defines (interval
    ends and points as computed), within its certified error; and that error is not absurdly
    loose: the largest certified relative error of the sample is within 1e3 of the largest
    one observed (or of 8 ulps)."""
    m, _, rounded, _ = _rounding(name, direction)
    ref_direction = direction if _subsampled(m) else "A/B"
    observed, certified = [], []
    for j in _picks(rounded.masses):
        exact = ref.kernel_mass(m, ref_direction, j, rounded.ends, rounded.c_low, rounded.c_high)
        error = abs(mp.mpf(float(rounded.masses[j])) - exact)
        assert error <= rounded.errors[j], (j, float(error), rounded.errors[j])
        observed.append(float(error / exact))
        certified.append(rounded.errors[j] / float(exact))
    assert max(certified) <= 1e3 * max(max(observed), 8.0 * U)


@pytest.mark.parametrize(("name", "direction"), CASES)
def test_masses_match_the_dominating_split_within_the_drift(name, direction):
    """The stored masses against the ideal dominating split at the exact lattice points:
    within the certified error plus the effect of the drift ``delta`` (the computed split's
    points are ``delta`` from the lattice: moving ``P`` or ``Q`` by ``delta`` moves an
    outcome's share ``t`` by at most ``delta (1 - t)/(1 - e^-W)`` or ``delta t e^-W/(1 -
    e^-W)``, in all at most ``delta e^(W/2)/W``; 4.2 of it, for outcomes within two lattice
    steps of the point)."""
    m, pld, _rounded, flip = _rounding(name, direction)
    ref_direction = direction if _subsampled(m) else "A/B"
    masses = pld.mass_a
    for j in _picks(masses)[1:-1]:
        point = _ab_point(pld, j, flip)
        exact = ref.hat_mass(m, ref_direction, point, WIDTH)
        near = masses[max(0, j - 2) : j + 3]
        error = pld.relative_error * masses[j] + pld.entry_error
        spread = 4.2 * math.exp(WIDTH / 2) / WIDTH
        drift = spread * _split_drift(pld) * float(np.sum(near)) * (1.0 + 1e-6)
        assert abs(mp.mpf(float(masses[j])) - exact) <= error + drift, j
    assert _split_drift(pld) < 1e-13
    assert pld.hoeffding_variance == WIDTH**2


@pytest.mark.parametrize(("name", "direction"), CASES)
def test_total_a_and_b_masses_are_kept(name, direction):
    """The rounded masses sum to the finite numerator mass within the certified errors and
    the lost mass, and to the A-mass of the outcomes kept (mpmath); their B-mass
    ``sum_J m_J e^-g_J`` is the B-mass of the outcomes kept (``e^-L`` in the release's own
    scale) within the drift (the split points lie ``delta`` from the lattice: ``e^-g`` is
    ``e^-P`` within a relative ``expm1(delta)``), the certified errors (weighed by
    ``e^-g``) and the lost mass (at most ``e^-(g_0 - delta)`` each), atoms included."""
    m, pld, _, flip = _rounding(name, direction)
    ref_direction = direction if _subsampled(m) else "A/B"
    masses = pld.mass_a
    total = math.fsum(masses)
    errors = pld.relative_error * masses + pld.entry_error
    slack = float(np.sum(errors)) * (1.0 + 1e-9) + 1e-15 * total
    finite = float(ref.finite_mass(m, ref_direction))
    assert finite - pld.lost_a - slack <= total <= finite + slack
    points = pld.first_index + np.arange(pld.size, dtype=np.float64)
    losses = ANCHOR + points * WIDTH
    ab = [_ab_point(pld, 0, flip), _ab_point(pld, pld.size - 1, flip)]
    kept, kept_b = ref.kept_masses(m, ref_direction, min(ab), max(ab))
    assert abs(total - float(kept)) <= slack + pld.lost_a
    scale = np.exp(-losses)
    b_total = math.fsum(masses * scale)
    drift = _split_drift(pld)
    tolerance = (
        math.expm1(drift) * math.fsum((masses + errors) * scale)
        + math.fsum(errors * scale) * (1.0 + 1e-9)
        + pld.lost_a * math.exp(drift - float(losses[0]))
        + 1e-15 * (np.max(np.abs(losses)) + 1.0) * b_total
    )
    assert abs(b_total - float(kept_b)) <= tolerance


def _oracle(lo, hi, c_lo, c_hi, law, radius, panels, mirrored):
    """A slow numpy rendering of ``split_kernel``: ``(m+, m-, quadrature error, order)``."""
    q, mu = law.q, law.mu
    delta, delta_low = two_difference(hi, lo)
    s_lo, s_hi = law.share(lo), law.share(hi)
    out = np.zeros((4, lo.size))
    for j in range(lo.size):
        d, dl = delta[j], delta_low[j]
        width = (d if q == 1.0 else -math.log1p(s_lo[j] * math.expm1(-d))) + c_lo[j] + c_hi[j]
        step = d / panels[j]
        for p in range(panels[j]):
            left = p * step
            last = p == panels[j] - 1
            right = 0.0 if last else (d - (p + 1) * step) + dl
            eta = 0.5 * (((d - left) + dl) if last else (p + 1) * step - left)
            ys = np.abs(np.array(law.side_y(np.array([lo[j] + left + eta]))))[:, 0]
            live = ys[np.array(law.weights) > 0]
            cap = 1.0 if q == 1.0 else min(1.0, 1.0 / (3.7 * s_lo[j]))
            r_y = max(radius[j] / mu, min(1.0 / (live.max() + eta / mu + 1.0), cap / mu))
            rho = mu * r_y / eta
            order = gl_order(rho)
            nodes, weights = np.polynomial.legendre.leggauss(order)
            tau_a = left + eta * (1.0 + nodes)
            tau_b = right + eta * (1.0 - nodes)
            first = tau_a <= tau_b
            tau_a, tau_b = (
                np.where(first, tau_a, (d - tau_b) + dl),
                np.where(first, (d - tau_a) + dl, tau_b),
            )
            ell = np.where(first, lo[j] + tau_a, hi[j] - tau_b)
            dens = law.density(ell)
            d_a = tau_a if q == 1.0 else -np.log1p(s_lo[j] * np.expm1(-tau_a))
            d_b = tau_b if q == 1.0 else np.log1p(s_hi[j] * np.expm1(tau_b))
            d_a, d_b = d_a + c_lo[j], d_b + c_hi[j]
            up, down = -np.expm1(-d_a), -np.expm1(-d_b)
            if mirrored:
                up = up * np.exp(-d_b)
            else:
                down = down * np.exp(-d_a)
            norm = -math.expm1(-width)
            out[0, j] += eta * np.sum(weights * dens * up) / norm
            out[1, j] += eta * np.sum(weights * dens * down) / norm
            bound = law.density_bound([np.array([y]) for y in ys], np.array([r_y]))[0]
            reach = mu * r_y * (1.0 if q == 1.0 else 1.361 * math.exp(mu * r_y))
            spread = reach * s_lo[j]
            growth = 1.01 * (1.0 + spread / width) * math.exp(2.0 * spread + 0.5 * width)
            factor = growth * bound * rho ** (-2.0 * order - 2.0)
            out[2, j] += 64.0 / 15.0 * eta * factor / (1.0 - rho**-2.0) * (1.0 + 1e-6)
            out[3, j] = max(out[3, j], order)
    return out


@pytest.mark.parametrize("kernel", [split_kernel, split_masses], ids=["numba", "numpy"])
@pytest.mark.parametrize("numerator", ["A", "B"])
@pytest.mark.parametrize("q", [0.01, 0.5, 1.0])
def test_split_kernel_matches_its_numpy_oracle(q, numerator, kernel):
    """Both renderings of the split (numba, and numpy for a fresh process:
    :mod:`accountant.buckets.vector_kernels`) against a slow one; their error bounds are
    the same terms."""
    rng = np.random.default_rng(7)
    weights = (1.0, 0.0) if numerator == "A" else (1.0 - q, q)
    law = SmoothLaw(0.9, q, weights, -1e-3, 0.0, (-7.0, 7.0), 0.0)
    lo = np.sort(rng.uniform(-6.0, 6.0, 40))
    hi = lo + rng.choice([1e-4, 0.05, 0.7, 3.0], lo.size)
    c_lo = np.where(rng.random(lo.size) < 0.3, rng.uniform(0.0, 1e-3, lo.size), 0.0)
    c_hi = np.where(rng.random(lo.size) < 0.3, rng.uniform(0.0, 1e-3, lo.size), 0.0)
    radius = np.full(lo.size, 0.9 / 8.0)
    panels = np.maximum(1, np.ceil((hi - lo) * 4.0 / (2.0 * radius))).astype(np.int64)
    delta, delta_low = two_difference(hi, lo)
    s_lo, s_hi = law.share(lo), law.share(hi)
    w_ab = -np.log1p(s_lo * np.expm1(-delta)) if q < 1.0 else delta.copy()
    w_ab = w_ab + c_lo + c_hi
    mirrored = numerator == "B"
    numbers = (q, law.mu, *law.weights, law.log_norm, law.norm_error, float(mirrored))
    plus, minus, _, _, quad, order = kernel(
        lo,
        hi,
        delta,
        delta_low,
        s_lo,
        s_hi,
        c_lo,
        c_hi,
        w_ab,
        radius,
        panels,
        numbers,
        *gl_tables(),
    )
    expected = _oracle(lo, hi, c_lo, c_hi, law, radius, panels, mirrored)
    np.testing.assert_allclose(plus, expected[0], rtol=1e-13)
    np.testing.assert_allclose(minus, expected[1], rtol=1e-13)
    np.testing.assert_allclose(quad, expected[2], rtol=1e-12)
    np.testing.assert_array_equal(order, expected[3])
    # the error terms are the same but for the numpy sum of an interval's k panels, not
    # compensated: in long double, 1.01 ((k - 1) u_wide + u) of the masses more (1.01 (k - 1)
    # u where the long double is a double)
    arguments = (lo, hi, delta, delta_low, s_lo, s_hi, c_lo, c_hi, w_ab, radius, panels)
    compensated = split_kernel(*arguments, numbers, *gl_tables())
    plain = split_masses(*arguments, numbers, *gl_tables())
    wide = float(np.finfo(np.longdouble).eps) / 2.0
    per_panel = wide if wide < 2.0**-53 else 2.0**-53
    for index, masses in ((2, plain[0]), (3, plain[1])):
        assert (plain[index] >= compensated[index] * (1.0 - 1e-12)).all()
        extra = 1.02 * (2.0**-53 + per_panel * panels) * masses
        assert (plain[index] <= compensated[index] * (1.0 + 1e-12) + extra).all()


def test_lattice_respects_the_bucket_budget():
    release = MECHANISMS["mnist"].bucket_release()
    with pytest.raises(BucketBudgetError):
        release.lattice("A/B", 1e-6, 0.0, TAIL, max_buckets=1000)


LAPLACE = {
    "laplace": mechanisms.LaplaceMechanism(scale=2.0, sensitivity=1.0),
    "truncated": mechanisms.TruncatedLaplaceMechanism(scale=1.0, bound=3.0, sensitivity=1.0),
    "narrow": mechanisms.TruncatedLaplaceMechanism(scale=1.0, bound=0.7, sensitivity=1.0),
}


@pytest.mark.parametrize("name", sorted(LAPLACE))
@pytest.mark.parametrize("width", [1e-3, 0.37])
def test_laplace_masses_and_a_and_b_masses(name, width):
    """Laplace (closed forms, ``accountant.mechanisms.laplace_lattice``): every mass against
    mpmath's dominating split at the float lattice points within the certified error (atoms
    are split at the exact points: within the drift), the total A-mass and B-mass
    ``sum m e^-g`` within the errors, the drift and the lost mass; both directions give the
    same release."""
    m = LAPLACE[name]
    release = m.bucket_release()
    pld = release.lattice("A/B", width, ANCHOR, TAIL)
    other = release.lattice("B/A", width, ANCHOR, TAIL)
    np.testing.assert_array_equal(pld.mass_a, other.mass_a)
    points = ANCHOR + np.arange(pld.first_index, pld.first_index + pld.size, dtype=float) * width
    masses = pld.mass_a
    errors = pld.relative_error * masses + pld.entry_error
    spread = 4.2 * math.exp(width / 2) / width
    for j in range(1, pld.size - 1):
        around = points[j - 1], points[j], points[j + 1]
        exact = ref.laplace_split_mass(m, *around)
        drift = spread * _split_drift(pld) * float(np.sum(masses[max(0, j - 2) : j + 3]))
        assert abs(mp.mpf(float(masses[j])) - exact) <= errors[j] + drift, j
        if j > 40:
            break
    finite, finite_b = ref.laplace_masses(m)
    total = math.fsum(masses)
    slack = float(np.sum(errors)) * (1.0 + 1e-9) + 1e-15
    assert float(finite) - pld.lost_a - slack <= total <= float(finite) + slack
    scale = np.exp(-points)
    b_total = math.fsum(masses * scale)
    drift = _split_drift(pld)
    tolerance = (
        math.expm1(drift) * math.fsum((masses + errors) * scale)
        + math.fsum(errors * scale) * (1.0 + 1e-9)
        + pld.lost_a * math.exp(drift - float(points[0]))
        + 1e-15 * (float(np.max(np.abs(points))) + 1.0) * b_total
    )
    assert abs(b_total - float(finite_b)) <= tolerance
    assert pld.hoeffding_variance == width**2 and drift < 1e-14


def test_b_errors_cover_losses_whose_exponential_overflows():
    """A lattice reaching losses below -690 (A-masses there only known to within the
    smallest normal float) cannot bound the B-masses ``A e^{-g}`` in floats: the B error is
    infinite (the A-only bounds remain), never a capped finite number."""
    m = mechanisms.GaussianMechanism(sigma=0.02, sensitivity=1.0)
    release = m.bucket_release()
    part = gaussian_law(m, math.inf, 0.0)
    stats = release.statistics("A/B", TAIL)
    wide = type(stats)(stats.mean, stats.variance, -800.0, stats.high, 0.0, None)
    logs = m.mass_logs("A/B")
    pld = analytic_lattice.lattice_release(part, [], "A/B", 1.0, 0.0, wide, logs)
    assert pld.first_index <= -700
    assert pld.error_b >= 2.2e-308 * math.exp(700.0)


@pytest.mark.parametrize(("name", "direction"), CASES)
def test_merged_point_moments_bound_the_merged_masses_at_their_points(name, direction):
    """The merged release's tail moments, taken from its dominating split's
    (``merged_lattice.dominated_point_moments``), bound the log-moment-generating function
    of the merged masses at their lattice points, each mass raised by its certified error
    (so of the true masses), in both tails."""
    pld = MECHANISMS[name].bucket_release().lattice(direction, WIDTH, ANCHOR, TAIL)
    merged = pld.dominated.a
    moments = merged.tail_moments[0][0]
    errors = merged.entry_errors if merged.entry_errors is not None else 0.0
    most = merged.mass_a * (1.0 + merged.relative_error) + errors
    keep = most > 0.0
    points = ANCHOR + (merged.first_index + np.arange(merged.size)) * WIDTH
    logs, pad = np.log(most[keep]), _points_pad(pld)
    for got, signed in (
        (moments.log_mgf_high, points[keep] + pad),
        (moments.log_mgf_low, -(points[keep] - pad)),
    ):
        exact = log_moment_generating(logs, signed, LAMBDA_GRID)
        finite = np.isfinite(exact)
        assert (got[finite] >= exact[finite]).all(), LAMBDA_GRID[finite][
            got[finite] < exact[finite]
        ]


def _points_pad(pld) -> float:
    """How far a merged lattice point may lie from ``ANCHOR + j WIDTH`` (its offsets)."""
    low, high = pld.dominated.points
    return max(abs(low - ANCHOR), abs(high - ANCHOR))


@pytest.mark.parametrize("direction", ["A/B", "B/A"])
def test_merged_lower_moments_place_the_window_of_many_releases_near_its_points(direction):
    """Summed at the merged points, the lower tail moments put the lower end of the Chernoff
    window of 10^7 releases near where the merged points lie (about ``n w / 2`` below the
    split's, each interval's mass at its lower point), not ``n w`` below it, where the split's
    moments raised by ``lambda w`` alone put it (a window hundreds wide in loss, which
    outgrew the budget of the merged composition's tilt)."""
    release = mechanisms.SubsampledTruncatedGaussian(
        sigma=0.5, sampling_rate=1e-4, cut=math.inf
    ).bucket_release()
    releases, width, tail = 10**7, 6.103515625e-05, 1e-15
    pld = release.lattice(direction, width, 0.0, tail)
    split = pld.tail_moments[0][0]
    lows = {
        name: chernoff_window(((moments, releases),), tail)[0]
        for name, moments in (
            ("split", split),
            ("raised", dominated_point_moments(split, width)),
            ("merged", pld.dominated.a.tail_moments[0][0]),
        )
    }
    shift = releases * width
    assert lows["raised"] < lows["split"] - 0.9 * shift
    assert lows["split"] - 0.6 * shift < lows["merged"] < lows["split"] - 0.4 * shift
