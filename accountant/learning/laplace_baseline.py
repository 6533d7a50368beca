"""The best truncated Laplace of a range and grid: the stronger baseline for L1 utility
(a learned noise that beats the truncated Gaussian under L1 may only be beating the
Gaussian's shape with Laplace's).

:func:`best_truncated_laplace` searches the one-parameter family of truncated Laplace
noises (:func:`~accountant.noise.truncated_laplace`) on a fixed range and grid for the
smallest utility loss whose certified delta meets a target
(:mod:`~accountant.learning.family_search`).
"""

from __future__ import annotations

import attrs

from accountant.learning.family_search import FamilyBaseline, best_member
from accountant.noise import truncated_laplace
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap
from accountant.validation import Kind

__all__ = ["LaplaceBaseline", "best_truncated_laplace"]


@attrs.frozen
class LaplaceBaseline(FamilyBaseline):
    """The truncated Laplace with scale ``scale`` found by :func:`best_truncated_laplace`, its
    certificate, and the utility kind and target delta it was chosen for."""

    scale: float


def best_truncated_laplace(
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
) -> LaplaceBaseline:
    """The truncated Laplace ``truncated_laplace(scale, bound, step)`` (grid
    ``[-bound, bound]``, spacing ``step``: the grid step of ``pair_map``, which fixes it;
    ``step`` may be repeated only if equal) with the smallest utility loss whose certified
    upper delta (``kind`` ``"ADP"`` or ``"PDP"``, at ``epsilon``, after ``times`` releases
    of ``pair_map``, PrivacyBuckets accuracy ``accuracy``) is at most ``target_delta``.

    "Best" means best among truncated Laplace noises of this range and grid, found by a
    one-dimensional search over ``scale`` in ``[step / 2, 10 * bound]`` that **assumes
    delta(scale) is unimodal** (:mod:`~accountant.learning.family_search`). Raises
    :class:`~accountant.errors.InfeasibleTargetError` when no scale meets the target.
    """
    found = best_member(
        truncated_laplace,
        "truncated Laplace",
        "scale",
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
    return LaplaceBaseline(
        scale=found.scale,
        noise=found.noise,
        certificate=found.certificate,
        utility_kind=utility,
        target_delta=target_delta,
    )
