"""Whether a person watches the terminal: the one test every progress display asks.

Below every layer that draws progress (:mod:`accountant.buckets.progress` for long
queries, the command line of :mod:`accountant.report`, the torch plugin), so that none of
them imports a higher one to ask it; :mod:`accountant.report.terminal` re-exports
:func:`progress_enabled` with the other command-line conventions. Standard library only.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

__all__ = ["progress_enabled"]


def progress_enabled(stream: TextIO | None = None) -> bool:
    """Whether to draw progress on ``stream`` (default :data:`sys.stderr`).

    True only when the stream is an interactive terminal (``isatty()``); so progress is
    off when output is redirected to a file or a pipe, and on CI (``CI=true``), where a
    pseudo-terminal may be attached but nobody watches a bar.
    """
    stream = sys.stderr if stream is None else stream
    try:
        interactive = bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
    if not interactive:
        return False
    return os.environ.get("CI", "").strip().lower() not in ("true", "1")
