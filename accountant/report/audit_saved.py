"""Audit an accountant that was composed elsewhere, typically saved with a model
(:func:`accountant.save_accountant`) and loaded again: what ``accountant audit
--accountant PATH`` prints.

The saved accountant already says what was composed (its history), so nothing about the
noise or the number of releases is asked again. The report has the layout of every
audit (:class:`~accountant.report.audit_results.AuditReport`), with the rows a composed
accountant can answer:

* the Extended MA after all releases, under both conversions (rebuilt from the saved
  components; omitted, with a note, when a component is a privacy-loss distribution,
  which the Extended MA does not take);
* the certified PrivacyBuckets ADP and PDP brackets, from the saved accountant itself
  (with its own settings) when it is a PrivacyBuckets or a
  :class:`~accountant.dpsgd.DPSGDAccountant` (a DP-SGD run, also from ``--run``); the
  Extended MA rows of a DPSGDAccountant on more than one coordinate are omitted, since
  they bound the one-dimensional pair only;
* the distinguishing mass after all releases (from the Extended MA).

Single-release rows (distinguishing mass and exact values of one release) are ``None``:
a heterogeneous composition has no one release.
"""

from __future__ import annotations

from typing import Any, cast

from accountant.buckets import PrivacyBuckets
from accountant.dpsgd import DPSGDAccountant
from accountant.errors import InvalidInputError
from accountant.moments.extended_ma import ExtendedMA
from accountant.report.audit import (
    Progress,
    _check_composed_floor,
    _Stages,
    audit_query,
    buckets_result,
    moments_results,
)
from accountant.report.audit_results import (
    AuditMechanism,
    AuditReport,
    AuditResults,
    Directional,
    SavedSource,
)
from accountant.validation import ONE_DIRECTION, Direction, shown

__all__ = ["audit_accountant"]


def _extended_ma(accountant: Any, conversion: str) -> ExtendedMA:
    """The Extended MA with ``conversion`` of the components ``accountant`` composed."""
    state = accountant.state_dict()
    state.update(kind="ExtendedMA", settings={"conversion": conversion})
    return ExtendedMA.from_state_dict(state)


def audit_accountant(
    accountant: PrivacyBuckets | ExtendedMA | DPSGDAccountant,
    *,
    epsilon: float | None = 0.3,
    target_delta: float | None = None,
    direction: Direction = "max",
    path: str | None = None,
    progress: Progress | None = None,
    origin: str = "saved",
) -> AuditReport:
    """Audit a composed ``accountant`` (a PrivacyBuckets, an Extended MA or a
    DPSGDAccountant, as saved): delta at ``epsilon`` or the eps of ``target_delta`` after
    all of its releases, both directions, reported in ``direction``. ``path`` (where it
    was loaded from) and ``origin`` (``"saved"``, or ``"training run"`` for ``--run``)
    are only reported. Refuses an accountant that composed nothing."""
    if type(accountant) not in (PrivacyBuckets, ExtendedMA, DPSGDAccountant):
        raise InvalidInputError(
            "accountant must be a PrivacyBuckets, an ExtendedMA or a DPSGDAccountant, "
            f"got {shown(accountant)}"
        )
    where = "" if path is None else f" ({path})"
    if not accountant.releases:
        raise InvalidInputError(
            f"the accountant{where} composed nothing: there is nothing to audit"
        )
    query = audit_query(accountant.releases, epsilon, target_delta, direction)
    is_buckets = isinstance(accountant, PrivacyBuckets | DPSGDAccountant)
    stages = _Stages(progress, 4 if is_buckets else 1)
    notes: list[str] = []
    stages(f"Extended MA, n = {query.compositions}")
    try:
        dimension = getattr(accountant, "dimension", 1)
        if dimension != 1:
            raise InvalidInputError(
                f"they bound the one-dimensional pair, not {dimension} coordinates"
            )
        moments = {c: _extended_ma(accountant, c) for c in ("tight", "paper")}
    except InvalidInputError as exc:
        moments = None
        notes.append(f"Extended MA rows omitted: {exc}")
    composed = None
    if moments is not None:
        composed = Directional(*(moments["tight"].distinguishing_mass(d) for d in ONE_DIRECTION))
        if query.target_delta is not None:
            _check_composed_floor(query.target_delta, query, None, composed, notes)
    ma = None if moments is None else moments_results(moments, query, notes)
    buckets = None
    if isinstance(accountant, PrivacyBuckets | DPSGDAccountant):  # is_buckets
        buckets = buckets_result(accountant, query, stages, notes)
    else:
        notes.append("PrivacyBuckets rows omitted: the saved accountant is an Extended MA")
    notes.insert(0, "one-release rows omitted: a saved accountant may compose several mechanisms")
    results = AuditResults(
        None,
        composed,
        None,
        None,
        None if ma is None else ma["tight"],
        None if ma is None else ma["paper"],
        buckets,
    )
    state = accountant.state_dict()
    source = SavedSource(path, state["kind"], state["settings"], accountant.history)
    kind = {"ExtendedMA": "Extended MA"}.get(state["kind"], state["kind"])
    mechanism = AuditMechanism(
        accountant.history,
        # a training run's accountant is a DPSGDAccountant (cli_saved: run_accountant)
        f"{origin}{where}: {cast(DPSGDAccountant, accountant).dimension} coordinates per step, "
        f"composed in a {kind}"
        if origin == "training run"
        else f"{origin} {kind} accountant{where}: its history says what was composed",
        len(accountant.components),
        accountant=source,
    )
    return AuditReport(mechanism, query, results, notes=tuple(notes))
