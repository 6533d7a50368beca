"""The subsampled truncated Gaussian as a PrivacyBuckets release: bucket masses under both
sides from normal CDFs, no noise grid (SPEC section 2).

Losses are handled in the A/B scale ``L = L_{A/B}`` (a B/A bucket ``(E1, E2]`` is the A/B
interval ``[-E2, -E1)``). Between its ends the continuous part has ``l = h(L)`` rising with
``L`` (:mod:`accountant.numerics.subsampled_loss`); under the noise ``A`` the coordinate
``y = l/mu - mu/2`` is standard normal, under the shifted noise ``y = l/mu + mu/2``, each
restricted to the overlap (``l`` in ``[-l*, l*]``) and divided by ``Z`` when renormalised.
The numerator of A/B is ``A``, its denominator ``(1 - q) A + q S``; B/A the other way round.
Besides the continuous part there are:

* the atom at ``L_max = -ln(1 - q)`` (A-mass ``m0``, B-mass ``(1 - q) m0``), none for no cut;
* the *unresolved top*: ``l`` beyond ``RESOLVED_ELL = 25`` (if the cut reaches it), whose
  losses lie within ``q e^-25`` of ``L_max``, where ``h`` loses ``e^l u`` of precision. Its
  masses (normal tails, well conditioned) go to the atom's bucket; if its loss range meets
  other buckets, each of them counts its whole mass as absolute error.

Each bucket's masses carry the bounds of :mod:`~accountant.mechanisms.subsampled_gaussian_masses`;
one relative error (:func:`~accountant.buckets.analytic_lattice.split_errors`), the rest
absolute. From many releases on the engine splits the release onto a lattice instead, with
its merged counterpart (:meth:`SubsampledGaussianRelease.lattice`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs
import numpy as np

from accountant.buckets.analytic_lattice import lattice_release, split_errors
from accountant.buckets.analytic_release import LOST_SLACK, MIN_TAIL, SNAP
from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.sources import LossStatistics
from accountant.buckets.tails import TailMoments, estimated_log_mgf
from accountant.mechanisms.subsampled_gaussian import (
    LOG_NORMALISER_ERROR,
    SubsampledTruncatedGaussian,
)
from accountant.mechanisms.subsampled_gaussian_masses import (
    U,
    clipped_masses,
    edge_ell,
    interior_pair,
    subsampled_law,
)
from accountant.numerics.floats import TINY
from accountant.numerics.gaussian import normal_mass_between
from accountant.numerics.lazy import special
from accountant.numerics.norms import euclidean_norm
from accountant.numerics.quadrature import gauss_legendre
from accountant.numerics.subsampled_loss import loss_f
from accountant.validation import check_one_direction

__all__ = ["SubsampledGaussianRelease"]

RESOLVED_ELL = 25.0
#: Buckets per run of the vectorised mass computation.
CHUNK = 1 << 15
_GL_NODES, _GL_WEIGHTS = gauss_legendre(24)


class SubsampledGaussianRelease:
    """One release of a
    :class:`~accountant.mechanisms.subsampled_gaussian.SubsampledTruncatedGaussian`."""

    #: its losses have a smooth law (plus the clamped cut's atoms): from two releases on the
    #: engine splits them onto a lattice (``engine.SMOOTH_ROUNDING_RELEASES``)
    smooth_losses = True

    def __init__(self, mechanism: SubsampledTruncatedGaussian):
        self.mechanism = mechanism
        self.description = mechanism.description
        g = self._g = mechanism.geometry
        self._stats: dict[tuple[str, float], LossStatistics] = {}
        self._lattice_moments: dict = {}  # tail moments of lattice(), kept between passes
        self._nodes: dict = {}  # (direction, coarse) -> quadrature nodes of its losses
        self._estimated: dict = {}  # direction -> estimated_log_mgf
        mu, k = g.mu, g.cut
        self._offsets = (-0.5 * mu, 0.5 * mu)  # y = l/mu + offset: side A, shifted side S
        self._support = ((-k, mu - k), (k - mu, k))  # (low ends), (high ends), per side
        self._d_support = 4.0 * U * (mu + k) if math.isfinite(k) else 0.0
        # h is the identity for q = 1: nothing is unresolved
        ceiling = RESOLVED_ELL if g.q < 1.0 else math.inf
        self._ell_top = min(g.ell_star, ceiling)
        self._top = tuple(  # the high ends of the resolved part, per side
            hi if g.ell_star <= ceiling else ceiling / mu + off
            for hi, off in zip(self._support[1], self._offsets, strict=True)
        )
        scale = 16.0 * U * (mu * mu + (mu * k if math.isfinite(k) else 0.0))
        self._l_top = -float(loss_f(self._ell_top, g.q))  # inf for q = 1 and no cut
        self._e_top = 0.0
        if math.isfinite(self._l_top):
            self._e_top = scale + 16.0 * U * (abs(self._ell_top) + abs(self._l_top) + 1.0)
        self._l_bot = -float(loss_f(-g.ell_star, g.q)) if math.isfinite(k) else -math.inf
        self._e_bot = scale + 8.0 * U * (abs(self._l_bot) + 1.0) if math.isfinite(k) else 0.0
        # the unresolved top: l in [ell_top, ell_star], per side (A, S)
        self._lump = [
            normal_mass_between(top, hi) if g.ell_star > ceiling else 0.0
            for top, hi in zip(self._top, self._support[1], strict=True)
        ]
        self._lump_hi = g.atom_loss if g.q < 1.0 else g.ell_star
        self._atom = math.exp(g.log_atom) if g.q < 1.0 else 0.0
        self._norm = math.exp(-g.log_norm)

    def same_directions(self) -> bool:
        """``False``: A/B and B/A differ (the pair is not symmetric)."""
        return False

    def _weights(self, direction: str) -> tuple[tuple[float, float], tuple[float, float]]:
        """Numerator and denominator weights of the sides (A, S) in ``direction``."""
        q = self._g.q
        if direction == "A/B":
            return (1.0, 0.0), (1.0 - q, q)
        return (1.0 - q, q), (1.0, 0.0)

    # -- masses of A/B loss ranges (scalars, for statistics and cut tails) ----------------

    def _side_between(self, side: int, ell_lo: float, ell_hi: float) -> float:
        """Mass of ``l`` in ``[ell_lo, ell_hi]`` of the resolved part under ``side``."""
        off, mu = self._offsets[side], self._g.mu
        lo = max(self._support[0][side], ell_lo / mu + off)
        hi = min(self._top[side], ell_hi / mu + off)
        return normal_mass_between(lo, hi)

    def _mass_ab(self, low: float, high: float, weights, slack: float = 0.0) -> float:
        """Weighted mass of the A/B losses in ``[low, high]`` (normalised); with ``slack``
        (a bound on the error of the two loss edges) an upper bound: the ``l`` range is
        widened by the error bounds of :func:`edge_ell`."""
        g = self._g
        ends = np.array([low, high])
        ell, d = edge_ell(ends, np.full(2, slack), g.q)
        if slack > 0.0:
            with np.errstate(invalid="ignore"):
                ell = np.where(np.isfinite(ell), ell + np.array([-1.0, 1.0]) * d, ell)
        lump_in = high >= self._l_top - self._e_top - slack and low <= self._lump_hi + slack
        total = 0.0
        for side in (0, 1):
            if weights[side] > 0.0:
                part = self._side_between(side, float(ell[0]), float(ell[1]))
                total += weights[side] * (part + (self._lump[side] if lump_in else 0.0))
        total *= self._norm
        if self._atom > 0.0 and low - slack <= g.atom_loss <= high + slack:
            total += self._atom * weights[0]
        return total

    def _num_mass(self, direction: str, low: float, high: float, slack: float = 0.0) -> float:
        """Numerator mass of the ``direction`` losses in ``[low, high]``."""
        num = self._weights(direction)[0]
        if direction == "A/B":
            return self._mass_ab(low, high, num, slack)
        return self._mass_ab(-high, -low, num, slack)

    # -- statistics -----------------------------------------------------------------------

    def _loss_nodes(self, direction: str, coarse: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(weights, losses)``: the direction's finite numerator mass as quadrature nodes
        (24-point Gauss-Legendre on pieces of 1/4 over ``y``; ``coarse``: 8 points on pieces
        of 1/2, for estimates) plus the atom."""
        key = (direction, coarse)
        if key not in self._nodes:
            g = self._g
            num = self._weights(direction)[0]
            lo = max(-g.cut, -40.0 - g.mu)
            hi = min(g.cut - g.mu, 40.0)
            nodes, node_weights = gauss_legendre(8) if coarse else (_GL_NODES, _GL_WEIGHTS)
            pieces = max(1, math.ceil((hi - lo) / (0.5 if coarse else 0.25)))
            step = (hi - lo) / pieces
            y = (lo + step * np.arange(pieces)[:, None] + step * (nodes + 1.0) / 2.0).ravel()
            w = np.tile(0.5 * step * node_weights, pieces)
            density = num[0] * np.exp(-0.5 * y * y) + num[1] * np.exp(-0.5 * (y + g.mu) ** 2)
            weights = w * density / math.sqrt(2.0 * math.pi) * self._norm
            loss = -loss_f(g.mu * y + 0.5 * g.mu * g.mu, g.q)
            if direction == "B/A":
                loss = -loss
            if self._atom > 0.0:
                weights = np.append(weights, self._atom * num[0])
                loss = np.append(loss, g.atom_loss if direction == "A/B" else -g.atom_loss)
            self._nodes[key] = (weights, loss)
        return self._nodes[key]

    def _moments(self, direction: str) -> tuple[float, float]:
        """Mean and variance of the direction loss under the normalised finite numerator
        (:meth:`_loss_nodes`)."""
        weights, loss = self._loss_nodes(direction)
        total = float(np.sum(weights))
        mean = float(np.dot(weights, loss)) / total
        return mean, float(np.dot(weights, (loss - mean) ** 2)) / total

    def estimated_log_mgf(self, direction: str) -> np.ndarray:
        """``ln E_A[e^{lambda L}]`` over the finite losses of ``direction`` on
        :data:`~accountant.buckets.tails.LAMBDA_GRID`, by the coarse quadrature of
        :meth:`_loss_nodes`: an estimate (not a certified bound) for choosing widths
        before any release is rendered (:meth:`PrivacyBuckets._aim_start
        <accountant.buckets.engine.PrivacyBuckets._aim_start>`)."""
        check_one_direction("direction", direction)
        if direction not in self._estimated:
            weights, loss = self._loss_nodes(direction, coarse=True)
            keep = weights > 0.0
            self._estimated[direction] = estimated_log_mgf(weights[keep], loss[keep])
        return self._estimated[direction]

    def _ell_cuts(self, direction: str, tail: float) -> tuple[float, float]:
        """``l`` below and above which the numerator has at most ``tail / 2`` each (the atom
        at the top counted; ``inf`` when it alone exceeds that), from normal quantiles:
        each side with weight ``w`` cut at ``tail / (4 w)``."""
        g = self._g
        num = self._weights(direction)[0]
        log_norm = g.log_norm
        low, high = math.inf, -math.inf
        for side in (0, 1):
            if num[side] == 0.0:
                continue
            off, lo, hi = self._offsets[side], self._support[0][side], self._support[1][side]
            share = math.log(tail / (4.0 * num[side])) + log_norm
            below = min(
                float(np.logaddexp(share, special.log_ndtr(lo))), float(special.log_ndtr(hi))
            )
            above = min(
                float(np.logaddexp(share, special.log_ndtr(-hi))), float(special.log_ndtr(-lo))
            )
            low = min(low, g.mu * (float(special.ndtri_exp(below)) - off))
            high = max(high, g.mu * (-float(special.ndtri_exp(above)) - off))
        if self._atom * num[0] > 0.25 * tail:
            high = math.inf
        return low, high

    def _quantiles(self, direction: str, tail_mass: float) -> tuple[float, float]:
        """The loss range of :meth:`statistics`: :meth:`_ell_cuts` mapped to losses, snapped to
        the ends of a bounded range when that keeps all but ``SNAP`` of it."""
        g = self._g
        low, high = self._ell_cuts(direction, max(tail_mass, MIN_TAIL))
        star = g.ell_star
        if math.isfinite(star):
            low = -star if low + star <= 2.0 * SNAP * star else low
            high = math.inf if star - high <= 2.0 * SNAP * star else high
        low = max(low, -star)
        bottom = -float(loss_f(low, g.q))
        whole = g.atom_loss if g.q < 1.0 else star  # everything kept up to the top
        top = whole if high >= star else -float(loss_f(high, g.q))
        bottom, top = min(bottom, top), max(bottom, top)
        return (bottom, top) if direction == "A/B" else (-top, -bottom)

    def statistics(self, direction: str, tail_mass: float) -> LossStatistics:
        """Mean and variance of the loss (quadrature), the tail-cut range, anchor 0, no
        lattice."""
        check_one_direction("direction", direction)
        key = (direction, float(tail_mass))
        if key not in self._stats:
            mean, variance = self._moments(direction)
            low, high = self._quantiles(direction, float(tail_mass))
            self._stats[key] = LossStatistics(mean, variance, low, high, 0.0, None)
        return self._stats[key]

    # -- buckets --------------------------------------------------------------------------

    def _continuous(self, edges: np.ndarray, d_edges: np.ndarray, width: float):
        """Per side (A, S): masses and error bounds of the resolved continuous part of the
        A/B loss buckets ``[edges[i], edges[i + 1]]`` (ascending)."""
        g = self._g
        q, mu = g.q, g.mu
        ell, d_ell = edge_ell(edges, d_edges, q)
        p, dp, ql, dq = edges[:-1], d_edges[:-1], edges[1:], d_edges[1:]
        ell_lo, ell_hi, d_lo, d_hi = ell[:-1], ell[1:], d_ell[:-1], d_ell[1:]
        interior = (p - dp > self._l_bot + self._e_bot) & (ql + dq < self._l_top - self._e_top)
        empty = (ql + dq < self._l_bot - self._e_bot) | (p - dp > self._l_top + self._e_top)
        clipped = np.flatnonzero(~interior & ~empty)
        with np.errstate(invalid="ignore", over="ignore"):
            if q == 1.0:
                span, eps = np.full(p.size, width), np.zeros(p.size)
            else:
                log_w = math.log(-math.expm1(-width))
                span = np.logaddexp(0.0, ell_hi - p + (log_w - math.log(q)))
                eps = (
                    d_hi
                    + dp
                    + 4.0 * U * (np.abs(ell_hi) + np.abs(p) + (abs(log_w) + abs(math.log(q)) + 2.0))
                )
            pair = interior_pair(mu, ell_lo, d_lo, span, eps)
        # ends of the clipped buckets, in l (exact support ends where surely beyond them)
        below = p[clipped] + dp[clipped] < self._l_bot - self._e_bot
        above = ql[clipped] - dq[clipped] > self._l_top + self._e_top
        results = []
        for side in (0, 1):
            mass, rel = pair[side], pair[2]
            with np.errstate(invalid="ignore", over="ignore"):
                error = np.where(interior, rel * mass, 0.0)
            mass = np.where(interior, mass, 0.0)
            if clipped.size:
                lo_y, lo_d = self._clip_end(side, ell_lo[clipped], d_lo[clipped], below, False)
                hi_y, hi_d = self._clip_end(side, ell_hi[clipped], d_hi[clipped], above, True)
                mass[clipped], error[clipped] = clipped_masses(lo_y, lo_d, hi_y, hi_d)
            results.append((mass, error))
        return results

    def _continuous_chunked(self, edges: np.ndarray, d_edges: np.ndarray, width: float):
        """:meth:`_continuous` on runs of :data:`CHUNK` buckets (each bucket is computed on
        its own; runs that fit in the cache make the dozens of array passes cheap)."""
        count = edges.size - 1
        if count <= CHUNK:
            return self._continuous(edges, d_edges, width)
        out = [(np.empty(count), np.empty(count)) for _ in (0, 1)]
        for start in range(0, count, CHUNK):
            stop = min(count, start + CHUNK)
            part = self._continuous(edges[start : stop + 1], d_edges[start : stop + 1], width)
            for side in (0, 1):
                out[side][0][start:stop], out[side][1][start:stop] = part[side]
        return out

    def _clip_end(self, side: int, ell: np.ndarray, d: np.ndarray, beyond, upper: bool):
        """``y`` and its error of one end of clipped buckets, limited to the resolved part."""
        off, mu = self._offsets[side], self._g.mu
        limit = self._top[side] if upper else self._support[0][side]
        with np.errstate(invalid="ignore"):
            y = ell / mu + off
            dy = np.where(
                np.isfinite(ell), d / mu + 4.0 * U * (np.abs(ell) / mu + abs(off)), math.inf
            )
        y = np.minimum(y, limit) if upper else np.maximum(y, limit)
        y = np.where(beyond, limit, y)
        at_limit = beyond | (y == limit)
        dy = np.where(at_limit, np.maximum(self._d_support, np.where(beyond, 0.0, dy)), dy)
        return y, dy

    def bucket(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """Buckets ``J`` holding the losses in ``(anchor + (J-1) width, anchor + J width]``
        over the range of :meth:`statistics`; the numerator mass beyond goes to ``lost_a``."""
        stats = self.statistics(direction, tail_mass)
        first = math.ceil((Fraction(stats.low) - Fraction(anchor)) / Fraction(width))
        last = max(first, math.ceil((Fraction(stats.high) - Fraction(anchor)) / Fraction(width)))
        if last - first + 1 > max_buckets:
            raise BucketBudgetError(last - first + 1)
        edges = anchor + np.arange(first - 1, last + 1, dtype=np.float64) * width
        d_edges = 4.0 * U * (abs(anchor) + np.abs(edges) + width)
        flip = direction == "B/A"
        ab_edges, ab_d = (-edges[::-1], d_edges[::-1]) if flip else (edges, d_edges)
        sides = self._continuous_chunked(ab_edges, ab_d, width)
        masses, errors = [], []
        for weights in self._weights(direction):
            mass = (weights[0] * sides[0][0] + weights[1] * sides[1][0]) * self._norm
            error = (weights[0] * sides[0][1] + weights[1] * sides[1][1]) * self._norm
            error += mass * (LOG_NORMALISER_ERROR + 8.0 * U)
            masses.append(mass[::-1].copy() if flip else mass)
            errors.append(error[::-1].copy() if flip else error)
        lost = self._place_top(direction, edges, d_edges, width, anchor, first, masses, errors)
        low_edge, high_edge = float(edges[0]), float(edges[-1])
        slack = 4.0 * U * (abs(anchor) + max(abs(low_edge), abs(high_edge)) + width)
        for low, high in ((-math.inf, low_edge), (high_edge, math.inf)):
            tail = self._num_mass(direction, low, high, slack)
            lost += tail * (1.0 + LOST_SLACK) + TINY
        return self._assemble(direction, width, anchor, first, masses, errors, lost)

    def lattice(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """The release rounded onto the lattice ``anchor + J width`` over the range of
        :meth:`statistics`, by the dominating split with its merged counterpart
        (:mod:`accountant.buckets.analytic_lattice`)."""
        stats = self.statistics(direction, tail_mass)
        part, atoms = subsampled_law(self.mechanism, self._weights(direction)[0])
        logs = self.mechanism.mass_logs(direction)
        return lattice_release(
            part, atoms, direction, width, anchor, stats, logs, max_buckets, self._lattice_moments
        )

    def _place_top(self, direction, edges, d_edges, width, anchor, first, masses, errors):
        """Add the atom and the unresolved top to the bucket of the atom's loss; returns the
        numerator mass of both that falls outside the buckets."""
        g = self._g
        lump = [
            self._norm * (w[0] * self._lump[0] + w[1] * self._lump[1])
            for w in self._weights(direction)
        ]
        if g.q < 1.0:
            atom = [self._atom, (1.0 - g.q) * self._atom]
            atom = atom if direction == "A/B" else atom[::-1]
            loss = g.atom_loss if direction == "A/B" else -g.atom_loss
        else:  # the atom is distinguishing; the top sits at l*
            atom, loss = [0.0, 0.0], (1.0 if direction == "A/B" else -1.0) * self._l_top
        if atom[0] + lump[0] + atom[1] + lump[1] == 0.0:
            return 0.0
        j = math.ceil((Fraction(loss) - Fraction(anchor)) / Fraction(width)) - first
        if not 0 <= j < masses[0].size:
            return (atom[0] + lump[0]) * (1.0 + LOST_SLACK) + TINY
        for side in (0, 1):
            masses[side][j] += atom[side] + lump[side]
            errors[side][j] += 4.0 * U * (atom[side] + lump[side]) + 1e-9 * lump[side]
            errors[side][j] += g.atom_error * atom[side]
        if lump[0] + lump[1] > 0.0:  # buckets the lump's loss range meets: its mass as error
            lo, hi = sorted((self._l_top, g.atom_loss if g.q < 1.0 else self._l_top))
            lo, hi = (lo, hi) if direction == "A/B" else (-hi, -lo)
            lo, hi = lo - self._e_top, hi + self._e_top
            meets = np.flatnonzero(
                (edges[1:] + d_edges[1:] >= lo) & (edges[:-1] - d_edges[:-1] <= hi)
            )
            if meets.size > 1:
                for side in (0, 1):
                    errors[side][meets] += lump[side]
        return 0.0

    def _assemble(self, direction, width, anchor, first, masses, errors, lost) -> BucketedPLD:
        """Splits each bucket's error bound ``E`` into the relative error ``rho`` shared by all
        and an absolute rest ``max(0, E - rho (m - E))`` (see :func:`split_errors`)."""
        relative = split_errors(masses, errors)
        absolute = []
        for mass, error in zip(masses, errors, strict=True):
            excess = np.maximum(error - relative * np.maximum(mass - error, 0.0), 0.0)
            absolute.append(excess + np.where(mass < TINY, TINY, 0.0))
        pad = 4.0 * U * (abs(anchor) + width)
        bucketed = BucketedPLD(
            width=width,
            first_index=first,
            mass_a=masses[0],
            mass_b=masses[1],
            offset_low=anchor - width - pad,
            offset_high=anchor + pad,
            mass_logs=self.mechanism.mass_logs(direction),
            lost_a=lost,
            relative_error=relative + 2.0 * U,
            error_a=1.01 * float(euclidean_norm(absolute[0])),
            error_b=1.01 * float(euclidean_norm(absolute[1])),
        )
        return attrs.evolve(bucketed, tail_moments=((TailMoments.of(bucketed), 1),))
