"""Gauss-Legendre nodes and weights on ``[-1, 1]``, computed once per order and shared."""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["gauss_legendre"]


@functools.cache
def gauss_legendre(order: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``order`` nodes and weights of the Gauss-Legendre rule on ``[-1, 1]`` (numpy's
    ``leggauss``, float64), read-only: every caller shares the same two arrays."""
    nodes, weights = np.polynomial.legendre.leggauss(order)
    nodes.flags.writeable = False
    weights.flags.writeable = False
    return nodes, weights
