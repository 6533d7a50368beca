"""Releasing ``answer + noise`` with exactly the audited law.

:func:`release` puts the answer on the noise grid (:mod:`accountant.release.grid`),
quantises the noise to integer weights (:func:`~accountant.noise.quantised.quantise`)
and draws grid indices exactly (:mod:`accountant.noise.sampling`); the output is
``(k + j) step`` with ``k`` the answer's and ``j`` the noise's integer position. The law
of ``j`` is the quantised pmf, which :attr:`Release.pair` hands to the accountants: what
is released is what is audited.

Each coordinate of an array answer gets its own noise: ``d`` coordinates are ``d``
releases of the one-dimensional pair (:attr:`Release.releases`), composed by the
accountant (per-coordinate sensitivity; for an L2 bound ``C`` on the whole vector each
coordinate moves at most ``C``, which this composes loosely but soundly).
"""

from __future__ import annotations

import attrs
import numpy as np

from accountant.errors import InvalidInputError
from accountant.noise.distribution import NoiseDistribution
from accountant.noise.quantised import DEFAULT_BITS, QuantisedNoise, quantise
from accountant.noise.sampling import secure_indices, simulated_indices
from accountant.pairs.worst_case import WorstCasePair
from accountant.release.grid import audited_sensitivity, grid_steps, start_steps
from accountant.validation import check_positive_real, shown

__all__ = ["Release", "release"]

SECURE = "os.urandom"
SIMULATION = "numpy Generator (simulation, not a release)"


@attrs.frozen(eq=False)
class Release:
    """Released values ``values = grid_positions * step`` (exactly: one rounding of an
    integer times ``step``), with what must be audited for them: ``releases`` independent
    releases of :attr:`pair` (the quantised noise, shifted by ``sensitivity``)."""

    values: np.ndarray
    grid_positions: np.ndarray
    step: float
    noise: QuantisedNoise
    sensitivity: float
    snapped: bool
    source: str

    @property
    def releases(self) -> int:
        """The number of noisy coordinates: compose :attr:`pair` this many times."""
        return int(self.values.size)

    @property
    def pair(self) -> WorstCasePair:
        """The worst-case pair to audit: the quantised noise (exactly the sampled law)
        shifted by :attr:`sensitivity` (``ceil(s / step) step``)."""
        return WorstCasePair.additive(self.noise.noise, self.sensitivity)


def _quantised(noise: object, bits: int) -> QuantisedNoise:
    if isinstance(noise, QuantisedNoise):
        return noise
    if isinstance(noise, NoiseDistribution):
        return quantise(noise, bits)
    raise InvalidInputError(
        f"noise must be a NoiseDistribution or a QuantisedNoise, got {type(noise).__name__}"
    )


def _answers(value: object) -> np.ndarray:
    """The answers as a float64 array: numbers only (no bools, strings or objects), at
    least one, all finite."""
    refused = f"value must be a number or a non-empty array of numbers, got {shown(value)}"
    if isinstance(value, bool | str | bytes):
        raise InvalidInputError(refused)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(refused) from exc
    if array.dtype.kind not in "fiu" or array.size == 0:
        raise InvalidInputError(refused)
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        bad = float(array.reshape(-1)[np.flatnonzero(~np.isfinite(array.reshape(-1)))[0]])
        raise InvalidInputError(f"value must be finite, got {bad!r}")
    return array


def release(
    value: float | np.ndarray,
    noise: NoiseDistribution | QuantisedNoise,
    *,
    sensitivity: float,
    snap: str = "refuse",
    bits: int = DEFAULT_BITS,
    rng: np.random.Generator | None = None,
) -> Release:
    """``value + noise`` with exactly the audited law (module docstring).

    ``value``: one answer or an array (each coordinate its own release). ``noise``: a
    noise on a grid through 0 (``start`` a whole number of steps), quantised to ``bits``
    bits unless already a :class:`~accountant.noise.quantised.QuantisedNoise`.
    ``sensitivity``: how far one person can move each answer; what is audited is
    ``ceil(s / step) step`` (:func:`~accountant.release.grid.audited_sensitivity`),
    returned in :attr:`Release.sensitivity`.
    ``rng``: ``None`` draws from ``os.urandom`` (a release); a seeded
    ``numpy.random.Generator`` gives the same law for simulations only, and the result
    says so in :attr:`Release.source`.
    """
    quantised = _quantised(noise, bits)
    grid = quantised.original
    answers = _answers(value)
    step = grid.step
    start = start_steps(grid.start, step)
    sensitivity = check_positive_real("sensitivity", sensitivity)
    positions, snapped = grid_steps(answers, step, snap)
    audited = audited_sensitivity(sensitivity, step)
    if rng is None:
        indices, source = secure_indices(quantised.cumulative, quantised.bits, answers.size), SECURE
    else:
        indices = simulated_indices(quantised.cumulative, quantised.bits, answers.size, rng)
        source = SIMULATION
    positions = positions + (start + indices).reshape(answers.shape)
    values = positions.astype(np.float64) * step
    return Release(values, positions, step, quantised, audited, snapped, source)
