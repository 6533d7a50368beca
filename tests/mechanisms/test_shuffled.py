"""Shuffled and balls-and-bins epochs against brute force.

Every permutation (shuffle) or every batch assignment (balls-and-bins) of ``n <= 8`` examples
is enumerated, giving the exact Gaussian-mixture pair of one epoch for 1-D gradients; its
exact delta is computed by deterministic quadrature (no Monte Carlo):

* the explicit pair of Chua et al. (2024) (others 0, the differing example ``+C``; its
  neighbour 0 or ``-C``), any ``T`` and ``E`` with ``T E <= 4`` (and ``T = 2, E = 3``):
  Gauss-Hermite over all coordinates but the last, the last in closed form (the integrand is
  monotone in it, with at most the exponents ``-mu, 0, mu``); the stated tolerance is ten
  times the change between two node counts per coordinate (80/160 in one dimension down to
  10/16 in five), at least ``1e-9``, plus ``5e-4`` relative (where the positive part's
  boundary crosses the outer coordinates the integrand is smooth but sharp, and Gauss-Hermite
  converges slowly: against the next method for ``T = 2`` it is off by ``2.4e-4`` relative
  while two node counts agree better);
* random datasets (gradients uniform in ``[-C, C]``), ``T = 2``, one epoch: adaptive QUADPACK
  over ``y1`` (absolute tolerance ``1e-11``), the positive part in ``y2`` in closed form
  between the roots of the mixture difference (bracketed on a grid, refined by ``brentq``);
  stated tolerance ``1e-7``.

The bracket must contain the exact delta of the explicit pair, and the upper bound must hold
for every dataset tried.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, optimize, special

from accountant import (
    CertificationWarning,
    DPSGDAccountant,
    InfeasibleTargetError,
    InvalidInputError,
    PrivacyBuckets,
    SamplerDeltaBounds,
    SubsampledTruncatedGaussian,
    shuffled_epochs_delta,
    shuffled_epochs_epsilon,
)
from accountant.mechanisms import GaussianMechanism, ShuffledEpoch
from accountant.mechanisms.shuffled import log_phi_error, max_statistic_masses

SIGMA = 0.8
EPSILONS = (0.25, 1.0, 2.0)


# ---------------------------------------------------------------------------------------
# enumeration: the exact mixture pair of one epoch


def epoch_mixtures(
    gradients: list[float], other: float, batch_size: int, sampler: str
) -> tuple[list[tuple[float, tuple]], list[tuple[float, tuple]]]:
    """``(P, Q)`` as lists of ``(weight, batch sums)``: ``P`` on ``gradients`` (the differing
    example first), ``Q`` with the first gradient replaced by ``other``; every permutation cut
    into batches of ``batch_size`` (the last one short), or every assignment of the examples
    to ``T = ceil(n/b)`` batches, each with its exact probability."""
    n = len(gradients)
    batches = -(-n // batch_size)
    neighbour = [other, *gradients[1:]]
    counts: Counter = Counter()
    if sampler == "shuffle":
        draws = itertools.permutations(range(n))
        assign = [lambda perm, i: perm.index(i) // batch_size]
        total = math.factorial(n)
    else:
        draws = itertools.product(range(batches), repeat=n)
        assign = [lambda batch_of, i: batch_of[i]]
        total = batches**n
    for draw in draws:
        sums_p, sums_q = [0.0] * batches, [0.0] * batches
        for i in range(n):
            t = assign[0](draw, i)
            sums_p[t] += gradients[i]
            sums_q[t] += neighbour[i]
        counts[(tuple(sums_p), tuple(sums_q))] += 1
    p = Counter()
    q = Counter()
    for (sp, sq), c in counts.items():
        p[sp] += c
        q[sq] += c
    return [(c / total, m) for m, c in p.items()], [(c / total, m) for m, c in q.items()]


# ---------------------------------------------------------------------------------------
# exact delta of the explicit pair: Gauss-Hermite with the last coordinate in closed form


def _positive_part(a, c, b, mu):
    """``E[(a e^(mu z) + c + b e^(-mu z))^+]``, ``z ~ N(0, 1)``, for ``a >= 0 >= b``
    (increasing in ``z``), elementwise."""
    a, c, b = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, c, b)))
    z_root = np.full(a.shape, -np.inf)
    never = np.zeros(a.shape, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = np.sqrt(np.maximum(c * c - 4.0 * a * b, 0.0))
        # root u* of a u^2 + c u + b = 0 (u = e^(mu z)), the stable form of each sign of c
        u_pos = np.where(c > 0.0, -2.0 * b / (c + disc), (-c + disc) / (2.0 * a))
        u_lin = np.where(c > 0.0, -b / c, np.inf)  # a = 0: c + b/u = 0
        u = np.where(a > 0.0, u_pos, u_lin)
        never = (a == 0.0) & (c <= 0.0)
        z_root = np.where(u > 0.0, np.log(u) / mu, -np.inf)
    g = math.exp(0.5 * mu * mu)
    value = (
        a * g * special.ndtr(mu - z_root)
        + c * special.ndtr(-z_root)
        + b * g * special.ndtr(-mu - z_root)
    )
    return np.where(never, 0.0, np.maximum(value, 0.0))


def _grouped(mixture, mu, y_rest):
    """``sum_k w_k e^(m_k . y - |m_k|^2/2)`` split by the last coordinate's mean
    (``-mu, 0, mu``): three arrays over the nodes ``y_rest`` (the other coordinates)."""
    parts = {-1: 0.0, 0: 0.0, 1: 0.0}
    for w, m in mixture:
        m = np.asarray(m) * mu / 1.0
        key = round(m[-1] / mu)
        assert abs(m[-1] - key * mu) < 1e-12
        parts[key] = parts[key] + w * np.exp(y_rest @ m[:-1] - 0.5 * float(m @ m))
    return parts


def _ratio(mixture, mu, y):
    return sum(
        w * np.exp(y @ (np.asarray(m) * mu) - 0.5 * mu * mu * float(np.dot(m, m)))
        for w, m in mixture
    )


def explicit_delta(p_mix, q_mix, epochs: int, epsilon: float, nodes: int, mu: float) -> float:
    """``max(delta_{P/Q}, delta_{Q/P})`` of ``epochs`` independent epochs of the pair of
    mixtures ``p_mix``, ``q_mix`` (means in units of the clip, noise ``N(0, sigma^2)``), by
    Gauss-Hermite (``nodes`` per coordinate) under ``G = N(0, I)``: ``delta_{P/Q} =
    E_G[(p/g - e^eps q/g)^+]``, the last coordinate in closed form."""
    batches = len(p_mix[0][1])
    dims = batches * epochs - 1
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / math.sqrt(2.0 * math.pi)
    grid = np.stack(np.meshgrid(*([x] * dims), indexing="ij"), -1).reshape(-1, dims)
    weight = np.prod(np.stack(np.meshgrid(*([w] * dims), indexing="ij"), -1).reshape(-1, dims), 1)
    earlier = grid[:, : batches * (epochs - 1)].reshape(len(grid), epochs - 1, batches)
    last = grid[:, batches * (epochs - 1) :]
    scale_p = np.ones(len(grid))
    scale_q = np.ones(len(grid))
    for e in range(epochs - 1):
        scale_p = scale_p * _ratio(p_mix, mu, earlier[:, e])
        scale_q = scale_q * _ratio(q_mix, mu, earlier[:, e])
    gp, gq = _grouped(p_mix, mu, last), _grouped(q_mix, mu, last)
    result = []
    for first, second, s1, s2 in ((gp, gq, scale_p, scale_q), (gq, gp, scale_q, scale_p)):
        f = math.exp(epsilon)
        up = s1 * first[1] - f * s2 * second[1]  # coefficient of e^(mu z)
        mid = s1 * first[0] - f * s2 * second[0]
        down = s1 * first[-1] - f * s2 * second[-1]  # of e^(-mu z)
        increasing = np.all(up >= 0.0) and np.all(down <= 0.0)
        if increasing:
            inner = _positive_part(up, mid, down, mu)
        else:  # decreasing: z -> -z swaps the exponents
            assert np.all(up <= 0.0) and np.all(down >= 0.0)
            inner = _positive_part(down, mid, up, mu)
        result.append(float(np.dot(weight, inner)))
    return max(result)


def explicit_delta_with_tolerance(p_mix, q_mix, epochs, epsilon, mu):
    nodes, more = {1: (80, 160), 2: (48, 64), 3: (32, 48), 5: (10, 16)}[
        len(p_mix[0][1]) * epochs - 1
    ]
    value = explicit_delta(p_mix, q_mix, epochs, epsilon, nodes, mu)
    finer = explicit_delta(p_mix, q_mix, epochs, epsilon, more, mu)
    return finer, max(1e-9, 10.0 * abs(finer - value)) + 5e-4 * finer


# ---------------------------------------------------------------------------------------
# exact delta of any two-batch epoch: QUADPACK over y1, roots in y2


def two_batch_delta(p_mix, q_mix, epsilon: float, mu: float) -> float:
    """``max(delta_{P/Q}, delta_{Q/P})`` of one epoch of ``T = 2`` batches, mixtures of
    ``N(m, sigma^2 I)`` (means in units of the clip), by adaptive quadrature over ``y1`` of
    the closed-form positive part in ``y2`` between the sign changes of the density
    difference."""
    results = []
    for first, second in ((p_mix, q_mix), (q_mix, p_mix)):
        coeffs = np.array([w for w, _ in first] + [-math.exp(epsilon) * w for w, _ in second])
        means = np.array([m for _, m in first] + [m for _, m in second], dtype=float) * mu
        span = 12.0 + float(np.abs(means).max())
        grid = np.linspace(-span, span, 1601)

        def inner(y1, coeffs=coeffs, means=means, grid=grid, span=span):
            c = coeffs * np.exp(-0.5 * (y1 - means[:, 0]) ** 2)

            def h(y2):
                return float(np.dot(c, np.exp(-0.5 * (y2 - means[:, 1]) ** 2)))

            values = c @ np.exp(-0.5 * (grid[None, :] - means[:, 1][:, None]) ** 2)
            signs = np.sign(values)
            edges = [-np.inf]
            for i in np.flatnonzero(signs[:-1] * signs[1:] < 0):
                edges.append(optimize.brentq(h, grid[i], grid[i + 1], xtol=1e-14))
            edges.append(np.inf)
            total = 0.0
            for lo, hi in itertools.pairwise(edges):
                mid = 0.5 * (max(lo, -span) + min(hi, span))
                if h(mid) > 0.0:
                    total += float(
                        np.dot(c, special.ndtr(hi - means[:, 1]) - special.ndtr(lo - means[:, 1]))
                    )
            return total / math.sqrt(2.0 * math.pi)

        value, _ = integrate.quad(inner, -span, span, limit=400, epsabs=1e-11, epsrel=1e-10)
        results.append(value)
    return max(results)


def gaussian_delta(mu: float, epsilon: float) -> float:
    """Balle and Wang (2018): ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``."""
    return float(
        special.ndtr(-epsilon / mu + mu / 2)
        - math.exp(epsilon) * special.ndtr(-epsilon / mu - mu / 2)
    )


# ---------------------------------------------------------------------------------------
# the error model of the masses


def test_log_phi_error_model_holds_against_mpmath():
    mp.mp.dps = 50
    z = np.concatenate([np.linspace(-35.0, 35.0, 701), [-1e-3, 1e-3, 8.5, 9.5, 37.0]])
    computed = special.log_ndtr(z)
    exact = np.array([float(mp.log(mp.ncdf(mp.mpf(float(v))))) for v in z])
    assert np.all(np.abs(computed - exact) <= 0.25 * log_phi_error(z, computed))


@pytest.mark.parametrize(
    ("batches", "shift_p", "shift_q"), [(1, 1.25, 0.0), (4, 1.25, -1.25), (235, 0.9, 0.0)]
)
def test_interval_masses_enclose_the_exact_masses(batches, shift_p, shift_q):
    mp.mp.dps = 60
    edges = np.linspace(-6.0, 9.0, 61)
    m = max_statistic_masses(batches, shift_p, shift_q, edges)

    def cdf(x, shift):
        if x == math.inf:
            return mp.mpf(1)
        if x == -math.inf:
            return mp.mpf(0)
        x = mp.mpf(float(x))
        return mp.ncdf(x - shift) * mp.ncdf(x) ** (batches - 1)

    cuts = [-math.inf, *edges.tolist(), math.inf]
    for shift, low, high in ((shift_p, m.p_low, m.p_high), (shift_q, m.q_low, m.q_high)):
        exact = [cdf(b, shift) - cdf(a, shift) for a, b in itertools.pairwise(cuts)]
        for k, value in enumerate(exact):
            assert low[k] <= value <= high[k], (k, low[k], float(value), high[k])
        # tight: relative 1e-9, or 64 T ulps of 1 (upper-tail masses come from 1 - F)
        assert np.all(high - low <= 1e-9 * high + 64.0 * batches * 2.0**-53)


# ---------------------------------------------------------------------------------------
# the bracket against the enumerated explicit pair

EXPLICIT = [
    # (sampler, neighbours, n, b, epochs)
    ("shuffle", "add-remove", 2, 1, 1),
    ("shuffle", "add-remove", 4, 2, 2),
    ("shuffle", "replace-one", 8, 4, 1),
    ("shuffle", "replace-one", 4, 2, 2),
    ("shuffle", "add-remove", 4, 1, 1),
    ("shuffle", "replace-one", 8, 2, 1),
    ("shuffle", "add-remove", 2, 1, 3),
    ("balls-and-bins", "add-remove", 4, 2, 2),
    ("balls-and-bins", "replace-one", 8, 4, 1),
    ("balls-and-bins", "add-remove", 4, 1, 1),
]


@pytest.mark.parametrize(("sampler", "neighbours", "n", "b", "epochs"), EXPLICIT)
def test_bracket_contains_the_exact_delta_of_the_explicit_pair(sampler, neighbours, n, b, epochs):
    other = 0.0 if neighbours == "add-remove" else -1.0
    p_mix, q_mix = epoch_mixtures([1.0] + [0.0] * (n - 1), other, b, sampler)
    batches = n // b
    # the enumeration gives the pair of the module docstring: the example in batch t w.p. 1/T
    assert sorted(p_mix) == sorted(
        (1.0 / batches, tuple(float(i == t) for i in range(batches))) for t in range(batches)
    )
    mu = 1.0 / SIGMA
    for epsilon in EPSILONS:
        exact, tolerance = explicit_delta_with_tolerance(p_mix, q_mix, epochs, epsilon, mu)
        bounds = shuffled_epochs_delta(
            SIGMA, b, n, epochs, epsilon, neighbours=neighbours, sampler=sampler, intervals=2048
        )
        assert bounds.lower <= exact + tolerance, (epsilon, bounds, exact)
        assert exact - tolerance <= bounds.upper, (epsilon, bounds, exact)
        # not vacuous: the bracket is strict on both sides of the exact value
        assert 0.0 < bounds.lower < bounds.upper
        assert bounds.upper == pytest.approx(
            gaussian_delta(math.sqrt(epochs) * (1.0 if other == 0.0 else 2.0) * mu, epsilon),
            rel=2e-4,
        )


def test_explicit_quadrature_agrees_with_the_two_batch_quadrature():
    """The two exact methods of this file agree on the explicit pair (T = 2, one epoch)."""
    mu = 1.0 / SIGMA
    for other in (0.0, -1.0):
        p_mix, q_mix = epoch_mixtures([1.0, 0.0, 0.0, 0.0], other, 2, "shuffle")
        for epsilon in EPSILONS:
            a, tolerance = explicit_delta_with_tolerance(p_mix, q_mix, 1, epsilon, mu)
            assert two_batch_delta(p_mix, q_mix, epsilon, mu) == pytest.approx(
                a, abs=tolerance + 1e-7
            )


RANDOM = [
    ("shuffle", "add-remove", 4, 2),
    ("shuffle", "replace-one", 4, 2),
    ("shuffle", "add-remove", 8, 4),
    ("balls-and-bins", "add-remove", 4, 2),
    ("balls-and-bins", "replace-one", 6, 3),
]


@pytest.mark.parametrize(("sampler", "neighbours", "n", "b"), RANDOM)
def test_upper_bound_holds_for_random_datasets(sampler, neighbours, n, b):
    rng = np.random.default_rng(27 + n + b)
    mu = 1.0 / SIGMA
    for _ in range(2):
        gradients = rng.uniform(-1.0, 1.0, n).tolist()
        other = 0.0 if neighbours == "add-remove" else float(rng.uniform(-1.0, 1.0))
        p_mix, q_mix = epoch_mixtures(gradients, other, b, sampler)
        for epsilon in (0.25, 1.0):
            exact = two_batch_delta(p_mix, q_mix, epsilon, mu)
            upper = shuffled_epochs_delta(
                SIGMA, b, n, 1, epsilon, neighbours=neighbours, sampler=sampler, intervals=256
            ).upper
            assert exact <= upper + 1e-7, (gradients, other, epsilon, exact, upper)


# ---------------------------------------------------------------------------------------
# the partition


def _finite_pair_delta(epoch: ShuffledEpoch, intervals: int, epsilon: float) -> tuple[float, float]:
    """The exact delta of the enclosed one-epoch pairs (no composition) and what the
    enclosures may cost: ``(1 + e^eps)`` times the summed widths of the masses."""
    forward, backward = epoch.lower_bound_pairs(intervals)
    m = epoch.max_statistic_masses(intervals)
    f = math.exp(epsilon)
    widths = float(np.sum(m.p_high - m.p_low) + np.sum(m.q_high - m.q_low))
    delta = max(float(np.maximum(p.a - f * p.b, 0.0).sum()) for p in (forward, backward))
    return delta, (1.0 + f) * widths


@pytest.mark.parametrize("neighbours", ["add-remove", "replace-one"])
def test_lower_bound_rises_as_the_partition_is_refined(neighbours):
    epoch = ShuffledEpoch(sigma=0.7, batch_size=10, dataset_size=100, neighbours=neighbours)
    for epsilon in (0.5, 2.0):
        one_epoch = [_finite_pair_delta(epoch, k, epsilon) for k in (16, 32, 64, 128, 512, 4096)]
        # the coarse pair is a post-processing of the fine one: the exact pairs' delta rises;
        # the enclosed masses may lose up to what their widths cost (below 1e-8)
        for (a, _), (b, cost) in itertools.pairwise(one_epoch):
            assert b >= a - cost
            assert cost < 1e-8
        assert one_epoch[-1][0] > one_epoch[0][0] + 1e-4
        composed = [
            shuffled_epochs_delta(0.7, 10, 100, 3, epsilon, neighbours=neighbours, intervals=k)
            for k in (32, 128, 1024)
        ]
        for a, b in itertools.pairwise(composed):
            assert b.lower >= a.lower * (1.0 - 2e-4)
        assert composed[-1].lower > composed[0].lower


@pytest.mark.parametrize(("neighbours", "shift"), [("add-remove", 1.0), ("replace-one", 2.0)])
@pytest.mark.parametrize("epochs", [1, 3])
def test_one_batch_per_epoch_is_the_gaussian(neighbours, shift, epochs):
    """``T = 1``: no amplification, the max statistic is the output, so the lower bound is the
    Gaussian's delta up to the partition and PrivacyBuckets' accuracy."""
    for epsilon in (0.5, 1.5):
        bounds = shuffled_epochs_delta(1.2, 32, 32, epochs, epsilon, neighbours=neighbours)
        exact = gaussian_delta(math.sqrt(epochs) * shift / 1.2, epsilon)
        assert bounds.lower <= exact <= bounds.upper
        assert bounds.lower == pytest.approx(exact, rel=1e-3)


# ---------------------------------------------------------------------------------------
# the API


def test_epsilon_bracket_matches_the_delta_bracket():
    eps = shuffled_epochs_epsilon(0.9, 50, 1000, 2, 1e-4, intervals=1024)
    assert 0.0 < eps.lower < eps.poisson < eps.upper
    at_lower = shuffled_epochs_delta(0.9, 50, 1000, 2, eps.lower * 0.99, intervals=1024)
    at_upper = shuffled_epochs_delta(0.9, 50, 1000, 2, eps.upper, intervals=1024)
    assert at_lower.lower > 1e-4 >= at_upper.upper
    assert (eps.steps, eps.batches_per_epoch, eps.sampler) == (40, 20, "shuffle")


def test_short_last_batch_keeps_the_batch_count():
    epoch = ShuffledEpoch(sigma=1.1, batch_size=256, dataset_size=60000)
    assert (epoch.batches, epoch.last_batch_size) == (235, 96)
    bounds = shuffled_epochs_delta(1.1, 256, 60000, 1, 0.5, intervals=512)
    assert isinstance(bounds, SamplerDeltaBounds)
    assert bounds.steps == 235 and bounds.lower < bounds.upper


def test_accountants_compose_the_dominating_gaussian():
    epoch = ShuffledEpoch(sigma=1.5, batch_size=4, dataset_size=16, neighbours="replace-one")
    composed = PrivacyBuckets().compose(epoch, times=3).delta(1.0)
    exact = gaussian_delta(math.sqrt(3) * 2.0 / 1.5, 1.0)
    assert composed.lower <= exact <= composed.upper
    assert composed.upper == pytest.approx(exact, rel=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sigma": 0.0}, "sigma must be > 0, got 0.0"),
        ({"sigma": math.nan}, "sigma must be finite, got nan"),
        ({"batch_size": 9}, "batch_size must be <= dataset_size=8, got batch_size=9"),
        ({"epochs": 0}, "epochs must be a positive integer, got 0"),
        ({"neighbours": "substitution"}, "neighbours must be one of"),
        ({"sampler": "poisson"}, "sampler must be one of"),
        ({"epsilon": -1.0}, "epsilon must be >= 0, got -1.0"),
    ],
)
def test_bad_inputs_are_named(kwargs, message):
    args = {"sigma": 1.0, "batch_size": 2, "dataset_size": 8, "epochs": 1, "epsilon": 1.0}
    args.update(kwargs)
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(")):
        shuffled_epochs_delta(
            args.pop("sigma"),
            args.pop("batch_size"),
            args.pop("dataset_size"),
            args.pop("epochs"),
            args.pop("epsilon"),
            **args,
        )


# ---------------------------------------------------------------------------------------
# truncated noise: the bracket against the explicit pair with cut noise, integrated


def _truncated_pair_delta(mu: float, cut: float, epsilon: float, pieces: int) -> float:
    """``max(delta_{P/Q}, delta_{Q/P})`` of one shuffled epoch of two batches (the differing
    example in either w.p. 1/2) with renormalised noise cut at ``+-cut`` (units of sigma):
    ``P = (f_mu x f_0 + f_0 x f_mu) / 2``, ``Q = f_0 x f_0``, ``f_m`` the cut normal around
    ``m``; Gauss-Legendre on ``pieces`` pieces of each stretch between support edges."""
    edges = sorted({-cut, cut, mu - cut, mu + cut})
    nodes, weights = np.polynomial.legendre.leggauss(6)
    points, masses = [], []
    for lo, hi in itertools.pairwise(edges):
        starts = np.linspace(lo, hi, pieces + 1)
        half = 0.5 * (starts[1:] - starts[:-1])
        centre = 0.5 * (starts[1:] + starts[:-1])
        points.append((centre[:, None] + half[:, None] * nodes).ravel())
        masses.append((half[:, None] * weights).ravel())
    y, w = np.concatenate(points), np.concatenate(masses)
    norm = 1.0 - 2.0 * special.ndtr(-cut)

    def density(shift):
        inside = np.abs(y - shift) <= cut
        return (
            np.where(inside, np.exp(-0.5 * (y - shift) ** 2) / math.sqrt(2 * math.pi), 0.0) / norm
        )

    f0, fmu = density(0.0), density(mu)
    p = 0.5 * (np.outer(fmu, f0) + np.outer(f0, fmu))
    q = np.outer(f0, f0)
    cell = np.outer(w, w)
    scale = math.exp(epsilon)
    return max(
        float(np.sum(np.maximum(p - scale * q, 0.0) * cell)),
        float(np.sum(np.maximum(q - scale * p, 0.0) * cell)),
    )


@pytest.mark.parametrize("cut", [3.0, 4.0])
@pytest.mark.parametrize("epsilon", [0.25, 1.0])
def test_truncated_bracket_contains_the_exact_delta_of_the_cut_explicit_pair(cut, epsilon):
    """n = 4, b = 2, one epoch, noise cut at 3 or 4 sigma (renormalised): the cut run's
    explicit pair, integrated, lies in the bracket, which the coupling widens around the
    uncut one (the lower end falls, the upper end rises)."""
    mu = 1.0 / SIGMA
    exact = _truncated_pair_delta(mu, cut, epsilon, 120)
    finer = _truncated_pair_delta(mu, cut, epsilon, 240)
    tolerance = 10.0 * abs(finer - exact) + 1e-9
    bounds = shuffled_epochs_delta(SIGMA, 2, 4, 1, epsilon, cut=cut, dimension=1)
    uncut = shuffled_epochs_delta(SIGMA, 2, 4, 1, epsilon)
    assert bounds.lower <= finer + tolerance and finer - tolerance <= bounds.upper
    assert bounds.lower < uncut.lower and uncut.upper < bounds.upper
    assert (bounds.cut, bounds.dimension, bounds.truncation) == (cut, 1, "renormalised")
    assert bounds.lower > 0.0  # not vacuous


def test_truncated_epsilon_bracket_widens_with_the_dimension():
    """The upper end pays for every coordinate's escape (dimension x steps draws), the lower
    end only for the explicit pair's one-dimensional ones: more coordinates raise the upper
    end and barely move the lower one; both contain the uncut run's bracket."""
    common = {"delta": 1e-5, "cut": 7.0}
    uncut = shuffled_epochs_epsilon(2.0, 2, 8, 3, 1e-5)
    one = shuffled_epochs_epsilon(2.0, 2, 8, 3, dimension=1, **common)
    many = shuffled_epochs_epsilon(2.0, 2, 8, 3, dimension=1000, **common)
    assert many.lower <= one.lower <= uncut.lower  # (the penalty read at the upper end)
    assert many.lower == pytest.approx(uncut.lower, rel=1e-5)
    assert uncut.upper <= one.upper < many.upper
    with pytest.raises(InfeasibleTargetError, match="use a larger cut"):
        shuffled_epochs_epsilon(2.0, 2, 8, 3, dimension=10**7, **common)


