"""Noise functions: a probability mass function on an equidistant grid
(:class:`NoiseDistribution`), the families built on symmetric grids, and arrays a user
brings (:func:`from_array`).

>>> from accountant import noise
>>> p = noise.truncated_gaussian(sigma=2.0, bound=10.0, step=0.5)
>>> p.size
41
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accountant.noise.distribution import GRID_TOLERANCE, NoiseDistribution, from_array
    from accountant.noise.families import (
        staircase,
        truncated_gaussian,
        truncated_laplace,
        uniform,
    )

#: Public name -> its module, loaded on first use (PEP 562), so that the command line's
#: parser reads ``accountant.noise.bits`` without loading numpy.
_DEFINED_IN = {
    "GRID_TOLERANCE": "accountant.noise.distribution",
    "NoiseDistribution": "accountant.noise.distribution",
    "from_array": "accountant.noise.distribution",
    "staircase": "accountant.noise.families",
    "truncated_gaussian": "accountant.noise.families",
    "truncated_laplace": "accountant.noise.families",
    "uniform": "accountant.noise.families",
}


def __getattr__(name: str) -> Any:
    """Load a public name on first use."""
    if name not in _DEFINED_IN:
        raise AttributeError(f"module 'accountant.noise' has no attribute {name!r}")
    value = getattr(importlib.import_module(_DEFINED_IN[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "GRID_TOLERANCE",
    "NoiseDistribution",
    "from_array",
    "staircase",
    "truncated_gaussian",
    "truncated_laplace",
    "uniform",
]
