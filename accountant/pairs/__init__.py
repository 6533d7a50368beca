"""Worst-case pairs of neighbouring outputs and what follows from one pair alone: the
pairs themselves (:mod:`~accountant.pairs.worst_case`), maps from a noise to its pairs
with their gradients (:mod:`~accountant.pairs.pair_maps`), and the privacy-loss
distribution with exact single-release bounds (:mod:`~accountant.pairs.pld`)."""

from accountant.pairs.pair_maps import (
    AdditivePairMap,
    AllShiftsPairMap,
    SubsampledPairMap,
    pair_map,
)
from accountant.pairs.pld import (
    PrivacyLossDistribution,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    privacy_loss_distribution,
)
from accountant.pairs.worst_case import WorstCasePair, additive_shift_pairs

__all__ = [
    "AdditivePairMap",
    "AllShiftsPairMap",
    "PrivacyLossDistribution",
    "SubsampledPairMap",
    "WorstCasePair",
    "additive_shift_pairs",
    "exact_delta",
    "exact_delta_pdp",
    "exact_epsilon",
    "pair_map",
    "privacy_loss_distribution",
]
