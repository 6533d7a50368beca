"""Analytic mechanisms: noise given by a formula rather than a grid, one module per family
with all of its mathematics (the Extended MA's closed forms and the PrivacyBuckets
release). Each class implements :class:`accountant.protocol.AnalyticMechanism`, so both
accountants take it as it is:

>>> from accountant import PrivacyBuckets, mechanisms
>>> m = mechanisms.TruncatedGaussianMechanism(sigma=2.0, bound=10.0, sensitivity=1.0)
>>> bounds = PrivacyBuckets().compose(m, times=4).delta(1.0)
>>> bounds.lower <= bounds.upper
True

A new family is one new module here; the line that exports it below registers it.
"""

from accountant.mechanisms.discrete_laplace import TruncatedDiscreteLaplaceMechanism
from accountant.mechanisms.gaussian import GaussianMechanism, TruncatedGaussianMechanism
from accountant.mechanisms.laplace import LaplaceMechanism, TruncatedLaplaceMechanism
from accountant.mechanisms.shuffled import ShuffledEpoch
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
from accountant.mechanisms.subsampled_laplace import SubsampledLaplace
from accountant.mechanisms.without_replacement import WithoutReplacementGaussian

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "ShuffledEpoch",
    "SubsampledLaplace",
    "SubsampledTruncatedGaussian",
    "TruncatedDiscreteLaplaceMechanism",
    "TruncatedGaussianMechanism",
    "TruncatedLaplaceMechanism",
    "WithoutReplacementGaussian",
]
