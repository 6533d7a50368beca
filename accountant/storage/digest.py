"""The digest that makes a saved accountant tamper-evident (issue 25).

The digest is the hex sha256 of the description's canonical JSON, a newline, then the
sidecar's bytes::

    sha256(canonical_json(description) + b"\\n" + sidecar)

where the canonical JSON is the description without its ``"digest"`` field, with keys
sorted, the separators ``","`` and ``":"`` and no other whitespace, ASCII only
(``\\uXXXX`` escapes), and every float as Python writes it (the shortest text that reads
back to the same float64). It cannot hold a raw newline, so the newline separates the two
parts unambiguously. Layout and key order of the file are therefore not part of what is
hashed; every value is. Recomputing it from a loaded description detects any edit of a
value in either file that did not also recompute the digest: it is a check against edits,
not a signature (anyone can recompute it).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["CHANGED_REMEDY", "DIGEST_FIELD", "canonical_json", "digest_of"]

#: The field of the description that holds the digest (left out of what is hashed).
DIGEST_FIELD = "digest"
#: What a user can do about a file that was changed after saving: said by every refusal.
CHANGED_REMEDY = (
    "restore the description and its sidecar as they were saved, or save the accountant "
    "again from the original"
)


def canonical_json(description: dict[str, Any]) -> bytes:
    """The canonical JSON (module docstring) of ``description`` without its digest field,
    as ASCII bytes. Raises ``ValueError`` for a non-finite float (JSON has none)."""
    rest = {key: value for key, value in description.items() if key != DIGEST_FIELD}
    text = json.dumps(
        rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )
    return text.encode("ascii")


def digest_of(description: dict[str, Any], sidecar: bytes) -> str:
    """The hex sha256 of ``canonical_json(description) + b"\\n" + sidecar``."""
    return hashlib.sha256(canonical_json(description) + b"\n" + sidecar).hexdigest()
