"""The peer accountants on the Poisson-subsampled Gaussian (DP-SGD), for
``benchmarks/dpsgd.py``.

Benchmark-only: the peers are never runtime or test dependencies of the project, and
every function imports its peer lazily. A *schedule* is a sequence of
``(sigma, q, steps)``: ``steps`` DP-SGD steps with noise multiplier ``sigma`` and Poisson
sampling rate ``q``, clipping norm 1, add/remove neighbours. A homogeneous run is a
schedule of one entry. The peers run the untruncated Gaussian (the only noise they
support for DP-SGD).

* dp_accounting, pessimistic: ``PLDAccountant(value_discretization_interval=...)``
  composing ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)),
  steps)`` (its standard route: connect-the-dots, a pessimistic estimate),
  ``get_epsilon(delta)``.
* dp_accounting, optimistic: the accountant has no optimistic switch, so the PLD it
  builds is built directly with ``pessimistic_estimate=False`` (connect-the-dots exists
  only for pessimistic estimates, so this is its privacy-buckets construction):
  ``from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=False,
  use_connect_dots=False, value_discretization_interval=...)``, ``self_compose(steps)``,
  composed across the schedule, ``get_epsilon_for_delta(delta)``. Its eps is an
  optimistic (lower) estimate, the pessimistic one an upper estimate; neither is
  certified.
* prv_accountant: ``PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(q, sigma),
  ...], max_self_compositions=[steps, ...], eps_error=..., delta_error=delta / 1000)``
  and ``compute_epsilon(delta, [steps, ...])`` -> ``(lower, estimate, upper)``.
  ``delta_error = delta / 1000`` is what its own ``DPSGDAccountant`` users are told to
  pick and what its ``find_noise_multiplier`` uses.

Calibration (the noise multiplier for a target ``(eps, delta)``): dp_accounting's
``calibrate_dp_mechanism`` with the pessimistic accountant, a bisection (``brentq``) on
the optimistic eps, and for prv_accountant either its ``dpsgd.find_noise_multiplier`` or
:func:`prv_bisect`, a plain bisection on its upper eps (prv_accountant has no calibration
of its ``PRVAccountant`` with a stated tolerance in sigma).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "DELTA_ERROR_FACTOR",
    "SIGMA_TOLERANCE",
    "dp_calibrate",
    "dp_epsilon",
    "prv_bisect",
    "prv_calibrate",
    "prv_epsilon",
]

Schedule = Sequence[tuple[float, float, int]]

#: prv_accountant's ``delta_error`` is ``delta * DELTA_ERROR_FACTOR``.
DELTA_ERROR_FACTOR = 1e-3
#: Absolute tolerance in sigma of the dp_accounting calibrations (and of ours).
SIGMA_TOLERANCE = 1e-3


# ----------------------------------------------------------------------- dp_accounting


def _dp_optimistic_pld(schedule: Schedule, interval: float):
    """The optimistic PLD of the schedule, composed entry by entry."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    composed = None
    for sigma, q, steps in schedule:
        one = pld.from_gaussian_mechanism(
            sigma,
            sampling_prob=q,
            pessimistic_estimate=False,
            use_connect_dots=False,
            value_discretization_interval=interval,
        ).self_compose(steps)
        composed = one if composed is None else composed.compose(one)
    return composed


def dp_epsilon(schedule: Schedule, delta: float, interval: float, pessimistic: bool) -> float:
    """dp_accounting's eps at ``delta`` for the schedule: the pessimistic estimate of its
    ``PLDAccountant`` (an upper estimate) or the optimistic one (a lower estimate)."""
    if not pessimistic:
        return float(_dp_optimistic_pld(schedule, interval).get_epsilon_for_delta(delta))
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    for sigma, q, steps in schedule:
        event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
        accountant.compose(dp_accounting.SelfComposedDpEvent(event, int(steps)))
    return float(accountant.get_epsilon(delta))


