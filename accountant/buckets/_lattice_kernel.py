"""numba kernel of :mod:`accountant.buckets.lattice_quadrature`: the panels, nodes and
quadrature error bounds of the dominating split masses of many lattice intervals, in one
pass.

The formulas and their error bounds are stated in :mod:`accountant.buckets.lattice_quadrature`
(the tests compare this kernel with a numpy oracle). ``cache=True``, no ``fastmath``;
numba is imported at the first call (:func:`accountant.numerics.lazy.njit`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from accountant.numerics.floats import TINY, UNIT_ROUNDOFF
from accountant.numerics.lazy import njit
from accountant.numerics.quadrature import gauss_legendre

__all__ = ["gl_tables", "radius_cap", "split_kernel"]

_U = UNIT_ROUNDOFF
_DEAD_Y = 41.0
_TARGET = 2.0**-60
_MAX_ORDER = 40


@functools.cache
def gl_tables() -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights of every order ``1 .. 40``, row ``n`` padded
    (computed at the first call, then shared: not to be written to)."""
    nodes = np.zeros((_MAX_ORDER + 1, _MAX_ORDER))
    weights = np.zeros((_MAX_ORDER + 1, _MAX_ORDER))
    for n in range(1, _MAX_ORDER + 1):
        x, w = gauss_legendre(n)
        nodes[n, :n], weights[n, :n] = x, w
    return nodes, weights


@njit(cache=True, nogil=True)
def gl_order(rho: float) -> int:
    """The smallest ``n >= 2`` with ``(64/15) rho^(-2n-2) / (1 - rho^-2)`` times
    ``30 (1 + 4 rho)`` below ``2^-60`` (at most 40)."""
    need = math.log(64.0 / 15.0 * 30.0 * (1.0 + 4.0 * rho) / (1.0 - rho**-2.0) / _TARGET)
    n = math.ceil(need / (2.0 * math.log(rho)) - 1.0)
    return min(max(n, 2), _MAX_ORDER)


@njit(cache=True, nogil=True)
def _d_right(tau: float, share: float) -> float:
    """``log1p(s expm1(tau))``, as ``tau + ln s + log1p(...)`` past 600."""
    if tau <= 600.0:
        return math.log1p(share * math.expm1(tau))
    return tau + math.log(share) + math.log1p((1.0 - share) / share * math.exp(-tau))


@njit(cache=True, nogil=True)
def _add(total: float, carry: float, value: float) -> tuple[float, float]:
    """Neumaier's compensated step: ``total + carry`` gains ``value`` exactly but for
    ``O(u^2)`` terms (the panels of one interval are summed with relative error
    ``2u + panels u^2``)."""
    new = total + value
    if abs(total) >= abs(value):
        carry += (total - new) + value
    else:
        carry += (value - new) + total
    return new, carry


@njit(cache=True, nogil=True)
def radius_cap(q: float, share: float) -> float:
    """The largest disc radius (in ``l``) of an interval whose lower end has the share
    ``s(a) = share``: ``1`` (``L`` analytic, ``|Im l| <= 1``) and, for ``q < 1``,
    ``1/(3.7 s(a))``, so that ``W slope = reach s(a) <= 1.361 e R s(a) <= 1`` (the factor
    ``e^(2 W slope)`` of the quadrature bound stays below ``e^2``)."""
    if q == 1.0 or 3.7 * share <= 1.0:
        return 1.0
    return 1.0 / (3.7 * share)


