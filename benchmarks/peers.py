"""Adapters that feed the peer accountants the same inputs as this engine.

Peers (benchmark-only, never runtime dependencies): ``dp_accounting`` (Google's PLD
accountant) and ``prv_accountant`` (Microsoft's PRV accountant). Every function imports
its peer lazily, so this module imports fine without them; :func:`available` says which
are installed.

Same inputs: for a discrete pair ``(A, B)`` both peers get the two pmf arrays of the
pair and bound ``max(delta_{A/B}, delta_{B/A})``, the quantity
``PrivacyBuckets.delta(eps)`` brackets (``direction="max"``):

* dp_accounting: ``from_two_probability_mass_functions(log B, log A, symmetric=False)``
  builds the "remove" PLD (loss ``ln A/B`` under ``A``) and the "add" PLD (loss
  ``ln B/A`` under ``B``); ``get_delta_for_epsilon`` returns the larger of the two.
  The pessimistic estimate is its upper bound, the optimistic one its lower bound.
* prv_accountant 0.2.0 has no public constructor for a PRV given by losses and
  probabilities, so :class:`DiscreteLossPRV` implements its ``PrivacyRandomVariable``
  interface exactly (step CDF of the finite losses, ``pm_inf`` = distinguishing mass,
  exact Rényi divergence of the finite part). ``PRVAccountant.__init__`` is mirrored
  only to give the truncated PRV its exact mean (the stock one integrates the CDF with
  ``scipy.integrate.quad``, which a step CDF with 60,001 steps defeats); domain size,
  mesh, cell-centred discretisation, FFT composition and ``compute_delta`` are the
  peer's own code. One accountant per direction; the larger lower / estimate / upper
  is reported.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import math

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "DELTA_ERROR",
    "available",
    "dp_gaussian_delta",
    "dp_pair_delta",
    "prv_domain_size",
    "prv_gaussian_delta",
    "prv_pair_delta",
    "version",
]

#: ``delta_error`` handed to prv_accountant; far below every delta benchmarked, so the
#: width of its bracket is governed by ``eps_error``.
DELTA_ERROR = 1e-10

_DISTRIBUTIONS = {"dp_accounting": "dp-accounting", "prv_accountant": "prv-accountant"}


def available(module: str) -> bool:
    """Whether the peer ``module`` (``"dp_accounting"`` or ``"prv_accountant"``) imports."""
    try:
        importlib.import_module(module)
    except Exception:  # ImportError, or a broken install of the peer
        return False
    return True


def version(module: str) -> str:
    """Installed version of a peer (or any distribution), ``"not installed"`` if absent."""
    try:
        return importlib.metadata.version(_DISTRIBUTIONS.get(module, module))
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# ----------------------------------------------------------------------- dp_accounting


def _log_pmf(pmf: np.ndarray) -> dict[int, float]:
    """``{outcome index: ln mass}`` over the outcomes with positive mass."""
    index = np.flatnonzero(pmf > 0.0)
    return dict(zip(index.tolist(), np.log(pmf[index]).tolist(), strict=True))


def dp_pair_delta(
    a: np.ndarray,
    b: np.ndarray,
    releases: int,
    epsilon: float,
    interval: float,
    pessimistic: bool,
) -> float:
    """dp_accounting's delta for ``releases`` compositions of the pair ``(a, b)``, both
    directions (``symmetric=False``), pessimistic (upper) or optimistic (lower)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    distribution = pld.from_two_probability_mass_functions(
        _log_pmf(b),
        _log_pmf(a),
        pessimistic_estimate=pessimistic,
        value_discretization_interval=interval,
        symmetric=False,
    )
    return float(distribution.self_compose(releases).get_delta_for_epsilon(epsilon))


