"""Certificates of a noise: the certified PrivacyBuckets bracket and the utility."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from accountant import (
    CertificationWarning,
    InvalidInputError,
    PrivacyBuckets,
    noise,
)
from accountant.learning.certification import Certificate, certify
from accountant.pairs.pair_maps import pair_map

BOUND, STEP = 5.0, 0.25
ADDITIVE = pair_map(STEP, 1.0)
SUBSAMPLED = pair_map(STEP, 0.5, q=0.2)


@pytest.mark.parametrize("times", [1, 4, 8])
@pytest.mark.parametrize("kind", ["ADP", "PDP"])
@pytest.mark.parametrize("mapping", [ADDITIVE, SUBSAMPLED], ids=["additive", "subsampled"])
def test_certify_matches_privacy_buckets(times, kind, mapping):
    p = noise.truncated_gaussian(1.5, BOUND, STEP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        cert = certify(p, mapping, epsilon=0.5, times=times, kind=kind, accuracy=1e-3)
        buckets = PrivacyBuckets(accuracy=1e-3).compose(mapping.pair(p), times=times)
        direct = buckets.delta(0.5) if kind == "ADP" else buckets.delta_pdp(0.5)
    assert isinstance(cert, Certificate)
    assert cert.delta_upper == direct.upper
    assert cert.delta_lower == direct.lower
    assert cert.accuracy_achieved == direct.achieved_accuracy
    assert 0.0 <= cert.delta_lower <= cert.delta_upper <= 1.0
    assert (cert.noise, cert.epsilon, cert.times, cert.kind) == (p, 0.5, times, kind)
    assert cert.description == mapping.pair(p).description
    assert cert.utility_l1 == p.utility_l1 == cert.utility("L1") == cert.utility()
    assert cert.utility_l2 == p.utility_l2 == cert.utility("L2")
    with pytest.raises(InvalidInputError, match="kind"):
        cert.utility("L3")


def test_certify_passes_the_certification_warning_on():
    # eps = 50 leaves only distinguishing events of mass ~1e-32: the bracket is wide.
    p = noise.truncated_gaussian(STEP / 2, BOUND, STEP)
    with pytest.warns(CertificationWarning):
        cert = certify(p, pair_map(STEP, STEP), epsilon=50.0, times=1)
    assert cert.delta_lower <= cert.delta_upper < 1e-20


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"epsilon": math.nan}, r"epsilon.*nan"),
        ({"times": -1}, r"times.*-1"),
        ({"kind": "adp"}, r"kind.*adp"),
        ({"accuracy": 0.0}, r"accuracy.*0\.0"),
        ({"noise": np.ones(3) / 3}, r"noise.*ndarray"),
        ({"pair_map": None}, r"pair_map.*NoneType"),
    ],
)
def test_certify_refuses_bad_input(change, match):
    kwargs = {
        "noise": noise.truncated_gaussian(1.0, BOUND, STEP),
        "pair_map": ADDITIVE,
        "epsilon": 1.0,
        "times": 1,
        **change,
    }
    p, mapping = kwargs.pop("noise"), kwargs.pop("pair_map")
    with pytest.raises(InvalidInputError, match=match):
        certify(p, mapping, **kwargs)
