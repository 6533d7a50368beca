"""PrivacyBuckets: certified lower and upper delta(eps) under composition (SPEC section 2)."""

from accountant.buckets.engine import PrivacyBuckets
from accountant.results import Bounds, EpsilonBounds

__all__ = ["Bounds", "EpsilonBounds", "PrivacyBuckets"]
