"""Result classes of the Extended Moments Accountant."""

from __future__ import annotations

import attrs
import numpy as np

__all__ = ["DirectionalBound", "MomentsDelta", "MomentsGradient", "PairGradient"]


@attrs.frozen
class DirectionalBound:
    """The Extended MA bound in one direction: ``delta = distinguishing_mass + finite_part``.

    ``lam`` is the optimal moment order (``inf`` when every composed finite loss is
    at most eps, ``0`` when the bound is the trivial ``delta = 1``).
    """

    delta: float
    lam: float
    distinguishing_mass: float
    finite_part: float


@attrs.frozen
class MomentsDelta:
    """Extended MA delta(eps) in both directions; ``delta`` is the larger."""

    epsilon: float
    conversion: str
    a_over_b: DirectionalBound
    b_over_a: DirectionalBound

    @property
    def delta(self) -> float:
        """``max(delta_{A/B}, delta_{B/A})``."""
        return max(self.a_over_b.delta, self.b_over_a.delta)


@attrs.frozen(eq=False)
class PairGradient:
    """Partial derivatives of delta with respect to a pair's masses ``a`` and ``b``."""

    a: np.ndarray
    b: np.ndarray


@attrs.frozen(eq=False)
class MomentsGradient:
    """delta(eps) in the direction that attains the maximum, its optimal lambda, and
    ``gradients[i][k]``: the :class:`PairGradient` of pair ``k`` of component ``i``
    (empty for analytic mechanisms)."""

    epsilon: float
    delta: float
    direction: str
    lam: float
    gradients: tuple[tuple[PairGradient, ...], ...]
