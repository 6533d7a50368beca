"""One small mechanism of each registered type, and which accountants take it."""

from __future__ import annotations

from typing import Any

import numpy as np

from accountant import (
    ExtendedMA,
    PairLogMoments,
    PrivacyBuckets,
    WorstCasePair,
    mechanisms,
    noise,
    privacy_loss_distribution,
)


def small_pair(sigma: float = 2.0) -> WorstCasePair:
    return WorstCasePair.additive(noise.truncated_gaussian(sigma, 8.0, 0.5), 1.0)


def lopsided_pair() -> WorstCasePair:
    return WorstCasePair.from_arrays(
        np.array([0.5, 0.25, 0.25, 0.0]), np.array([0.0, 0.25, 0.25, 0.5]), "lopsided"
    )


#: registered type name -> (a mechanism of that type, the accountant classes taking it)
CASES: dict[str, tuple[Any, tuple[type, ...]]] = {
    "WorstCasePair": (small_pair(), (PrivacyBuckets, ExtendedMA)),
    "WorstCasePairs": ([small_pair(2.0), small_pair(3.0)], (ExtendedMA,)),
    "PairLogMoments": (PairLogMoments((small_pair(), lopsided_pair())), (ExtendedMA,)),
    "PrivacyLossDistribution": (
        privacy_loss_distribution(lopsided_pair(), "A/B"),
        (PrivacyBuckets,),
    ),
    "GaussianMechanism": (mechanisms.GaussianMechanism(3.0), (PrivacyBuckets, ExtendedMA)),
    "TruncatedGaussianMechanism": (
        mechanisms.TruncatedGaussianMechanism(2.0, 10.0, 1.0),
        (PrivacyBuckets, ExtendedMA),
    ),
    "LaplaceMechanism": (mechanisms.LaplaceMechanism(2.0), (PrivacyBuckets, ExtendedMA)),
    "TruncatedLaplaceMechanism": (
        mechanisms.TruncatedLaplaceMechanism(2.0, 10.0, 0.5),
        (PrivacyBuckets, ExtendedMA),
    ),
    "TruncatedDiscreteLaplaceMechanism": (
        mechanisms.TruncatedDiscreteLaplaceMechanism(scale=2.0, bound=12, sensitivity=1),
        (PrivacyBuckets, ExtendedMA),
    ),
    "SubsampledLaplace": (
        mechanisms.SubsampledLaplace(scale=2.0, sampling_rate=0.1),
        (PrivacyBuckets, ExtendedMA),
    ),
    "WithoutReplacementGaussian": (
        mechanisms.WithoutReplacementGaussian(sigma=1.5, sampling_rate=0.1),
        (PrivacyBuckets, ExtendedMA),
    ),
    "SubsampledTruncatedGaussian": (
        mechanisms.SubsampledTruncatedGaussian(sigma=1.5, sampling_rate=0.1, cut=float("inf")),
        (PrivacyBuckets, ExtendedMA),
    ),
    "ShuffledEpoch": (
        mechanisms.ShuffledEpoch(
            sigma=1.5, batch_size=16, dataset_size=60, neighbours="replace-one"
        ),
        (PrivacyBuckets, ExtendedMA),
    ),
}
