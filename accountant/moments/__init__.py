"""The Extended Moments Accountant (paper, Section "Extended Moments Accountant"; SPEC
section 3): log moments of a release (:mod:`~accountant.moments.log_moments`), the
accountant with its lambda search (:mod:`~accountant.moments.extended_ma`,
:mod:`~accountant.moments.lambda_search`) and its result classes."""

from accountant.moments.extended_ma import CONVERSIONS, ExtendedMA
from accountant.moments.log_moments import LogMomentSource, PairLogMoments
from accountant.moments.results import (
    DirectionalBound,
    MomentsDelta,
    MomentsGradient,
    PairGradient,
)

__all__ = [
    "CONVERSIONS",
    "DirectionalBound",
    "ExtendedMA",
    "LogMomentSource",
    "MomentsDelta",
    "MomentsGradient",
    "PairGradient",
    "PairLogMoments",
]
