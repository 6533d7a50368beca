"""Why many coordinates need DPSGDAccountant, not the one-dimensional pair alone.

With noise cut per coordinate (a box ``[-r, r]^d``, ``r = k sigma C``) and a clipped
gradient ``v`` of L2 norm ``C`` spread over ``d`` coordinates (``v_i = C / sqrt(d)``), the
outputs that only the neighbouring input can produce (the noisy sum leaves the box in some
coordinate) weigh, under ``B = (1 - q) noise + q (noise + v)``::

    omega_d = q (1 - (1 - t)^d),    t = [Phi(k) - Phi(k - 1/(sigma sqrt(d)))] / Z,

(renormalised cut, ``Z = Phi(k) - Phi(-k)``), and ``delta(eps) >= omega_d`` at every eps.
The one-dimensional pair the accountant certifies has ``omega_1 = q m0`` with the whole
shift on one coordinate. For ``k = 3``, ``sigma = 1``, ``d = 100``: ``omega_d / omega_1 = 2.35``,
so the one-dimensional certificate is not a bound for that gradient; the accountant for
``d`` coordinates is (checked here at the same setting).
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("opacus")

from scipy.stats import norm

from accountant import DPSGDAccountant, PrivacyBuckets, SubsampledTruncatedGaussian


def _spread_floor(sigma: float, q: float, cut: float, d: int) -> float:
    z = norm.cdf(cut) - norm.cdf(-cut)
    t = (norm.cdf(cut) - norm.cdf(cut - 1.0 / (sigma * math.sqrt(d)))) / z
    return q * -math.expm1(d * math.log1p(-t))


def test_spread_gradient_leaves_more_than_the_one_dimensional_certificate():
    sigma, q, cut = 1.0, 0.1, 3.0
    one = SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=q, cut=cut)
    assert _spread_floor(sigma, q, cut, 1) == pytest.approx(one.distinguishing_mass("B/A"))
    floor = _spread_floor(sigma, q, cut, 100)
    assert floor / one.distinguishing_mass("B/A") == pytest.approx(2.35, abs=0.01)
    certified = PrivacyBuckets(accuracy=1e-3).compose(one, 1).delta(30.0).upper
    assert certified < floor  # the 1-D certificate at eps = 30 is below the d = 100 floor
    many = DPSGDAccountant(dimension=100, accuracy=1e-3).compose(one, 1).delta(30.0)
    assert many.upper >= floor
