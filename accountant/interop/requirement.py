"""The optional dependency of :mod:`accountant.interop`: Google's ``dp_accounting``.

It is installed with the ``dp-accounting`` extra
(``pip install 'truncated-noise-accountant[dp-accounting]'``) and is never a core
dependency: ``import accountant`` works without it, and only this subpackage needs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRA", "require_dp_accounting"]

#: The extra that installs dp_accounting.
EXTRA = "dp-accounting"


def require_dp_accounting() -> ModuleType:
    """The ``dp_accounting`` package, or an :class:`ImportError` naming the extra that
    installs it (the original error chained)."""
    try:
        return importlib.import_module("dp_accounting")
    except ImportError as exc:
        raise ImportError(
            "accountant.interop needs the optional package dp_accounting; install it with "
            f"pip install 'truncated-noise-accountant[{EXTRA}]' (or pip install dp-accounting)"
        ) from exc
