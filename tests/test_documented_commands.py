"""Every ``accountant ...`` command the project shows a user runs as shown (issue 25).

The commands are collected, not listed: the example lines of the ``--help`` texts
(``accountant --help`` and each subcommand's, with their ``\\`` continuations) and every
``accountant ...`` line of the fenced shell, ``console``, ``text`` and plain blocks of
README.md and docs/**/*.md (in ``console`` blocks only the ``$`` lines, the rest being
output; of ``pip install . && accountant audit`` only the ``accountant`` part). Each runs
in a fresh process, in a temporary directory per page (the commands of one page run in
their order, so a file one command writes is there for the next), and must exit with
the status the page shows: 0, or 2 when the output shown under it is an
``accountant: error:`` refusal.

Files a command reads are made the way the page says: by the page's own earlier
commands, its Python block or its JSON block (:data:`PREREQUISITES`). Nothing is skipped:
a command that would train for minutes runs in the shortened form of :data:`SHORTENED`,
and the tests assert that list exactly.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
import pytest

from accountant.report.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
HELP_COMMANDS = ("", "audit", "calibrate", "sample", "learn", "sweep")
#: Fenced blocks read: shell and text ones, and those without a language.
FENCES = ("bash", "sh", "shell", "console", "text", "")
#: Subcommands that train (their default schedule is 3000 epochs): a documented one with
#: more epochs than this runs in its :data:`SHORTENED` form.
TRAINING = ("learn", "sweep")
MAX_EPOCHS = 100

_FENCE = re.compile(r"^[ \t]*```(\w*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
#: A line that runs ``accountant``: at its start (after a ``$`` prompt) or after ``&&``.
_COMMAND = re.compile(r"(^|&&|;|\|\|)\s*(\$ )?accountant( |$)")


@attrs.frozen
class Documented:
    """A command as a page shows it: where (``page:line`` or ``accountant X --help``),
    the command (continuations joined, prompt and trailing comment dropped) and the exit
    status the page shows."""

    where: str
    command: str
    status: int = 0


def _name(page: Path) -> str:
    """``page`` relative to the repository (its file name if outside)."""
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name


def _joined(lines: list[str]) -> list[tuple[int, str, list[str]]]:
    """``(index, line, following lines)`` with ``\\`` continuations joined."""
    out = []
    i = 0
    while i < len(lines):
        start, line = i, lines[i].rstrip()
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1].rstrip() + " " + lines[i].strip()
        out.append((start, line, lines[i + 1 :]))
        i += 1
    return out


def _accountant_parts(line: str) -> list[str]:
    """The ``accountant ...`` commands of one shell line (``a && accountant b``: ``b``),
    without the prompt and a trailing comment."""
    lexer = shlex.shlex(line.strip().removeprefix("$ "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)  # "#" starts a comment; "&&", ";", "||" are tokens of their own
    parts, current = [], []
    for word in [*words, "&&"]:
        if word in ("&&", ";", "||"):
            if current and current[0] == "accountant":
                parts.append(shlex.join(current))
            current = []
        else:
            current.append(word)
    return parts


def _shown_status(following: list[str]) -> int:
    """2 when the output shown under a ``console`` command is a refusal, else 0."""
    for line in following:
        if line.startswith("$ "):
            break
        if line.startswith("accountant: error:"):
            return 2
    return 0


def page_commands(page: Path) -> list[Documented]:
    """The ``accountant ...`` commands of ``page``'s fenced shell blocks, in order."""
    text = page.read_text()
    name = _name(page)
    found = []
    for block in _FENCE.finditer(text):
        fence, body = block.group(1), block.group(2)
        if fence not in FENCES:
            continue
        first = text.count("\n", 0, block.start(2)) + 1
        for index, line, following in _joined(body.splitlines()):
            if fence == "console" and not line.startswith("$ "):
                continue  # output
            parts = _accountant_parts(line) if _COMMAND.search(line) else []
            status = _shown_status(following) if fence == "console" else 0
            found += [Documented(f"{name}:{first + index}", part, status) for part in parts]
    return found


