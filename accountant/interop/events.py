"""A dp_accounting ``DpEvent`` for additive truncated noise on a grid.

``TruncatedNoiseDpEvent(noise, sensitivity)`` releases ``f(D) + Z`` with ``Z`` drawn from
``noise`` (a :class:`~accountant.noise.NoiseDistribution`: a pmf on the grid
``x_i = x_0 + i h``, SPEC section 1) for a query of sensitivity ``s = m h``. Its worst-case
pair is :meth:`~accountant.pairs.worst_case.WorstCasePair.additive`
(``A = p``, ``B = p`` shifted by ``m``). Wrapped in dp_accounting's
``PoissonSampledDpEvent(q, ...)`` it is one DP-SGD step with Poisson sampling rate ``q``
and clip norm ``C = s``: the pair :meth:`~accountant.pairs.worst_case.WorstCasePair.subsampled`
(``A = p``, ``B = (1 - q) p + q p(. - C)``).

Like dp_accounting's own events it is a frozen attrs class that only describes the
mechanism; :class:`~accountant.interop.certified_accountant.CertifiedAccountant` accounts it.
"""

from __future__ import annotations

from typing import Any

import attrs

from accountant.interop.requirement import require_dp_accounting
from accountant.noise import NoiseDistribution
from accountant.noise.distribution import check_noise
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import check_positive_real

__all__ = ["TruncatedNoiseDpEvent"]

# dp_accounting ships no type information: its classes are Any to the type checker.
_DpEvent: Any = require_dp_accounting().dp_event.DpEvent


@attrs.frozen
class TruncatedNoiseDpEvent(_DpEvent):
    """Additive noise ``noise`` (a pmf on a grid, finite support) on a query of
    ``sensitivity`` (a whole number of grid steps). Equal events have the same noise
    object and sensitivity."""

    noise: NoiseDistribution = attrs.field(converter=lambda v: check_noise("noise", v))
    sensitivity: float = attrs.field(
        default=1.0, converter=lambda v: check_positive_real("sensitivity", v)
    )

    def __attrs_post_init__(self) -> None:
        self.noise.shift_steps(self.sensitivity)  # a whole number of steps, or a clear error

    def pair(self) -> WorstCasePair:
        """The worst-case pair of one release: ``WorstCasePair.additive(noise, sensitivity)``
        (symmetric noise falling monotonically from 0; other noise warns, see there)."""
        return WorstCasePair.additive(self.noise, self.sensitivity)

    def subsampled_pair(self, sampling_probability: float) -> WorstCasePair:
        """The pair of one Poisson-sampled release (rate ``q``, clip norm = ``sensitivity``):
        ``WorstCasePair.subsampled(noise, q, clip=sensitivity)``."""
        return WorstCasePair.subsampled(self.noise, sampling_probability, self.sensitivity)
