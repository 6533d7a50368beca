"""Privacy bounds of a noise pmf and their gradients with respect to the pmf.

This is everything a learner needs from the accountant (SPEC section 5): for a noise
``p`` on a centred grid, a pair map (additive shift or DP-SGD mixture, see
:mod:`accountant.pairs.pair_maps`) and ``n`` releases, the value of one of the paper's
training losses and ``d value / d p``:

* ``"MA"``: the Extended Moments Accountant delta (``l^MA``; both conversions),
  differentiated exactly by :meth:`~accountant.moments.extended_ma.ExtendedMA.delta_and_gradient`;
* ``"ADP"`` and ``"PDP"``: the smooth bucket deltas ``l^ADP`` and ``l^PDP`` of
  :func:`~accountant.learning.smooth_loss.smooth_bucket_delta`.

Gradients with respect to the pair are pulled back to the noise by the pair map's
transpose.

With an :class:`~accountant.pairs.pair_maps.AllShiftsPairMap` (every query difference
``s = 1..m`` grid steps) the value is the largest over ``s`` of the bound of ``times``
releases of the pair of shift ``s``, ``max_s l(A_s, B_s)``, and the gradient is that of
the arg-max shift (the first one at a tie): a hard maximum, so the value equals the
full-shift bound exactly when the map's shortcut applies (symmetric noise falling from
0, paper, Theorem "Shift Invariance") and is a subgradient where two shifts tie. For
``times > 1`` every release is taken to move by the same ``s`` (``n``-fold
self-composition of each shift's pair): a training loss. SPEC section 1 composes
independent releases of any pairs, so the certificate
(:func:`~accountant.learning.certification.certify`) covers every mix of shifts.

The values are training losses; the Extended MA value is also a certified upper bound
(of its pair), the smooth bucket values are not.
"""

from __future__ import annotations

from typing import Any, cast

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.learning.smooth_loss import smooth_bucket_delta
from accountant.moments.extended_ma import CONVERSIONS, ExtendedMA
from accountant.noise import NoiseDistribution, from_array
from accountant.pairs.pair_maps import AdditivePairMap, AllShiftsPairMap, SubsampledPairMap
from accountant.validation import (
    Direction,
    Kind,
    check_choice,
    check_direction,
    check_positive_real,
)

__all__ = ["BOUNDS", "NoiseBound", "noise_bound"]

BOUNDS = ("ADP", "PDP", "MA")


@attrs.frozen(eq=False)
class NoiseBound:
    """A training loss ``value`` of the noise and its gradient ``d value / d p``.

    ``shift``: the grid steps of the pair whose bound ``value`` is (the arg-max shift for
    an :class:`~accountant.pairs.pair_maps.AllShiftsPairMap`; ``None`` for DP-SGD).
    """

    value: float
    gradient: np.ndarray
    bound: str
    epsilon: float
    times: int
    direction: str
    shift: int | None = None


def noise_bound(
    pmf: np.ndarray | NoiseDistribution,
    step: float,
    pair_map: AdditivePairMap | SubsampledPairMap | AllShiftsPairMap,
    *,
    bound: str,
    epsilon: float,
    times: int,
    direction: Direction = "max",
    conversion: str = "tight",
    width: float | None = None,
) -> NoiseBound:
    """Value and gradient of the training loss ``bound`` (``"ADP"``, ``"PDP"`` or
    ``"MA"``) of ``times`` releases of noise ``pmf`` (centred grid, spacing ``step``).

    ``conversion`` applies to ``"MA"``, ``width`` to ``"ADP"``/``"PDP"``. With an
    :class:`~accountant.pairs.pair_maps.AllShiftsPairMap`: ``max_s`` over the shifts it
    covers, with the arg-max shift's gradient (module docstring).
    """
    check_choice("bound", bound, BOUNDS)
    if not isinstance(pair_map, AdditivePairMap | SubsampledPairMap | AllShiftsPairMap):
        raise InvalidInputError(
            f"pair_map must be an AdditivePairMap, SubsampledPairMap or AllShiftsPairMap, "
            f"got {type(pair_map).__name__}"
        )
    direction = check_direction("direction", direction)
    # Both are checked whatever the kind: a bad value of the one the kind does not use
    # must not pass silently.
    check_choice("conversion", conversion, CONVERSIONS)
    if width is not None:
        width = check_positive_real("width", width)
    noise = pmf if isinstance(pmf, NoiseDistribution) else from_array(pmf, step)
    if isinstance(pair_map, AllShiftsPairMap):
        options: dict[str, Any] = {
            "bound": bound,
            "epsilon": epsilon,
            "times": times,
            "direction": direction,
        }
        options |= {"conversion": conversion, "width": width}
        per_shift = [
            noise_bound(noise, step, pair_map.shift_map(shift), **options)
            for shift in pair_map.shifts(noise)
        ]
        return max(per_shift, key=lambda result: result.value)  # (the first at a tie)
    pair = pair_map.pair(noise)
    if bound == "MA":
        result = ExtendedMA(conversion=conversion).compose(pair, times=times)
        gradient = result.delta_and_gradient(epsilon, direction)
        grad_a, grad_b = gradient.gradients[0][0].a, gradient.gradients[0][0].b
        value, chosen = gradient.delta, gradient.direction
    else:
        # "ADP" or "PDP": bound was checked against BOUNDS, and "MA" is taken above
        kind = cast(Kind, bound)
        smooth = smooth_bucket_delta(
            pair, epsilon, times, kind=kind, direction=direction, width=width
        )
        grad_a, grad_b = smooth.gradient_a, smooth.gradient_b
        value, chosen = smooth.delta, smooth.direction
    return NoiseBound(
        value=float(value),
        gradient=pair_map.noise_gradient(grad_a, grad_b),
        bound=bound,
        epsilon=float(epsilon),
        times=int(times),
        direction=chosen,
        shift=pair_map.steps if isinstance(pair_map, AdditivePairMap) else None,
    )
