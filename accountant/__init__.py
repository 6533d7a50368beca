"""Certified numerical differential-privacy accounting of truncated noise.

Data flows one way: noise -> pair -> privacy-loss distribution -> bounds.

>>> from accountant import ExtendedMA, WorstCasePair, noise
>>> p = noise.truncated_gaussian(sigma=100.0, bound=500.0, step=0.5)
>>> pair = WorstCasePair.additive(p, sensitivity=1.0)
>>> ma = ExtendedMA().compose(pair, times=128)
>>> 0 < ma.delta(0.3).upper < 1
True

The public names load on first use (PEP 562): ``import accountant`` and ``accountant
--help`` load none of the numerical modules, so they start at once; ``from accountant import
PrivacyBuckets`` loads what that class needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below are, for type checkers and the API docs
    from accountant import mechanisms, noise
    from accountant.buckets import PrivacyBuckets
    from accountant.dpsgd import DPSGDAccountant
    from accountant.epoch_samplers import (
        shuffled_epochs_delta,
        shuffled_epochs_epsilon,
        shuffled_epochs_upper_epsilon,
    )
    from accountant.errors import (
        AccountantError,
        CertificationWarning,
        InfeasibleTargetError,
        InvalidInputError,
        ShiftInvarianceWarning,
    )
    from accountant.learning import optimal
    from accountant.learning.calibration import calibrate_noise_multiplier
    from accountant.learning.calibration_results import CalibrationPoint, NoiseCalibration
    from accountant.learning.certification import Certificate, certify
    from accountant.learning.divergence import kl_divergence
    from accountant.learning.gaussian_baseline import GaussianBaseline, best_truncated_gaussian
    from accountant.learning.laplace_baseline import LaplaceBaseline, best_truncated_laplace
    from accountant.learning.shuffled_calibration import calibrate_shuffled_noise_multiplier
    from accountant.learning.smooth_loss import SmoothDelta, smooth_bucket_delta
    from accountant.learning.staircase_baseline import StaircaseBaseline, best_truncated_staircase
    from accountant.learning.training_losses import NoiseBound, noise_bound
    from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
    from accountant.moments.extended_ma import ExtendedMA
    from accountant.moments.log_moments import LogMomentSource, PairLogMoments
    from accountant.moments.results import (
        DirectionalBound,
        MomentsDelta,
        MomentsGradient,
        PairGradient,
    )
    from accountant.noise import NoiseDistribution
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
    from accountant.results import Bounds, EpsilonBounds, SamplerDeltaBounds, SamplerEpsilonBounds
    from accountant.storage import load_accountant, save_accountant

#: Public name -> the module that defines it (loaded by :func:`__getattr__` on first use).
_DEFINED_IN: dict[str, str] = {
    "PrivacyBuckets": "accountant.buckets",
    "DPSGDAccountant": "accountant.dpsgd",
    "shuffled_epochs_delta": "accountant.epoch_samplers",
    "shuffled_epochs_epsilon": "accountant.epoch_samplers",
    "shuffled_epochs_upper_epsilon": "accountant.epoch_samplers",
    "AccountantError": "accountant.errors",
    "CertificationWarning": "accountant.errors",
    "InfeasibleTargetError": "accountant.errors",
    "InvalidInputError": "accountant.errors",
    "ShiftInvarianceWarning": "accountant.errors",
    "calibrate_noise_multiplier": "accountant.learning.calibration",
    "calibrate_shuffled_noise_multiplier": "accountant.learning.shuffled_calibration",
    "CalibrationPoint": "accountant.learning.calibration_results",
    "NoiseCalibration": "accountant.learning.calibration_results",
    "Certificate": "accountant.learning.certification",
    "certify": "accountant.learning.certification",
    "kl_divergence": "accountant.learning.divergence",
    "GaussianBaseline": "accountant.learning.gaussian_baseline",
    "best_truncated_gaussian": "accountant.learning.gaussian_baseline",
    "LaplaceBaseline": "accountant.learning.laplace_baseline",
    "best_truncated_laplace": "accountant.learning.laplace_baseline",
    "SmoothDelta": "accountant.learning.smooth_loss",
    "smooth_bucket_delta": "accountant.learning.smooth_loss",
    "StaircaseBaseline": "accountant.learning.staircase_baseline",
    "best_truncated_staircase": "accountant.learning.staircase_baseline",
    "NoiseBound": "accountant.learning.training_losses",
    "noise_bound": "accountant.learning.training_losses",
    "SubsampledTruncatedGaussian": "accountant.mechanisms.subsampled_gaussian",
    "ExtendedMA": "accountant.moments.extended_ma",
    "LogMomentSource": "accountant.moments.log_moments",
    "PairLogMoments": "accountant.moments.log_moments",
    "DirectionalBound": "accountant.moments.results",
    "MomentsDelta": "accountant.moments.results",
    "MomentsGradient": "accountant.moments.results",
    "PairGradient": "accountant.moments.results",
    "NoiseDistribution": "accountant.noise",
    "AdditivePairMap": "accountant.pairs.pair_maps",
    "AllShiftsPairMap": "accountant.pairs.pair_maps",
    "SubsampledPairMap": "accountant.pairs.pair_maps",
    "pair_map": "accountant.pairs.pair_maps",
    "PrivacyLossDistribution": "accountant.pairs.pld",
    "exact_delta": "accountant.pairs.pld",
    "exact_delta_pdp": "accountant.pairs.pld",
    "exact_epsilon": "accountant.pairs.pld",
    "privacy_loss_distribution": "accountant.pairs.pld",
    "WorstCasePair": "accountant.pairs.worst_case",
    "additive_shift_pairs": "accountant.pairs.worst_case",
    "Bounds": "accountant.results",
    "EpsilonBounds": "accountant.results",
    "SamplerDeltaBounds": "accountant.results",
    "SamplerEpsilonBounds": "accountant.results",
    "load_accountant": "accountant.storage",
    "save_accountant": "accountant.storage",
}
#: Public names that are modules.
_MODULES: dict[str, str] = {
    "mechanisms": "accountant.mechanisms",
    "noise": "accountant.noise",
    "optimal": "accountant.learning.optimal",
}


def __getattr__(name: str) -> Any:
    """Load a public name on first use (and keep it: later lookups do not come here)."""
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _DEFINED_IN:
        value = getattr(importlib.import_module(_DEFINED_IN[name]), name)
    else:
        raise AttributeError(f"module 'accountant' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


#: The one place the version is written: pyproject.toml reads this literal
#: ([tool.setuptools.dynamic]); ``optimizers.__version__`` and ``accountant --version`` are it.
__version__ = "0.1.0"

__all__ = [
    "AccountantError",
    "AdditivePairMap",
    "AllShiftsPairMap",
    "Bounds",
    "CalibrationPoint",
    "Certificate",
    "CertificationWarning",
    "DPSGDAccountant",
    "DirectionalBound",
    "EpsilonBounds",
    "ExtendedMA",
    "GaussianBaseline",
    "InfeasibleTargetError",
    "InvalidInputError",
    "LaplaceBaseline",
    "LogMomentSource",
    "MomentsDelta",
    "MomentsGradient",
    "NoiseBound",
    "NoiseCalibration",
    "NoiseDistribution",
    "PairGradient",
    "PairLogMoments",
    "PrivacyBuckets",
    "PrivacyLossDistribution",
    "SamplerDeltaBounds",
    "SamplerEpsilonBounds",
    "ShiftInvarianceWarning",
    "SmoothDelta",
    "StaircaseBaseline",
    "SubsampledPairMap",
    "SubsampledTruncatedGaussian",
    "WorstCasePair",
    "__version__",
    "additive_shift_pairs",
    "best_truncated_gaussian",
    "best_truncated_laplace",
    "best_truncated_staircase",
    "calibrate_noise_multiplier",
    "calibrate_shuffled_noise_multiplier",
    "certify",
    "exact_delta",
    "exact_delta_pdp",
    "exact_epsilon",
    "kl_divergence",
    "load_accountant",
    "mechanisms",
    "noise",
    "noise_bound",
    "optimal",
    "pair_map",
    "privacy_loss_distribution",
    "save_accountant",
    "shuffled_epochs_delta",
    "shuffled_epochs_epsilon",
    "shuffled_epochs_upper_epsilon",
    "smooth_bucket_delta",
]
