"""Rounded single releases shared by every accountant of a process (issue 26; pure caching).

Rounding a release onto a lattice (:meth:`lattice` of a release source) depends only on the
release and on ``(direction, width, anchor, tail_mass, max_buckets)``, not on how often it is
composed, yet it dominates the cost of a composition of analytic mechanisms (their CDFs and
quadrature, :mod:`accountant.buckets.analytic_lattice`). Accountants are immutable: each
``compose`` makes a new one, and an Opacus run asks a new accountant after every epoch. So:

* :func:`shared_source` gives one release source per equal analytic mechanism (value-keyed:
  equal parameters, one source), the last :data:`SOURCES` of them;
* :func:`cached_lattice` keeps rounded releases of every source in one store of at most
  :data:`BYTES` bytes, by group (releases at one ``(direction, width, anchor, tail_mass,
  max_buckets)``): a full store evicts whole groups, least recently used first, never the
  group being filled, and a release of a group that cannot fit is simply not kept. A
  composition reads its releases in order, twice (two passes), so evicting releases one by
  one would miss every one of a group larger than the store; keeping the first ones does
  not thrash;
* widths of rounded releases lie on a fixed grid (:func:`~accountant.buckets.widths.grid_width`),
  so an accountant with a few more steps of the same mechanisms usually rounds them at the
  widths already computed.

A cached release is the very object a new computation would return (the computation is
deterministic): no number changes.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from accountant.buckets.bucketed import BucketedPLD

__all__ = ["BYTES", "SOURCES", "cached_lattice", "clear", "held_bytes", "shared_source"]

#: Bytes of rounded releases kept (all sources together).
BYTES = 1 << 28
#: Release sources of distinct analytic mechanisms kept.
SOURCES = 64

_lock = threading.RLock()
_sources: OrderedDict[Any, Any] = OrderedDict()
#: group -> {id(source): (weak reference to the source, release, bytes)}
_groups: OrderedDict[tuple, dict[int, tuple[weakref.ref, BucketedPLD, int]]] = OrderedDict()
_held = 0


def shared_source(mechanism: Any, build: Callable[[Any], Any]) -> Any:
    """The release source ``build(mechanism)``, one per equal ``mechanism`` (which must be
    hashable by value, as the frozen analytic mechanisms are)."""
    with _lock:
        source = _sources.get(mechanism)
        if source is None:
            source = build(mechanism)
            _sources[mechanism] = source
            while len(_sources) > SOURCES:
                _sources.popitem(last=False)
        else:
            _sources.move_to_end(mechanism)
        return source


def cached_lattice(
    source: Any,
    direction: str,
    width: float,
    anchor: float,
    tail_mass: float,
    max_buckets: int,
) -> BucketedPLD:
    """``source.lattice(direction, width, anchor, tail_mass, max_buckets)``, computed once
    while it is kept (module note)."""
    global _held
    group = (direction, width, anchor, tail_mass, max_buckets)
    with _lock:
        members = _groups.get(group)
        kept = None if members is None else members.get(id(source))
        if kept is not None and kept[0]() is source:
            _groups.move_to_end(group)
            return kept[1]
    release = source.lattice(direction, width, anchor, tail_mass, max_buckets)
    size = _nbytes(release)
    with _lock:
        members = _groups.setdefault(group, {})
        _groups.move_to_end(group)
        old = members.pop(id(source), None)
        if old is not None:
            _held -= old[2]
        while _held + size > BYTES and len(_groups) > 1:
            oldest = next(iter(_groups))
            if oldest == group:
                break
            _held -= sum(kept[2] for kept in _groups.pop(oldest).values())
        if _held + size <= BYTES:
            members[id(source)] = (weakref.ref(source), release, size)
            _held += size
    return release


def held_bytes() -> int:
    """Bytes of rounded releases kept now."""
    with _lock:
        return _held


def clear() -> None:
    """Drop every kept source and release (for tests and memory)."""
    global _held
    with _lock:
        _sources.clear()
        _groups.clear()
        _held = 0


def _nbytes(release: BucketedPLD) -> int:
    size = release.mass_a.nbytes + release.mass_b.nbytes
    if release.entry_errors is not None:
        size += release.entry_errors.nbytes
    return size
