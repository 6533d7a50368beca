"""The typed result of an audit: what ``accountant audit`` prints, and its JSON form.

These frozen classes are the source of truth of ``accountant audit --json``; the JSON
Schema shipped as ``accountant/schemas/audit.schema.json`` describes exactly what
:meth:`AuditReport.to_dict` returns (a test checks one against the other). Layout::

    {"schema_version": 1,
     "mechanism": {"description", "shifts", "pairs", "settings", "accountant",
                   "upper_bound_dimension"},
     "query": {"quantity", "compositions", "epsilon", "target_delta", "direction"},
     "results": {"distinguishing_mass": {"one_release", "composed"},
                 "exact": {"adp", "pdp"},                      # one release
                 "extended_ma": {"tight", "paper"},            # after n releases
                 "privacy_buckets": {"adp": {"lower", "upper"},
                                     "pdp": {"lower", "upper"}} or null},
     "notes": [...], "seconds": ...}

Every number is given per direction, ``{"a_over_b", "b_over_a", "reported"}``, where
``reported`` follows the query's direction (``max``: the larger of both). A value with
no finite answer (an eps that no finite eps reaches) is the string ``"inf"``.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping

import attrs

__all__ = [
    "SCHEMA_VERSION",
    "AuditMechanism",
    "AuditQuery",
    "AuditReport",
    "AuditResults",
    "Bracket",
    "BucketsResult",
    "Directional",
    "MomentsResult",
    "SavedSource",
]

#: Version of the JSON layout; raised whenever a key is renamed, moved or removed.
SCHEMA_VERSION = 1

_WIDTH = 88  # terminal lines are wrapped here (the docs show them at <= 90 characters)


def _number(x: float | None) -> float | str | None:
    """JSON-ready number: ``None`` stays ``None``, non-finite values become strings."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else str(x)


@attrs.frozen
class Directional:
    """One quantity in the two directions ``A/B`` (losses ``ln A/B`` under A) and ``B/A``."""

    a_over_b: float
    b_over_a: float

    def value(self, direction: str) -> float:
        """The quantity in ``direction``; ``"max"`` is the larger of both."""
        if direction == "A/B":
            return self.a_over_b
        if direction == "B/A":
            return self.b_over_a
        return max(self.a_over_b, self.b_over_a)

    def to_dict(self, direction: str) -> dict:
        return {
            "a_over_b": _number(self.a_over_b),
            "b_over_a": _number(self.b_over_a),
            "reported": _number(self.value(direction)),
        }


@attrs.frozen
class MomentsResult:
    """Extended MA after n releases under one conversion; ``lam`` is the optimal moment
    order of each direction (delta queries only, else ``None``)."""

    value: Directional
    lam: Directional | None = None

    def reported_lambda(self, direction: str) -> float | None:
        """The lambda of the direction whose value is reported."""
        if self.lam is None:
            return None
        if direction == "max":
            direction = "A/B" if self.value.a_over_b >= self.value.b_over_a else "B/A"
        return self.lam.value(direction)

    def to_dict(self, direction: str) -> dict:
        lam = None
        if self.lam is not None:
            lam = {
                "a_over_b": _number(self.lam.a_over_b),
                "b_over_a": _number(self.lam.b_over_a),
                "reported": _number(self.reported_lambda(direction)),
            }
        return {**self.value.to_dict(direction), "lambda": lam}


@attrs.frozen
class Bracket:
    """Certified ``lower <= true value <= upper``, per direction."""

    lower: Directional
    upper: Directional

    def to_dict(self, direction: str) -> dict:
        return {"lower": self.lower.to_dict(direction), "upper": self.upper.to_dict(direction)}


@attrs.frozen
class BucketsResult:
    """PrivacyBuckets after n releases: ADP and PDP brackets."""

    adp: Bracket
    pdp: Bracket

    def to_dict(self, direction: str) -> dict:
        return {"adp": self.adp.to_dict(direction), "pdp": self.pdp.to_dict(direction)}


@attrs.frozen
class AuditQuery:
    """What was asked: delta at ``epsilon``, or eps for ``target_delta``, after
    ``compositions`` releases, in ``direction`` (``"max"``, ``"A/B"`` or ``"B/A"``)."""

    compositions: int
    epsilon: float | None
    target_delta: float | None
    direction: str

    @property
    def quantity(self) -> str:
        """``"delta"`` (an eps was given) or ``"epsilon"`` (a target delta was given)."""
        return "delta" if self.epsilon is not None else "epsilon"

    def to_dict(self) -> dict:
        return {
            "quantity": self.quantity,
            "compositions": self.compositions,
            "epsilon": self.epsilon,
            "target_delta": self.target_delta,
            "direction": self.direction,
        }


@attrs.frozen
class SavedSource:
    """The saved accountant an audit read: where from (``path``, ``None`` from Python),
    its ``kind`` and ``settings``, and its ``history`` (what it composed)."""

    path: str | None
    kind: str
    settings: Mapping[str, float | int | str]
    history: str

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "kind": self.kind,
            "settings": dict(self.settings),
            "history": self.history,
        }


