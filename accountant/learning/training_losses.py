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
transpose. The values are training losses; the Extended MA value is also a certified
upper bound, the smooth bucket values are not.
"""

from __future__ import annotations

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.learning.smooth_loss import smooth_bucket_delta
from accountant.moments.extended_ma import CONVERSIONS, ExtendedMA
from accountant.noise import NoiseDistribution, from_array
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap
from accountant.validation import Direction, check_choice, check_direction, check_positive_real

__all__ = ["BOUNDS", "NoiseBound", "noise_bound"]

BOUNDS = ("ADP", "PDP", "MA")


@attrs.frozen(eq=False)
class NoiseBound:
    """A training loss ``value`` of the noise and its gradient ``d value / d p``."""

    value: float
    gradient: np.ndarray
    bound: str
    epsilon: float
    times: int
    direction: str


def noise_bound(
    pmf: np.ndarray | NoiseDistribution,
    step: float,
    pair_map: AdditivePairMap | SubsampledPairMap,
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

    ``conversion`` applies to ``"MA"``, ``width`` to ``"ADP"``/``"PDP"``.
    """
    check_choice("bound", bound, BOUNDS)
    if not isinstance(pair_map, AdditivePairMap | SubsampledPairMap):
        raise InvalidInputError(
            f"pair_map must be an AdditivePairMap or SubsampledPairMap, got "
            f"{type(pair_map).__name__}"
        )
    direction = check_direction("direction", direction)
    # Both are checked whatever the kind: a bad value of the one the kind does not use
    # must not pass silently.
    check_choice("conversion", conversion, CONVERSIONS)
    if width is not None:
        width = check_positive_real("width", width)
    noise = pmf if isinstance(pmf, NoiseDistribution) else from_array(pmf, step)
    pair = pair_map.pair(noise)
    if bound == "MA":
        result = ExtendedMA(conversion=conversion).compose(pair, times=times)
        gradient = result.delta_and_gradient(epsilon, direction)
        grad_a, grad_b = gradient.gradients[0][0].a, gradient.gradients[0][0].b
        value, chosen = gradient.delta, gradient.direction
    else:
        smooth = smooth_bucket_delta(
            pair, epsilon, times, kind=bound, direction=direction, width=width
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
    )