def help_text(command: str) -> str:
    """What ``accountant [command] --help`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        main([command, "--help"] if command else ["--help"])
    assert stop.value.code == 0
    return out.getvalue()


def help_commands(command: str) -> list[Documented]:
    """The example lines of ``accountant [command] --help``."""
    where = f"accountant {command} --help".replace("  ", " ")
    lines = help_text(command).splitlines()
    return [
        Documented(where, part)
        for _, line, _ in _joined(lines)
        if _COMMAND.search(line)
        for part in _accountant_parts(line)
    ]


# -- files the commands read, made the way the page says ---------------------------------


def _python_block(page: str, index: int) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)
        (directory / "checkpoints").mkdir()  # where the page's model checkpoints go
        cwd = Path.cwd()
        os.chdir(directory)
        try:
            exec(compile(blocks[index], page, "exec"), {})
        finally:
            os.chdir(cwd)

    return make


def _json_block(page: str, name: str) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        blocks = re.findall(r"```json\n(.*?)```", (ROOT / page).read_text(), flags=re.S)
        runs = [b for b in blocks if '"segments"' in b]
        assert len(runs) == 1, runs
        json.loads(runs[0])  # the page's JSON is valid as shown
        (directory / name).write_text(runs[0])

    return make


def _pmf_files(directory: Path) -> None:
    """The two files of the auditing page's pmf-file commands, in the formats its table
    describes (the page shows no command that writes them): ``noise.csv``, two columns
    ``x,p``; ``pmf.npy``, the pmf alone on ``[-5, 5]`` with step 0.05."""
    x = np.linspace(-5.0, 5.0, 201)
    pmf = np.exp(-0.5 * x**2)
    pmf /= pmf.sum()
    np.savetxt(directory / "noise.csv", np.column_stack([x, pmf]), delimiter=",")
    np.save(directory / "pmf.npy", pmf)


def _saving_files(directory: Path) -> None:
    _python_block("docs/guide/saving.md", 0)(directory)
    _json_block("docs/guide/saving.md", "run.json")(directory)


#: page -> (what makes the files its commands read, where that comes from)
PREREQUISITES: dict[str, tuple[Callable[[Path], None], str]] = {
    "docs/guide/saving.md": (
        _saving_files,
        "checkpoints/epoch-3.accountant.json by the page's first Python block (into a "
        "checkpoints/ directory, where its model checkpoints go); run.json is its JSON "
        "block; audited.json is written by its own --save command before it is read",
    ),
    "docs/guide/auditing.md": (
        _pmf_files,
        "noise.csv and pmf.npy in the formats of the page's table of pmf files (it shows "
        "no command that writes them)",
    ),
}

#: documented command -> (the shortened command run instead, why). Every documented
#: command of a training subcommand with more than MAX_EPOCHS epochs must be here.
SHORTENED: dict[str, tuple[str, str]] = {}


def _epochs(command: str) -> int:
    words = shlex.split(command)
    if "--epochs" in words:
        return int(words[words.index("--epochs") + 1])
    return 3000  # the default schedule


def _trains_long(command: str) -> bool:
    words = shlex.split(command)
    return len(words) > 1 and words[1] in TRAINING and _epochs(command) > MAX_EPOCHS


def _needs_torch(command: str) -> bool:
    return shlex.split(command)[1:2] in [[t] for t in TRAINING]


PAGE_COMMANDS = {_name(page): cmds for page in PAGES if (cmds := page_commands(page))}
SOURCES = [f"accountant {c} --help".replace("  ", " ") for c in HELP_COMMANDS]
SOURCES += sorted(PAGE_COMMANDS)


def commands_of(source: str) -> list[Documented]:
    """The documented commands of one source: a help text or a page."""
    if source in PAGE_COMMANDS:
        return PAGE_COMMANDS[source]
    command = source.removeprefix("accountant").removesuffix("--help").strip()
    if command in TRAINING:
        pytest.importorskip("torch")
    return help_commands(command)


def test_the_collection_finds_the_known_examples():
    """The collector is not silently empty: the calibrate help's two examples, joined over
    their continuation lines, and commands of the README, the auditing and the saving page."""
    example, shuffled = commands_of("accountant calibrate --help")
    assert example.command.startswith("accountant calibrate --epsilon ")
    assert "--dimension" in example.command  # from the continuation line
    assert "--sampler shuffle" in shuffled.command and "--epochs 10" in shuffled.command
    assert "accountant audit" in [c.command for c in PAGE_COMMANDS["README.md"]]
    assert len(PAGE_COMMANDS["docs/guide/auditing.md"]) >= 5
    saving = [c.command for c in PAGE_COMMANDS["docs/guide/saving.md"]]
    assert "accountant audit --accountant audited.json" in saving


def test_a_console_refusal_is_expected_to_exit_2(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```console\n$ accountant audit --sigma -1\naccountant: error: --sigma ...\n"
        "$ accountant audit \\\n    -n 2  # two\n```\n"
        "```bash\npip install . && accountant sample -n 1; accountant audit\n```\n"
        "```python\nsubprocess.run('accountant audit')\n```\n"
        "```text\nthe paper's accountant: error\naccountant/ (a folder)\n```\n"
    )
    commands = page_commands(page)
    assert [(c.command, c.status) for c in commands] == [
        ("accountant audit --sigma -1", 2),
        ("accountant audit -n 2", 0),
        ("accountant sample -n 1", 0),
        ("accountant audit", 0),
    ]


def test_prerequisites_and_shortened_commands_are_exactly_those_needed():
    """Every page with made files has commands; every documented training command longer
    than MAX_EPOCHS is shortened, and only those are."""
    pytest.importorskip("torch")  # the learn and sweep help texts
    assert set(PREREQUISITES) <= set(PAGE_COMMANDS)
    documented = {c.command for source in SOURCES for c in commands_of(source)}
    assert {c for c in documented if _trains_long(c)} == set(SHORTENED)
    for shortened, why in SHORTENED.values():
        assert not _trains_long(shortened) and why


def test_a_training_command_longer_than_the_limit_counts_as_long():
    assert _trains_long("accountant learn")  # the default schedule: 3000 epochs
    assert _trains_long("accountant sweep --epsilons 1 --times 1 --epochs 500 --store s")
    assert not _trains_long("accountant sweep --epsilons 1 --times 1 --epochs 30 --store s")
    assert not _trains_long("accountant calibrate --steps 14062")


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    words = shlex.split(command)
    assert words[0] == "accountant"
    return subprocess.run(
        [sys.executable, "-m", "accountant", *words[1:]],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=1800,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES)
def test_documented_commands_exit_as_shown(source, tmp_path):
    commands = commands_of(source)
    if any(_needs_torch(c.command) for c in commands):
        pytest.importorskip("torch")
    if source in PREREQUISITES:
        PREREQUISITES[source][0](tmp_path)
    failures = []
    for documented in commands:
        command = SHORTENED.get(documented.command, (documented.command,))[0]
        result = _run(command, tmp_path)
        if result.returncode != documented.status or "Traceback" in result.stderr:
            failures.append(
                f"{documented.where}: {command}\n  exit {result.returncode}, expected "
                f"{documented.status}: {result.stderr.strip()[-2000:]}"
            )
    assert not failures, "\n".join(failures)
