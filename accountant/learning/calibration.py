"""Calibrating DP-SGD: the noise multiplier that meets a target ``(eps, delta)``, certified.

:func:`calibrate_noise_multiplier` returns the smallest noise multiplier ``sigma`` it
found whose **certified** PrivacyBuckets upper bound on ``delta(eps)`` (ADP, the larger
of both directions) after ``steps`` releases of
:class:`~accountant.mechanisms.subsampled_gaussian.SubsampledTruncatedGaussian` on
``dimension`` coordinates (:class:`~accountant.dpsgd.DPSGDAccountant`) is at most the
target,
together with ``sigma_low``, a noise multiplier whose certified *lower* bound exceeds the
target (``sigma_low`` fails). Every verdict rests on certified bounds only; the search
that places the evaluations (:mod:`accountant.learning.calibration_steps`) may be as rough as it
likes.

Why every ``sigma <= sigma_low`` fails too: for the renormalised cut, ``delta(eps)`` of
the composition does not increase with ``sigma``. In units of ``sigma`` the pair is
``A = Z``, ``B = (1 - q) Z + q (Z + 1/sigma)`` with ``Z`` a normal cut at ``+-k``, whose
density is log-concave; so ``B/A`` is monotone (monotone likelihood ratio), every
``delta(eps)``, ``eps`` real, is a supremum over half-lines of ``P_A[x < t] - e^eps
P_B[x < t]`` (or its mirror), and ``P_B[x < t]`` falls as the shift ``1/sigma`` grows.
So the pair at a smaller ``sigma`` dominates the pair at a larger one at every ``eps``
(Blackwell), and domination survives composition. With ``dimension > 1`` the certified
lower bound is still that of the one-dimensional pair, a lower bound for any number of
coordinates, so the argument holds unchanged. The clamped cut (atoms at ``+-k``)
has no monotone likelihood ratio; there the claim is checked numerically by the tests,
not proven, and ``sigma_low`` itself is all that is certified.

The search works on ``y = ln delta - ln target`` over ``x = ln sigma`` (smooth and
decreasing): a Gaussian-DP guess, secant steps until the root is bracketed, then regula
falsi with the Illinois rule. Early evaluations use a coarse PrivacyBuckets accuracy
(``search_accuracy``); near the root, two evaluations at the final accuracy place
``sigma`` and ``sigma_low`` at most ``tolerance`` apart (relative). The final accuracy
defaults to what that needs, ``ln(1 + tolerance) |dy/dx| / 2``: a delta bracket that
narrow decides a sigma a quarter tolerance away from the root.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from accountant.buckets.progress import query_progress
from accountant.dpsgd.coupling import coupled_delta, escape_probability
from accountant.errors import InfeasibleTargetError, InvalidInputError
from accountant.learning.calibration_results import CalibrationPoint, NoiseCalibration
from accountant.learning.calibration_search import CalibrationSearch, CalibrationSettings
from accountant.mechanisms.subsampled_gaussian import TRUNCATIONS
from accountant.numerics.lazy import optimize, special
from accountant.validation import (
    check_choice,
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)

__all__ = ["CalibrationPoint", "NoiseCalibration", "calibrate_noise_multiplier"]

#: Default coarse PrivacyBuckets accuracy of the search (before the final pair).
SEARCH_ACCURACY = 0.05
#: The share of delta that the more comfortable cut suggested by an infeasible target
#: leaves to the noise (the uncut Gaussian's delta_G); the rest goes to the coupling term.
NOISE_SHARE = 0.5
#: The largest cut tried for a suggestion: ``2 Phi(-40)`` underflows, so ``tau`` is 0 there.
_CUT_CEILING = 40.0


def _check_cut(value: Any) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    return check_positive_real("cut", value)


def _check_dimension(value: Any, cut: Any) -> int:
    """The noised coordinates per step; required with a finite cut (the certified bound
    depends on it), and 1 when there is no cut and it is not given (it changes nothing)."""
    if value is None:
        if cut == math.inf:
            return 1
        raise InvalidInputError(
            f"dimension must be given with a finite cut (cut={cut!r}): the number of "
            "noised coordinates per step (the model's trainable parameters; 1 for one "
            "number), got None"
        )
    return check_positive_int("dimension", value)


def _settings(**kw: Any) -> CalibrationSettings:
    """Every argument checked, naming it and its value."""
    check_choice("truncation", kw["truncation"], TRUNCATIONS)
    accuracy = kw["accuracy"]
    settings = CalibrationSettings(
        epsilon=check_positive_real("epsilon", kw["epsilon"]),
        delta=check_target_delta("delta", kw["delta"]),
        sampling_rate=check_probability("sampling_rate", kw["sampling_rate"]),
        steps=check_positive_int("steps", kw["steps"]),
        cut=_check_cut(kw["cut"]),
        dimension=_check_dimension(kw["dimension"], kw["cut"]),
        clip=check_positive_real("clip", kw["clip"]),
        truncation=kw["truncation"],
        tolerance=check_open_fraction("tolerance", kw["tolerance"]),
        accuracy=None if accuracy is None else check_open_fraction("accuracy", accuracy),
        search_accuracy=check_open_fraction("search_accuracy", kw["search_accuracy"]),
        max_sigma=check_positive_real("max_sigma", kw["max_sigma"]),
        max_evaluations=check_positive_int("max_evaluations", kw["max_evaluations"]),
    )
    if settings.max_sigma <= settings.min_sigma:
        raise InvalidInputError(
            f"max_sigma must exceed the smallest noise multiplier searched, "
            f"{settings.min_sigma!r} (MIN_SIGMA or 1/(2 cut)), got {settings.max_sigma!r}"
        )
    if settings.max_evaluations < 2:
        raise InvalidInputError(
            f"max_evaluations must be at least 2, got {settings.max_evaluations!r}"
        )
    _check_coupling(settings)
    _check_clamped_floor(settings)
    return settings


def _coupling_share(epsilon: float, delta: float, cut: float, draws: int, truncation: str) -> float:
    """The share of ``delta`` that the coupling term of the ``d``-dimensional bound uses
    by itself, whatever sigma: :func:`~accountant.dpsgd.coupling.coupled_delta` at
    ``delta_G = 0``, over ``delta``, i.e. ``e^eps tau / ((1 - tau) delta)`` renormalised
    and ``(1 + e^eps) tau / delta`` clamped, with ``tau`` the
    :func:`~accountant.dpsgd.coupling.escape_probability` of ``draws`` coordinates cut
    at ``cut``. At 1 or more no noise multiplier meets ``delta``."""
    tau = escape_probability([(cut, draws)])
    return float(coupled_delta(np.float64(0.0), epsilon, tau, truncation)) / delta


def _smallest_cut(
    epsilon: float, delta: float, cut: float, draws: int, truncation: str, share: float
) -> float:
    """The smallest cut above ``cut`` with two decimals (a value one can type) at which
    the coupling term uses less than ``share`` of ``delta`` (:func:`_coupling_share`):
    the root of the share (which falls as the cut grows) by Brent's method, rounded up to
    two decimals, then checked with the share itself and moved by 0.01 until it is the
    smallest such value. ``cut`` must use ``share`` or more."""

    def excess(k: float) -> float:
        return share - _coupling_share(epsilon, delta, k, draws, truncation)

    k = math.ceil(optimize.brentq(excess, cut, _CUT_CEILING) * 100.0) / 100.0
    while not excess(k) > 0.0:
        k = round(k + 0.01, 2)
    while round(k - 0.01, 2) > cut and excess(round(k - 0.01, 2)) > 0.0:
        k = round(k - 0.01, 2)
    return k


def _check_coupling(s: CalibrationSettings) -> None:
    """Refuse a target that the coupling bound of :class:`~accountant.dpsgd.DPSGDAccountant`
    cannot certify at any noise multiplier. On ``d > 1`` coordinates its upper bound is
    ``(delta_G + e^eps tau) / (1 - tau)`` (renormalised) or ``delta_G + (1 + e^eps) tau``
    (clamped), with ``tau = 1 - (1 - 2 Phi(-k))^(d n)`` the chance that some of the
    ``d n`` coordinates reaches its cut: ``tau`` does not depend on sigma, so once
    ``e^eps tau / (1 - tau) >= delta`` (clamped: ``(1 + e^eps) tau >= delta``) no sigma
    will do. The message names the smallest cut that makes the target reachable and one
    that leaves :data:`NOISE_SHARE` of delta to the noise. One coordinate has no coupling
    term (the accountant bounds the truncated pair itself), nor has an uncut run."""
    if s.dimension == 1 or math.isinf(s.cut):
        return
    draws = s.dimension * s.steps
    used = _coupling_share(s.epsilon, s.delta, s.cut, draws, s.truncation)
    if used < 1.0:
        return
    tau = escape_probability([(s.cut, draws)])
    form = "(1 + e^eps) tau" if s.truncation == "clamped" else "e^eps tau / (1 - tau)"
    reachable = _smallest_cut(s.epsilon, s.delta, s.cut, draws, s.truncation, 1.0)
    comfortable = _smallest_cut(s.epsilon, s.delta, s.cut, draws, s.truncation, NOISE_SHARE)
    raise InfeasibleTargetError(
        f"no noise multiplier meets delta={s.delta!r} at epsilon={s.epsilon!r} with "
        f"cut={s.cut!r} on dimension={s.dimension} coordinates: some of the "
        f"{s.dimension} x {s.steps} noise coordinates reaches its cut with probability "
        f"tau={tau:.3g} whatever sigma, which alone costs {form} = {used * s.delta:.3g} "
        f">= delta (the coupling bound of DPSGDAccountant); the target can be met only with "
        f"cut={reachable:g} or more, and cut={comfortable:g} leaves {NOISE_SHARE:.0%} of "
        "delta to the noise"
    )


def _check_clamped_floor(s: CalibrationSettings) -> None:
    """Refuse a clamped-cut target below what every noise multiplier leaves: the atom
    of ``B``'s shifted clamp at ``1 - r`` (where ``A`` has no atom) and the B-only part
    beyond ``r`` weigh ``q (Phi(1/sigma - k) + Phi(-k)) > 2 q Phi(-k)`` per release, all
    distinguishing, so ``delta(eps) >= 1 - (1 - 2 q Phi(-k))^n`` at every eps and sigma."""
    if s.truncation != "clamped" or math.isinf(s.cut):
        return
    per_release = 2.0 * s.sampling_rate * float(special.ndtr(-s.cut))
    floor = -math.expm1(s.steps * math.log1p(-per_release)) * (1.0 - 1e-9)
    if floor > s.delta:
        raise InfeasibleTargetError(
            f"no noise multiplier meets delta={s.delta!r} with the clamped cut at "
            f"cut={s.cut!r} sigma: the clamped atoms leave a distinguishing mass of at "
            f"least 2 q Phi(-cut) = {per_release:.4g} per release whatever sigma, "
            f"{floor:.4g} after {s.steps} steps; cut further out or use the renormalised cut"
        )


def calibrate_noise_multiplier(
    *,
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    cut: float,
    dimension: int | None = None,
    clip: float = 1.0,
    truncation: str = "renormalised",
    tolerance: float = 1e-3,
    accuracy: float | None = None,
    search_accuracy: float = SEARCH_ACCURACY,
    max_sigma: float = 1e4,
    max_evaluations: int = 20,
) -> NoiseCalibration:
    """The smallest noise multiplier found whose certified ADP delta at ``epsilon`` after
    ``steps`` releases of ``SubsampledTruncatedGaussian(sigma, sampling_rate, cut, clip,
    truncation)`` on ``dimension`` coordinates, each cut separately
    (:class:`~accountant.dpsgd.DPSGDAccountant`), is at most ``delta`` (module docstring:
    method and guarantees). ``dimension`` is required with a finite cut.

    ``tolerance``: the relative width ``sigma / sigma_low - 1`` sought (``sigma_low``
    certified to fail). ``accuracy``: the PrivacyBuckets accuracy of the evaluations that
    decide ``sigma`` and ``sigma_low`` (``None``: what ``tolerance`` needs at the slope
    found, at most ``search_accuracy``); ``search_accuracy``: that of the coarse search
    before. ``max_sigma``: the largest noise multiplier tried; ``max_evaluations``: the
    budget of PrivacyBuckets queries. ``clip`` changes no privacy value (noise std is
    ``sigma * clip``); it is passed on to :attr:`NoiseCalibration.mechanism`.

    Raises :class:`~accountant.errors.InvalidInputError` (naming the argument) on bad
    input and :class:`~accountant.errors.InfeasibleTargetError` when no noise multiplier
    up to ``max_sigma`` is certified to meet the target, at once (before any query) when
    the cut alone makes it unreachable: on ``dimension > 1`` coordinates the coupling term
    ``e^eps tau / (1 - tau)`` (clamped: ``(1 + e^eps) tau``) reaches ``delta`` whatever
    sigma (the message names the smallest cut that will do), and with the clamped cut
    the floor its atoms leave exceeds ``delta``. Warns
    (:class:`~accountant.errors.CertificationWarning`) when the result is certified but
    ``sigma`` is not within ``tolerance`` of ``sigma_low`` (``converged`` is then False and
    ``notes`` says why), or when a given ``accuracy`` was not reached at ``sigma``.
    """
    s = _settings(
        epsilon=epsilon,
        delta=delta,
        sampling_rate=sampling_rate,
        steps=steps,
        cut=cut,
        dimension=dimension,
        clip=clip,
        truncation=truncation,
        tolerance=tolerance,
        accuracy=accuracy,
        search_accuracy=search_accuracy,
        max_sigma=max_sigma,
        max_evaluations=max_evaluations,
    )
    with query_progress("calibrating sigma"):
        return CalibrationSearch(s).run()
