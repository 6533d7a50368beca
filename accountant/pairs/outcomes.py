"""Which outcome of a pair each entry of a privacy-loss distribution is.

A PLD sorts the finite outcomes of a pair by loss and sets the distinguishing ones
(``L = +inf``) apart, so its arrays no longer line up with the pair's. An
:class:`OutcomeIndex` keeps the map back: anything that needs a per-outcome quantity of
the pair (a gradient with respect to its masses, for the learner) scatters the PLD's
per-entry values through it instead of recomputing the losses from the pair arrays.
"""

from __future__ import annotations

import attrs
import numpy as np

from accountant.errors import InvalidInputError

__all__ = ["OutcomeIndex"]


def _indices(name: str, value: object) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise InvalidInputError(
            f"{name} must be a one-dimensional array of outcome indices, got "
            f"shape {array.shape} and dtype {array.dtype}"
        )
    array = array.astype(np.int64)
    array.setflags(write=False)
    return array


def _finite_indices(value: object) -> np.ndarray:
    return _indices("finite", value)


def _distinguishing_indices(value: object) -> np.ndarray:
    return _indices("distinguishing", value)


def _impossible_indices(value: object) -> np.ndarray:
    return _indices("impossible", value)


@attrs.frozen(eq=False)
class OutcomeIndex:
    """Positions in the pair's outcome arrays (of length ``count``) of

    * ``finite``: each finite-loss entry of the PLD, in the PLD's (ascending loss) order;
    * ``distinguishing``: the outcomes with ``L = +inf`` (``A > 0 = B`` in the PLD's
      direction), whose A-mass is ``omega``;
    * ``impossible``: the outcomes with ``A = 0 < B`` (``L = -inf``).

    The three are disjoint; outcomes with ``A = B = 0`` are in none.
    """

    finite: np.ndarray = attrs.field(converter=_finite_indices)
    distinguishing: np.ndarray = attrs.field(converter=_distinguishing_indices)
    impossible: np.ndarray = attrs.field(converter=_impossible_indices)
    count: int

    def __attrs_post_init__(self) -> None:
        every = np.concatenate([self.finite, self.distinguishing, self.impossible])
        if every.size and (every.min() < 0 or every.max() >= self.count):
            raise InvalidInputError(
                f"outcome indices must lie in [0, {self.count}), got {every.min()} to {every.max()}"
            )
        if np.unique(every).size != every.size:
            raise InvalidInputError("outcome indices must not repeat across the three kinds")

    @classmethod
    def of(cls, a: np.ndarray, b: np.ndarray, order: np.ndarray) -> OutcomeIndex:
        """The index of the PLD of masses ``a`` over ``b`` whose finite outcomes
        ``(a > 0) & (b > 0)`` were put in the order ``order``."""
        return cls(
            finite=np.flatnonzero((a > 0.0) & (b > 0.0))[order],
            distinguishing=np.flatnonzero((a > 0.0) & (b == 0.0)),
            impossible=np.flatnonzero((a == 0.0) & (b > 0.0)),
            count=a.size,
        )

    def reversed(self) -> OutcomeIndex:
        """The index of the other direction: finite entries in reverse order (losses
        ``-L``), distinguishing and impossible outcomes swapped."""
        return OutcomeIndex(
            finite=self.finite[::-1],
            distinguishing=self.impossible,
            impossible=self.distinguishing,
            count=self.count,
        )

    def scatter(self, values: np.ndarray, fill: float = 0.0) -> np.ndarray:
        """An array over the pair's outcomes: ``values[k]`` at the outcome of finite entry
        ``k`` of the PLD, ``fill`` everywhere else."""
        result = np.full(self.count, fill, dtype=np.float64)
        result[self.finite] = values
        return result
