"""Export a worst-case pair to a dp_accounting ``PrivacyLossDistribution``, pessimistically.

One direction of a pair (SPEC section 1) is a privacy-loss distribution: finite losses
``L(o) = ln A(o)/B(o)`` with A-masses, and the distinguishing mass ``omega`` (``L = +inf``).
dp_accounting keeps one direction as a pmf on the grid ``k * h`` (``h`` the
``value_discretization_interval``) plus an ``infinity_mass``, and computes
``delta(eps) = infinity_mass + sum_k p_k (1 - e^(eps - k h))`` over ``k h > eps``. This
term is increasing in the loss, so the export is *pessimistic*:

* every finite loss is rounded **up**: to ``k = ceil((L + r) / h)`` with ``r`` the bound on
  the rounding error of the computed loss (:attr:`PrivacyLossDistribution.loss_rounding`),
  and one step more where the float ``k * h`` still falls below ``L + r``;
* ``infinity_mass = max(omega, 1 - F)`` with ``F`` the finite A-mass: ``omega`` itself,
  plus the mass a pmf summing to ``S < 1`` lacks (``1 - S``), counted as distinguishing
  (a missing mass must never make delta smaller), each bound rounded up.

So ``delta`` of the export is ``>=`` the exact :func:`~accountant.pairs.pld.exact_delta`
at every eps (Meiser & Mohammadi 2018 and Koskela et al. 2020 use the same rounding up).

Directions. dp_accounting's ``pmf_add`` has ``mu_upper = M(D)``, ``mu_lower = M(D + x)``
(the record added in the lower one); ``pmf_remove`` has the record in ``mu_upper``. Our
``A`` is the output without the differing record (``A = p``, ``B = (1 - q) p + q p(. - C)``
for :meth:`~accountant.pairs.worst_case.WorstCasePair.subsampled`), so ``"A/B"`` is
``pmf_add`` and ``"B/A"`` is ``pmf_remove``. dp_accounting reports the larger of the two,
our ``direction="max"``.

What is certified: the single-release export. Composing it (``times``, or dp_accounting's
``compose``/``self_compose`` later) is dp_accounting's FFT composition with its own tail
truncation, which this library does not certify; :class:`accountant.PrivacyBuckets`
gives certified bounds under composition.
"""

from __future__ import annotations

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.interop.requirement import require_dp_accounting
from accountant.numerics.directed import fsum_bounds, up
from accountant.pairs.pld import PrivacyLossDistribution, privacy_loss_distribution
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import (
    OneDirection,
    check_one_direction,
    check_positive_int,
    check_positive_real,
)

__all__ = ["GridLosses", "round_up_to_grid", "to_dp_accounting_pld"]

#: The dp_accounting pmf each of our directions becomes (see the module docstring).
DP_ACCOUNTING_PMF: dict[OneDirection, str] = {"A/B": "pmf_add", "B/A": "pmf_remove"}


def _readonly(values: np.ndarray) -> np.ndarray:
    values = np.ascontiguousarray(values, dtype=np.float64)
    values.setflags(write=False)
    return values