# ---------------------------------------------------------------------------------------
# fixed-order batches and epochs stopped early


@pytest.mark.parametrize("neighbours", ["add-remove", "replace-one"])
def test_fixed_order_is_the_dominating_gaussian_at_both_ends(neighbours):
    """A fixed order is the dominating Gaussian itself: its bracket is PrivacyBuckets' own
    bracket of that Gaussian composed once per epoch, whatever the batches."""
    sensitivity = 2.0 if neighbours == "replace-one" else 1.0
    gaussian = GaussianMechanism(sigma=SIGMA, sensitivity=sensitivity)
    exact = PrivacyBuckets(accuracy=1e-4).compose(gaussian, times=3).epsilon(1e-5)
    bounds = shuffled_epochs_epsilon(
        SIGMA, 2, 8, 3, 1e-5, sampler="fixed-order", neighbours=neighbours
    )
    assert (bounds.lower, bounds.upper) == (exact.lower, exact.upper)
    assert bounds.sampler == "fixed-order" and bounds.completed_epochs == 3
    assert bounds.upper - bounds.lower <= 1e-4 * bounds.upper
    delta = shuffled_epochs_delta(SIGMA, 2, 8, 3, 1.0, sampler="fixed-order", neighbours=neighbours)
    assert delta.lower <= gaussian_delta(math.sqrt(3) * sensitivity / SIGMA, 1.0) <= delta.upper


