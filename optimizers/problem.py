"""What to learn (:class:`LearningProblem`) and how (:class:`Schedule`).

Both are frozen, validated on construction (bad values raise
:class:`~accountant.errors.InvalidInputError` naming the field and the value) and
round-trip through plain dicts, which is how checkpoints and saved results record them.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from accountant.errors import InvalidInputError
from accountant.learning.gaussian_baseline import GaussianBaseline, best_truncated_gaussian
from accountant.learning.training_losses import BOUNDS
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap, pair_map
from accountant.validation import (
    check_choice,
    check_epsilons,
    check_finite_real,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)

__all__ = ["LearningProblem", "Schedule"]

UTILITIES = ("L1", "L2")
MODELS = ("increments", "sigmoid")
WARM_STARTS = ("gaussian", "model")

# The defaults of :class:`Schedule`: the one source that ``accountant learn`` (its
# ``--help`` shows them), the examples and the benchmark read. Chosen on the problems of
# docs/learning.md: with them the n = 1 staircase problem comes within 0.2 % of the LP
# optimum and the n = 8 and n = 128 problems (range 500, step 0.5) beat the best
# truncated Gaussian.
EPOCHS = 3000
LEARNING_RATE = 0.01
LEARNING_RATE_DECAY = 0.999
UTILITY_WEIGHT = 0.5
WEIGHT_HALF_LIFE = 250.0
WEIGHT_MIN = 1e-7
PENALTY = 100.0
TARGET_MARGIN = 0.01
MODEL = "increments"
SIGMOIDS = 1000
WARM_START = "gaussian"
SEED = 0
CHECKPOINT_EVERY = 100
REFINE_EVERY: int | None = None


def _one_of(choices: tuple[str, ...]):
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        check_choice(attribute.name, value, choices)

    return check


def _converter(check):
    def convert(value: Any) -> Any:
        return value if value is None else check(value)

    return convert


def _epsilon(value: Any) -> float:
    array = check_epsilons("epsilon", value)
    if array.size != 1:
        raise InvalidInputError(f"epsilon must be one number, got {array.size} values")
    return float(array.reshape(-1)[0])


@attrs.frozen
class LearningProblem:
    """Learn symmetric, monotone noise on the grid ``-bound..bound`` (spacing ``step``)
    for ``times`` releases at ``epsilon``: additive with ``sensitivity``, or DP-SGD with
    sampling rate ``q`` and clipping norm ``sensitivity`` when ``q`` is given.

    ``utility``: ``"L1"`` or ``"L2"`` (SPEC section 4). ``loss``: the training bound
    ``"ADP"``, ``"PDP"`` (smooth PrivacyBuckets) or ``"MA"`` (Extended MA, with
    ``conversion``). ``target_delta``: if given, minimise the utility loss subject to
    the training bound staying at the target (a little below it, see
    :class:`Schedule`'s ``target_margin``); the result then says whether its certified
    delta met the target. Without it, minimise the paper's ``bound + w_t * utility``.
    ``bucket_width``: loss width of the smooth bucket bounds (default about 0.005, see
    :func:`accountant.learning.smooth_loss.default_smooth_width`); finer widths follow the
    composition of many releases more closely.
    """

    bound: float = attrs.field(converter=lambda v: check_positive_real("bound", v))
    step: float = attrs.field(converter=lambda v: check_positive_real("step", v))
    epsilon: float = attrs.field(converter=_epsilon)
    times: int = attrs.field(converter=lambda v: check_positive_int("times", v))
    sensitivity: float = attrs.field(
        default=1.0, converter=lambda v: check_positive_real("sensitivity", v)
    )
    q: float | None = attrs.field(
        default=None, converter=_converter(lambda v: check_probability("q", v))
    )
    utility: str = attrs.field(default="L1", validator=_one_of(UTILITIES))
    loss: str = attrs.field(default="ADP", validator=_one_of(BOUNDS))
    conversion: str = attrs.field(default="tight", validator=_one_of(("tight", "paper")))
    target_delta: float | None = attrs.field(
        default=None, converter=_converter(lambda v: check_target_delta("target_delta", v))
    )
    bucket_width: float | None = attrs.field(
        default=None, converter=_converter(lambda v: check_positive_real("bucket_width", v))
    )

    def __attrs_post_init__(self) -> None:
        half = self.bound / self.step
        if abs(half - round(half)) > 1e-9 * max(1.0, half) or round(half) < 1:
            raise InvalidInputError(
                f"bound={self.bound!r} must be a positive whole number of grid steps "
                f"(step={self.step!r})"
            )
        self.pair_map  # noqa: B018 - validates the sensitivity against the grid
        # Strictly smaller than the noise range, as the message (and the analytic
        # mechanisms) require: sensitivity == 2 * bound is refused.
        if self.pair_map.steps >= self.size - 1:
            raise InvalidInputError(
                f"sensitivity={self.sensitivity!r} must be smaller than the noise range "
                f"2 * bound = {2 * self.bound!r}"
            )

    @property
    def half_size(self) -> int:
        """Grid points left of 0."""
        return round(self.bound / self.step)

    @property
    def size(self) -> int:
        """Grid points ``2 * half_size + 1``."""
        return 2 * self.half_size + 1

    @property
    def pair_map(self) -> AdditivePairMap | SubsampledPairMap:
        """How the worst-case pair is built from the noise."""
        return pair_map(self.step, self.sensitivity, self.q)

    def best_gaussian(self, target_delta: float, accuracy: float = 1e-3) -> GaussianBaseline:
        """The truncated Gaussian of this range and grid with the smallest utility loss whose
        certified delta is at most ``target_delta``
        (:func:`accountant.learning.gaussian_baseline.best_truncated_gaussian`); raises
        :class:`~accountant.errors.InfeasibleTargetError` when none is."""
        return best_truncated_gaussian(
            bound=self.bound,
            pair_map=self.pair_map,
            epsilon=self.epsilon,
            times=self.times,
            target_delta=target_delta,
            utility=self.utility,
            accuracy=accuracy,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for JSON."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> LearningProblem:
        """Inverse of :meth:`to_dict`."""
        return cls(**values)


@attrs.frozen
class Schedule:
    """How to learn: ``epochs`` Adam steps with learning rate ``learning_rate`` decayed
    by ``learning_rate_decay`` per epoch; utility weight ``w_t = max(w_0 / 2^(t /
    weight_half_life), weight_min)`` (SPEC section 5, the paper's objective); with a
    ``target_delta``, ``penalty`` weighs the excess of the training bound over
    ``target_delta * (1 - target_margin)`` (the margin leaves room for the difference
    between the smooth training bound and the certified delta); model ``"increments"``
    (linear cost) or ``"sigmoid"`` (the paper's, with ``sigmoids`` sigmoids);
    ``warm_start`` ``"gaussian"`` starts the increments model from a truncated Gaussian of
    standard deviation ``bound / 3`` or, with a ``target_delta``, from the best truncated
    Gaussian meeting it; ``"model"`` starts from the model's own initialisation.
    ``checkpoint_every``: epochs between checkpoints. ``refine_every``: with a smooth
    bucket loss (``ADP``/``PDP``), every that many epochs compare the training bound of the
    best noise with its certified delta and halve the bucket width while their ratio
    exceeds ``1 + tolerance`` (:mod:`optimizers.refinement`); ``None``: never. The defaults
    are the module constants (``EPOCHS``, ``LEARNING_RATE``, ...), which ``accountant
    learn`` shares.
    """

    epochs: int = attrs.field(default=EPOCHS, converter=lambda v: check_positive_int("epochs", v))
    learning_rate: float = attrs.field(
        default=LEARNING_RATE, converter=lambda v: check_positive_real("learning_rate", v)
    )
    learning_rate_decay: float = attrs.field(
        default=LEARNING_RATE_DECAY,
        converter=lambda v: check_probability("learning_rate_decay", v),
    )
    utility_weight: float = attrs.field(
        default=UTILITY_WEIGHT, converter=lambda v: check_positive_real("utility_weight", v)
    )
    weight_half_life: float = attrs.field(
        default=WEIGHT_HALF_LIFE, converter=lambda v: check_positive_real("weight_half_life", v)
    )
    weight_min: float = attrs.field(
        default=WEIGHT_MIN, converter=lambda v: check_positive_real("weight_min", v)
    )
    penalty: float = attrs.field(
        default=PENALTY, converter=lambda v: check_positive_real("penalty", v)
    )
    target_margin: float = attrs.field(default=TARGET_MARGIN, converter=lambda v: _margin(v))
    model: str = attrs.field(default=MODEL, validator=_one_of(MODELS))
    sigmoids: int = attrs.field(
        default=SIGMOIDS, converter=lambda v: check_positive_int("sigmoids", v)
    )
    warm_start: str = attrs.field(default=WARM_START, validator=_one_of(WARM_STARTS))
    seed: int = attrs.field(default=SEED, converter=lambda v: _seed(v))
    checkpoint_every: int = attrs.field(
        default=CHECKPOINT_EVERY, converter=lambda v: check_positive_int("checkpoint_every", v)
    )
    refine_every: int | None = attrs.field(
        default=REFINE_EVERY, converter=_converter(lambda v: check_positive_int("refine_every", v))
    )

    def utility_weight_at(self, epoch: int) -> float:
        """``w_t = max(w_0 / 2^(t / gamma), w_min)``."""
        return max(self.utility_weight / 2.0 ** (epoch / self.weight_half_life), self.weight_min)

    def learning_rate_at(self, epoch: int) -> float:
        """``lr_0 * decay^t``."""
        return self.learning_rate * self.learning_rate_decay**epoch

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for JSON."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Schedule:
        """Inverse of :meth:`to_dict`."""
        return cls(**values)


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"seed must be a non-negative integer, got {value!r}")
    if int(value) != value or value < 0:
        raise InvalidInputError(f"seed must be a non-negative integer, got {value!r}")
    return int(check_finite_real("seed", value))


def _margin(value: Any) -> float:
    margin = check_finite_real("target_margin", value)
    if not 0.0 <= margin < 1.0:
        raise InvalidInputError(f"target_margin must lie in [0, 1), got {margin!r}")
    return margin
