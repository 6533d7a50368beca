"""Slow references for analytic releases rounded onto a lattice, in mpmath at 30 digits.

They follow the definitions, not the library's formulas: the numerator density of the
standard-normal coordinate ``y`` (``y = -x/sigma``), the A/B loss of an outcome
(``mu y + mu^2/2`` for the Gaussian mechanism, ``-ln(1 - q + q e^-(mu y + mu^2/2))`` for the
subsampled Gaussian), the atom at ``-ln(1 - q)``; and the mean-preserving split of
``accountant.buckets.analytic_lattice``: an outcome with loss ``L`` gives the lattice point
``g`` the share ``max(0, 1 - |L - g| / w)`` of its mass.
"""

from __future__ import annotations

import math

import mpmath as mp

from accountant import mechanisms
from tests.dpsgd_reference import parts

DIGITS = 30


def law_of(m, direction: str) -> tuple:
    """``(mu, q, y_lo, y_hi, Z, w_A, w_S, atom mass, atom loss)`` of the numerator of
    ``direction`` in the A/B loss scale (the Gaussian mechanism's B/A is its A/B)."""
    mp.mp.dps = DIGITS
    if isinstance(m, mechanisms.SubsampledTruncatedGaussian):
        mu, q, k, z, m0 = parts(m)
        mp.mp.dps = DIGITS
        lo, hi = (-k, k - mu) if not mp.isinf(k) else (-mp.inf, mp.inf)
        wa, ws = (mp.mpf(1), mp.mpf(0)) if direction == "A/B" else (1 - q, q)
        atom = wa * m0 if q < 1 else mp.mpf(0)
        return mu, q, lo, hi, z, wa, ws, atom, (-mp.log(1 - q) if q < 1 else mp.mpf(0))
    mu = mp.mpf(m.sensitivity) / mp.mpf(m.sigma)
    bound = getattr(m, "bound", math.inf)
    if math.isinf(bound):
        lo, hi, z = -mp.inf, mp.inf, mp.mpf(1)
    else:
        k = mp.mpf(bound) / mp.mpf(m.sigma)
        lo, hi, z = -k, k - mu, mp.ncdf(k) - mp.ncdf(-k)
    return mu, mp.mpf(1), lo, hi, z, mp.mpf(1), mp.mpf(0), mp.mpf(0), mp.mpf(0)


def _loss(mu, q):
    """The A/B loss as a function of ``y``."""
    if q == 1:
        return lambda y: mu * y + mu**2 / 2
    return lambda y: -mp.log(1 - q + q * mp.exp(-(mu * y + mu**2 / 2)))


def _y_of(mu, q):
    """The ``y`` of an A/B loss (``inf`` above every continuous loss)."""

    def inverse(loss):
        if q == 1:
            return loss / mu - mu / 2
        inside = (mp.exp(-loss) - 1 + q) / q
        return mp.inf if inside <= 0 else -mp.log(inside) / mu - mu / 2

    return inverse


def _density(mu, z, wa, ws):
    return lambda y: (wa * mp.npdf(y) + ws * mp.npdf(y + mu)) / z


def _pieces(lo, hi):
    """Breakpoints of ``[lo, hi]`` at a few ``y`` where the density changes scale."""
    a, b = max(lo, -40), min(hi, 40)
    return [a] + [p for p in (-8, -3, -1, 0, 1, 3, 8) if a < p < b] + [b]


def hat_mass(m, direction: str, point, width: float):
    """The numerator mass the split gives the A/B lattice point ``point`` (mpf)."""
    mu, q, lo, hi, z, wa, ws, atom, atom_loss = law_of(m, direction)
    loss, y_of, dens = _loss(mu, q), _y_of(mu, q), _density(mu, z, wa, ws)
    w = mp.mpf(width)
    total = mp.mpf(0)
    for a, b, hat in (
        (point - w, point, lambda v: (v - (point - w)) / w),
        (point, point + w, lambda v: (point + w - v) / w),
    ):
        ya, yb = max(y_of(a), lo), min(y_of(b), hi)
        if yb > ya:
            total += mp.quad(lambda y, hat=hat: hat(loss(y)) * dens(y), [ya, yb])
    if atom > 0 and point - w < atom_loss < point + w:
        total += atom * (1 - abs(atom_loss - point) / w)
    return total


