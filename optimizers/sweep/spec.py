"""A sweep specification: a grid of learning problems, expanded into runs.

:class:`SweepSpec` holds one list of values per swept parameter (eps, n, utility loss,
training bound, target delta, pair, seed) and the values every run shares (the grid,
the sensitivity, the :class:`~optimizers.problem.Schedule`). :meth:`SweepSpec.tasks`
expands it into one :class:`~optimizers.sweep.task.SweepTask` per combination, in a
fixed order (eps, then n, utility, loss, target delta, sampling rate, seed; the last
varies fastest).

Every value is checked on construction, and every run's
:class:`~optimizers.problem.LearningProblem` is built then too, so a bad spec is refused
(:class:`~accountant.errors.InvalidInputError` naming the argument and the value) before
any work.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs

from accountant.errors import InvalidInputError
from accountant.learning.training_losses import BOUNDS
from accountant.validation import (
    check_choice,
    check_nonnegative_real,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
    shown,
)
from optimizers.problem import UTILITIES, LearningProblem, Schedule
from optimizers.sweep.task import SweepTask

__all__ = ["GRID_CHECKS", "SweepSpec", "grid_converter"]


def grid_converter(name: str, check: Callable[[str, Any], Any]) -> Callable[[Any], tuple]:
    """A converter: a non-empty list or tuple of values, each passed through ``check``
    (which names ``name``), without repeats."""

    def convert(values: Any) -> tuple:
        if isinstance(values, str | bytes) or not isinstance(values, list | tuple):
            raise InvalidInputError(
                f"{name} must be a list or tuple of values, got {shown(values)}"
            )
        if not values:
            raise InvalidInputError(f"{name} must not be empty, got {shown(values)}")
        checked = tuple(check(name, value) for value in values)
        repeated = [v for i, v in enumerate(checked) if v in checked[:i]]
        if repeated:
            raise InvalidInputError(f"{name} lists {shown(repeated[0])} more than once")
        return checked

    return convert


def _choice(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    return lambda name, value: check_choice(name, value, choices)


def _sampling_rate(name: str, value: Any) -> float | None:
    """``None`` (the additive pair) or a DP-SGD sampling rate in (0, 1]."""
    return None if value is None else check_probability(name, value)


def _target_delta(name: str, value: Any) -> float | None:
    """``None`` (the paper's objective) or a certified delta to learn for, in (0, 1)."""
    return None if value is None else check_target_delta(name, value)


def _seed(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must hold non-negative integers, got {shown(value)}")
    return int(value)


#: The check of one value of each swept field (the CLI applies them under its flag names).
GRID_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "epsilons": check_nonnegative_real,
    "times": check_positive_int,
    "utilities": _choice(UTILITIES),
    "losses": _choice(BOUNDS),
    "target_deltas": _target_delta,
    "sampling_rates": _sampling_rate,
    "seeds": _seed,
}


def _swept(name: str) -> Callable[[Any], tuple]:
    return grid_converter(name, GRID_CHECKS[name])


def _optional_bucket_width(value: Any) -> float | None:
    return None if value is None else check_positive_real("bucket_width", value)


def _swept_epsilons(values: Any) -> tuple[float, ...]:
    return _swept("epsilons")(values)


def _swept_times(values: Any) -> tuple[int, ...]:
    return _swept("times")(values)


def _swept_utilities(values: Any) -> tuple[str, ...]:
    return _swept("utilities")(values)


def _swept_losses(values: Any) -> tuple[str, ...]:
    return _swept("losses")(values)


def _swept_target_deltas(values: Any) -> tuple[float | None, ...]:
    return _swept("target_deltas")(values)


def _swept_sampling_rates(values: Any) -> tuple[float | None, ...]:
    return _swept("sampling_rates")(values)


def _swept_seeds(values: Any) -> tuple[int, ...]:
    return _swept("seeds")(values)


def _schedule(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, Schedule):
        raise InvalidInputError(
            f"schedule must be a Schedule, got {type(value).__name__}: {shown(value)}"
        )


@attrs.frozen(kw_only=True)
class SweepSpec:
    """A grid of learning runs (module docstring).

    Swept (each a non-empty list without repeats): ``epsilons`` (eps after all
    releases), ``times`` (releases n), ``utilities`` (``"L1"``/``"L2"``), ``losses``
    (training bound ``"ADP"``, ``"PDP"`` or ``"MA"``), ``target_deltas`` (the certified
    delta each run learns for; ``None``: the paper's objective bound + w_t * utility,
    the default), ``sampling_rates`` (``None``:
    the additive pair; a rate q in (0, 1]: the DP-SGD pair with clipping norm
    ``sensitivity``) and ``seeds`` (the schedule's seed). Shared by every run:
    ``bound`` and ``step`` (the grid ``-bound..bound``), ``sensitivity``,
    ``conversion`` (of ``"MA"``), ``bucket_width`` and ``schedule`` (its ``seed`` is
    replaced by each run's).
    """

    epsilons: tuple[float, ...] = attrs.field(converter=_swept_epsilons)
    times: tuple[int, ...] = attrs.field(converter=_swept_times)
    utilities: tuple[str, ...] = attrs.field(default=("L1",), converter=_swept_utilities)
    losses: tuple[str, ...] = attrs.field(default=("ADP",), converter=_swept_losses)
    target_deltas: tuple[float | None, ...] = attrs.field(
        default=(None,), converter=_swept_target_deltas
    )
    sampling_rates: tuple[float | None, ...] = attrs.field(
        default=(None,), converter=_swept_sampling_rates
    )
    seeds: tuple[int, ...] = attrs.field(default=(0,), converter=_swept_seeds)
    bound: float = attrs.field(converter=lambda v: check_positive_real("bound", v))
    step: float = attrs.field(converter=lambda v: check_positive_real("step", v))
    sensitivity: float = attrs.field(
        default=1.0, converter=lambda v: check_positive_real("sensitivity", v)
    )
    conversion: str = attrs.field(
        default="tight", converter=lambda v: check_choice("conversion", v, ("tight", "paper"))
    )
    bucket_width: float | None = attrs.field(default=None, converter=_optional_bucket_width)
    schedule: Schedule = attrs.field(factory=Schedule, validator=_schedule)

    def __attrs_post_init__(self) -> None:
        self.tasks()  # every run's problem is valid, or the spec is refused now

    def __len__(self) -> int:
        return (
            len(self.epsilons)
            * len(self.times)
            * len(self.utilities)
            * len(self.losses)
            * len(self.target_deltas)
            * len(self.sampling_rates)
            * len(self.seeds)
        )

    def tasks(self) -> tuple[SweepTask, ...]:
        """One task per combination of the swept values, in the order of the grid."""
        grid = itertools.product(
            self.epsilons,
            self.times,
            self.utilities,
            self.losses,
            self.target_deltas,
            self.sampling_rates,
            self.seeds,
        )
        return tuple(
            SweepTask(
                problem=LearningProblem(
                    bound=self.bound,
                    step=self.step,
                    epsilon=epsilon,
                    times=times,
                    sensitivity=self.sensitivity,
                    q=q,
                    utility=utility,
                    loss=loss,
                    conversion=self.conversion,
                    target_delta=target_delta,
                    bucket_width=self.bucket_width,
                ),
                schedule=attrs.evolve(self.schedule, seed=seed),
            )
            for epsilon, times, utility, loss, target_delta, q, seed in grid
        )
