"""``PrivacyBuckets.epsilon`` for a vector of deltas (issue 12)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from accountant import InfeasibleTargetError, InvalidInputError, PrivacyBuckets, mechanisms
from accountant.errors import CertificationWarning


def _accountant() -> PrivacyBuckets:
    return PrivacyBuckets(accuracy=1e-3).compose(mechanisms.GaussianMechanism(sigma=2.0), 10)


def test_a_vector_of_deltas_gives_the_single_answers_from_one_composition():
    targets = np.array([[1e-3, 1e-5], [1e-6, 1e-4]])
    accountant = _accountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        many = accountant.epsilon(targets)
        composed = len(accountant._memo.composed)
        singles = [_accountant().epsilon(float(t)) for t in targets.reshape(-1)]
        accountant.epsilon(targets)  # asked again: nothing new is composed
    assert len(accountant._memo.composed) == composed
    assert many.lower.shape == many.upper.shape == many.delta.shape == (2, 2)
    np.testing.assert_array_equal(many.lower.reshape(-1), [s.lower for s in singles])
    np.testing.assert_array_equal(many.upper.reshape(-1), [s.upper for s in singles])
    assert (np.diff(many.upper.reshape(-1)[[0, 3, 1]]) > 0).all()  # smaller delta, larger eps


def test_the_missed_accuracy_is_one_warning_with_a_count():
    # (not the Gaussian mechanism: its closed form meets any accuracy)
    accountant = PrivacyBuckets(accuracy=1e-9).compose(mechanisms.LaplaceMechanism(2.0), 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        accountant.epsilon([1e-3, 1e-4])
    messages = [str(w.message) for w in caught if w.category is CertificationWarning]
    assert len(messages) == 1 and "of 2 deltas" in messages[0]


def test_bad_or_infeasible_targets_are_refused_by_name():
    accountant = _accountant()
    with pytest.raises(InvalidInputError, match=r"delta must lie in \(0, 1\), got 2\.0"):
        accountant.epsilon([1e-5, 2.0])
    with pytest.raises(InvalidInputError, match="delta must not be empty"):
        accountant.epsilon(np.array([]))
    truncated = mechanisms.TruncatedGaussianMechanism(sigma=1.0, bound=2.0)
    with pytest.raises(InfeasibleTargetError):
        PrivacyBuckets().compose(truncated, 5).epsilon([0.5, 1e-9])