def kernel_mass(m, direction: str, index: int, ends, c_low, c_high):
    """The exact mass at A/B position ``index`` of the split actually computed: interval
    ``[x_K, x_{K+1}]`` (float ends ``ends``) split between ``P = L(x_K) - c_low[K]`` and
    ``Q = L(x_{K+1}) + c_high[K + 1]`` (``accountant.buckets.analytic_lattice``)."""
    mu, q, _, _, z, wa, ws, _, _ = law_of(m, direction)

    def loss(ell):
        return ell if q == 1 else -mp.log(1 - q + q * mp.exp(-ell))

    def dens(ell):
        return (wa * mp.npdf(ell / mu - mu / 2) + ws * mp.npdf(ell / mu + mu / 2)) / (z * mu)

    total = mp.mpf(0)
    for k, upper in ((index - 1, True), (index, False)):
        if k < 0 or k + 1 >= len(ends) or not ends[k + 1] > ends[k]:
            continue
        a, b = mp.mpf(float(ends[k])), mp.mpf(float(ends[k + 1]))
        p = loss(a) - mp.mpf(float(c_low[k]))
        top = loss(b) + mp.mpf(float(c_high[k + 1]))
        if upper:
            total += mp.quad(lambda e, p=p, top=top: (loss(e) - p) / (top - p) * dens(e), [a, b])
        else:
            total += mp.quad(lambda e, p=p, top=top: (top - loss(e)) / (top - p) * dens(e), [a, b])
    return total


def kept_moments(m, direction: str, low, high):
    """``(mass, mean A/B loss)`` of the numerator's finite outcomes with A/B loss in
    ``[low, high]`` (mpf), the atom included."""
    mu, q, lo, hi, z, wa, ws, atom, atom_loss = law_of(m, direction)
    loss, y_of, dens = _loss(mu, q), _y_of(mu, q), _density(mu, z, wa, ws)
    a, b = max(lo, y_of(low)), min(hi, y_of(high))
    points = _pieces(a, b)
    mass = mp.quad(dens, points)
    first = mp.quad(lambda y: loss(y) * dens(y), points)
    if atom > 0 and low <= atom_loss <= high:
        mass, first = mass + atom, first + atom * atom_loss
    return mass, first / mass


def finite_mass(m, direction: str):
    """The numerator's A-mass of finite losses (all of the overlap and the atom)."""
    mu, _q, lo, hi, z, wa, ws, atom, _ = law_of(m, direction)
    return mp.quad(_density(mu, z, wa, ws), _pieces(lo, hi)) + atom


def laplace_law(m) -> tuple:
    """``(c, top, atoms)`` of the (truncated) Laplace mechanism's A/B loss: A-density
    ``c e^(L/2)`` on ``[-top, top]``, point masses ``[(loss, A-mass)]``; from the densities
    ``e^(-|x|/b) / (2bZ)`` on ``[-r, r]`` and the loss ``(|x - s| - |x|)/b`` where both live."""
    mp.mp.dps = DIGITS
    b, s = mp.mpf(m.scale), mp.mpf(m.sensitivity)
    r = mp.mpf(getattr(m, "bound", mp.inf))
    z = 1 - mp.exp(-r / b) if mp.isfinite(r) else mp.mpf(1)
    t = s / b
    top = min(s, 2 * r - s) / b
    # x in (0, s) (within the overlap [s - r, r]) has L = (s - 2x)/b, dx = b dL / 2
    c = mp.exp(-t / 2) / (4 * z)
    atoms = []
    if s < r:
        side = (1 - mp.exp(-(r - s) / b)) / (2 * z) if mp.isfinite(r) else mp.mpf(1) / 2
        atoms = [(t, side), (-t, side * mp.exp(-t))]
    return c, top, atoms


def laplace_split_mass(m, below, point, above):
    """The mass the split gives ``point`` from its neighbours ``below`` and ``above`` (the
    split is exact at these floats); atoms by the hat of the same points."""
    c, top, atoms = laplace_law(m)
    below, point, above = (mp.mpf(float(v)) for v in (below, point, above))
    total = mp.mpf(0)
    for a, b, share in (
        (below, point, lambda v: (v - below) / (point - below)),
        (point, above, lambda v: (above - v) / (above - point)),
    ):
        lo, hi = max(a, -top), min(b, top)
        if hi > lo:
            total += mp.quad(lambda v, share=share: share(v) * c * mp.exp(v / 2), [lo, hi])
        for loss, mass in atoms:
            if a < loss < b or loss == point:
                total += mass * (share(loss) if loss != point else 1) / (2 if loss == point else 1)
    return total


def laplace_moments(m):
    """``(finite A-mass, mean A/B loss)``."""
    c, top, atoms = laplace_law(m)
    mass = mp.quad(lambda v: c * mp.exp(v / 2), [-top, top]) + sum(a for _, a in atoms)
    first = mp.quad(lambda v: v * c * mp.exp(v / 2), [-top, top])
    first += sum(loss * a for loss, a in atoms)
    return mass, first / mass