@njit(cache=True, nogil=True)
def split_kernel(
    lo, hi, delta, delta_low, s_lo, s_hi, c_lo, c_hi, width, radius, panels, law, nodes, weights
):
    """Per interval ``j``: ``(m+, m-, e+, e-, quadrature error, largest order)`` of the
    dominating split (:mod:`accountant.buckets.lattice_quadrature`).

    ``law = (q, mu, w_A, w_S, log_norm, norm_error, mirrored)`` (``mirrored`` nonzero: the
    release's loss is ``-L``, the roles of ``D_a`` and ``D_b`` swap); interval ``j`` is cut
    into ``panels[j]`` equal panels (none: a dead interval, error :data:`TINY`), each
    integrated by Gauss-Legendre of the order :func:`gl_order` gives its ``rho``, with nodes
    placed from the nearer end of the interval. At a node with offsets ``D_a``, ``D_b`` from
    ``P``, ``Q`` (``d_a + c_lo``, ``d_b + c_hi``) the weights are
    ``-expm1(-D_a)`` for ``m+`` and ``exp(-D_a) (-expm1(-D_b))`` for ``m-`` (mirrored:
    ``exp(-D_b) (-expm1(-D_a))`` and ``-expm1(-D_b)``), the sums divided by
    ``-expm1(-W)``. The disc radius is at most :func:`radius_cap`; the integrand bound is the
    density bound times ``1.01 (1 + slope) e^(2 W slope + W/2)``, ``W slope = reach s(a)``.
    ``e+``, ``e-``: each panel's share of ``m+``, ``m-`` times its own bound on the relative
    error of the density (``dy (|y| + 1) 1.01 + u (y^2 + 2 |ln Z| + 8)``,
    ``dy = 3u (|l|/mu + |y| + mu + 1)``) and of the node placement (``8u (max(2, tau) +
    tau |y| / mu + 2) (1 + W)``, ``tau`` the largest offset of a node from its interval end;
    ``(1 + W)``: a relative error of ``D_a`` moves ``exp(-D_a)`` by ``D_a <= W`` times it),
    with the panel's largest ``|y|`` and ``|l|``. The panels' shares are summed with
    compensation (:func:`_add`)."""
    q, mu, w_a, w_s, log_norm, norm_error, mirrored = law
    count = lo.size
    plus = np.zeros(count)
    minus = np.zeros(count)
    quad = np.zeros(count)
    used = np.zeros(count)
    err_plus = np.zeros(count)
    err_minus = np.zeros(count)
    carry_plus = np.zeros(count)
    carry_minus = np.zeros(count)
    off_a, off_s = -0.5 * mu, 0.5 * mu
    swap = mirrored != 0.0
    scale = 1.0 / (math.sqrt(2.0 * math.pi) * mu)
    bound_margin = (1.0 + 64.0 * _U + 2.0 * norm_error) * scale
    for j in range(count):
        parts = panels[j]
        if parts == 0:
            quad[j] = TINY
            continue
        step = delta[j] / parts
        cap = radius_cap(q, s_lo[j]) / mu
        norm = -math.expm1(-width[j])
        half_w = 0.5 * width[j]
        for p in range(parts):
            left = p * step
            if p == parts - 1:
                right_end = 0.0
                full = (delta[j] - left) + delta_low[j]
            else:
                right_end = (delta[j] - (p + 1) * step) + delta_low[j]
                full = (p + 1) * step - left
            eta = 0.5 * full
            centre = lo[j] + (left + eta)
            y_a = abs(centre / mu + off_a)
            y_s = abs(centre / mu + off_s)
            far, near = 0.0, math.inf
            if w_a > 0.0:
                far, near = max(far, y_a), min(near, y_a)
            if w_s > 0.0:
                far, near = max(far, y_s), min(near, y_s)
            if near - eta / mu >= _DEAD_Y:
                quad[j] += TINY
                continue
            r_y = max(radius[j] / mu, min(1.0 / (far + eta / mu + 1.0), cap))
            rho = mu * r_y / eta
            order = gl_order(rho)
            bound = 0.0
            for weight, y in ((w_a, y_a), (w_s, y_s)):
                if weight > 0.0:
                    gap = max(y - r_y, 0.0)
                    bound += weight * math.exp(0.5 * (r_y * r_y - gap * gap) - log_norm)
            bound *= bound_margin
            reach = mu * r_y if q == 1.0 else mu * r_y * 1.361 * math.exp(mu * r_y)
            spread = reach * s_lo[j]  # W slope
            growth = 1.01 * (1.0 + spread / width[j]) * math.exp(2.0 * spread + half_w)
            error = 64.0 / 15.0 * eta * growth * bound * rho ** (-2.0 * order - 2.0)
            quad[j] += error / (1.0 - rho**-2.0) * (1.0 + 1e-6)
            used[j] = max(used[j], order)
            sum_plus, sum_minus = 0.0, 0.0
            for k in range(order):
                x, wk = nodes[order, k], weights[order, k]
                from_left = left + eta * (1.0 + x)
                from_right = right_end + eta * (1.0 - x)
                if from_left <= from_right:
                    tau_a = from_left
                    tau_b = (delta[j] - from_left) + delta_low[j]
                    ell = lo[j] + tau_a
                else:
                    tau_b = from_right
                    tau_a = (delta[j] - from_right) + delta_low[j]
                    ell = hi[j] - tau_b
                density = 0.0
                if w_a > 0.0:
                    y = ell / mu + off_a
                    density += w_a * math.exp(-0.5 * y * y - log_norm)
                if w_s > 0.0:
                    y = ell / mu + off_s
                    density += w_s * math.exp(-0.5 * y * y - log_norm)
                if q == 1.0:
                    d_a, d_b = tau_a, tau_b
                else:
                    d_a = -math.log1p(s_lo[j] * math.expm1(-tau_a))
                    d_b = _d_right(tau_b, s_hi[j])
                d_a += c_lo[j]
                d_b += c_hi[j]
                up = -math.expm1(-d_a)
                down = -math.expm1(-d_b)
                if swap:
                    up *= math.exp(-d_b)
                else:
                    down *= math.exp(-d_a)
                term = wk * density
                sum_plus += term * up
                sum_minus += term * down
            part_plus = sum_plus * (eta * scale / norm)
            part_minus = sum_minus * (eta * scale / norm)
            plus[j], carry_plus[j] = _add(plus[j], carry_plus[j], part_plus)
            minus[j], carry_minus[j] = _add(minus[j], carry_minus[j], part_minus)
            y_top = min(far + eta / mu, _DEAD_Y + 2.0)
            ell_top = max(abs(lo[j] + left), abs(lo[j] + left + full))
            tau = min(left, right_end) + full
            dy = 3.0 * _U * (ell_top / mu + y_top + mu + 1.0)
            rel = dy * (y_top + 1.0) * 1.01 + _U * (y_top * y_top + 2.0 * abs(log_norm) + 8.0)
            rel += 8.0 * _U * (max(2.0, tau) + tau * y_top / mu + 2.0) * (1.0 + width[j])
            err_plus[j] += rel * part_plus
            err_minus[j] += rel * part_minus
    return plus + carry_plus, minus + carry_minus, err_plus, err_minus, quad, used
