"""DP-SGD with truncated noise on many coordinates: a certified accountant
(:class:`DPSGDAccountant`) and the coupling bound it rests on
(:mod:`accountant.dpsgd.coupling`)."""

from accountant.dpsgd.accountant import CutAndUncut, DPSGDAccountant
from accountant.dpsgd.coupling import coupled_delta, escape_probability

__all__ = ["CutAndUncut", "DPSGDAccountant", "coupled_delta", "escape_probability"]