def dp_calibrate(
    q: float, steps: int, epsilon: float, delta: float, interval: float, pessimistic: bool
) -> float:
    """The smallest sigma whose dp_accounting eps at ``delta`` is at most ``epsilon``, to
    :data:`SIGMA_TOLERANCE`: ``calibrate_dp_mechanism`` on the pessimistic accountant
    (its own calibration), a ``brentq`` bisection on the optimistic eps."""
    if pessimistic:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant

        def fresh():
            return pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)

        def event(sigma: float):
            subsampled = dp_accounting.PoissonSampledDpEvent(
                q, dp_accounting.GaussianDpEvent(sigma)
            )
            return dp_accounting.SelfComposedDpEvent(subsampled, steps)

        return float(
            dp_accounting.calibrate_dp_mechanism(fresh, event, epsilon, delta, tol=SIGMA_TOLERANCE)
        )
    from scipy.optimize import brentq

    def gap(sigma: float) -> float:
        return dp_epsilon([(sigma, q, steps)], delta, interval, False) - epsilon

    low, high = 0.25, 1.0
    while gap(high) > 0.0:
        low, high = high, 2.0 * high
    while gap(low) < 0.0:
        low, high = low / 2.0, low
    return float(brentq(gap, low, high, xtol=SIGMA_TOLERANCE))


# ---------------------------------------------------------------------- prv_accountant


def prv_epsilon(schedule: Schedule, delta: float, eps_error: float) -> tuple[float, float, float]:
    """prv_accountant's ``(lower, estimate, upper)`` eps at ``delta`` for the schedule
    (heterogeneous composition: one PRV per entry)."""
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    prvs = [PoissonSubsampledGaussianMechanism(q, sigma) for sigma, q, _ in schedule]
    counts = [int(steps) for _, _, steps in schedule]
    accountant = PRVAccountant(
        prvs=prvs,
        max_self_compositions=counts,
        eps_error=eps_error,
        delta_error=delta * DELTA_ERROR_FACTOR,
    )
    lower, estimate, upper = accountant.compute_epsilon(delta=delta, num_self_compositions=counts)
    return float(lower), float(estimate), float(upper)


def prv_calibrate(q: float, steps: int, epsilon: float, delta: float, eps_error: float) -> float:
    """prv_accountant's own calibration, ``dpsgd.find_noise_multiplier`` (its
    ``delta_error`` is ``delta / 1000``; its result's upper eps is within ``eps_error``
    of the target)."""
    from prv_accountant.dpsgd import find_noise_multiplier

    sigma = find_noise_multiplier(
        sampling_probability=q,
        num_steps=steps,
        target_epsilon=epsilon,
        target_delta=delta,
        eps_error=eps_error,
    )
    if not math.isfinite(sigma):
        raise ValueError(f"find_noise_multiplier returned sigma={sigma}")
    return float(sigma)


def prv_bisect(
    q: float,
    steps: int,
    epsilon: float,
    delta: float,
    eps_error: float,
    tolerance: float = SIGMA_TOLERANCE,
) -> tuple[float, float, int]:
    """The noise multiplier for ``(epsilon, delta)`` by bisection on prv_accountant's upper
    eps (:func:`prv_epsilon`, ``delta_error = delta / 1000``): ``(sigma_low, sigma,
    evaluations)`` with ``upper eps(sigma) <= epsilon < upper eps(sigma_low)`` and
    ``sigma - sigma_low <= tolerance``. The bracket starts at ``[0.5, 2]`` and is doubled
    or halved until it holds; then it is halved until it is ``tolerance`` wide. A sigma at
    which prv_accountant raises counts as too small (its domain grows as sigma shrinks)."""
    evaluations = 0

    def meets(sigma: float) -> bool:
        nonlocal evaluations
        evaluations += 1
        try:
            return prv_epsilon([(sigma, q, steps)], delta, eps_error)[2] <= epsilon
        except (ValueError, FloatingPointError):
            return False

    low, high = 0.5, 2.0
    while not meets(high):
        low, high = high, 2.0 * high
        if high > 1e4:
            raise ValueError(f"no sigma up to {high:g} meets eps={epsilon!r}")
    while meets(low):
        low, high = low / 2.0, low
        if low < 1e-3:
            raise ValueError(f"eps={epsilon!r} is met by sigma={low:g}; bracket not found")
    while high - low > tolerance:
        middle = 0.5 * (low + high)
        if meets(middle):
            high = middle
        else:
            low = middle
    return float(low), float(high), evaluations
