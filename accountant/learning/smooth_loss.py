"""Smoothly bucketed ADP and PDP delta under ``n`` compositions, with its exact gradient.

These are the training losses ``l^ADP`` and ``l^PDP`` of the paper (section
"PrivacyBuckets ADP-bound"), built so that their gradient with respect to every mass of
the pair exists and is exact. They are *not* certified bounds: a learned noise is always
certified afterwards by :class:`~accountant.buckets.engine.PrivacyBuckets`.

**Soft assignment.** The paper assigns each outcome's A-mass to the bucket containing
its privacy loss ``L = ln(a / b)`` and replaces the derivative of that index by a
surrogate. Here an outcome with loss ``L = (k + t) w`` (bucket width ``w``, integer
``k``, ``0 <= t < 1``) instead puts ``a (1 - t)`` on the lattice point ``k w`` and
``a t`` on ``(k + 1) w``. This keeps the mass and the mean loss, is continuous in ``a``
and ``b``, and is differentiable everywhere except where ``L`` is a lattice point.
Losses above ``loss_cap`` join the distinguishing events (the infinity bucket, as in
the paper); losses below ``-loss_cap`` are raised to ``-loss_cap``. Both moves raise
the loss, so they only make the loss larger. An outcome without A-mass contributes
nothing; its derivative ``dl/da`` is taken at the lowest loss of the other outcomes,
which over-estimates the one-sided derivative at ``a = 0`` (``dl/df`` is
non-decreasing in the loss), and it keeps the lattice as short as the masses need.

**Composition and its adjoint.** With ``f`` the single-release lattice masses,
``s = sum f`` and ``d`` the infinity mass, ``n`` releases give the lattice masses
``f^{*n}`` and infinity mass ``(s + d)^n - s^n``, and

    l = sum_j c_j (f^{*n})_j + (s + d)^n - s^n,

with ``c_j = (1 - e^{eps - l_j})_+`` (ADP) or ``c_j = [l_j > eps]`` (PDP) at the
composed loss ``l_j``. Its gradient is the adjoint of the convolution,

    dl/df_k = n sum_j c_j (f^{*(n-1)})_{j-k} + n (s + d)^{n-1} - n s^{n-1},
    dl/dd = n (s + d)^{n-1},

a cross-correlation computed by FFT, followed by the chain rule through the soft
assignment: ``dl/da = (1 - t) G_k + t G_{k+1} + (G_{k+1} - G_k) / w`` and
``dl/db = -(G_{k+1} - G_k) a / (w b)`` with ``G = dl/df``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.numerics.lazy import fft
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import (
    Direction,
    Kind,
    check_choice,
    check_direction,
    check_epsilons,
    check_positive_int,
    check_positive_real,
)

__all__ = ["SmoothDelta", "default_smooth_width", "smooth_bucket_delta"]

TARGET_WIDTH = 0.005
DEFAULT_LOSS_CAP = 30.0
MAX_LATTICE = 1 << 25
KINDS: tuple[Kind, ...] = ("ADP", "PDP")


@attrs.frozen(eq=False)
class SmoothDelta:
    """The smooth bucket delta ``l`` and its gradients with respect to ``pair.a`` and
    ``pair.b`` (both of the pair's length); ``direction`` is the one that gave ``l``."""

    delta: float
    gradient_a: np.ndarray
    gradient_b: np.ndarray
    epsilon: float
    times: int
    kind: str
    direction: str
    width: float


def default_smooth_width(epsilon: float) -> float:
    """About ``0.005``, chosen so that ``epsilon`` is a lattice point: ``eps / ceil(eps /
    0.005)`` (``0.005`` when ``eps < 0.005``, or when ``eps / 0.005`` overflows)."""
    # A lattice point at a tiny eps would force width = eps (1e-300 overflows the lattice
    # positions), and eps near the float maximum would overflow ceil(eps / 0.005). Below
    # one target width eps is not resolved by the lattice anyway (the ADP weights are
    # continuous in eps), so the target width is kept.
    count = epsilon / TARGET_WIDTH
    if epsilon < TARGET_WIDTH or not math.isfinite(count):
        return TARGET_WIDTH
    return epsilon / math.ceil(count)


@attrs.frozen
class _Assignment:
    """Where each outcome's A-mass goes: lattice index ``index`` (from ``origin``), weight
    ``t`` on ``index + 1``, and which outcomes have a loss that moves with ``a, b``."""

    origin: int
    index: np.ndarray
    t: np.ndarray
    moving: np.ndarray
    infinite: np.ndarray
    size: int


def _assign(a: np.ndarray, b: np.ndarray, width: float, cap: float) -> _Assignment:
    finite = b > 0
    both = finite & (a > 0)
    loss = np.full(a.size, -cap)
    loss[both] = np.log(a[both]) - np.log(b[both])
    infinite = ~finite | (loss > cap)
    moving = both & ~infinite & (loss >= -cap)
    # Outcomes without A-mass sit at the lowest loss of the others (see module docstring).
    lowest = loss[both & ~infinite].min() if (both & ~infinite).any() else -cap
    loss[finite & ~both] = lowest
    loss = np.clip(loss, -cap, cap)
    position = loss / width
    floor = np.floor(position)
    lattice = ~infinite
    origin = int(floor[lattice].min()) if lattice.any() else 0
    index = np.where(lattice, floor - origin, 0).astype(np.int64)
    t = np.where(lattice, position - floor, 0.0)
    size = int(index[lattice].max()) + 2 if lattice.any() else 1
    return _Assignment(origin, index, t, moving, infinite, size)


def _weights(kind: str, epsilon: float, width: float, first: int, count: int) -> np.ndarray:
    """``c_j`` at the composed lattice losses ``(first + j) w``, ``j = 0..count-1``."""
    steps = first + np.arange(count, dtype=np.float64)
    threshold = epsilon / width
    # (an infinite threshold, eps near the float maximum, would make round() raise)
    if math.isfinite(threshold) and abs(threshold - round(threshold)) < 1e-9 * max(1.0, threshold):
        threshold = float(round(threshold))
    above = steps > threshold
    if kind == "PDP":
        return above.astype(np.float64)
    return np.where(above, -np.expm1(np.minimum(epsilon - steps * width, 0.0)), 0.0)


def _one_direction(
    a: np.ndarray, b: np.ndarray, epsilon: float, times: int, kind: str, width: float, cap: float
) -> tuple[float, np.ndarray, np.ndarray]:
    where = _assign(a, b, width, cap)
    span = times * (where.size - 1) + 1
    if span > MAX_LATTICE:
        raise InvalidInputError(
            f"width={width!r} needs a composed lattice of {span} points (more than "
            f"{MAX_LATTICE}); choose a larger width or a smaller loss_cap"
        )
    lattice = ~where.infinite
    f = np.bincount(where.index[lattice], a[lattice] * (1.0 - where.t[lattice]), where.size)
    f += np.bincount(where.index[lattice] + 1, a[lattice] * where.t[lattice], where.size)
    s = float(f.sum())
    d = float(a[where.infinite].sum())
    length = fft.next_fast_len(span, real=True)
    spectrum = fft.rfft(f, length)
    composed = fft.irfft(spectrum**times, length)[:span]
    before_last = fft.irfft(spectrum ** (times - 1), length)
    weights = _weights(kind, epsilon, width, times * where.origin, span)
    total = s + d
    value = float(weights @ composed) + (total**times - s**times)
    correlation = fft.irfft(
        fft.rfft(weights, length) * np.conj(fft.rfft(before_last, length)), length
    )
    grad_f = times * correlation[: where.size] + times * (total ** (times - 1) - s ** (times - 1))
    grad_infinite = times * total ** (times - 1)

    low = grad_f[np.minimum(where.index, where.size - 1)]
    high = grad_f[np.minimum(where.index + 1, where.size - 1)]
    grad_a = np.where(where.infinite, grad_infinite, (1.0 - where.t) * low + where.t * high)
    grad_b = np.zeros(a.size)
    slope = (high - low) / width
    moving = where.moving
    grad_a[moving] += slope[moving]
    grad_b[moving] = -slope[moving] * a[moving] / b[moving]
    return value, grad_a, grad_b


def smooth_bucket_delta(
    pair: WorstCasePair,
    epsilon: float,
    times: int = 1,
    *,
    kind: Kind = "ADP",
    direction: Direction = "max",
    width: float | None = None,
    loss_cap: float = DEFAULT_LOSS_CAP,
) -> SmoothDelta:
    """The training loss ``l^ADP`` (``kind="ADP"``) or ``l^PDP`` of ``times`` releases of
    ``pair`` at ``epsilon`` and its exact gradient (module docstring; paper, section
    "PrivacyBuckets ADP-bound"). ``direction="max"`` takes the larger of A/B and B/A.

    Not a certified bound: certify results with
    :class:`~accountant.buckets.engine.PrivacyBuckets`.
    """
    if not isinstance(pair, WorstCasePair):
        raise InvalidInputError(f"pair must be a WorstCasePair, got {type(pair).__name__}")
    eps = check_epsilons("epsilon", epsilon)
    if eps.size != 1:
        raise InvalidInputError(f"epsilon must be one number, got {eps.size} values")
    eps_value = float(eps.reshape(-1)[0])
    times = check_positive_int("times", times)
    check_choice("kind", kind, KINDS)
    direction = check_direction("direction", direction)
    width = default_smooth_width(eps_value) if width is None else width
    width = check_positive_real("width", width)
    loss_cap = check_positive_real("loss_cap", loss_cap)

    results = {}
    if direction in ("max", "A/B"):
        results["A/B"] = _one_direction(pair.a, pair.b, eps_value, times, kind, width, loss_cap)
    if direction in ("max", "B/A"):
        value, grad_b, grad_a = _one_direction(
            pair.b, pair.a, eps_value, times, kind, width, loss_cap
        )
        results["B/A"] = (value, grad_a, grad_b)
    chosen = max(results, key=lambda d: results[d][0])
    value, grad_a, grad_b = results[chosen]
    return SmoothDelta(
        delta=value,
        gradient_a=grad_a,
        gradient_b=grad_b,
        epsilon=eps_value,
        times=times,
        kind=kind,
        direction=chosen,
        width=width,
    )
