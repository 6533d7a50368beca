"""Privacy-utility curves from a stored sweep: the paper's figures as data and plots.

A point is one finished run: its noise's certified delta (the PrivacyBuckets upper
bound at the run's eps and n, never a training loss) against its utility loss. Each run
gives two points: the learned noise's (``learned_delta_certified``,
``learned_utility``) and its truncated-Gaussian baseline's (the best truncated Gaussian
of the same range and grid whose certified delta is at most the learned noise's). The
learned point is shown whether or not the learned noise beat the Gaussian (``learn``
returns the Gaussian when it did not; the curve shows what the learner found).

:func:`select` filters results by problem fields, :func:`utility_curves` groups them into
one learned and one Gaussian :class:`Curve` per value of a field (e.g. ``times`` for
``fig:optimality_graph``, ``epsilon`` for ``fig:different_eps``), each sorted by delta,
and :func:`plot_utility_curves` draws them (the ``plot`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from accountant.errors import InvalidInputError
from accountant.report.plotting import pyplot
from accountant.validation import shown
from optimizers.problem import LearningProblem
from optimizers.sweep.task import RunResult

__all__ = ["Curve", "CurvePoint", "plot_utility_curves", "select", "utility_curves"]

#: Line and marker of each kind of curve (other kinds: dotted, triangles).
STYLES = {"learned": ("-", "o"), "Gaussian": ("--", "x")}
#: The problem fields results can be selected and grouped by.
FIELDS = tuple(a.name for a in attrs.fields(LearningProblem))


@attrs.frozen(kw_only=True)
class CurvePoint:
    """One run's point: certified ``delta``, ``utility`` loss, and the ``run_id``."""

    delta: float
    utility: float
    run_id: str


@attrs.frozen(kw_only=True)
class Curve:
    """Points of one ``kind`` (``"learned"``, ``"Gaussian"``, or another baseline a
    caller adds, e.g. ``"Laplace"``) for one value of the grouping field (``label``,
    e.g. ``"n = 8"``), sorted by delta."""

    label: str
    kind: str
    value: Any
    points: tuple[CurvePoint, ...]


def _check_field(name: str, field: Any) -> str:
    if field not in FIELDS:
        raise InvalidInputError(
            f"{name} must be a LearningProblem field ({', '.join(FIELDS)}), got {shown(field)}"
        )
    return field


def select(results: Iterable[RunResult], **fields: Any) -> list[RunResult]:
    """The results whose problem has every given field equal to the given value
    (``select(results, epsilon=0.3, utility="L2", q=None)``), in their order."""
    for name in fields:
        _check_field("fields", name)
    return [
        r
        for r in results
        if all(getattr(r.task.problem, name) == value for name, value in fields.items())
    ]


def _label(field: str, value: Any) -> str:
    name = {"times": "n", "epsilon": "eps", "utility": "U"}.get(field, field)
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{name} = {text}"


def utility_curves(results: Sequence[RunResult], by: str) -> list[Curve]:
    """For each value of the problem field ``by`` (in increasing order): the learned
    curve and the Gaussian curve of the ``results`` with that value. Runs without a
    Gaussian baseline (none of the range reaches their delta) add no Gaussian point."""
    _check_field("by", by)
    values = sorted({getattr(r.task.problem, by) for r in results}, key=lambda v: (v is None, v))
    curves = []
    for value in values:
        group = [r for r in results if getattr(r.task.problem, by) == value]
        learned = [
            CurvePoint(delta=r.learned_delta_certified, utility=r.learned_utility, run_id=r.run_id)
            for r in group
        ]
        gaussian = [
            CurvePoint(
                delta=r.gaussian_delta_certified, utility=r.gaussian_utility, run_id=r.run_id
            )
            for r in group
            if r.gaussian_utility is not None and r.gaussian_delta_certified is not None
        ]
        for kind, points in (("learned", learned), ("Gaussian", gaussian)):
            if points:
                ordered = tuple(sorted(points, key=lambda p: p.delta))
                curves.append(
                    Curve(label=_label(by, value), kind=kind, value=value, points=ordered)
                )
    return curves


def plot_utility_curves(curves: Sequence[Curve], path: str, *, title: str = "") -> None:
    """Utility loss against certified delta (log scale), one colour per group: learned
    noise solid with dots, truncated Gaussian dashed with crosses (as the paper's
    ``fig:optimality_graph``), any other baseline dotted with triangles."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7.0, 4.5), dpi=120)
    colours: dict[str, Any] = {}
    for curve in curves:
        colour = colours.setdefault(curve.label, f"C{len(colours) % 10}")
        deltas = [p.delta for p in curve.points]
        utilities = [p.utility for p in curve.points]
        line, marker = STYLES.get(curve.kind, (":", "^"))
        axes.plot(
            deltas,
            utilities,
            ls=line,
            marker=marker,
            color=colour,
            lw=1.3,
            label=f"{curve.label}, {curve.kind}",
        )
    axes.set_xscale("log")
    axes.set_xlabel("certified delta (PrivacyBuckets upper bound)")
    axes.set_ylabel("utility loss")
    axes.set_title(title or "utility against certified delta")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
