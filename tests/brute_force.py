"""Slow exact oracles: composition by enumerating every outcome tuple."""

from __future__ import annotations

import math

import numpy as np


def composed_arrays(
    parts: list[tuple[np.ndarray, np.ndarray, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """The composed pair of ``times`` independent releases of each ``(a, b, times)``:
    outcome tuples enumerated by Kronecker products (sizes multiply, keep them small)."""
    a_total = np.ones(1)
    b_total = np.ones(1)
    for a, b, times in parts:
        for _ in range(times):
            a_total = np.kron(a_total, a)
            b_total = np.kron(b_total, b)
    return a_total, b_total


def adp_delta(a: np.ndarray, b: np.ndarray, eps: float) -> float:
    """``sum_o max(0, A(o) - e^eps B(o))``, the exact ADP delta of a pair."""
    return float(np.maximum(0.0, a - np.exp(eps) * b).sum())


def composed_adp_delta(parts, eps: float, direction: str = "A/B") -> float:
    """Exact ADP delta of the composition, in one direction."""
    a, b = composed_arrays(parts)
    return adp_delta(a, b, eps) if direction == "A/B" else adp_delta(b, a, eps)


def total_mass_bound(parts: list[tuple[np.ndarray, np.ndarray, int]]) -> float:
    """The largest total mass of the composition, over both sides, of the masses as given
    (``prod_i S_i^{n_i}``, ``S - 1`` exact by ``math.fsum``), times ``1 + 1e-14`` for the
    rounding of an upper bound: no delta of the composition exceeds it. A pmf normalised in
    float64 sums to ``1 +- 1e-16``, so this can lie a few ulps above 1."""
    logs = [0.0, 0.0]
    for a, b, times in parts:
        for side, values in enumerate((a, b)):
            excess = math.fsum([*np.asarray(values, dtype=float).tolist(), -1.0])
            logs[side] += times * math.log1p(max(excess, 0.0))
    return math.exp(max(logs)) * (1.0 + 1e-14)
