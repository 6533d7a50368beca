"""Progress of a long PrivacyBuckets query on a terminal, and nothing anywhere else.

A query opens a :func:`query_progress` context; the composition steps inside it call
:func:`tick`. A one-line tqdm bar appears only when stderr is an interactive terminal
(:func:`accountant.console.progress_enabled`) and only once the query has run for
:data:`DELAY` seconds, so short queries, scripts, pipes and CI stay quiet.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterator
from typing import Any

from accountant.console import progress_enabled

__all__ = ["DELAY", "MIN_INTERVAL", "query_progress", "tick"]

#: Seconds a query runs before its bar is drawn.
DELAY = 1.0
#: Least seconds between two redraws of a drawn bar.
MIN_INTERVAL = 0.1

_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("privacy_buckets_bar", default=None)


@contextlib.contextmanager
def query_progress(label: str) -> Iterator[None]:
    """The bar of one query (``label``, e.g. ``"PrivacyBuckets delta"``), if any."""
    if not progress_enabled() or _CURRENT.get() is not None:
        yield
        return
    from tqdm import tqdm

    bar = tqdm(
        desc=label,
        unit=" step",
        delay=DELAY,
        mininterval=MIN_INTERVAL,
        leave=False,
        file=sys.stderr,
    )
    token = _CURRENT.set(bar)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        bar.close()


def tick(status: str = "") -> None:
    """One composition or refinement step of the running query (no-op without a bar)."""
    bar = _CURRENT.get()
    if bar is None:
        return
    if status:
        bar.set_postfix_str(status, refresh=False)
    bar.update(1)