def dp_gaussian_delta(
    sigma: float,
    sensitivity: float,
    releases: int,
    epsilon: float,
    interval: float,
    pessimistic: bool,
) -> float:
    """dp_accounting's delta for ``releases`` Gaussian mechanisms (its own constructor)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    distribution = pld.from_gaussian_mechanism(
        sigma,
        sensitivity=sensitivity,
        pessimistic_estimate=pessimistic,
        value_discretization_interval=interval,
        use_connect_dots=pessimistic,  # connect-the-dots exists only for pessimistic estimates
    )
    return float(distribution.self_compose(releases).get_delta_for_epsilon(epsilon))


# ---------------------------------------------------------------------- prv_accountant


def _prv_classes():
    """The prv_accountant subclasses, defined on first use (the peer is optional)."""
    from prv_accountant import PrivacyRandomVariable, PRVAccountant, composers, discretisers
    from prv_accountant.accountant import compute_safe_domain_size
    from prv_accountant.domain import Domain
    from prv_accountant.privacy_random_variables import PrivacyRandomVariableTruncated

    class DiscreteLossPRV(PrivacyRandomVariable):
        """Loss ``ln(upper / lower)`` under ``upper``: finite part exactly, conditioned on
        being finite (prv_accountant's convention), ``+inf`` mass as ``pm_inf``."""

        def __init__(self, upper: np.ndarray, lower: np.ndarray) -> None:
            finite = (upper > 0.0) & (lower > 0.0)
            self._pm_inf = float(np.sum(upper[(upper > 0.0) & (lower == 0.0)]))
            losses = np.log(upper[finite]) - np.log(lower[finite])
            order = np.argsort(losses, kind="stable")
            self.losses = losses[order]
            probs = upper[finite][order]
            self.probs = probs / np.sum(probs)
            self._cumulative = np.concatenate([[0.0], np.cumsum(self.probs)])

        def cdf(self, t):
            position = np.searchsorted(self.losses, np.asarray(t, dtype=np.float64), "right")
            return self._cumulative[position]

        def rdp(self, alpha):
            return float(logsumexp((alpha - 1.0) * self.losses, b=self.probs) / (alpha - 1.0))

        def mean(self) -> float:
            return float(np.dot(self.losses, self.probs))

        @property
        def pm_inf(self) -> float:
            return self._pm_inf

    class ExactMeanTruncated(PrivacyRandomVariableTruncated):
        """The peer's truncation, with the exact mean of a :class:`DiscreteLossPRV`."""

        def mean(self) -> float:
            inside = (self.prv.losses > self.t_min) & (self.prv.losses <= self.t_max)
            kept = self.prv.probs[inside]
            return float(np.dot(self.prv.losses[inside], kept) / np.sum(kept))

    class DiscretePRVAccountant(PRVAccountant):
        """``PRVAccountant.__init__`` of prv_accountant 0.2.0, with the exact-mean truncation."""

        def __init__(self, prvs, eps_error, delta_error, max_self_compositions):
            self.eps_error = eps_error
            self.delta_error = delta_error
            self.prvs = prvs
            self.max_self_compositions = max_self_compositions
            half = compute_safe_domain_size(
                prvs, max_self_compositions, eps_error=eps_error, delta_error=delta_error
            )
            total = sum(max_self_compositions)
            mesh = eps_error / np.sqrt(total / 2 * np.log(12 / delta_error))
            domain = Domain.create_aligned(-half, half, mesh)
            truncated = [ExactMeanTruncated(p, domain.t_min(), domain.t_max()) for p in prvs]
            discrete = [discretisers.CellCentred().discretise(p, domain) for p in truncated]
            self.composer = composers.Heterogeneous(discrete)

    return DiscreteLossPRV, DiscretePRVAccountant, compute_safe_domain_size


def _gaussian_prv(sigma: float, sensitivity: float):
    from prv_accountant import GaussianMechanism

    return GaussianMechanism(noise_multiplier=sigma, l2_sensitivity=sensitivity)


def prv_domain_size(prvs: list, releases: int, eps_error: float) -> int:
    """Largest number of grid points prv_accountant will use for one of ``prvs`` (each
    composed ``releases`` times alone; its own domain-size rule)."""
    *_, compute_safe_domain_size = _prv_classes()
    half = max(
        compute_safe_domain_size([p], [releases], eps_error=eps_error, delta_error=DELTA_ERROR)
        for p in prvs
    )
    mesh = eps_error / math.sqrt(releases / 2 * math.log(12 / DELTA_ERROR))
    return int(2 * half / mesh) + 2


def prv_pair_prvs(a: np.ndarray, b: np.ndarray) -> list:
    """The two directional PRVs of a pair: ``ln A/B`` under ``A``, ``ln B/A`` under ``B``."""
    DiscreteLossPRV, *_ = _prv_classes()
    return [DiscreteLossPRV(a, b), DiscreteLossPRV(b, a)]


def prv_pair_delta(
    a: np.ndarray, b: np.ndarray, releases: int, epsilon: float, eps_error: float
) -> tuple[float, float, float]:
    """prv_accountant's ``(lower, estimate, upper)`` for the pair, max over directions."""
    _, DiscretePRVAccountant, _ = _prv_classes()
    results = []
    for prv in prv_pair_prvs(a, b):
        accountant = DiscretePRVAccountant([prv], eps_error, DELTA_ERROR, [releases])
        results.append(accountant.compute_delta(epsilon, [releases]))
    return tuple(max(r[k] for r in results) for k in range(3))


def prv_gaussian_delta(
    sigma: float, sensitivity: float, releases: int, epsilon: float, eps_error: float
) -> tuple[float, float, float]:
    """prv_accountant's ``(lower, estimate, upper)`` for the Gaussian mechanism (its own PRV)."""
    from prv_accountant import PRVAccountant

    accountant = PRVAccountant(
        prvs=[_gaussian_prv(sigma, sensitivity)],
        eps_error=eps_error,
        delta_error=DELTA_ERROR,
        max_self_compositions=[releases],
    )
    return tuple(float(v) for v in accountant.compute_delta(epsilon, [releases]))


def prv_gaussian_prvs(sigma: float, sensitivity: float) -> list:
    """The Gaussian PRV, for :func:`prv_domain_size`."""
    return [_gaussian_prv(sigma, sensitivity)]
