"""The ``.npz`` sidecar of a saved accountant: its arrays, bit-exact, with a sha256.

Arrays are written by :func:`numpy.savez` as raw ``.npy`` entries (float64 stays the
same 64 bits; nothing passes through text) and read back without pickles. The sha256 of
the sidecar's bytes is recorded in the JSON description and checked on load, so a
sidecar that was changed, swapped or cut short is refused; its bytes are also part of the
description's digest (:mod:`accountant.storage.digest`).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import numpy as np

from accountant.errors import InvalidInputError
from accountant.storage.digest import CHANGED_REMEDY

__all__ = ["read_sidecar", "sha256_of", "sidecar_arrays", "sidecar_bytes"]


def sha256_of(content: bytes) -> str:
    """The hex sha256 of ``content``."""
    return hashlib.sha256(content).hexdigest()


def sidecar_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The ``.npz`` file holding ``arrays`` (uncompressed), as bytes."""
    buffer = io.BytesIO()
    # numpy's stubs: a ** mapping might fill savez's allow_pickle (array names never do)
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def _where(path: Path, description: Path) -> str:
    return f"{str(description)!r}: its array sidecar {str(path)!r}"


def read_sidecar(path: Path, description: Path, sha256: str) -> bytes:
    """The bytes of the sidecar at ``path``, after checking them against ``sha256`` (from
    the description file ``description``); refuses a missing sidecar and one that was
    changed after saving or is corrupt, naming both files."""
    where = _where(path, description)
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInputError(f"{where} is missing") from None
    except OSError as exc:
        raise InvalidInputError(f"{where} cannot be read ({exc})") from None
    found = sha256_of(content)
    if found != sha256:
        raise InvalidInputError(
            f"{where} was changed after saving or is corrupt: its sha256 is {found}, the "
            f"description records {sha256!r}; {CHANGED_REMEDY}"
        )
    return content


def sidecar_arrays(content: bytes, path: Path, description: Path) -> dict[str, np.ndarray]:
    """The arrays of the sidecar bytes ``content`` (read from ``path`` by
    :func:`read_sidecar`), loaded without pickles; refuses bytes that are not an ``.npz``
    file, naming both files."""
    try:
        with np.load(io.BytesIO(content), allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise InvalidInputError(
            f"{_where(path, description)} is not a readable .npz file ({exc})"
        ) from None
