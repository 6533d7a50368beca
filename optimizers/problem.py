"""What to learn (:class:`LearningProblem`) and how (:class:`Schedule`).

Both are frozen, validated on construction (bad values raise
:class:`~accountant.errors.InvalidInputError` naming the field and the value) and
round-trip through plain dicts, which is how checkpoints and saved results record them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import attrs

from accountant.errors import CertificationWarning, InvalidInputError
from accountant.learning.gaussian_baseline import GaussianBaseline, best_truncated_gaussian
from accountant.learning.optimal import optimal_noise
from accountant.learning.training_losses import BOUNDS
from accountant.noise import NoiseDistribution
from accountant.pairs.pair_maps import (
    AdditivePairMap,
    AllShiftsPairMap,
    SubsampledPairMap,
    check_flag,
    pair_map,
)
from accountant.validation import (
    check_choice,
    check_epsilons,
    check_finite_real,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)

__all__ = ["LearningProblem", "Schedule", "optimal_warm_start", "warm_start_noise"]

UTILITIES = ("L1", "L2")
MODELS = ("increments", "sigmoid", "symmetric")
#: Models whose noise need not be monotone: only for problems with ``all_shifts``.
NON_MONOTONE_MODELS = ("symmetric",)
WARM_STARTS = ("gaussian", "model", "optimal")

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


def _optional_q(value: Any) -> float | None:
    return value if value is None else check_probability("q", value)


def _optional_target_delta(value: Any) -> float | None:
    return value if value is None else check_target_delta("target_delta", value)


def _optional_bucket_width(value: Any) -> float | None:
    return value if value is None else check_positive_real("bucket_width", value)


def _optional_refine_every(value: Any) -> int | None:
    return value if value is None else check_positive_int("refine_every", value)


def _epsilon(value: Any) -> float:
    array = check_epsilons("epsilon", value)
    if array.size != 1:
        raise InvalidInputError(f"epsilon must be one number, got {array.size} values")
    return float(array.reshape(-1)[0])


@attrs.frozen
class LearningProblem:
    """Learn symmetric noise on the grid ``-bound..bound`` (spacing ``step``)
    for ``times`` releases at ``epsilon``: additive with ``sensitivity``, or DP-SGD with
    sampling rate ``q`` and clipping norm ``sensitivity`` when ``q`` is given.

    ``all_shifts`` (additive only): train and certify over every query difference of
    ``1..sensitivity / step`` grid steps
    (:class:`~accountant.pairs.pair_maps.AllShiftsPairMap`), as noise that is not monotone
    towards 0 needs (SPEC section 4); without it only the full shift is audited, which
    bounds the smaller ones for symmetric monotone noise alone, so the non-monotone
    models (``NON_MONOTONE_MODELS``) are refused then. ``to_dict`` omits the key when
    ``False``, so dicts (and the run ids hashed from them) of other problems are unchanged.

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
    q: float | None = attrs.field(default=None, converter=_optional_q)
    utility: str = attrs.field(default="L1", validator=_one_of(UTILITIES))
    loss: str = attrs.field(default="ADP", validator=_one_of(BOUNDS))
    conversion: str = attrs.field(default="tight", validator=_one_of(("tight", "paper")))
    target_delta: float | None = attrs.field(default=None, converter=_optional_target_delta)
    bucket_width: float | None = attrs.field(default=None, converter=_optional_bucket_width)
    all_shifts: bool = attrs.field(default=False, converter=lambda v: check_flag("all_shifts", v))

    def __attrs_post_init__(self) -> None:
        if self.all_shifts and self.q is not None:
            raise InvalidInputError(
                f"all_shifts=True is for additive noise only, got q={self.q!r} (DP-SGD)"
            )
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
    def pair_map(self) -> AdditivePairMap | SubsampledPairMap | AllShiftsPairMap:
        """How the worst-case pairs are built from the noise (every shift with
        ``all_shifts``)."""
        return pair_map(self.step, self.sensitivity, self.q, all_shifts=self.all_shifts)

    def check_schedule(self, schedule: Schedule) -> None:
        """Refuse, in one line, a schedule this problem cannot be learned with: a
        non-monotone model without ``all_shifts`` (its full-shift certificate would be
        unsound), and the ``"optimal"`` warm start (the single-release LP optimum) unless
        the model starts from a pmf and the problem is additive with ``times == 1`` and a
        ``target_delta``."""
        if schedule.model in NON_MONOTONE_MODELS and not self.all_shifts:
            raise InvalidInputError(
                f"model={schedule.model!r} learns noise that need not be monotone, so it needs "
                "a problem with all_shifts=True (the full shift alone does not bound smaller "
                "ones), got all_shifts=False"
            )
        if schedule.warm_start == "optimal":
            if schedule.model not in ("increments", "symmetric"):
                raise InvalidInputError(
                    "warm_start='optimal' starts the 'increments' or 'symmetric' model from "
                    f"a pmf, got model={schedule.model!r}"
                )
            _check_single_release(self)

    def best_gaussian(self, target_delta: float, accuracy: float = 1e-3) -> GaussianBaseline:
        """The truncated Gaussian of this range and grid with the smallest utility loss whose
        certified delta is at most ``target_delta``
        (:func:`accountant.learning.gaussian_baseline.best_truncated_gaussian`); raises
        :class:`~accountant.errors.InfeasibleTargetError` when none is."""
        mapping = self.pair_map
        if isinstance(mapping, AllShiftsPairMap):
            # A truncated Gaussian is symmetric and falls from 0: the full shift bounds
            # every smaller one (paper, Theorem "Shift Invariance").
            mapping = mapping.full_shift
        return best_truncated_gaussian(
            bound=self.bound,
            pair_map=mapping,
            epsilon=self.epsilon,
            times=self.times,
            target_delta=target_delta,
            utility=self.utility,
            accuracy=accuracy,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for JSON (``all_shifts`` only when ``True``: see the class)."""
        values = attrs.asdict(self)
        if not self.all_shifts:
            del values["all_shifts"]
        return values

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
    (linear cost), ``"sigmoid"`` (the paper's, with ``sigmoids`` sigmoids) or
    ``"symmetric"`` (free log-weights, not monotone: problems with ``all_shifts`` only);
    ``warm_start`` ``"gaussian"`` starts the increments and symmetric models from a
    truncated Gaussian of standard deviation ``bound / 3`` or, with a ``target_delta``,
    from the best truncated Gaussian meeting it; ``"optimal"`` starts them from the
    single-release LP optimum (symmetric, monotone) at ``target_delta * (1 -
    target_margin)`` (additive problems with ``times == 1`` only); ``"model"`` starts from
    the model's own initialisation.
    ``checkpoint_every``: epochs between checkpoints. ``refine_every``: with a smooth
    bucket loss (``ADP``/``PDP``), every that many epochs compare the training bound of the
    best noise with its certified delta and halve the bucket width while their ratio
    is off 1 by more than the tolerance (:mod:`optimizers.refinement`); ``None``: never.
    The defaults are the module constants (``EPOCHS``, ``LEARNING_RATE``, ...), which
    ``accountant learn`` shares.
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
    refine_every: int | None = attrs.field(default=REFINE_EVERY, converter=_optional_refine_every)

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


def _check_single_release(problem: LearningProblem) -> None:
    if problem.q is not None or problem.times != 1 or problem.target_delta is None:
        raise InvalidInputError(
            "warm_start='optimal' (the single-release LP optimum) needs an additive "
            f"problem with times=1 and a target_delta, got times={problem.times!r}, "
            f"q={problem.q!r}, target_delta={problem.target_delta!r}"
        )


def optimal_warm_start(problem: LearningProblem, schedule: Schedule) -> NoiseDistribution:
    """The warm start ``"optimal"``: the single-release LP optimum
    (:func:`accountant.learning.optimal.optimal_noise`, symmetric and monotone) of the
    problem's range, grid, epsilon, sensitivity and utility at the training target
    ``target_delta * (1 - target_margin)``; only a starting point, never certified as is.
    Refused (one line) for problems it does not fit (:meth:`LearningProblem.check_schedule`).
    """
    if not isinstance(problem, LearningProblem):
        raise InvalidInputError(f"problem must be a LearningProblem, got {type(problem).__name__}")
    if not isinstance(schedule, Schedule):
        raise InvalidInputError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    problem.check_schedule(schedule)
    _check_single_release(problem)
    assert problem.target_delta is not None  # _check_single_release refuses None
    target = problem.target_delta * (1.0 - schedule.target_margin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)  # (solver tolerance ~1e-9)
        optimum = optimal_noise(
            problem.bound,
            problem.step,
            problem.epsilon,
            target,
            problem.sensitivity,
            utility=problem.utility,
        )
    return optimum.noise


def warm_start_noise(
    problem: LearningProblem,
    schedule: Schedule,
    gaussian: Callable[[LearningProblem, Schedule], NoiseDistribution],
) -> NoiseDistribution | None:
    """Check ``schedule`` against ``problem`` (:meth:`LearningProblem.check_schedule`: a
    non-monotone model needs ``all_shifts``), then the noise the model starts from:
    ``None`` when it starts from its own initialisation (``warm_start="model"``, or the
    sigmoid model), :func:`optimal_warm_start` for ``"optimal"``, ``gaussian(problem,
    schedule)`` for ``"gaussian"``."""
    problem.check_schedule(schedule)
    if schedule.model not in ("increments", "symmetric") or schedule.warm_start == "model":
        return None
    warm = optimal_warm_start if schedule.warm_start == "optimal" else gaussian
    return warm(problem, schedule)


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
