"""Certified numerical differential-privacy accounting of truncated noise.

Data flows one way: noise -> pair -> privacy-loss distribution -> bounds.

>>> from accountant import ExtendedMA, WorstCasePair, noise
>>> p = noise.truncated_gaussian(sigma=100.0, bound=500.0, step=0.5)
>>> pair = WorstCasePair.additive(p, sensitivity=1.0)
>>> ma = ExtendedMA().compose(pair, times=128)
>>> 0 < ma.delta(0.3).upper < 1
True
"""

from accountant import mechanisms, noise
from accountant.buckets import PrivacyBuckets
from accountant.dpsgd import DPSGDAccountant
from accountant.epoch_samplers import shuffled_epochs_delta, shuffled_epochs_epsilon
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
    "smooth_bucket_delta",
]
