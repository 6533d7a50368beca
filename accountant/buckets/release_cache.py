"""Rounded releases and their compositions shared by every accountant of a process (issue 26;
pure caching).

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
  widths already computed;
* :func:`cached_composition` keeps the last compositions of rounded releases (at most
  :data:`COMPOSITION_BYTES`), keyed by their sources and counts and by ``(direction, width,
  tilt, tail_mass, max_buckets)``: two accountants of the same releases (the truncated and
  the Gaussian accountant of DP-SGD, when the cut lies beyond every lattice) compose once.

A cached release is the very object a new computation would return (the computation is
deterministic): no number changes. The kernels a computation runs depend on
:data:`~accountant.buckets.vector_kernels.COMPILED` (numba for queries of many distinct
releases), so every key holds it too.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from accountant.buckets import vector_kernels
from accountant.buckets.bucketed import BucketedPLD

__all__ = [
    "BYTES",
    "COMPOSITION_BYTES",
    "SOURCES",
    "cached_composition",
    "cached_lattice",
    "clear",
    "held_bytes",
    "shared_source",
]

#: Bytes of rounded releases kept (all sources together).
BYTES = 1 << 28
#: Release sources of distinct analytic mechanisms kept.
SOURCES = 64
#: Bytes of compositions kept.
COMPOSITION_BYTES = 1 << 27

_lock = threading.RLock()
_sources: OrderedDict[Any, Any] = OrderedDict()
#: group -> {id(source): (weak reference to the source, release, bytes)}
_groups: OrderedDict[tuple, dict[int, tuple[weakref.ref, BucketedPLD, int]]] = OrderedDict()
_held = 0
#: (sources' ids and counts, key) -> (weak references to the sources, composition, bytes)
_compositions: OrderedDict[tuple, tuple[tuple, BucketedPLD, int]] = OrderedDict()
_composition_held = 0


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
    group = (direction, width, anchor, tail_mass, max_buckets, vector_kernels.COMPILED.get())
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


def cached_composition(
    parts: list[tuple[Any, int]], key: tuple, compose: Callable[[], BucketedPLD]
) -> BucketedPLD:
    """``compose()``, the composition of ``times`` rounded releases of each ``(source, times)``
    of ``parts`` at ``key``, computed once while it is kept (module note)."""
    global _composition_held
    full_key = (
        tuple((id(source), times) for source, times in parts),
        key,
        vector_kernels.COMPILED.get(),
    )
    with _lock:
        kept = _compositions.get(full_key)
        if kept is not None and all(
            ref() is source for ref, (source, _) in zip(kept[0], parts, strict=True)
        ):
            _compositions.move_to_end(full_key)
            return kept[1]
    composed = compose()
    size = _nbytes(composed)
    with _lock:
        old = _compositions.pop(full_key, None)
        if old is not None:
            _composition_held -= old[2]
        while _compositions and _composition_held + size > COMPOSITION_BYTES:
            _composition_held -= _compositions.popitem(last=False)[1][2]
        if size <= COMPOSITION_BYTES:
            refs = tuple(weakref.ref(source) for source, _ in parts)
            _compositions[full_key] = (refs, composed, size)
            _composition_held += size
    return composed


def held_bytes() -> int:
    """Bytes of rounded releases kept now."""
    with _lock:
        return _held


def clear() -> None:
    """Drop every kept source and release (for tests and memory)."""
    global _held, _composition_held
    with _lock:
        _sources.clear()
        _groups.clear()
        _compositions.clear()
        _held = _composition_held = 0


def _nbytes(release: BucketedPLD) -> int:
    """The bytes of a release's (or composition's) arrays, its merged counterpart's included."""
    size = release.mass_a.nbytes + release.mass_b.nbytes
    if release.entry_errors is not None:
        size += release.entry_errors.nbytes
    merged = release.dominated
    if merged is not None:
        size += _nbytes(merged.a) + (0 if merged.c is None else _nbytes(merged.c))
    return size
