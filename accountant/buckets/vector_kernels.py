"""numpy renderings of the three kernels every common composition runs (issue 26): the
dominating split of a smooth law over lattice intervals, the log-moment-generating function
of a lattice distribution, and the powers of a spectrum.

Their numba versions (:mod:`accountant.buckets._lattice_kernel`,
:mod:`accountant.buckets._kernels`, :mod:`accountant.buckets.fft_power`) are faster on large
inputs, but numba costs about a second in a fresh process (its import and the loading of
cached kernels), which is most of what a DP-SGD query, a Gaussian composition or a
dp_accounting query costs there. Below a size that depends only on the input
(:data:`SPLIT_INTERVALS`, :data:`LOG_MGF_POINTS`, :data:`POWER_WORK`) these numpy versions
run instead, so the same input always takes the same kernel: answers stay functions of the
accountant and the query alone.

A query of many distinct releases (:data:`COMPILED_COMPONENTS`, e.g. a heterogeneous
schedule of 1,000 DP-SGD settings) renders thousands of small lattices, where the numba
kernels' load pays for itself many times over: the engine sets :data:`COMPILED` for such a
query (:func:`compiled_kernels`), and every kernel choice below reads it. It is a function
of the accountant alone, and the caches of rounded releases and compositions
(:mod:`~accountant.buckets.release_cache`) key on it, so answers still depend only on the
accountant and the query.

Each states the same quantity and the same kind of certified bound as its numba version,
with its own rounding analysis where the operations differ (vectorised sums, exponentials
of differences); the tests compare both against slow oracles.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import attrs
import numpy as np

from accountant.numerics.floats import SMALLEST_NORMAL, UNIT_ROUNDOFF

__all__ = [
    "COMPILED",
    "COMPILED_COMPONENTS",
    "LOG_MGF_POINTS",
    "POWER_WORK",
    "SPLIT_INTERVALS",
    "accumulate_power",
    "compiled_kernels",
    "lattice_log_mgf",
    "runs_numpy",
    "split_masses",
]

_U = UNIT_ROUNDOFF
#: The unit roundoff of numpy's long double (the per-interval panel sums of the split).
_WIDE_U = float(np.finfo(np.longdouble).eps) / 2.0
_DEAD_Y = 41.0
_TARGET = 2.0**-60
_MAX_ORDER = 40
#: Lattice intervals up to which :func:`split_masses` splits instead of numba. Loading numba
#: costs about 0.65 s in a fresh process; the numpy split of 10^5 to 10^6 intervals costs
#: less than that (sigma 1, q 1e-4, 10^7 steps: 2.6 s at 2^17, 2.0 s at 2^20; sigma 0.5,
#: q 1e-4, 10^5 steps: 1.7 s and 1.3 s; the same brackets to the last digit).
SPLIT_INTERVALS = 1 << 20
#: A lattice is coarsened for ``lambda`` while ``lambda * step`` stays below this (the numba
#: kernel's rule: the sum rises by at most ``e^{(lambda step)^2 / 8}``).
_COARSE_REACH = 2.8e-4
#: Positive lattice masses up to which :func:`lattice_log_mgf` sums instead of numba: as
#: many as :data:`SPLIT_INTERVALS`, so that rendering one release loads numba for both
#: kernels or for neither (a release of 10^5 points was rendered by the numpy split and
#: then loaded numba, about 0.6 s in a fresh process, for its moments alone).
LOG_MGF_POINTS = SPLIT_INTERVALS
#: Spectrum components times bits of the power up to which :func:`accumulate_power` powers
#: instead of numba (a spectrum of 2^21 components to a power of 2^24 is a few tenths of a
#: second in numpy).
POWER_WORK = 1 << 28
#: Whether the running query takes the numba kernels whatever the size (set by
#: :func:`compiled_kernels`).
COMPILED: ContextVar[bool] = ContextVar("compiled_kernels", default=False)
#: Distinct releases from which a query takes the numba kernels whatever the size: each
#: release is rendered two to four times per direction, at tens of milliseconds each in
#: numpy against a few in numba, so from this many on the numba load (about a second in a
#: fresh process) is repaid.
COMPILED_COMPONENTS = 32
#: Entries of one two-dimensional block of :func:`lattice_log_mgf` (memory), and its most
#: rows (its lambdas share which terms are left out).
_BLOCK = 1 << 20
_ROWS = 8


@contextmanager
def compiled_kernels(enabled: bool) -> Iterator[None]:
    """Within this block, :func:`runs_numpy` is false for every size when ``enabled``."""
    token = COMPILED.set(bool(enabled) or COMPILED.get())
    try:
        yield
    finally:
        COMPILED.reset(token)


def runs_numpy(size: int, limit: int) -> bool:
    """Whether a kernel of input ``size`` runs its numpy version here: ``size <= limit``
    outside a :func:`compiled_kernels` block."""
    return size <= limit and not COMPILED.get()


def accumulate_power(
    spectrum: np.ndarray,
    times: int,
    error: float,
    product: np.ndarray,
    upper: np.ndarray,
    slope: np.ndarray,
) -> None:
    """``product *= spectrum**times`` and ``upper *= (|spectrum| + error)**times`` by binary
    powering (no logarithms), ``slope += times error / (|spectrum| + error)``, entrywise:
    the operations of :func:`accountant.buckets.fft_power._accumulate_power` in the same
    order for every component, so the same ``N - 1`` multiplications of its bound."""
    reach = np.abs(spectrum) + error
    positive = reach > 0.0
    slope[positive] += times * error / reach[positive]
    base = spectrum.copy()
    power = np.ones_like(spectrum)
    bound = np.ones_like(reach)
    remaining = int(times)
    while remaining:
        if remaining & 1:
            power *= base
            bound *= reach
        remaining >>= 1
        if remaining:
            base *= base
            reach *= reach
    product *= power
    upper *= bound


def lattice_log_mgf(mass: np.ndarray, lambdas: np.ndarray, step: float, upward: bool) -> np.ndarray:
    """``out[k] >= ln sum_j mass[j] e^{+-lambdas[k] step j}`` (``+`` if ``upward``) for
    non-negative masses on the lattice ``j = 0 .. J`` (none positive: a finite floor); the
    quantity of :func:`accountant.buckets._kernels.lattice_log_mgf`, and as there, for
    small ``lambda`` the masses are first spread onto a lattice ``2^r`` times coarser
    keeping their means (:func:`_spread_halve`, while ``lambda step 2^r <=``
    :data:`_COARSE_REACH`), which by convexity of ``e^{lambda L}`` only raises the sum;
    then :func:`_log_mgf_rows` on each lattice for its lambdas."""
    out = np.empty(lambdas.size)
    levels = [mass]
    depth = np.zeros(lambdas.size, dtype=np.int64)
    for k, lam in enumerate(lambdas):
        while lam * step * 2.0 ** (depth[k] + 1) <= _COARSE_REACH:
            if depth[k] + 1 == len(levels):
                if levels[-1].size <= 2:
                    break
                levels.append(_spread_halve(levels[-1]))
            depth[k] += 1
    for level in np.unique(depth):
        rows = depth == level
        coarse = step * 2.0**level
        # each level's two additions per point round by u each, up to 2.02 u of the sum
        out[rows] = _log_mgf_rows(levels[level], lambdas[rows], coarse, upward) + math.log1p(
            2.02 * level * _U
        )
    return out


def _spread_halve(mass: np.ndarray) -> np.ndarray:
    """The masses on every other lattice point, each odd point's mass split in halves onto
    its two neighbours (its mean kept): ``out[g] = m[2g] + m[2g - 1] / 2 + m[2g + 1] / 2``,
    a half below four times the smallest normal number rounded up (never less mass)."""
    out = np.zeros(mass.size // 2 + 1)
    even, odd = mass[0::2], mass[1::2]
    out[: even.size] += even
    half = odd * 0.5
    small = half < 4.0 * SMALLEST_NORMAL
    half[small] = np.nextafter(half[small], np.inf)
    out[: odd.size] += half
    out[1 : odd.size + 1] += half
    return out


def _log_mgf_rows(mass: np.ndarray, lambdas: np.ndarray, step: float, upward: bool) -> np.ndarray:
    """``out[k] >= ln sum_j mass[j] e^{+-lambdas[k] step j}`` (``+`` if ``upward``) for
    non-negative masses on the lattice ``j = 0 .. J`` (none positive: a finite floor); the
    quantity of :func:`accountant.buckets._kernels.lattice_log_mgf`.

    Measured from the end point ``e`` the sum leans to (the last positive mass upward, the
    first downward), ``ln sum = +-lambda step e + ln sum_j e^{x_j}`` with ``x_j = ln
    mass[j] - lambda d_j``, ``d_j = |j - e| step``, summed as ``M + ln sum_j e^{x_j - M}``
    (``M`` the largest computed ``x_j``: the sum is at least 1, nothing overflows).
    Rounding, with every ``log`` and ``exp`` allowed ``4u``: ``x_j`` is within ``E_j =
    1.01 u (4 |ln mass[j]| + 2.01 lambda d_j + |x_j|)`` of the exact one (the logarithm,
    ``d_j``, its product with ``lambda``, the difference), ``x_j - M`` rounds by ``u |x_j -
    M|``, so each term ``y_j`` grows by at most ``e^{t_j} - 1`` of it, ``t_j = E_j + u |x_j -
    M|``, and the sum by ``e^T - 1`` of it with the row's ``T = 1.01 u (5 A + 3.01 lambda D) +
    u (|M| + A + lambda D) >= t_j`` (``A`` the largest ``|ln mass[j]|`` summed, ``D`` the
    largest ``d_j``: ``|x_j| <= |ln mass[j]| + lambda d_j``), taken times 1.01; each
    exponential by ``4u`` (a gap below ``-745`` is raised to ``-745`` first: never less),
    underflow by the smallest normal number per term; the sum of
    ``n`` non-negative terms, in any order, by ``(n - 1) u`` of it; the logarithm by ``4u`` of
    it; ``lambda step e`` by ``2.01 u`` of it and the two final additions by ``u`` of their
    magnitudes. The bound adds all of it, times 1.01. Terms surely below ``e^-750`` times the
    end point's are not formed: each is below the smallest normal number relative to
    ``e^M`` (times ``e^t`` for its ``t``), which the ``n`` of them added covers."""
    positive = np.flatnonzero(mass > 0.0)
    if positive.size == 0:  # nothing to sum: a finite floor, as the numba kernel gives
        return np.full(lambdas.size, math.log(SMALLEST_NORMAL))
    count = positive.size
    logs = np.log(mass[positive])
    end = positive[-1] if upward else positive[0]
    distances = np.abs(positive - end).astype(np.float64) * step  # increasing away from e
    if upward:  # nearest the end first
        logs, distances = logs[::-1], distances[::-1]
    end_log = float(logs[0])
    highest = float(np.max(logs))
    largest_log = float(np.max(np.abs(logs)))
    end_offset = float(end) * step
    out = np.empty(lambdas.size)
    rows = min(_ROWS, max(1, _BLOCK // count))
    for start in range(0, lambdas.size, rows):
        lam = lambdas[start : start + rows]
        smallest = float(np.min(lam))
        reach = (750.0 + highest - end_log) / smallest if smallest > 0.0 else np.inf
        kept = int(np.searchsorted(distances, reach, side="right"))
        a, d = logs[:kept], distances[:kept]
        largest_a = float(np.max(np.abs(a)))
        farthest = lam * float(d[-1])  # the largest lambda d_j of each row (d increases)
        x = np.multiply(lam[:, None], d)
        np.subtract(a, x, out=x)
        top = np.max(x, axis=1)
        x -= top[:, None]  # the gaps x_j - M, at most 0
        # an exponential below -745 is under the smallest normal number: raised to e^-745
        # (never less than the term)
        np.maximum(x, -745.0, out=x)
        np.exp(x, out=x)
        total = np.sum(x, axis=1)
        # every term's t_j = E_j + u |x_j - M| is at most this (|x_j| <= |a_j| + lambda d_j)
        largest_slack = 1.01 * _U * (5.0 * largest_a + 3.01 * farthest) + _U * (
            np.abs(top) + largest_a + farthest
        )
        grown = total * np.expm1(largest_slack) * 1.01
        # underflowed and unformed terms: each below the smallest normal number times e^t for
        # its own t, which is at most this
        widest = 1.01 * _U * (5.0 * largest_log + 3.01 * lam * float(distances[-1]))
        log_total = np.log(total + count * SMALLEST_NORMAL * np.exp(np.minimum(widest, 700.0)))
        shift = lam * end_offset if upward else -lam * end_offset
        margin = (
            grown / total
            + 5.0 * _U
            - math.log1p(-1.01 * count * _U)
            + 4.0 * _U * log_total
            + 2.01 * _U * np.abs(shift)
            + 2.0 * _U * (np.abs(shift) + np.abs(top) + log_total + 1.0)
        )
        out[start : start + rows] = shift + top + log_total + 1.01 * margin
    return out


def _gl_order(rho: np.ndarray) -> np.ndarray:
    """:func:`accountant.buckets._lattice_kernel.gl_order`, entrywise."""
    need = np.log(64.0 / 15.0 * 30.0 * (1.0 + 4.0 * rho) / (1.0 - rho**-2.0) / _TARGET)
    order = np.ceil(need / (2.0 * np.log(rho)) - 1.0)
    return np.clip(order, 2, _MAX_ORDER).astype(np.int64)


def _d_right(tau: np.ndarray, share: np.ndarray) -> np.ndarray:
    """``log1p(s expm1(tau))``, as ``tau + ln s + log1p(...)`` past 600 (entrywise)."""
    near = tau <= 600.0
    out = np.empty_like(tau)
    out[near] = np.log1p(share[near] * np.expm1(tau[near]))
    far = ~near
    if far.any():
        t, s = tau[far], share[far]
        out[far] = t + np.log(s) + np.log1p((1.0 - s) / s * np.exp(-t))
    return out


@attrs.frozen
class _Panels:
    """The live panels of :func:`split_masses`, one entry each: where the panel lies in its
    interval (``left``, ``right_end`` offsets from its ends, ``eta`` its half-width, ``d`` and
    ``d_low`` the interval's length in two parts) and its interval's numbers (``low`` and
    ``high`` ends, the shares ``s(a)``, ``s(b)``, the offsets ``c_a``, ``c_b``, the
    normalisation ``-expm1(-W)``)."""

    eta: np.ndarray
    left: np.ndarray
    right_end: np.ndarray
    d: np.ndarray
    d_low: np.ndarray
    low: np.ndarray
    high: np.ndarray
    share_lo: np.ndarray
    share_hi: np.ndarray
    c_lo: np.ndarray
    c_hi: np.ndarray
    norm: np.ndarray


def _panel_sums(
    panels: _Panels, chosen: np.ndarray, n: int, nodes, weights, law, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_k w_k p(l_k) t_k, sum_k w_k p(l_k) (1 - t_k))`` times ``eta scale / norm``
    for the panels ``chosen``, all of Gauss-Legendre order ``n``: the kernel's node loop."""
    q, mu, w_a, w_s, log_norm, _, mirrored = law
    x, wk = nodes[n, :n], weights[n, :n]
    e = panels.eta[chosen, None]
    from_left = panels.left[chosen, None] + e * (1.0 + x)
    from_right = panels.right_end[chosen, None] + e * (1.0 - x)
    nearer_left = from_left <= from_right
    span, span_low = panels.d[chosen, None], panels.d_low[chosen, None]
    tau_a = np.where(nearer_left, from_left, (span - from_right) + span_low)
    tau_b = np.where(nearer_left, (span - from_left) + span_low, from_right)
    ell = np.where(nearer_left, panels.low[chosen, None] + tau_a, panels.high[chosen, None] - tau_b)
    density = np.zeros_like(ell)
    for w, offset in ((w_a, -0.5 * mu), (w_s, 0.5 * mu)):
        if w > 0.0:
            y = ell / mu + offset
            density += w * np.exp(-0.5 * y * y - log_norm)
    if q == 1.0:
        d_a, d_b = tau_a, tau_b
    else:
        d_a = -np.log1p(panels.share_lo[chosen, None] * np.expm1(-tau_a))
        share_hi = np.broadcast_to(panels.share_hi[chosen, None], tau_b.shape).copy()
        d_b = _d_right(tau_b, share_hi)
    d_a = d_a + panels.c_lo[chosen, None]
    d_b = d_b + panels.c_hi[chosen, None]
    up = -np.expm1(-d_a)
    down = -np.expm1(-d_b)
    if mirrored != 0.0:
        up = up * np.exp(-d_b)
    else:
        down = down * np.exp(-d_a)
    term = wk * density
    factor = panels.eta[chosen] * scale / panels.norm[chosen]
    return np.sum(term * up, axis=1) * factor, np.sum(term * down, axis=1) * factor


def split_masses(
    lo, hi, delta, delta_low, s_lo, s_hi, c_lo, c_hi, width, radius, panels, law, nodes, weights
):
    """Per interval ``j``: ``(m+, m-, e+, e-, quadrature error, largest order)`` of the
    dominating split: :func:`accountant.buckets._lattice_kernel.split_kernel`, the same
    panels, orders, nodes, weights and error terms (its docstring), vectorised over the
    panels of all intervals (the nodes of the panels of one order at once). The nodes of a
    panel are summed in numpy's order, which the kernel's allowance of ``order + 16`` ulps
    for a sum of non-negative terms covers in any order; the ``k`` panels of an interval
    plainly in long double, not compensated as there, so ``1.01 ((k - 1) u_wide + u)`` of
    the interval's masses is added to ``e+`` and ``e-`` (``u_wide`` the unit roundoff of
    numpy's long double; ``1.01 (k - 1) u`` where it is a double)."""
    q, mu, w_a, w_s, log_norm, norm_error, _ = law
    count = lo.size
    plus, minus = np.zeros(count), np.zeros(count)
    quad, used = np.zeros(count), np.zeros(count)
    err_plus, err_minus = np.zeros(count), np.zeros(count)
    panels = np.asarray(panels, dtype=np.int64)
    quad[panels == 0] = SMALLEST_NORMAL
    owner = np.repeat(np.arange(count), panels)
    if owner.size == 0:
        return plus, minus, err_plus, err_minus, quad, used
    first = np.cumsum(panels) - panels
    index = (np.arange(owner.size) - first[owner]).astype(np.float64)
    parts = panels[owner].astype(np.float64)
    d, d_low = delta[owner], delta_low[owner]
    step = d / parts
    left = index * step
    last = index == parts - 1.0
    right_end = np.where(last, 0.0, (d - (index + 1.0) * step) + d_low)
    full = np.where(last, (d - left) + d_low, (index + 1.0) * step - left)
    eta = 0.5 * full
    low = lo[owner]
    centre = low + (left + eta)
    y_a = np.abs(centre / mu - 0.5 * mu)
    y_s = np.abs(centre / mu + 0.5 * mu)
    sides = [(w, y) for w, y in ((w_a, y_a), (w_s, y_s)) if w > 0.0]
    far = np.maximum.reduce([y for _, y in sides]) if sides else np.zeros_like(eta)
    near = np.minimum.reduce([y for _, y in sides]) if sides else np.full_like(eta, np.inf)
    dead = near - eta / mu >= _DEAD_Y
    quad += SMALLEST_NORMAL * np.bincount(owner[dead], minlength=count)
    alive = ~dead
    owner, index, d, d_low, left, right_end, full, eta, low, far = (
        a[alive] for a in (owner, index, d, d_low, left, right_end, full, eta, low, far)
    )
    sides = [(w, y[alive]) for w, y in sides]
    share_lo, share_hi = s_lo[owner], s_hi[owner]
    spacing = width[owner]
    if q == 1.0:
        cap = np.full_like(eta, 1.0 / mu)
    else:
        with np.errstate(divide="ignore"):
            cap = np.where(3.7 * share_lo <= 1.0, 1.0, 1.0 / (3.7 * share_lo)) / mu
    r_y = np.maximum(radius[owner] / mu, np.minimum(1.0 / (far + eta / mu + 1.0), cap))
    rho = mu * r_y / eta
    order = _gl_order(rho)
    bound = np.zeros_like(eta)
    for w, y in sides:
        gap = np.maximum(y - r_y, 0.0)
        bound += w * np.exp(0.5 * (r_y * r_y - gap * gap) - log_norm)
    scale = 1.0 / (math.sqrt(2.0 * math.pi) * mu)
    bound *= (1.0 + 64.0 * _U + 2.0 * norm_error) * scale
    reach = mu * r_y if q == 1.0 else mu * r_y * 1.361 * np.exp(mu * r_y)
    spread = reach * share_lo
    growth = 1.01 * (1.0 + spread / spacing) * np.exp(2.0 * spread + 0.5 * spacing)
    error = 64.0 / 15.0 * eta * growth * bound * rho ** (-2.0 * order - 2.0)
    quad += np.bincount(owner, error / (1.0 - rho**-2.0) * (1.0 + 1e-6), minlength=count)
    if owner.size:  # the panels of an interval are contiguous: the largest order of each
        first_panels = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        used[owner[first_panels]] = np.maximum.reduceat(order, first_panels)
    part_plus, part_minus = np.empty_like(eta), np.empty_like(eta)
    live = _Panels(
        eta,
        left,
        right_end,
        d,
        d_low,
        low,
        hi[owner],
        share_lo,
        share_hi,
        c_lo[owner],
        c_hi[owner],
        -np.expm1(-spacing),
    )
    for n in np.unique(order):
        group = np.flatnonzero(order == n)
        rows = max(1, _BLOCK // (8 * int(n)))
        for start in range(0, group.size, rows):
            chosen = group[start : start + rows]
            part_plus[chosen], part_minus[chosen] = _panel_sums(
                live, chosen, int(n), nodes, weights, law, scale
            )
    # the panels of each interval (contiguous, in order) summed plainly, in the widest float
    # numpy has (x87 extended on x86-64: u / 2048): (k - 1) u_wide of the sum for k panels,
    # and u for rounding it to a double, go to the error (without a wider float: (k - 1) u)
    if owner.size:
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        j = owner[starts]
        terms = np.diff(np.r_[starts, owner.size]) - 1.0
        if _WIDE_U < _U:
            plus[j] = np.add.reduceat(part_plus.astype(np.longdouble), starts)
            minus[j] = np.add.reduceat(part_minus.astype(np.longdouble), starts)
            extra = 1.01 * (_WIDE_U * terms + _U)
        else:  # pragma: no cover - platforms whose long double is a double
            plus[j] = np.add.reduceat(part_plus, starts)
            minus[j] = np.add.reduceat(part_minus, starts)
            extra = 1.01 * _U * terms
        err_plus[j] += extra * plus[j]
        err_minus[j] += extra * minus[j]
    y_top = np.minimum(far + eta / mu, _DEAD_Y + 2.0)
    ell_top = np.maximum(np.abs(low + left), np.abs(low + left + full))
    tau = np.minimum(left, right_end) + full
    dy = 3.0 * _U * (ell_top / mu + y_top + mu + 1.0)
    rel = dy * (y_top + 1.0) * 1.01 + _U * (y_top * y_top + 2.0 * abs(log_norm) + 8.0)
    rel += 8.0 * _U * (np.maximum(2.0, tau) + tau * y_top / mu + 2.0) * (1.0 + spacing)
    err_plus += np.bincount(owner, rel * part_plus, minlength=count)
    err_minus += np.bincount(owner, rel * part_minus, minlength=count)
    return plus, minus, err_plus, err_minus, quad, used
