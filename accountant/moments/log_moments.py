"""Log-moments ``Gamma_lambda`` of one release, the input of the Extended Moments Accountant.

For a pair in direction A/B and ``lambda >= 0`` (paper, Proposition "Numerical
Extended MA"; SPEC section 3)::

    Gamma_lambda(A||B) = ln sum_{o: A(o), B(o) > 0} A(o) (A(o)/B(o))^lambda
                       = logsumexp_o(ln A(o) + lambda L(o)),

a log-moment-generating function of the finite privacy loss, hence convex in
lambda with slope ``dGamma/dlambda = E_w[L]`` under the tilted weights
``w(o) ∝ A(o) e^{lambda L(o)}``. Every source of log-moments (pairs here, analytic
mechanisms in :mod:`accountant.mechanisms`) implements
:class:`~accountant.protocol.LogMomentSource`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.numerics.directed import MassLogs
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.lazy import special
from accountant.pairs.pld import PrivacyLossDistribution, privacy_loss_distribution
from accountant.pairs.worst_case import WorstCasePair
from accountant.protocol import LogMomentSource
from accountant.validation import ONE_DIRECTION, OneDirection, check_lambda, check_one_direction

__all__ = ["LogMomentGradient", "LogMomentSource", "PairLogMoments"]


def pld_log_moment(pld: PrivacyLossDistribution, lam: float) -> float:
    """``Gamma_lambda = logsumexp(ln A + lambda L)`` over the finite outcomes."""
    if pld.losses.size == 0:
        return -math.inf
    return float(special.logsumexp(pld.log_mass_a + lam * pld.losses))


def pld_log_moment_error(pld: PrivacyLossDistribution, lam: float) -> float:
    """A bound on the absolute error of :func:`pld_log_moment`. Each term
    ``t = ln A + lambda L`` is off by at most ``4u((2 + lambda)|ln A| + lambda |ln B| +
    2 lambda |L|)`` (the ``ln``s within an ulp, :attr:`PrivacyLossDistribution.loss_rounding`
    for ``L``, one product and one sum), and ``logsumexp`` adds at most
    ``(log2 N + 136) u`` for the exponentials and the pairwise sum plus ``4u |Gamma|``."""
    if pld.losses.size == 0:
        return 0.0
    log_b = pld.log_mass_a - pld.losses
    terms = (
        (2.0 + lam) * np.abs(pld.log_mass_a) + lam * np.abs(log_b) + 2.0 * lam * np.abs(pld.losses)
    )
    gamma = pld_log_moment(pld, lam)
    summation = math.log2(pld.losses.size) + 136.0
    return UNIT_ROUNDOFF * (4.0 * float(np.max(terms)) + summation + 4.0 * abs(gamma))


def pld_log_moment_slope(pld: PrivacyLossDistribution, lam: float) -> float:
    """``dGamma/dlambda = sum_o w(o) L(o)``, ``w = softmax(ln A + lambda L)``."""
    if pld.losses.size == 0:
        return 0.0
    weights = special.softmax(pld.log_mass_a + lam * pld.losses)
    return float(np.dot(weights, pld.losses))


class PairLogMoments:
    """Log-moments of one worst-case pair, or the worst case over several pairs.

    For several pairs (e.g. every grid shift of non-monotone noise), each quantity
    is the maximum over the pairs: ``Gamma_lambda = max_k Gamma_lambda(pair_k)``
    (a maximum of convex functions, still convex) and ``omega = max_k omega_k``.
    This bounds any adaptive choice among the pairs in each release, because the
    Extended MA's proof only uses per-release upper bounds on both quantities.
    """

    def __init__(self, pairs: WorstCasePair | Sequence[WorstCasePair]):
        try:  # None and [] refused here, not later
            chosen = (pairs,) if isinstance(pairs, WorstCasePair) else tuple(pairs)
        except TypeError:
            chosen = ()
        if not chosen or not all(isinstance(p, WorstCasePair) for p in chosen):
            raise InvalidInputError(
                "pairs must be a WorstCasePair or a non-empty sequence of them, "
                f"got {type(pairs).__name__}"
            )
        self.pairs: tuple[WorstCasePair, ...] = chosen
        self._plds = {
            d: tuple(privacy_loss_distribution(p, d) for p in self.pairs) for d in ONE_DIRECTION
        }
        self.description = (
            self.pairs[0].description
            if len(self.pairs) == 1
            else f"worst case over {len(self.pairs)} pairs"
        )

    def plds(self, direction: OneDirection) -> tuple[PrivacyLossDistribution, ...]:
        """The PLD of each pair in ``direction``."""
        return self._plds[check_one_direction("direction", direction)]

    def _argmax_pair(self, lam: float, direction: OneDirection) -> int:
        values = [pld_log_moment(pld, lam) for pld in self._plds[direction]]
        return int(np.argmax(values))

    def log_moment(self, lam: float, direction: OneDirection) -> float:
        """``Gamma_lambda`` in ``direction``: the largest over the pairs."""
        lam = check_lambda("lam", lam)
        return max(pld_log_moment(pld, lam) for pld in self.plds(direction))

    def log_moment_slope(self, lam: float, direction: OneDirection) -> float:
        """``dGamma_lambda / dlambda`` of the pair that attains :meth:`log_moment` at ``lam``."""
        lam = check_lambda("lam", lam)
        pld = self.plds(direction)[self._argmax_pair(lam, direction)]
        return pld_log_moment_slope(pld, lam)

    def log_moment_error(self, lam: float, direction: OneDirection) -> float:
        """The largest :func:`pld_log_moment_error` over the pairs."""
        lam = check_lambda("lam", lam)
        return max(pld_log_moment_error(pld, lam) for pld in self.plds(direction))

    def distinguishing_mass(self, direction: OneDirection) -> float:
        """``omega`` in ``direction``: the largest over the pairs."""
        return max(pld.distinguishing_mass for pld in self.plds(direction))

    def mass_logs(self, direction: OneDirection) -> MassLogs:
        """The hull over the pairs of their :attr:`PrivacyLossDistribution.mass_logs`: the
        largest total and the smallest finite share bound any choice among the pairs."""
        plds = self.plds(direction)
        result = plds[0].mass_logs
        for pld in plds[1:]:
            assert result is not None and pld.mass_logs is not None  # set by __attrs_post_init__
            result = result.hull(pld.mass_logs)
        assert result is not None  # set by PrivacyLossDistribution.__attrs_post_init__
        return result

    def max_finite_loss(self, direction: OneDirection) -> float:
        """The largest finite loss over the pairs plus its rounding bound (``-inf`` if there
        is none)."""
        return max(pld.max_finite_loss + pld.loss_rounding for pld in self.plds(direction))

    def log_moment_log_gradient(self, lam: float, direction: OneDirection) -> LogMomentGradient:
        """Partial derivatives of ``Gamma_lambda`` with respect to the masses of the pair
        that attains it, as logs of magnitudes (so that tiny masses cannot overflow)::

            dGamma/dA(o) = (1 + lambda) e^{lambda L(o) - Gamma}        (> 0),
            dGamma/dB(o) = -lambda e^{(lambda + 1) L(o) - Gamma}       (< 0),

        for finite outcomes and 0 elsewhere; for direction B/A the roles of the pair's
        ``a`` and ``b`` are swapped. Outcomes with ``L = +inf`` are left to omega. The
        losses are the PLD's, put back on the pair's outcomes through its
        :class:`~accountant.pairs.outcomes.OutcomeIndex`.
        """
        lam = check_lambda("lam", lam)
        index = self._argmax_pair(lam, check_one_direction("direction", direction))
        pld = self._plds[direction][index]
        gamma = pld_log_moment(pld, lam)
        if lam > 0.0:
            second = math.log(lam) + (lam + 1.0) * pld.losses - gamma
        else:  # (dGamma/dB = 0 at lambda = 0)
            second = np.full(pld.losses.size, -math.inf)
        assert pld.outcomes is not None  # privacy_loss_distribution gives it
        log_first = pld.outcomes.scatter(math.log1p(lam) + lam * pld.losses - gamma, -math.inf)
        log_second = pld.outcomes.scatter(second, -math.inf)
        if direction == "A/B":
            return LogMomentGradient(index, log_first, log_second, positive_is_a=True)
        return LogMomentGradient(index, log_second, log_first, positive_is_a=False)


@attrs.frozen(eq=False)
class LogMomentGradient:
    """``ln |dGamma/da|`` and ``ln |dGamma/db|`` for pair ``pair_index`` of a source.

    The derivative is positive for the numerator distribution of the direction
    (``a`` when ``positive_is_a``) and negative for the other.
    """

    pair_index: int
    log_abs_grad_a: np.ndarray
    log_abs_grad_b: np.ndarray
    positive_is_a: bool
