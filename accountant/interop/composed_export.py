"""Export a composition (a :class:`~accountant.PrivacyBuckets` or a
:class:`~accountant.interop.CertifiedAccountant`) as a pessimistic dp_accounting
``PrivacyLossDistribution``, so dp_accounting users can go on composing with it.

**What is exported.** One direction of the composed worst-case pair ``(P, Q)`` (``"A/B"``:
dp_accounting's ``pmf_add``; ``"B/A"``: ``pmf_remove``; see :mod:`~accountant.interop.pld_export`)
is described by its privacy profile ``delta(s) = H_s(P || Q) = sum (P - s Q)^+`` over
``s = e^eps`` in ``(0, inf)``: convex, non-increasing, ``delta(0+) = 1``. For ``s >= 1`` the
certified upper bounds ``U(eps)`` of the accountant bound it; for ``s < 1`` the identity
``H_s(P||Q) = 1 - s + s H_(1/s)(Q||P)`` (``P``, ``Q`` probability measures) turns the other
direction's upper bounds into upper bounds. A dp_accounting pmf with atoms ``p_k`` at losses
``l_k`` and ``infinity_mass`` ``p_inf`` has the profile ``p_inf + sum_k p_k (1 - s e^(-l_k))^+``:
piecewise linear in ``s`` with a kink at each ``e^(l_k)``. So:

1. the upper bounds on a grid of eps (whole multiples of dp_accounting's interval ``h``,
   refined where the chord between neighbours departs from their log-linear interpolation by
   more than the accuracy), each replaced by the smallest bound at any eps below it (the
   profile does not increase: still an upper bound), and raised by a relative ``1e-9``;
2. the points ``(e^eps, U(eps))``, ``(e^(-eps), 1 - e^(-eps) + e^(-eps) U_other(eps))`` and
   ``(0, 1)``, with the ray ``U(eps_max)`` beyond the last one; their **lower convex hull**
   lies above the true profile everywhere: at its vertices it is an upper bound, between
   two vertices it is their chord, above the convex profile's own chord, and beyond the last
   vertex the profile does not increase;
3. the pmf whose profile *is* that hull: an atom at each vertex ``s_k = e^(l_k)`` of mass
   ``p_k = s_k (sigma_(k+1) - sigma_k)`` (the slopes on both sides, ``0`` after the last
   vertex), ``p_inf`` the hull's last value. Its P-mass is ``hull(0) = 1`` and its Q-mass
   ``-sigma_1 <= 1`` (the first point right of 0 lies on or above ``1 - s``): a genuine pair,
   whose profile dominates the composition's for **every** eps, negative ones included, so
   by Zhu, Dong and Wang (AISTATS 2022, Theorem 10) composing it with other dominating pairs
   (dp_accounting's own) stays pessimistic. A float deficit of the P-mass goes to
   ``infinity_mass``.

Every vertex of the exported pmf is checked after the fact: its delta, summed from
non-negative terms (relative error below ``(N + 8) u``), must be at least the hull built from
the uncorrected bounds.

At each eps of the grid the export's delta is at least the hull there, which is itself a
certified upper bound and at most the accountant's own (the hull lies below the points it
is built from); between grid points and below ``eps = 0`` it is the chord. The export is
pessimistic by the bracket of the accountant plus the chord error of the grid (the
accuracy asked for).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from accountant.errors import CertificationWarning, InvalidInputError
from accountant.interop.pld_export import DP_ACCOUNTING_PMF
from accountant.interop.requirement import require_dp_accounting
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.validation import check_positive_int, check_positive_real

__all__ = ["ExportedProfile", "composed_to_dp_accounting_pld", "export_profile"]

U = UNIT_ROUNDOFF
#: Relative raise of every bound before the hull (covers the float construction).
INFLATION = 1e-9
#: The grid ends where both directions' upper bounds are below this (or stop falling): the
#: export's delta is at least this (``infinity_mass``) at every eps.
FLOOR = 1e-15
#: Grid intervals are refined only where the bounds exceed this, and never below this width.
RELEVANT = 1e-12
NARROWEST = 1e-3
#: No eps beyond this (``e^eps`` stays a float); what lies beyond is ``infinity_mass``.
LARGEST_EPS = 700.0
#: Rounds of grid refinement.
ROUNDS = 3


class ExportedProfile:
    """One direction's exported pmf: ``losses`` (whole multiples ``indices`` of ``h``),
    ``probs``, ``infinity_mass``, and the hull ``(s, value)`` it was built from."""

    def __init__(self, indices, probs, infinity_mass, hull_s, hull_value, discretization):
        self.indices = np.asarray(indices, dtype=np.int64)
        self.probs = np.asarray(probs, dtype=np.float64)
        self.infinity_mass = float(infinity_mass)
        self.hull_s = np.asarray(hull_s, dtype=np.float64)
        self.hull_value = np.asarray(hull_value, dtype=np.float64)
        self.discretization = float(discretization)

    @property
    def losses(self) -> np.ndarray:
        """``indices * h`` as dp_accounting computes them."""
        return self.indices * self.discretization

    def delta(self, epsilon: float) -> float:
        """``infinity_mass + sum_{l > eps} p (1 - e^(eps - l))`` (non-negative terms)."""
        above = self.losses > epsilon
        terms = self.probs[above] * -np.expm1(epsilon - self.losses[above])
        return self.infinity_mass + math.fsum(terms.tolist())

    def to_pmf(self):
        """The dp_accounting pessimistic ``PLDPmf``."""
        pld_pmf = require_dp_accounting().pld.pld_pmf
        loss_probs = {
            int(i): float(p) for i, p in zip(self.indices, self.probs, strict=True) if p > 0
        }
        return pld_pmf.create_pmf(
            loss_probs, self.discretization, self.infinity_mass, pessimistic_estimate=True
        )


def _lower_hull(s: np.ndarray, value: np.ndarray) -> list[int]:
    """Indices of the lower convex hull of the points (sorted by ``s``), Andrew's monotone
    chain; collinear middle points are dropped."""
    hull: list[int] = []
    for i in range(s.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (s[b] - s[a]) * (value[i] - value[a]) - (value[b] - value[a]) * (s[i] - s[a])
            if cross <= 0.0:  # b lies on or above the chord from a to i
                hull.pop()
            else:
                break
        hull.append(i)
    return hull


def export_profile(
    eps: np.ndarray, upper: np.ndarray, upper_other: np.ndarray, h: float
) -> ExportedProfile:
    """The pmf of one direction from certified upper bounds ``upper`` (this direction) and
    ``upper_other`` (the other) at ``eps`` (ascending, ``eps[0] = 0``, whole multiples of
    ``h``), module docstring steps 1 to 3."""
    indices = np.rint(eps / h).astype(np.int64)
    bounds = {}
    for name, values in (("this", upper), ("other", upper_other)):
        envelope = np.minimum.accumulate(np.minimum(np.asarray(values, dtype=np.float64), 1.0))
        bounds[name] = envelope
    this, other = bounds["this"], bounds["other"]
    top = min(float(this[0]), float(other[0]))  # both bound the same total variation
    this, other = this.copy(), other.copy()
    this[0] = other[0] = top
    # the points: left of s = 1 from the other direction, right of it from this one
    s_left = np.exp(-eps[:0:-1])
    left = 1.0 - s_left * (1.0 - other[:0:-1])
    s = np.concatenate([[0.0], s_left, np.exp(eps)])
    exact = np.concatenate([[1.0], left, this])
    raised = exact.copy()
    raised[1:] = np.minimum(raised[1:] * (1.0 + INFLATION), 1.0)
    hull = _lower_hull(s, raised)
    hs, hv = s[hull], raised[hull]
    slopes = np.diff(hv) / np.diff(hs)  # sigma_1 .. sigma_m
    following = np.append(slopes[1:], 0.0)
    masses = hs[1:] * (following - slopes)
    masses = np.maximum(masses, 0.0)
    vertex_index = np.concatenate([-indices[:0:-1], indices])[np.array(hull[1:]) - 1]
    infinity = float(hv[-1])
    deficit = 1.0 - math.fsum([infinity, *masses.tolist()])
    if deficit > 0.0:
        infinity += deficit * (1.0 + 1e-6)
    profile = ExportedProfile(vertex_index, masses, infinity, hs, hv, h)
    _check(profile, s, exact, hull)
    return profile


def _check(profile: ExportedProfile, s: np.ndarray, exact: np.ndarray, hull: list[int]) -> None:
    """Every vertex's exported delta is at least the hull of the uncorrected bounds there."""
    reference = _lower_hull(s, exact)
    ref_s, ref_v = s[reference], exact[reference]
    slack = (profile.probs.size + 8.0) * U
    for position in hull[1:]:
        point = s[position]
        eps = math.log(point)
        exported = profile.delta(eps) * (1.0 - slack)
        bound = float(np.interp(point, ref_s, ref_v))
        if exported < bound:  # pragma: no cover - the inflation covers the rounding
            raise InvalidInputError(
                f"the exported pmf falls below the certified bound at eps={eps!r} "
                f"({exported!r} < {bound!r}); report this"
            )


