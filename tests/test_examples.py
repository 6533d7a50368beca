"""Every script in examples/ runs (in its fast setting) and prints its numbers, with no
warning or note, and writes its files only where it is told, never into the repository;
the README's and the getting-started page's snippets warn nothing either (issue 25)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(
    p
    for p in (ROOT / "examples").glob("*.py")
    if not p.name.startswith("_")  # shared support modules, not examples
)
#: The committed figures of the docs, written only by ``--output-dir docs/figures/examples``.
FIGURES = ROOT / "docs" / "figures" / "examples"
#: A warning or note as the examples and the command line print them.
NOTE = re.compile(r"\bnote\b\s*[:(]|Warning\b")
#: Examples that print a note in their fast setting, with why (none does).
NOTES_EXPLAINED: dict[str, str] = {}
#: The one note a first run may print: numba compiling its kernels into an empty cache
#: (README: "warnings print as note: lines"; said once per installation).
COMPILING = "compiling the numba kernels"


def _figures() -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in FIGURES.iterdir()}


def _notes(*outputs: str) -> list[str]:
    lines = [line for output in outputs for line in output.splitlines()]
    return [line for line in lines if NOTE.search(line) and COMPILING not in line]


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_fast(script, tmp_path):
    """As a user runs it (``--fast``, no ``--output-dir``): its files go to a new
    temporary directory, which it prints, and nowhere else."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    work = tmp_path / "cwd"
    work.mkdir()
    before = _figures()
    result = subprocess.run(
        [sys.executable, str(script), "--fast"],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temporary)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert _figures() == before, "the example wrote into docs/figures/examples"
    assert not list(work.iterdir()), "the example wrote into the current directory"
    _, _, wrote = result.stdout.partition("\nwrote:\n")
    for line in wrote.splitlines():
        path = Path(line.strip())
        assert path.is_file() and temporary in path.parents, line
    if script.name not in NOTES_EXPLAINED:
        assert not _notes(result.stdout, result.stderr), result.stdout + result.stderr


def _support():
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import _support
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return _support


def test_output_dir_is_where_the_files_go(tmp_path, monkeypatch):
    support = _support()
    parser = argparse.ArgumentParser()
    support.add_output_option(parser)
    wanted = tmp_path / "figures" / "new"
    assert support.output_directory(parser.parse_args(["--output-dir", str(wanted)])) == wanted
    assert wanted.is_dir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    default = support.output_directory(parser.parse_args([]))
    assert default.is_dir() and default.parent == tmp_path and not list(default.iterdir())


def _python_block(page: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)
    assert blocks, page
    return blocks[0]


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_first_python_snippet_warns_nothing(page):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(_python_block(page), page, "exec"), {})
    ours = [
        w for w in caught if w.category.__module__.split(".")[0] in ("accountant", "optimizers")
    ]
    assert not ours, [str(w.message) for w in ours]


def test_the_quick_start_audit_prints_no_note(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "accountant", "audit"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    assert "(computed in" in result.stdout
    assert not _notes(result.stdout, result.stderr), result.stdout + result.stderr
