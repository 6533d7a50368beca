"""Soundness of PrivacyBuckets on discretised truncated Gaussians (case (b) of
``tests/buckets/test_soundness.py``): losses on a lattice, the exact composed PLD by
convolving lattice-indexed masses in extended precision."""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest

from accountant import CertificationWarning, PrivacyBuckets, WorstCasePair
from accountant.noise import truncated_gaussian

# Bounds that do not reach the requested accuracy warn; they must still be certified,
# which is what these tests check. (pytest turns RuntimeWarning into errors.)
from tests.buckets.test_soundness import (
    DIRECTIONS,
    PRECISION,
    _mp,
)

pytestmark = pytest.mark.filterwarnings("ignore::accountant.errors.CertificationWarning")

# ---------------------------------------------------------------------------------------
# (b) discretised truncated Gaussians: the exact composed PLD on the loss lattice

LONG = np.longdouble
#: Unit roundoff of the oracle's arithmetic (1.1e-16 if longdouble is plain float64).
U_LONG = float(np.finfo(LONG).eps) / 2.0


class LatticeOracle:
    """The n-fold composition of the pair ``A = p`` padded, ``B = p`` shifted by ``m``.

    Finite outcomes ``i = m .. N-1`` have ``A = p_i``, ``B = p_{i-m}`` and loss
    ``c0 - j g`` with ``j = i - m``, ``c0 = (s^2 - 2 x_m s) / (2 sigma^2)`` and
    ``g = s h / sigma^2``; composing adds ``j``, so the composed A- and B-masses of lattice
    class ``K`` are plain convolutions and its loss is ``n c0 - K g``. A/B distinguishing
    outcomes are ``i < m`` (B = 0), B/A ones are ``i >= N`` (A = 0).
    """

    def __init__(self, sigma: float, bound: float, step: float, m: int, times: int):
        self.noise = truncated_gaussian(sigma, bound, step)
        self.pair = WorstCasePair.additive(self.noise, m * step)
        p = self.noise.pmf
        size = p.size
        x = self.noise.grid
        s = m * step
        self.g = s * step / sigma**2
        j = np.arange(size - m)
        ideal = (s * s - 2.0 * x[m:] * s) / (2.0 * sigma**2)
        # precondition: the float pmf's losses really sit on the lattice (within 1e-10,
        # far below the half-spacing that separates eps from every lattice point)
        actual = np.log(p[m:]) - np.log(p[: size - m])
        assert np.max(np.abs(actual - ideal)) < 1e-10
        c0 = ideal[0]
        assert np.allclose(ideal, c0 - j * self.g, rtol=0, atol=1e-10)
        a, b = p[m:].astype(LONG), p[: size - m].astype(LONG)
        mass_a, mass_b = np.ones(1, LONG), np.ones(1, LONG)
        for _ in range(times):  # repeated convolution, no FFT
            mass_a = np.convolve(mass_a, a)
            mass_b = np.convolve(mass_b, b)
        self.mass_a, self.mass_b = mass_a, mass_b
        self.losses = times * c0 - np.arange(mass_a.size) * self.g
        # Each convolution of non-negative terms adds a relative error of at most
        # (len(a) + 1) u per entry; this bounds the accumulated relative error.
        self.relative = 1.01 * times * (a.size + 2) * U_LONG
        with mpmath.workprec(PRECISION):
            keep_ab = 1 - mpmath.fsum(_mp(v) for v in p[:m])  # exact sums of the floats
            keep_ba = 1 - mpmath.fsum(_mp(v) for v in p[size - m :])
            self.omega = {"A/B": 1 - keep_ab**times, "B/A": 1 - keep_ba**times}
        self.times = times

    def mid_lattice(self, count: int = 12, eps_max: float | None = None) -> np.ndarray:
        """Epsilons half-way between lattice losses (no lattice class straddles them)."""
        top = float(self.losses[0])
        eps = top - (np.arange(int(top / self.g) + 1) + 0.5) * self.g
        eps = eps[(eps >= 0.0) & (eps <= (eps_max if eps_max is not None else np.inf))]
        pick = np.unique(np.linspace(0, eps.size - 1, min(count, eps.size)).astype(int))
        return eps[pick]

    def exact(self, eps: float, direction: str, kind: str) -> tuple[float, float]:
        """``(delta, rigorous bound of the oracle's own error)`` at a mid-lattice eps."""
        if direction == "A/B":
            above, a, b = self.losses > eps, self.mass_a, self.mass_b
        else:  # B/A: losses -L under B
            above, a, b = -self.losses > eps, self.mass_b, self.mass_a
        mass = a[above]
        if kind == "ADP":
            terms = mass - np.exp(LONG(eps)) * b[above]
            assert (terms >= 0).all()
        else:
            terms = mass
        total = float(np.sum(terms))
        # relative error of masses (on A and e^eps B <= A), of exp, and of the final sum
        error = float(np.sum(mass)) * (2.01 * self.relative + (mass.size + 4) * U_LONG)
        omega = float(self.omega[direction])
        return omega + total, error + 1e-30 * omega