@attrs.frozen
class AuditMechanism:
    """What was audited: a description, how shifts were handled, how many worst-case
    pairs (for a saved accountant: composed mechanisms) were audited, the command-line
    settings that built it, the saved accountant it came from (or ``None``), and, for
    DP-SGD, ``upper_bound_dimension``: the number of noised coordinates per step for
    which the upper bounds hold (1 for the one-dimensional pair, whose values only bound
    a model of more coordinates from below; ``D`` for a DPSGDAccountant on ``D``
    coordinates; ``None`` for a mechanism that is not DP-SGD)."""

    description: str
    shifts: str
    pairs: int
    settings: Mapping[str, float | int | str | None] | None = None
    accountant: SavedSource | None = None
    upper_bound_dimension: int | None = None

    def to_dict(self) -> dict:
        settings = None if self.settings is None else dict(self.settings)
        return {
            "description": self.description,
            "shifts": self.shifts,
            "pairs": self.pairs,
            "settings": settings,
            "accountant": None if self.accountant is None else self.accountant.to_dict(),
            "upper_bound_dimension": self.upper_bound_dimension,
        }


@attrs.frozen
class AuditResults:
    """The numbers: distinguishing masses, the exact single-release values, the Extended
    MA under both conversions and (one pair only) the PrivacyBuckets brackets. Each is a
    delta when the query gives eps, an eps when it gives a target delta. A row the audit
    cannot give is ``None`` (JSON ``null``, left out of the table): the single-release
    rows of a saved accountant, which may compose several mechanisms."""

    distinguishing_mass_one_release: Directional | None
    distinguishing_mass_composed: Directional | None
    exact_adp: Directional | None
    exact_pdp: Directional | None
    extended_ma_tight: MomentsResult | None
    extended_ma_paper: MomentsResult | None
    privacy_buckets: BucketsResult | None

    def to_dict(self, direction: str) -> dict:
        def given(result: Directional | MomentsResult | BucketsResult | None) -> dict | None:
            return None if result is None else result.to_dict(direction)

        return {
            "distinguishing_mass": {
                "one_release": given(self.distinguishing_mass_one_release),
                "composed": given(self.distinguishing_mass_composed),
            },
            "exact": {"adp": given(self.exact_adp), "pdp": given(self.exact_pdp)},
            "extended_ma": {
                "tight": given(self.extended_ma_tight),
                "paper": given(self.extended_ma_paper),
            },
            "privacy_buckets": given(self.privacy_buckets),
        }


@attrs.frozen
class AuditReport:
    """Everything ``accountant audit`` reports about a mechanism."""

    mechanism: AuditMechanism
    query: AuditQuery
    results: AuditResults
    notes: tuple[str, ...] = ()
    seconds: float | None = None

    def to_dict(self) -> dict:
        """The JSON form (schema ``accountant/schemas/audit.schema.json``)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "mechanism": self.mechanism.to_dict(),
            "query": self.query.to_dict(),
            "results": self.results.to_dict(self.query.direction),
            "notes": list(self.notes),
            "seconds": self.seconds,
        }

    def rows(self) -> list[tuple[str, Directional, float | None]]:
        """``(label, values, lambda)`` per table row, in the order printed."""
        n = self.query.compositions
        what = self.query.quantity.replace("epsilon", "eps")
        res = self.results
        direction = self.query.direction
        rows: list[tuple[str, Directional, float | None]] = [
            (label, values, None)
            for label, values in (
                ("distinguishing mass, one release", res.distinguishing_mass_one_release),
                (f"distinguishing mass, after n = {n}", res.distinguishing_mass_composed),
                (f"exact {what}, one release (ADP)", res.exact_adp),
                (f"exact {what}, one release (PDP)", res.exact_pdp),
            )
            if values is not None
        ]
        for conversion, result in (
            ("tight", res.extended_ma_tight),
            ("paper", res.extended_ma_paper),
        ):
            if result is None:
                continue
            rows.append(
                (
                    f"Extended MA {what}, {conversion} conversion, n = {n}",
                    result.value,
                    result.reported_lambda(direction),
                )
            )
        if res.privacy_buckets is not None:
            for kind in ("ADP", "PDP"):
                bracket = getattr(res.privacy_buckets, kind.lower())
                for side in ("lower", "upper"):
                    label = f"PrivacyBuckets {kind} {what} {side}, n = {n}"
                    rows.append((label, getattr(bracket, side), None))
        return rows

    def format_table(self) -> str:
        """A readable table, lines wrapped at 88 characters."""
        query = self.query
        n = query.compositions
        asked = (
            f"delta at eps = {query.epsilon:g}"
            if query.epsilon is not None
            else f"eps for target delta = {query.target_delta:g}"
        )
        lines = [
            *_wrap(f"mechanism: {self.mechanism.description}"),
            *_wrap(f"query: {asked} after n = {n} releases; direction {query.direction}"),
            *_wrap(f"shifts: {self.mechanism.shifts}"),
            "",
        ]
        rows = self.rows()
        width = max(len(label) for label, _, _ in rows) + 2
        header = f"{'quantity':<{width}}{'A/B':>11}{'B/A':>11}{'reported':>11}{'lambda':>8}"
        lines += [header, "-" * len(header)]
        for label, values, lam in rows:
            lam_text = "" if lam is None else f"{lam:8.3g}"
            lines.append(
                f"{label:<{width}}{values.a_over_b:11.4e}{values.b_over_a:11.4e}"
                f"{values.value(query.direction):11.4e}{lam_text}"
            )
        for note in self.notes:
            lines += _wrap(f"note: {note}", indent="      ")
        return "\n".join(lines)


def _wrap(text: str, indent: str = "  ") -> list[str]:
    """``text`` wrapped at the terminal width, continuation lines indented."""
    return textwrap.wrap(text, width=_WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [
        ""
    ]
