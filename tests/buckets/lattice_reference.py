"""Slow references for analytic releases rounded onto a lattice, in mpmath at 30 digits.

They follow the definitions, not the library's formulas: the numerator density of the
standard-normal coordinate ``y`` (``y = -x/sigma``), the A/B loss of an outcome
(``mu y + mu^2/2`` for the Gaussian mechanism, ``-ln(1 - q + q e^-(mu y + mu^2/2))`` for the
subsampled Gaussian), the atom at ``-ln(1 - q)``; and the dominating ("connect-the-dots")
split of ``accountant.buckets.analytic_lattice``: an outcome with loss ``L`` (in the release's
own scale: ``-L`` for the B/A release of the subsampled Gaussian) between two points
``P <= L <= Q`` gives ``Q`` the share ``(1 - e^-(L - P)) / (1 - e^-(Q - P))`` of its mass
and ``P`` the rest, ``e^-(L - P) (1 - e^-(Q - L)) / (1 - e^-(Q - P))``, so that its A-mass
and its B-mass ``e^-L`` are kept (atoms alike).
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


def release_sign(m, direction: str) -> int:
    """``-1`` when the release's loss is minus the A/B loss (the subsampled Gaussian's B/A,
    whose numerator is ``B``), else ``1``."""
    subsampled = isinstance(m, mechanisms.SubsampledTruncatedGaussian)
    return -1 if subsampled and direction == "B/A" else 1


def upper_share(loss, low, high):
    """The share of the upper point ``high`` of an outcome with (release) loss ``loss`` in
    ``[low, high]`` under the dominating split (mpf)."""
    return -mp.expm1(-(loss - low)) / -mp.expm1(-(high - low))


def lower_share(loss, low, high):
    """The share of the lower point ``low`` (``1 - upper_share``, without cancellation)."""
    return mp.exp(-(loss - low)) * -mp.expm1(-(high - loss)) / -mp.expm1(-(high - low))


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
    """The numerator mass the dominating split gives the lattice point ``point`` (mpf, in
    the A/B scale) from its neighbours ``point -+ width``, in the release's own scale."""
    mu, q, lo, hi, z, wa, ws, atom, atom_loss = law_of(m, direction)
    loss, y_of, dens = _loss(mu, q), _y_of(mu, q), _density(mu, z, wa, ws)
    sign = release_sign(m, direction)
    g, w = sign * point, mp.mpf(width)
    total = mp.mpf(0)
    for a, b, share in (
        (g - w, g, lambda v: upper_share(v, g - w, g)),
        (g, g + w, lambda v: lower_share(v, g, g + w)),
    ):
        ab_lo, ab_hi = min(sign * a, sign * b), max(sign * a, sign * b)
        ya, yb = max(y_of(ab_lo), lo), min(y_of(ab_hi), hi)
        if yb > ya:
            total += mp.quad(lambda y, share=share: share(sign * loss(y)) * dens(y), [ya, yb])
    at = sign * atom_loss
    if atom > 0 and g - w < at < g + w:
        total += atom * (upper_share(at, g - w, g) if at < g else lower_share(at, g, g + w))
    return total


def kernel_mass(m, direction: str, index: int, ends, c_low, c_high):
    """The exact mass at A/B position ``index`` of the split actually computed: interval
    ``[x_K, x_{K+1}]`` (float ends ``ends``) split between ``P = L(x_K) - c_low[K]`` and
    ``Q = L(x_{K+1}) + c_high[K + 1]`` (``accountant.buckets.analytic_lattice``), by the
    dominating split in the release's own scale (``-Q <= -L <= -P`` when it is ``-L``)."""
    mu, q, _, _, z, wa, ws, _, _ = law_of(m, direction)
    sign = release_sign(m, direction)

    def loss(ell):
        return ell if q == 1 else -mp.log(1 - q + q * mp.exp(-ell))

    def dens(ell):
        return (wa * mp.npdf(ell / mu - mu / 2) + ws * mp.npdf(ell / mu + mu / 2)) / (z * mu)

    def share(v, p, top, upper):
        if sign > 0:
            return upper_share(v, p, top) if upper else lower_share(v, p, top)
        # in the scale -L the lower point is -top: Q's share is the lower point's there
        return lower_share(-v, -top, -p) if upper else upper_share(-v, -top, -p)

    total = mp.mpf(0)
    for k, upper in ((index - 1, True), (index, False)):
        if k < 0 or k + 1 >= len(ends) or not ends[k + 1] > ends[k]:
            continue
        a, b = mp.mpf(float(ends[k])), mp.mpf(float(ends[k + 1]))
        p = loss(a) - mp.mpf(float(c_low[k]))
        top = loss(b) + mp.mpf(float(c_high[k + 1]))
        total += mp.quad(
            lambda e, p=p, top=top, upper=upper: share(loss(e), p, top, upper) * dens(e), [a, b]
        )
    return total


def kept_masses(m, direction: str, low, high):
    """``(A-mass, B-mass)`` of the numerator's finite outcomes with A/B loss in
    ``[low, high]`` (mpf), the atom included: the B-mass weighs each outcome by ``e^-L`` of
    its loss ``L`` in the release's own scale."""
    mu, q, lo, hi, z, wa, ws, atom, atom_loss = law_of(m, direction)
    loss, y_of, dens = _loss(mu, q), _y_of(mu, q), _density(mu, z, wa, ws)
    sign = release_sign(m, direction)
    a, b = max(lo, y_of(low)), min(hi, y_of(high))
    points = _pieces(a, b)
    mass = mp.quad(dens, points)
    b_mass = mp.quad(lambda y: mp.exp(-sign * loss(y)) * dens(y), points)
    if atom > 0 and low <= atom_loss <= high:
        mass, b_mass = mass + atom, b_mass + atom * mp.exp(-sign * atom_loss)
    return mass, b_mass


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
    """The mass the dominating split gives ``point`` from its neighbours ``below`` and
    ``above`` (the split is exact at these floats), atoms included."""
    c, top, atom_list = laplace_law(m)
    below, point, above = (mp.mpf(float(v)) for v in (below, point, above))
    total = mp.mpf(0)
    for a, b, share in (
        (below, point, lambda v: upper_share(v, below, point)),
        (point, above, lambda v: lower_share(v, point, above)),
    ):
        lo, hi = max(a, -top), min(b, top)
        if hi > lo:
            total += mp.quad(lambda v, share=share: share(v) * c * mp.exp(v / 2), [lo, hi])
        for loss, mass in atom_list:
            if a < loss < b:
                total += mass * share(loss)
            elif loss == point:
                total += mass / 2
    return total


def laplace_masses(m):
    """``(finite A-mass, finite B-mass)``: the B-mass weighs each loss ``L`` by ``e^-L``."""
    c, top, atoms = laplace_law(m)
    mass = mp.quad(lambda v: c * mp.exp(v / 2), [-top, top]) + sum(a for _, a in atoms)
    b_mass = mp.quad(lambda v: c * mp.exp(-v / 2), [-top, top])
    b_mass += sum(a * mp.exp(-loss) for loss, a in atoms)
    return mass, b_mass