def test_epochs_stopped_early_keep_what_the_pair_reads():
    """Two epochs started, the second stopped after one of its four steps: the upper end
    composes both epochs, the shuffled lower end only the completed one, the fixed order's
    lower end both (its pair reads each epoch's first batch); the Poisson figure counts the
    five steps. Several partial epochs are described by ``completed_epochs``."""
    whole = shuffled_epochs_epsilon(SIGMA, 2, 8, 2, 1e-5)
    one = shuffled_epochs_epsilon(SIGMA, 2, 8, 1, 1e-5)
    partial = shuffled_epochs_epsilon(SIGMA, 2, 8, 2, 1e-5, steps=5)
    assert partial.upper == whole.upper and partial.lower == one.lower
    assert (partial.epochs, partial.completed_epochs, partial.steps) == (2, 1, 5)
    five = PrivacyBuckets(accuracy=1e-4).compose(
        ShuffledEpoch(sigma=SIGMA, batch_size=2, dataset_size=8).poisson_twin, times=5
    )
    assert partial.poisson == float(five.epsilon(1e-5).upper)
    fixed = shuffled_epochs_epsilon(SIGMA, 2, 8, 2, 1e-5, steps=5, sampler="fixed-order")
    assert fixed.lower == shuffled_epochs_epsilon(SIGMA, 2, 8, 2, 1e-5, sampler="fixed-order").lower
    # three epochs started, none run to its end (at most three steps each)
    none = shuffled_epochs_epsilon(SIGMA, 2, 8, 3, 1e-5, steps=6, completed_epochs=0)
    assert none.lower == 0.0 and none.upper == shuffled_epochs_epsilon(SIGMA, 2, 8, 3, 1e-5).upper
    bounds = shuffled_epochs_delta(SIGMA, 2, 8, 3, 1.0, steps=6, completed_epochs=0)
    assert bounds.lower == 0.0 < bounds.upper


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_fixed_order_with_cut_noise_contains_the_cut_pair(truncation):
    """A fixed order with noise cut at 5 sigma on one coordinate: the explicit pair (the
    first batch's example shifts one coordinate by C, every epoch) is the cut
    one-dimensional Gaussian composed once per epoch, whose certified bracket
    (DPSGDAccountant of the subsampled truncated Gaussian at rate 1) must meet ours."""
    sigma, cut, epochs, delta = 2.0, 5.0, 3, 1e-3
    bounds = shuffled_epochs_epsilon(
        sigma,
        2,
        8,
        epochs,
        delta,
        sampler="fixed-order",
        cut=cut,
        dimension=1,
        truncation=truncation,
    )
    release = SubsampledTruncatedGaussian(
        sigma=sigma, sampling_rate=1.0, cut=cut, truncation=truncation
    )
    pair = DPSGDAccountant(dimension=1, accuracy=1e-4).compose(release, times=epochs)
    exact = pair.epsilon(delta)
    assert bounds.lower <= exact.upper and exact.lower <= bounds.upper
    uncut = shuffled_epochs_epsilon(sigma, 2, 8, epochs, delta, sampler="fixed-order")
    assert bounds.lower <= uncut.lower and uncut.upper <= bounds.upper
    assert bounds.lower > 0.5 * uncut.lower  # the coupling's penalty is small, not vacuous


def test_a_caveat_of_the_poisson_figure_is_said_of_it():
    """The Poisson figure beside a cut run may miss its accuracy (the cut's escapes over
    1000 x 12 coordinates): the warning names that figure, so it is not read as one of the
    sampler's bracket, which is unchanged."""
    with pytest.warns(CertificationWarning) as caught:
        bounds = shuffled_epochs_epsilon(2.0, 2, 8, 3, 1e-5, cut=7.0, dimension=1000)
    messages = [str(w.message) for w in caught]
    assert messages and all(
        m.startswith("the Poisson figure (poisson, not a bound for shuffle epochs): ")
        for m in messages
    )
    assert caught[0].filename == __file__  # said where the caller asked
    assert bounds.lower <= bounds.upper
