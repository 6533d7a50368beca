"""Paths and atomic writes: a crash while saving never leaves a half-written file.

Each file is written to a temporary file in the same directory, flushed to disk, then
moved over the target with :func:`os.replace` (atomic on POSIX and Windows).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from accountant.errors import InvalidInputError
from accountant.validation import shown

__all__ = ["check_path", "replaced_atomically", "sidecar_path", "write_atomically"]


def check_path(name: str, value: Any) -> Path:
    """``value`` as a :class:`~pathlib.Path`: a ``str`` or ``os.PathLike`` naming a file."""
    if isinstance(value, bytes) or not isinstance(value, str | os.PathLike):
        raise InvalidInputError(f"{name} must be a str or os.PathLike, got {shown(value)}")
    path = Path(os.fspath(value))
    if isinstance(os.fspath(value), bytes) or not path.name:
        raise InvalidInputError(f"{name} must name a file, got {shown(value)}")
    return path


def sidecar_path(path: Path) -> Path:
    """Where the arrays of the description ``path`` go: ``model.json`` -> ``model.npz``;
    any other name gets ``.npz`` appended (``checkpoint`` -> ``checkpoint.npz``)."""
    if path.suffix.lower() == ".json":
        return path.with_suffix(".npz")
    return path.with_name(path.name + ".npz")


def _check_writable(path: Path) -> None:
    if not path.parent.is_dir():
        raise InvalidInputError(
            f"path {str(path)!r}: directory {str(path.parent)!r} does not exist"
        )
    if path.is_dir():
        raise InvalidInputError(f"path {str(path)!r} is a directory, not a file")


@contextlib.contextmanager
def replaced_atomically(path: Path) -> Iterator[BinaryIO]:
    """A binary stream whose content replaces ``path`` when the block ends without an
    error: it goes to a temporary file in the same directory, is flushed to disk, then
    moved over ``path`` by :func:`os.replace`. On any error the temporary file is removed
    and ``path`` is as it was. Refuses a missing directory or a directory in the way."""
    _check_writable(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_atomically(path: Path, content: bytes) -> None:
    """Replace ``path`` by ``content`` (:func:`replaced_atomically`)."""
    with replaced_atomically(path) as stream:
        stream.write(content)
