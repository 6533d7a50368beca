"""Timing helpers of the benchmark scripts: a SIGALRM time limit, timed calls that
collect certification warnings, failure rows, logging and the peak resident set."""

from __future__ import annotations

import contextlib
import resource
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from report import Row


class TimeLimitError(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`TimeLimitError` in the main thread after ``seconds`` (POSIX only;
    elsewhere no limit). Numeric kernels finish their current call first."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def interrupt(signum, frame):
        raise TimeLimitError

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def timed(call: Callable[[], object], limit: float) -> tuple[object, float, list[str]]:
    """``(result, seconds, warning messages)`` of ``call()`` under the time limit."""
    with warnings.catch_warnings(record=True) as caught, time_limit(limit):
        warnings.simplefilter("always")
        start = time.perf_counter()
        result = call()
        seconds = time.perf_counter() - start
    messages = [str(w.message) for w in caught if w.category.__name__ == "CertificationWarning"]
    return result, seconds, messages


def failure(row: Row, error: BaseException, limit: float) -> Row:
    if isinstance(error, TimeLimitError):
        row.note = f"failed: exceeded the {limit:g} s time limit (interrupted)"
    else:
        row.note = f"failed: {type(error).__name__}: {str(error)[:120]}"
    return row


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def peak_rss_mib() -> float:
    """Peak resident set of this process in MiB: ``VmHWM`` of ``/proc/self/status`` (reset
    by exec), else ``ru_maxrss``, which Linux carries over from the parent across fork+exec
    and so overstates a child's peak after a memory-hungry parent."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
