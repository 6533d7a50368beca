"""The best truncated staircase of a range and grid: the noise that is optimal for one
release under pure DP (Geng & Viswanath; SPEC section 4), composed, as a baseline beside
the truncated Gaussian and Laplace.

:func:`best_truncated_staircase` searches the staircases
(:func:`~accountant.noise.staircase`, sensitivity that of the pair map, ``gamma`` the
optimal one) over their design epsilon on a fixed range and grid for the smallest utility
loss whose certified delta meets a target (:mod:`~accountant.learning.family_search`,
over the scale ``1 / design_epsilon``: the noise widens as the design epsilon falls).
"""

from __future__ import annotations

import attrs

from accountant.learning.family_search import FamilyBaseline, best_member
from accountant.noise import NoiseDistribution, staircase
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap
from accountant.validation import Kind

__all__ = ["StaircaseBaseline", "best_truncated_staircase"]


@attrs.frozen
class StaircaseBaseline(FamilyBaseline):
    """The truncated staircase with design epsilon ``design_epsilon`` found by
    :func:`best_truncated_staircase`, its certificate, and the utility kind and target
    delta it was chosen for."""

    design_epsilon: float


def best_truncated_staircase(
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
) -> StaircaseBaseline:
    """The truncated staircase ``staircase(sensitivity, design_epsilon, bound, step)``
    (``sensitivity`` the shift of ``pair_map``) (grid
    ``[-bound, bound]``, spacing ``step``: the grid step of ``pair_map``, which fixes it;
    ``step`` may be repeated only if equal) with the smallest utility loss whose certified
    upper delta (``kind`` ``"ADP"`` or ``"PDP"``, at ``epsilon``, after ``times`` releases
    of ``pair_map``, PrivacyBuckets accuracy ``accuracy``) is at most ``target_delta``.

    "Best" means best among these staircases, found by a one-dimensional search over
    ``1 / design_epsilon`` in ``[step / 2, 10 * bound]`` that **assumes delta is
    unimodal** in it (:mod:`~accountant.learning.family_search`). Raises
    :class:`~accountant.errors.InfeasibleTargetError` when no design epsilon meets the
    target.
    """

    def build(scale: float, bound: float, step: float) -> NoiseDistribution:
        shift = pair_map.steps * step  # the sensitivity, in the grid's units
        return staircase(shift, 1.0 / scale, bound, step)

    found = best_member(
        build,
        "truncated staircase",
        "1/design_epsilon",
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
    return StaircaseBaseline(
        design_epsilon=1.0 / found.scale,
        noise=found.noise,
        certificate=found.certificate,
        utility_kind=utility,
        target_delta=target_delta,
    )
