"""Command-line conventions shared by every ``accountant`` subcommand.

One home for what a user sees on a terminal, so ``accountant audit`` and plugin
subcommands (the torch extra's ``accountant learn``) look and behave alike:

- every error is one line, ``accountant: error: <message naming the option>``
  (:data:`ERROR_PREFIX`, :func:`error_line`), exit status 2;
- every warning shown on a terminal is one line, ``note: <text>``, without the
  file and line that :mod:`warnings` would print (:func:`note_line`);
- output paths are checked before any work (:func:`check_output_path`);
- progress is drawn only on an interactive terminal (:func:`progress_enabled`, defined in
  :mod:`accountant.console` below every layer that draws progress);
- what the library logs for a user to know (e.g. that numba is compiling its kernels on
  a first run) is shown as ``note:`` lines (:func:`show_notes`).

Standard library only: importing this module must stay cheap.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path

from accountant.console import progress_enabled
from accountant.errors import InvalidInputError

__all__ = [
    "ERROR_PREFIX",
    "check_output_path",
    "error_line",
    "note_line",
    "progress_enabled",
    "show_notes",
]

ERROR_PREFIX = "accountant: error: "


def _one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) folded to one space."""
    return " ".join(str(text).split())


def error_line(message: str) -> str:
    """``ERROR_PREFIX + message`` on one line (newlines in ``message`` folded to spaces).

    A message that already starts with the prefix is not prefixed twice.
    """
    text = _one_line(message)
    if text.startswith(ERROR_PREFIX.strip()):
        text = text[len(ERROR_PREFIX.strip()) :].strip()
    return ERROR_PREFIX + text


def note_line(message: str | Warning | warnings.WarningMessage) -> str:
    """``"note: <text>"``: the one terminal format of a warning (no file, no line number).

    ``message`` may be the text, a :class:`Warning` instance, or a record caught by
    :func:`warnings.catch_warnings` (``record=True``).
    """
    if isinstance(message, warnings.WarningMessage):
        message = message.message
    return "note: " + _one_line(str(message))


def check_output_path(flag: str, path: str, *, directory: bool = False) -> None:
    """Refuse, before any work, an output ``path`` that cannot be written.

    Rule for a file (``directory=False``): ``path`` must not be an existing directory,
    and its parent directory must already exist, be a directory and be writable (no
    directory is created for a file; an existing file must be writable, as it will be
    replaced).
    Rule for a directory (``directory=True``): ``path`` must not be an existing file; it
    may not exist yet (it is created with its missing parents), but its nearest existing
    ancestor must be a writable directory (an existing ``path`` must itself be one).

    Raises :class:`~accountant.errors.InvalidInputError` naming ``flag`` and ``path``.
    """
    target = Path(path)
    if str(path) == "":
        raise InvalidInputError(f"{flag} must name a path, got {path!r}")
    if target.exists() and target.is_dir() != directory:
        wanted, found = ("a directory", "a file") if directory else ("a file", "a directory")
        raise InvalidInputError(f"{flag} must name {wanted}, got {path!r}, which is {found}")
    if directory:
        existing = next((p for p in (target, *target.parents) if p.exists()), Path("."))
    else:
        if target.exists() and not os.access(target, os.W_OK):
            raise InvalidInputError(f"{flag} cannot be written: {path!r} is not writable")
        existing = target.parent
        if not existing.exists():
            raise InvalidInputError(
                f"{flag} cannot be written: directory {str(existing)!r} does not exist, "
                f"got {path!r}"
            )
    if not existing.is_dir():
        raise InvalidInputError(
            f"{flag} cannot be written: {str(existing)!r} is not a directory, got {path!r}"
        )
    if not _writable_directory(existing):
        raise InvalidInputError(
            f"{flag} cannot be written: directory {str(existing)!r} is not writable, got {path!r}"
        )


def _writable_directory(directory: Path) -> bool:
    """Whether a file can be created in ``directory``: permission bits first, then a real
    temporary file (removed at once), which also catches read-only file systems and the
    super-user case where :func:`os.access` always says yes."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


class _NoteHandler(logging.Handler):
    """Writes each record as one :func:`note_line` to the current :data:`sys.stderr`
    (looked up at each record, so a replaced stream, e.g. under test capture, is used)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(note_line(record.getMessage()), file=sys.stderr, flush=True)
        except Exception:  # logging's contract: a failing handler does not raise
            self.handleError(record)


def show_notes(logger: logging.Logger) -> None:
    """Show the INFO (and higher) records of ``logger`` as ``note:`` lines on stderr.

    Idempotent: calling it again for the same logger adds no second handler.
    """
    if not any(isinstance(handler, _NoteHandler) for handler in logger.handlers):
        logger.addHandler(_NoteHandler())
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