def _grid(h: float, stop: float, count: int) -> np.ndarray:
    """``count`` points from 0 to ``stop`` rounded onto multiples of ``h`` (unique)."""
    raw = np.linspace(0.0, stop, count)
    return np.unique(np.rint(raw / h)) * h


def _uppers(accountant: Any, eps: np.ndarray) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():  # a bracket wider than asked is still certified
        warnings.simplefilter("ignore", CertificationWarning)
        return {
            d: np.asarray(accountant.delta(eps, d).upper, dtype=np.float64)
            for d in DP_ACCOUNTING_PMF
        }


def _pieces(eps: np.ndarray, both: np.ndarray, accuracy: float) -> np.ndarray:
    """Per grid interval, the number of equal pieces whose chords (in ``e^eps``) of a
    profile falling like the bounds at its ends (``C e^(-a eps)``) are within ``accuracy`` of
    it at their middles (the excess grows like the square of the width)."""
    width = np.diff(eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        decay = np.log(both[:-1] / both[1:]) / width
    decay = np.where(np.isfinite(decay), np.maximum(decay, 0.0), 0.0)
    decay = np.maximum(decay, np.append(decay[1:], decay[-1:]))  # the steeper neighbour
    ratio = np.exp(width)
    middle = np.sqrt(ratio)
    chord = 1.0 + (middle - 1.0) * (ratio ** (-decay) - 1.0) / (ratio - 1.0)
    excess = chord * middle**decay - 1.0
    pieces = np.ceil(np.sqrt(np.maximum(excess, 0.0) / accuracy))
    # no pieces narrower than NARROWEST (a step in the bounds is not a slope to follow), and
    # none where the bounds are near their floor (the accountant's bracket is wide there)
    pieces = np.minimum(pieces, np.maximum(1.0, np.floor(width / NARROWEST)))
    relevant = both[:-1] > RELEVANT
    return np.where(relevant, np.maximum(pieces, 1.0), 1.0).astype(np.int64)


def certified_profiles(
    accountant: Any, h: float, accuracy: float, max_points: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The eps grid and both directions' certified upper bounds on it (one query per
    direction per round): the grid ends where both bounds fall below :data:`FLOOR` (or stop
    falling, at the distinguishing mass); each interval is then cut into the pieces
    :func:`_pieces` asks for, twice (at most ``max_points`` points, whole multiples of ``h``)."""
    probes = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0])
    found = _uppers(accountant, probes)
    largest = np.maximum(found["A/B"], found["B/A"])
    stop = LARGEST_EPS
    for i, value in enumerate(largest):
        if value <= FLOOR or (i > 0 and value >= 0.99 * largest[i - 1]):
            stop = float(probes[i])
            break
    eps = _grid(h, stop, 33)
    uppers = _uppers(accountant, eps)
    for _ in range(ROUNDS):
        both = np.maximum(uppers["A/B"], uppers["B/A"])
        pieces = _pieces(eps, both, accuracy)
        budget = max_points - eps.size
        if budget <= 0 or not (pieces > 1).any():
            break
        if int(np.sum(pieces - 1)) > budget:  # thin out evenly
            pieces = 1 + np.floor((pieces - 1) * budget / np.sum(pieces - 1)).astype(np.int64)
        new = np.concatenate(
            [
                eps[j] + (eps[j + 1] - eps[j]) * np.arange(1, k) / k
                for j, k in enumerate(pieces)
                if k > 1
            ]
            or [np.zeros(0)]
        )
        new = np.setdiff1d(np.unique(np.rint(new / h)) * h, eps)
        if new.size == 0:
            break
        found = _uppers(accountant, new)
        eps = np.concatenate([eps, new])
        order = np.argsort(eps, kind="stable")
        eps = eps[order]
        uppers = {d: np.concatenate([uppers[d], found[d]])[order] for d in uppers}
    return eps, uppers


def composed_to_dp_accounting_pld(
    accountant: Any,
    *,
    value_discretization_interval: float = 1e-4,
    accuracy: float = 1e-2,
    max_points: int = 4096,
):
    """A pessimistic dp_accounting ``PrivacyLossDistribution`` of everything ``accountant``
    (a :class:`~accountant.PrivacyBuckets` or a
    :class:`~accountant.interop.CertifiedAccountant`) has composed: ``"A/B"`` as ``pmf_add``,
    ``"B/A"`` as ``pmf_remove``, losses on the grid of ``value_discretization_interval``,
    each direction's delta at least the certified upper bound's convex hull at every eps and
    the true delta everywhere (module docstring); dp_accounting may compose it further.

    ``accuracy``: the relative chord error the eps grid is refined to (the export is
    pessimistic by about this much plus the accountant's bracket, where delta exceeds
    :data:`FLOOR`); ``max_points``: at most this many grid points (each costs one certified
    delta per direction). A non-private composition exports ``infinity_mass = 1``.
    """
    dp_accounting = require_dp_accounting()
    h = check_positive_real("value_discretization_interval", value_discretization_interval)
    max_points = check_positive_int("max_points", max_points)
    if max_points < 8:
        raise InvalidInputError(f"max_points must be at least 8, got {max_points!r}")
    buckets = getattr(accountant, "buckets", accountant)
    if not hasattr(buckets, "delta") or not hasattr(buckets, "accuracy"):
        raise InvalidInputError(
            "accountant must be a PrivacyBuckets or a CertifiedAccountant, got "
            f"{type(accountant).__name__}"
        )
    accuracy = check_positive_real("accuracy", accuracy)
    pmf_pld = dp_accounting.pld.pld_pmf
    distribution = dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
    if getattr(accountant, "non_private", False):
        pmf = pmf_pld.create_pmf({}, h, 1.0, pessimistic_estimate=True)
        return distribution(pmf_remove=pmf, pmf_add=pmf)
    if buckets.releases == 0:
        pmf = pmf_pld.create_pmf({0: 1.0}, h, 0.0, pessimistic_estimate=True)
        return distribution(pmf_remove=pmf, pmf_add=pmf)
    eps, uppers = certified_profiles(buckets, h, accuracy, max_points)
    pmfs = {
        direction: export_profile(eps, uppers[direction], uppers[other], h).to_pmf()
        for direction, other in (("A/B", "B/A"), ("B/A", "A/B"))
    }
    return distribution(pmf_remove=pmfs["B/A"], pmf_add=pmfs["A/B"])