@attrs.frozen(eq=False)
class GridLosses:
    """One direction of a pair on dp_accounting's loss grid: mass ``probs[i]`` at loss
    ``(lower_index + i) * discretization``, and ``infinity_mass`` at ``+inf``.

    ``direction`` is ours (``"A/B"`` or ``"B/A"``); ``dp_accounting_pmf`` names the
    dp_accounting pmf it is (``"pmf_add"`` or ``"pmf_remove"``).
    """

    direction: OneDirection
    discretization: float
    lower_index: int
    probs: np.ndarray = attrs.field(converter=_readonly)
    infinity_mass: float

    @property
    def dp_accounting_pmf(self) -> str:
        """``"pmf_add"`` for ``"A/B"``, ``"pmf_remove"`` for ``"B/A"``."""
        return DP_ACCOUNTING_PMF[self.direction]

    @property
    def losses(self) -> np.ndarray:
        """The grid losses ``(lower_index + i) * discretization``, computed as dp_accounting
        computes them."""
        return (np.arange(self.probs.size) + self.lower_index) * self.discretization

    def delta(self, epsilon: float) -> float:
        """``infinity_mass + sum_{k h > eps} p_k (1 - e^(eps - k h))``: dp_accounting's
        hockey-stick divergence of this pmf (for tests and for reading the export)."""
        above = self.losses > epsilon
        finite = float(np.sum(self.probs[above] * -np.expm1(epsilon - self.losses[above])))
        return self.infinity_mass + finite

    def to_pmf(self):
        """The dp_accounting pessimistic ``PLDPmf`` (sparse for at most 1000 nonzero grid
        points, else dense, as dp_accounting's own ``create_pmf`` chooses)."""
        pld_pmf = require_dp_accounting().pld.pld_pmf
        nonzero = np.flatnonzero(self.probs)
        loss_probs = {int(self.lower_index + i): float(self.probs[i]) for i in nonzero.tolist()}
        return pld_pmf.create_pmf(
            loss_probs, self.discretization, self.infinity_mass, pessimistic_estimate=True
        )


def round_up_to_grid(
    pld: PrivacyLossDistribution, discretization: float, direction: OneDirection
) -> GridLosses:
    """``pld`` (one ``direction`` of a pair) with every finite loss rounded up onto the grid
    ``k * discretization`` and ``infinity_mass = max(omega, 1 - F)``, both rounded up (see
    the module docstring)."""
    if not isinstance(pld, PrivacyLossDistribution):
        raise InvalidInputError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    h = check_positive_real("value_discretization_interval", discretization)
    direction = check_one_direction("direction", direction)
    finite_low = fsum_bounds([*pld.mass_a.tolist(), -1.0])[0]  # <= F - 1
    infinity_mass = max(up(pld.distinguishing_mass, 1), up(-finite_low, 1), 0.0)
    keep = pld.mass_a > 0.0
    if not keep.any():
        return GridLosses(direction, h, 0, np.zeros(0), infinity_mass)
    upper = pld.losses[keep] + up(pld.loss_rounding, 1)
    index = np.ceil(upper / h)
    index += index * h < upper  # the float k * h dp_accounting reads must not fall below
    if not np.isfinite(index).all() or np.abs(index).max() >= 2.0**53:
        raise InvalidInputError(
            f"value_discretization_interval={h!r} is too small for losses up to "
            f"{float(np.abs(upper).max())!r}: the grid index leaves the exact integers"
        )
    index = index.astype(np.int64)
    lower_index = int(index.min())
    probs = np.bincount(index - lower_index, weights=pld.mass_a[keep])
    return GridLosses(direction, h, lower_index, probs, infinity_mass)


def to_dp_accounting_pld(
    pair: WorstCasePair,
    *,
    value_discretization_interval: float = 1e-4,
    times: int = 1,
):
    """The pessimistic dp_accounting ``PrivacyLossDistribution`` of ``pair``: ``"A/B"`` as
    ``pmf_add``, ``"B/A"`` as ``pmf_remove``, losses rounded up onto the grid of width
    ``value_discretization_interval``, distinguishing and missing mass as ``infinity_mass``
    (module docstring). Its ``get_delta_for_epsilon(eps)`` is ``>= exact_delta(pair, eps)``.

    ``times > 1`` returns ``pld.self_compose(times)``: dp_accounting's composition, with
    its own tail truncation and FFT, which this library does not certify (use
    :class:`accountant.PrivacyBuckets` for certified bounds under composition).
    """
    times = check_positive_int("times", times)
    h = check_positive_real("value_discretization_interval", value_discretization_interval)
    dp_accounting = require_dp_accounting()
    pmfs = {
        direction: round_up_to_grid(privacy_loss_distribution(pair, direction), h, direction)
        for direction in DP_ACCOUNTING_PMF
    }
    exported = dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution(
        pmf_remove=pmfs["B/A"].to_pmf(), pmf_add=pmfs["A/B"].to_pmf()
    )
    return exported if times == 1 else exported.self_compose(times)
