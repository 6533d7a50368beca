"""The best truncated Gaussian of a range and grid: the baseline learned noise is compared
against (paper, Section 6.2: "the best truncated Gaussian").

:func:`best_truncated_gaussian` searches the one-parameter family of truncated Gaussians
on a fixed range and grid for the smallest utility loss whose certified delta meets a
target (:mod:`~accountant.learning.family_search`).
"""

from __future__ import annotations

import attrs

from accountant.learning.family_search import FamilyBaseline, best_member
from accountant.noise import truncated_gaussian
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap
from accountant.validation import Kind

__all__ = ["GaussianBaseline", "best_truncated_gaussian"]


@attrs.frozen
class GaussianBaseline(FamilyBaseline):
    """The truncated Gaussian with scale ``sigma`` found by :func:`best_truncated_gaussian`, its
    certificate, and the utility kind and target delta it was chosen for."""

    sigma: float


def best_truncated_gaussian(
    *,
    bound: float,
    pair_map: AdditivePairMap | SubsampledPairMap,
    step: float | None = None,
    epsilon: float,
    times: int,
    target_delta: float,
    utility: str = "L1",
    kind: Kind = "ADP",
    accuracy: float = 1e-3,
    rtol: float = 1e-4,
) -> GaussianBaseline:
    """The truncated Gaussian ``truncated_gaussian(sigma, bound, step)`` (grid
    ``[-bound, bound]``, spacing ``step``: the grid step of ``pair_map``, which fixes it;
    ``step`` may be repeated only if equal) with the smallest utility loss whose certified
    upper delta (``kind`` ``"ADP"`` or ``"PDP"``, at ``epsilon``, after ``times`` releases
    of ``pair_map``, PrivacyBuckets accuracy ``accuracy``) is at most ``target_delta``.

    "Best" means best among truncated Gaussians of this range and grid, found by a
    one-dimensional search over ``sigma`` in ``[step / 2, 10 * bound]`` that **assumes
    delta(sigma) is unimodal** (:mod:`~accountant.learning.family_search`: the search,
    its tolerance ``rtol`` and why the smallest feasible sigma is the best). Raises
    :class:`~accountant.errors.InfeasibleTargetError` when no sigma meets the target.
    """
    found = best_member(
        truncated_gaussian,
        "truncated Gaussian",
        "sigma",
        bound=bound,
        pair_map=pair_map,
        step=step,
        epsilon=epsilon,
        times=times,
        target_delta=target_delta,
        utility=utility,
        kind=kind,
        accuracy=accuracy,
        rtol=rtol,
    )
    return GaussianBaseline(
        sigma=found.scale,
        noise=found.noise,
        certificate=found.certificate,
        utility_kind=utility,
        target_delta=target_delta,
    )
