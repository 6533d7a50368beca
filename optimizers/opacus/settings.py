"""The one setting the noise and the accountant must share: where the noise is cut, and how.

DP-SGD adds noise of standard deviation ``sigma C`` (``sigma`` the noise multiplier, ``C``
the clip norm ``max_grad_norm``) to each coordinate of the summed clipped gradient. Cut at
``k`` (``cut``), no coordinate of the noise leaves ``[-k sigma C, k sigma C]``:

* ``"renormalised"`` (alias ``"resampled"``): the normal density restricted to the cut and
  divided by ``Z = Phi(k) - Phi(-k)``, drawn by redrawing every coordinate outside the cut
  (rejection sampling has exactly this law);
* ``"clamped"``: coordinates beyond the cut are moved onto it (atoms of mass ``Phi(-k)`` at
  each end).

These are the two laws of
:class:`accountant.mechanisms.subsampled_gaussian.SubsampledTruncatedGaussian` (SPEC
section 1, "DP-SGD"). :class:`~optimizers.opacus.accountant.TruncatedAccountant` and
:class:`~optimizers.opacus.optimizer.TruncatedDPOptimizer` both hold one
:class:`TruncationSettings`; the optimizer refuses to run with an accountant whose
settings describe another law.
"""

from __future__ import annotations

import math

import attrs

from accountant.validation import check_choice, check_positive_real

__all__ = ["DEFAULT_CUT", "DEFAULT_TRUNCATION", "TRUNCATIONS", "TruncationSettings"]

#: The cut ``k`` used when none is given (``PrivacyEngine(accountant="truncated")`` builds
#: its accountant without arguments): 10 standard deviations. The certified upper bound
#: pays ``e^eps tau`` with ``tau`` about ``2 Phi(-k) d steps`` for ``d`` coordinates
#: (:mod:`accountant.dpsgd.coupling`); ``2 Phi(-10) = 1.5e-23`` keeps that below 1e-12
#: for 10^6 parameters over 10^5 steps, where a cut of 8 (``1.2e-15``) would already
#: cost more than delta = 1e-5 at 10^4 steps.
DEFAULT_CUT = 10.0
#: The truncation used when none is given: redraw coordinates beyond the cut.
DEFAULT_TRUNCATION = "renormalised"
#: Accepted truncations; ``"resampled"`` is another name of ``"renormalised"``.
TRUNCATIONS = ("renormalised", "resampled", "clamped")


def _check_cut(value: object) -> float:
    return check_positive_real("cut", value)


def _check_truncation(instance: object, attribute: attrs.Attribute, value: object) -> None:
    check_choice("truncation", value, TRUNCATIONS)


@attrs.frozen(slots=True)
class TruncationSettings:
    """Noise cut at ``+-cut * noise_multiplier * max_grad_norm`` per coordinate, with
    ``truncation`` ``"renormalised"`` (= ``"resampled"``) or ``"clamped"`` (module
    docstring). ``cut`` is a finite ``k > 0``; the accountant further needs
    ``k * noise_multiplier > 1/2`` (checked when a step is accounted)."""

    cut: float = attrs.field(default=DEFAULT_CUT, converter=_check_cut)
    truncation: str = attrs.field(default=DEFAULT_TRUNCATION, validator=_check_truncation)

    @property
    def law(self) -> str:
        """``"renormalised"`` or ``"clamped"``: the law, whichever name was used."""
        return "clamped" if self.truncation == "clamped" else "renormalised"

    def same_law(self, other: TruncationSettings) -> bool:
        """Whether ``other`` describes the same noise (same cut, same law)."""
        return self.cut == other.cut and self.law == other.law

    def bound(self, std: float) -> float:
        """The largest magnitude a noise coordinate of standard deviation ``std`` takes:
        ``cut * std``."""
        return self.cut * std

    def __str__(self) -> str:
        cut = "no cut" if math.isinf(self.cut) else f"cut {self.cut:g} sigma"
        return f"{cut}, {self.truncation}"