LATTICE_CASES = [
    # sigma, bound, step, m (shift in grid steps), n
    (1.0, 10.0, 0.1, 10, 1),
    (1.0, 10.0, 0.1, 10, 8),
    (1.5, 15.0, 0.15, 4, 33),
    pytest.param(2.0, 20.0, 0.2, 5, 64, marks=pytest.mark.slow),
    pytest.param(3.0, 30.0, 0.3, 3, 64, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("sigma", "bound", "step", "m", "times"), LATTICE_CASES)
def test_lattice_gaussian_exact_composition(sigma, bound, step, m, times):
    oracle = LatticeOracle(sigma, bound, step, m, times)
    assert oracle.noise.size == 201
    eps = oracle.mid_lattice(count=10, eps_max=5.0)
    # add the mid-lattice eps whose exact delta is closest to 1e-3, 1e-6, 1e-9, 1e-12
    all_eps = oracle.mid_lattice(count=10**6)
    deltas = np.array([oracle.exact(e, "A/B", "ADP")[0] for e in all_eps])
    for target in (1e-3, 1e-6, 1e-9, 1e-12):
        eps = np.append(eps, all_eps[np.argmin(np.abs(np.log(deltas / target)))])
    eps = np.unique(eps)
    accountant = PrivacyBuckets().compose(oracle.pair, times=times)
    for kind in ("ADP", "PDP"):
        for direction in DIRECTIONS:
            query = accountant.delta if kind == "ADP" else accountant.delta_pdp
            bounds = query(eps, direction=direction)
            for k, e in enumerate(eps):
                if direction == "max":
                    ab, ab_err = oracle.exact(e, "A/B", kind)
                    ba, ba_err = oracle.exact(e, "B/A", kind)
                    truth, err = max(ab, ba), max(ab_err, ba_err)
                else:
                    truth, err = oracle.exact(e, direction, kind)
                low, high = float(bounds.lower[k]), float(bounds.upper[k])
                context = (kind, direction, float(e), low, truth, high)
                assert low <= truth + err, context
                assert truth - err <= high, context
                # the engine detects the lattice: the bracket is tiny wherever delta is not
                if truth >= 1e-6:
                    assert high - low <= 1e-6 * truth, context
                elif truth >= 1e-12:
                    assert high - low <= 1e-3 * truth + 1e-13, context


def test_pdp_at_a_lattice_point_spans_the_atom_and_reports_it():
    """At an eps that is a composed lattice loss (to within the rounding of the losses
    computed from the float masses), the PDP bracket spans that loss's A-mass: the bracket
    is [mass strictly above, mass at or above], the atom is their difference, and the
    accuracy is judged without it (no warning)."""
    oracle = LatticeOracle(1.0, 10.0, 0.1, 10, 8)
    k = int(np.argmin(np.abs(oracle.losses - 1.0)))  # a lattice loss near eps = 1
    eps = float(oracle.losses[k])
    accountant = PrivacyBuckets().compose(oracle.pair, times=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CertificationWarning)
        bounds = accountant.delta_pdp(eps, direction="A/B")
    omega = float(oracle.omega["A/B"])
    strictly = omega + float(np.sum(oracle.mass_a[:k]))  # losses fall with the index
    at_or_above = strictly + float(oracle.mass_a[k])
    assert bounds.lower <= strictly * (1 + 1e-12) and at_or_above * (1 - 1e-12) <= bounds.upper
    assert bounds.atom == pytest.approx(float(oracle.mass_a[k]), rel=1e-9)
    assert (bounds.upper - bounds.lower - bounds.atom) / bounds.upper <= 1e-4
    off = accountant.delta_pdp(eps + 0.5 * oracle.g, direction="A/B")
    assert off.atom == 0.0
    assert accountant.delta(eps, direction="A/B").atom == 0.0
