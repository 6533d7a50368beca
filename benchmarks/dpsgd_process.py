"""One child process of ``benchmarks/dpsgd.py`` under a time and an address-space limit,
and the peak resident set a child reports of itself."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import tempfile
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


def run_child(command: list[str], timeout: float, memory_bytes: int) -> dict:
    """Run ``command`` under ``RLIMIT_AS = memory_bytes`` and a wall-clock ``timeout``;
    its last JSON line on stdout is the result, classified otherwise ("timeout", "out of
    memory", "error"). Adds ``max_rss_mib`` of that child (``wait4``)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, preexec_fn=limit)
        deadline, timed_out = time.monotonic() + timeout, False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                _, status, usage = os.wait4(process.pid, 0)
                timed_out = True
                break
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
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
    result = parsed[-1] if parsed and "status" in parsed[-1] else {}
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
    result["max_rss_mib"] = usage.ru_maxrss / 1024.0
    return result
