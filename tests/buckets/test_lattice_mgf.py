"""The lattice moment kernels (``_kernels.lattice_log_mgf``: early-stopping sums and
mean-keeping coarsening for small ``lambda``; ``vector_kernels.lattice_log_mgf``: numpy
log-sum-exp) give upper bounds on ``ln sum_j m_j
e^{+-lambda step j}``, checked against mpmath at 60 digits on adversarial masses (zeros at
the ends, 300 orders of magnitude between masses, masses near the overflow scale, a single
point, ``e^{-lambda step}`` underflowing), and stay within the coarsening allowance."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.buckets import _kernels, vector_kernels

KERNELS = {"numba": _kernels.lattice_log_mgf, "numpy": vector_kernels.lattice_log_mgf}

LAMBDAS = np.array([1e-3, 0.3, 3.0, 47.0, 1e3, 3e4, 1e6, 1e7])


def _exact(mass: np.ndarray, lam: float, step: float, upward: bool) -> mpmath.mpf:
    mpmath.mp.dps = 60
    sign = 1 if upward else -1
    total = mpmath.mpf(0)
    for j, m in enumerate(mass):
        if m > 0.0:
            total += mpmath.mpf(float(m)) * mpmath.exp(sign * mpmath.mpf(lam) * step * j)
    return mpmath.log(total) if total > 0 else mpmath.mpf("-inf")


def _check(mass: np.ndarray, step: float, lattice_log_mgf) -> None:
    for upward in (True, False):
        got = lattice_log_mgf(mass, LAMBDAS, step, upward)
        for lam, value in zip(LAMBDAS, got, strict=True):
            exact = _exact(mass, float(lam), step, upward)
            assert math.isfinite(value)
            assert value >= exact, (lam, upward, value, exact)
            # the sum the kernel forms (before the upward shift by lambda step J) well above
            # its underflow allowance of a few n^2 times the smallest normal number: tight
            formed = exact - (float(lam) * step * (mass.size - 1) if upward else 0.0)
            if formed > math.log(2.3e-308 * 4 * (mass.size + 1) ** 2) + 25.0:
                # coarsening raises the log-sum by at most 1e-8, rounding by a few n u
                slack = 1e-8 + 1e-13 * (mass.size + 2) + 1e-15 * float(lam * step * mass.size)
                assert value <= exact + slack, (lam, upward, value, exact)


masses = st.lists(
    st.one_of(
        st.just(0.0),
        st.floats(min_value=1e-300, max_value=1.0),
        st.floats(min_value=1e140, max_value=1e151),
    ),
    min_size=1,
    max_size=300,
)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@settings(max_examples=60, deadline=None)
@given(mass=masses, step=st.sampled_from([1e-6, 1e-4, 0.01, 1.0]))
def test_bounds_the_exact_sums(mass, step, kernel):
    _check(np.array(mass), step, KERNELS[kernel])


@pytest.mark.parametrize(
    "mass",
    [
        np.zeros(5),
        np.array([0.0, 0.0, 1.0]),
        np.array([1.0, 0.0, 0.0, 0.0]),
        np.array([1e-300, 0.0, 1e150]),
        np.concatenate([np.full(2000, 1e-300), [1.0], np.zeros(2000)]),
        np.exp(-(np.linspace(-8, 8, 4001) ** 2) / 2),
    ],
)
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_edge_masses(mass, kernel):
    lattice_log_mgf = KERNELS[kernel]
    if not mass.any():  # all zero: a finite floor, never -inf or NaN
        for upward in (True, False):
            assert np.isfinite(lattice_log_mgf(mass, LAMBDAS, 1e-4, upward)).all()
        return
    _check(mass, 1e-4, lattice_log_mgf)
