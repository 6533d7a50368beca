"""Audit an existing mechanism: every bound the accountant has, in one report.

This is what ``accountant audit`` prints; it is also usable from Python::

    from accountant import noise
    from accountant.audit import audit_additive
    report = audit_additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0, times=128)
    print(report.format_table())
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from accountant._checks import (
    check_direction,
    check_epsilons,
    check_finite_real,
    check_positive_int,
    check_target_delta,
)
from accountant.buckets import PrivacyBuckets
from accountant.moments import CONVERSIONS, ExtendedMA
from accountant.noise import NoiseDistribution
from accountant.pairs import WorstCasePair, additive_shift_pairs
from accountant.pld import privacy_loss_distribution

__all__ = ["AuditReport", "AuditRow", "audit_additive", "audit_pairs"]

_DIRECTIONS = ("A/B", "B/A")


@attrs.frozen
class AuditRow:
    """One quantity in both directions; ``lam`` holds the optimal lambda where it applies."""

    name: str
    a_over_b: float
    b_over_a: float
    lam_a_over_b: float | None = None
    lam_b_over_a: float | None = None

    def value(self, direction: str) -> float:
        """The quantity in ``direction`` (``"max"``: the larger of both)."""
        if direction == "A/B":
            return self.a_over_b
        if direction == "B/A":
            return self.b_over_a
        return max(self.a_over_b, self.b_over_a)


@attrs.frozen
class AuditReport:
    """Everything ``accountant audit`` reports about a mechanism."""

    description: str
    times: int
    epsilon: float | None
    target_delta: float | None
    direction: str
    shift_note: str
    rows: tuple[AuditRow, ...]

    def to_dict(self) -> dict:
        """JSON-ready form (``inf`` becomes the string ``"inf"``)."""

        def clean(x: float | None) -> float | str | None:
            return None if x is None else (x if math.isfinite(x) else str(x))

        return {
            "mechanism": self.description,
            "compositions": self.times,
            "epsilon": self.epsilon,
            "target_delta": self.target_delta,
            "direction": self.direction,
            "shift_invariance": self.shift_note,
            "rows": [
                {
                    "name": r.name,
                    "A/B": clean(r.a_over_b),
                    "B/A": clean(r.b_over_a),
                    "reported": clean(r.value(self.direction)),
                    "lambda A/B": clean(r.lam_a_over_b),
                    "lambda B/A": clean(r.lam_b_over_a),
                }
                for r in self.rows
            ],
        }

    def format_table(self) -> str:
        """A readable fixed-width table."""
        header = f"{'quantity':<46}{'A/B':>12}{'B/A':>12}{'reported':>12}{'lambda':>9}"
        lines = [
            f"mechanism: {self.description}",
            f"compositions n = {self.times}; "
            + (
                f"eps = {self.epsilon:g}"
                if self.epsilon is not None
                else f"target delta = {self.target_delta:g}"
            )
            + f"; direction {self.direction}",
            f"shifts: {self.shift_note}",
            "",
            header,
            "-" * len(header),
        ]
        for row in self.rows:
            lam = _max_lambda(row, self.direction)
            lam_text = "" if lam is None else (f"{lam:9.3g}" if math.isfinite(lam) else "      inf")
            lines.append(
                f"{row.name:<46}{row.a_over_b:12.4e}{row.b_over_a:12.4e}"
                f"{row.value(self.direction):12.4e}{lam_text}"
            )
        return "\n".join(lines)


def _max_lambda(row: AuditRow, direction: str) -> float | None:
    if row.lam_a_over_b is None:
        return None
    if direction == "A/B":
        return row.lam_a_over_b
    if direction == "B/A":
        return row.lam_b_over_a
    return row.lam_a_over_b if row.a_over_b >= row.b_over_a else row.lam_b_over_a


def audit_pairs(
    pairs: WorstCasePair | Sequence[WorstCasePair],
    times: int,
    *,
    epsilon: float | None = 0.3,
    target_delta: float | None = None,
    direction: str = "max",
    shift_note: str = "one pair given",
) -> AuditReport:
    """Audit ``times`` releases of a pair (or the worst case over several pairs).

    With ``epsilon``: exact single-release ADP and PDP delta, Extended MA delta after
    ``times`` releases under both conversions with their optimal lambda, and the
    distinguishing mass per release and after ``times``. With ``target_delta``
    instead: the corresponding epsilons.
    """
    pair_list = (pairs,) if isinstance(pairs, WorstCasePair) else tuple(pairs)
    times = check_positive_int("times", times)
    direction = check_direction("direction", direction)
    if (epsilon is None) == (target_delta is None):
        raise ValueError("give exactly one of epsilon and target_delta")
    plds = {d: [privacy_loss_distribution(p, d) for p in pair_list] for d in _DIRECTIONS}
    accountants = {c: ExtendedMA(conversion=c).compose(pair_list, times) for c in CONVERSIONS}
    omega = {d: max(pld.distinguishing_mass for pld in plds[d]) for d in _DIRECTIONS}
    ma = accountants["tight"]
    rows = [
        AuditRow("distinguishing mass, one release", omega["A/B"], omega["B/A"]),
        AuditRow(
            f"distinguishing mass, after n = {times}",
            ma.distinguishing_mass("A/B"),
            ma.distinguishing_mass("B/A"),
        ),
    ]
    if epsilon is not None:
        eps = float(check_epsilons("epsilon", check_finite_real("epsilon", epsilon)))
        rows += [
            _per_direction(
                "exact delta, one release (ADP)", lambda d: max(p.delta(eps) for p in plds[d])
            ),
            _per_direction(
                "exact delta, one release (PDP)", lambda d: max(p.delta_pdp(eps) for p in plds[d])
            ),
        ]
        for conversion, accountant in accountants.items():
            details = accountant.delta_details(eps)
            rows.append(
                AuditRow(
                    f"Extended MA delta, {conversion} conversion, n = {times}",
                    details.a_over_b.delta,
                    details.b_over_a.delta,
                    details.a_over_b.lam,
                    details.b_over_a.lam,
                )
            )
    else:
        target = check_target_delta("target_delta", target_delta)
        rows += [
            _per_direction(
                "exact eps, one release (ADP)", lambda d: max(p.epsilon(target) for p in plds[d])
            ),
            _per_direction(
                "exact eps, one release (PDP)",
                lambda d: max(p.epsilon_pdp(target) for p in plds[d]),
            ),
        ]
        for conversion, accountant in accountants.items():
            rows.append(
                _per_direction(
                    f"Extended MA eps, {conversion} conversion, n = {times}",
                    lambda d, a=accountant: a.epsilon(target, d),
                )
            )
    if len(pair_list) == 1:
        rows += _privacy_bucket_rows(pair_list[0], times, epsilon, target_delta)
    else:
        shift_note += "; PrivacyBuckets rows omitted (no single composed PLD for mixed shifts)"
    description = pair_list[0].description if len(pair_list) == 1 else shift_note
    return AuditReport(
        description=description,
        times=times,
        epsilon=epsilon,
        target_delta=target_delta,
        direction=direction,
        shift_note=shift_note,
        rows=tuple(rows),
    )


def _privacy_bucket_rows(
    pair: WorstCasePair, times: int, epsilon: float | None, target_delta: float | None
) -> list[AuditRow]:
    """Certified PrivacyBuckets rows: ADP lower/upper and PDP lower/upper (or eps bounds)."""
    buckets = PrivacyBuckets().compose(pair, times=times)
    label = f"PrivacyBuckets {{}}, n = {times}"
    if epsilon is not None:
        adp = {d: buckets.delta(epsilon, d) for d in _DIRECTIONS}
        pdp = {d: buckets.delta_pdp(epsilon, d) for d in _DIRECTIONS}
        return [
            _per_direction(label.format("ADP delta lower"), lambda d: adp[d].lower),
            _per_direction(label.format("ADP delta upper"), lambda d: adp[d].upper),
            _per_direction(label.format("PDP delta lower"), lambda d: pdp[d].lower),
            _per_direction(label.format("PDP delta upper"), lambda d: pdp[d].upper),
        ]
    eps = {d: buckets.epsilon(target_delta, d) for d in _DIRECTIONS}
    return [
        _per_direction(label.format("ADP eps lower"), lambda d: eps[d].lower),
        _per_direction(label.format("ADP eps upper"), lambda d: eps[d].upper),
    ]


def _per_direction(name: str, compute) -> AuditRow:
    return AuditRow(name, compute("A/B"), compute("B/A"))


def audit_additive(
    noise: NoiseDistribution,
    sensitivity: float,
    times: int,
    *,
    epsilon: float | None = 0.3,
    target_delta: float | None = None,
    direction: str = "max",
    description: str | None = None,
) -> AuditReport:
    """Audit additive ``noise`` with ``sensitivity``: the full shift alone when the noise is
    symmetric and monotone (paper, Theorem "Shift Invariance"), else every grid shift."""
    pairs = additive_shift_pairs(noise, sensitivity)
    if len(pairs) == 1:
        note = "noise is symmetric and monotone: the full sensitivity bounds every smaller shift"
    else:
        note = (
            "noise is NOT symmetric and monotone: worst case over every grid shift "
            f"1..{len(pairs)} (x {noise.step:g})"
        )
    report = audit_pairs(
        pairs,
        times,
        epsilon=epsilon,
        target_delta=target_delta,
        direction=direction,
        shift_note=note,
    )
    if description is not None:
        report = attrs.evolve(report, description=description)
    return report
