"""One child process of the DP-SGD benchmarks (``benchmarks/dpsgd.py``,
``benchmarks/dpsgd_user_path.py``) under a time and an address-space limit, and the peak
resident set a child reports of itself."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

#: Words in a child's stderr that mean it ran out of memory.
MEMORY_WORDS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory")


def peak_rss_mib() -> float | None:
    """``VmHWM`` of this process (reset by exec, unlike ``ru_maxrss``)."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024.0
    except (OSError, IndexError, ValueError):
        return None


def run_child(
    command: list[str], timeout: float, memory_bytes: int, env: dict[str, str] | None = None
) -> dict:
    """Run ``command`` under ``RLIMIT_AS = memory_bytes`` and a wall-clock ``timeout``;
    its last JSON line on stdout is the result, classified otherwise ("timeout", "out of
    memory", "error"). Adds ``max_rss_mib`` of that child (``wait4``) and
    ``process_seconds``: the parent's wall time from just before the fork to the child's
    exit (interpreter start-up, imports and exit included; a thread blocks in ``wait4``,
    so the exit is seen at once, not at a polling interval)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, preexec_fn=limit, env=env)
        waited: dict = {}

        def wait() -> None:
            _, status, usage = os.wait4(process.pid, 0)
            waited.update(ended=time.perf_counter(), status=status, usage=usage)

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        waiter.join(timeout)
        timed_out = waiter.is_alive()
        if timed_out:  # not process.kill(): its poll() could reap the child under the waiter
            os.kill(process.pid, signal.SIGKILL)
            waiter.join()
        process.returncode = os.waitstatus_to_exitcode(waited["status"])
        stdout.seek(0)
        stderr.seek(0)
        lines = [line for line in stdout.read().decode(errors="replace").splitlines() if line]
        error_text = stderr.read().decode(errors="replace")
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            continue
    result = (
        parsed[-1] if parsed and isinstance(parsed[-1], dict) and "status" in parsed[-1] else {}
    )
    if timed_out:
        result = {"status": "timeout", "message": f"killed after {timeout:g} s"}
        if parsed:
            result["partial"] = parsed[-1]
    elif not result:
        tail = error_text.strip().splitlines()[-1:] or [f"exit code {process.returncode}"]
        result = {"status": "error", "message": tail[0][:300]}
        if any(word in error_text for word in MEMORY_WORDS):
            result["status"] = "out of memory"
        elif process.returncode == -9:  # not killed by us: presumably the kernel's OOM killer
            result = {"status": "out of memory", "message": "killed by SIGKILL (OOM killer?)"}
    result["max_rss_mib"] = waited["usage"].ru_maxrss / 1024.0
    result["process_seconds"] = waited["ended"] - started
    return result
