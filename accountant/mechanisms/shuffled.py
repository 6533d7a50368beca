"""One epoch of DP-SGD whose batches cover every example exactly once: shuffled fixed-size
batches (a random permutation cut into batches of ``b``) or balls-and-bins batches (each
example put into one of the epoch's batches uniformly and independently, Chua et al.,
"Balls-and-Bins Sampling for DP-SGD", AISTATS 2025). Each batch releases the sum of its
clipped gradients (norm at most ``C``) plus ``N(0, sigma^2 C^2 I)``.

**Batches.** ``T = ceil(n / b)`` batches per epoch (``n`` the dataset size, ``b`` the batch
size). When ``b`` does not divide ``n`` the shuffled epoch ends with one short batch of
``n - (T - 1) b`` examples (a ``DataLoader`` with ``drop_last=False``); everything below
holds with it as it stands. Balls-and-bins uses the same ``T`` (expected batch size
``n / T <= b``). The noisy *sum* is released; dividing it by a public constant (the batch
size) is post-processing, dividing by a data-dependent batch count is not covered.

**Neighbouring relations** (``neighbours``), in units of the clip ``C``:

* ``"add-remove"``: one example is present or absent. For fixed-size batches the dataset size
  fixes ``T`` and the batch sizes, so the relation taken is the *zero-out* one (Kairouz et al.,
  ICML 2021): the absent example keeps its slot in the permutation and contributes a zero
  gradient. Balls-and-bins needs no slot (its batch sizes are random anyway); the bound is the
  same. One batch's sum moves by at most ``C``.
* ``"replace-one"``: one example replaced by another; one batch's sum moves by at most ``2C``.

**Upper bound (certified).** The batch assignment is drawn independently of the data and
puts the differing example into exactly one batch ``t`` of the epoch. Given the assignment,
the epoch is an adaptive composition of ``T`` Gaussian releases of which only release ``t``
differs between the neighbours, by a shift of norm at most ``Delta`` (``C`` or ``2C``); so it
is dominated by the Gaussian pair ``(N(Delta, sigma^2 C^2), N(0, sigma^2 C^2))`` (Zhu, Dong and
Wang, AISTATS 2022, Theorem 10). The unconditional epoch is the mixture over assignments of
pairs with the same mixing weights on both sides, and the hockey-stick divergence is jointly
convex, so the Gaussian pair dominates it too. This holds for shuffling and for balls-and-bins
alike, and no amplification by the random batch is claimed. ``E`` epochs compose adaptively:
``E`` Gaussian releases, i.e. the Gaussian with ``mu = sqrt(E) Delta / (sigma C)``. This
module declares that dominating mechanism (:attr:`ShuffledEpoch.dominating_mechanism`,
:class:`~accountant.mechanisms.gaussian.GaussianMechanism`); both accountants take a
:class:`ShuffledEpoch` as that mechanism.

**Lower bound (certified, from an explicit pair of datasets).** Chua et al. (ICML 2024,
"How Private are DP-SGD Implementations?") take 1-D gradients that do not depend on the
model: every other example has gradient 0, the differing example ``+C`` (and, add-remove, 0
on the neighbour; replace-one, ``-C``). In units of ``sigma C`` (``mu = 1/sigma``) one epoch
releases ``y in R^T`` with

    P = sum_t w_t N(mu e_t, I),    Q = N(0, I)  (add-remove)   or   sum_t w_t N(-mu e_t, I),

``w_t`` the chance that the example lands in batch ``t`` (``b_t / n`` shuffled, ``1/T``
balls-and-bins: the same pair up to these weights). Any function of the output is
post-processing, so the delta of the statistic ``max_t y_t`` is at most the true delta. Its
law does not depend on the weights: by symmetry of the other coordinates,

    F_P(x) = Phi(x - mu) Phi(x)^(T-1),   F_Q(x) = Phi(x)^T   (or Phi(x + mu) Phi(x)^(T-1)).

Cutting the line at edges ``x_0 < ... < x_K`` gives a finite pair (the masses of
``(-inf, x_0], (x_0, x_1], ..., (x_K, inf)``), again post-processing; ``E`` independent epochs
give its ``E``-fold product. :func:`max_statistic_masses` encloses each mass in
``[low, high]`` (module-level error model below), and the pairs ``(P_low, Q_high)`` and
``(Q_low, P_high)`` have ``sum (A^E - e^eps B^E)^+`` at most the true ``delta_{P/Q}`` resp.
``delta_{Q/P}`` of the ``E``-fold product (each ``A`` entry smaller, each ``B`` entry larger,
products of non-negative numbers): PrivacyBuckets' certified lower bounds of those pairs are
lower bounds on the sampler's delta (:meth:`ShuffledEpoch.lower_bound_pairs`). For ``T = 1``
the statistic is the output itself and the pair is the Gaussian one up to the partition.

**Error model of the masses.** ``ln Phi(z)`` (``scipy.special.log_ndtr``) is taken to err by
at most ``e(z) = 8 u + (256 u + 16 u z^2)(|ln Phi(z)| + [z < 0])`` (``u = 2^-53``; the
normal-mass routines' ``256 u + 16 u z^2`` relative error, as
:mod:`accountant.mechanisms.subsampled_gaussian` declares, on ``Phi`` below 0 and on
``1 - Phi ~ |ln Phi|`` above; the test checks four times this margin against mpmath).
``ln F = ln Phi(x - s) + (T - 1) ln Phi(x)`` adds ``e(x - s) + (T - 1) e(x)`` and
``4 u (|ln Phi(x - s)| + T |ln Phi(x)|)`` for its own rounding; a mass
``F(b) - F(a) = e^(ln F(b)) (1 - e^(ln F(a) - ln F(b)))`` is then enclosed by moving both
exponents by their errors, with outward-rounded ``exp`` and ``expm1`` (a few ulps each).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.gaussian_dominance import GaussianDomination
from accountant.errors import InvalidInputError
from accountant.mechanisms.gaussian import GaussianMechanism
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
from accountant.numerics.directed import MassLogs
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.lazy import special
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import (
    check_choice,
    check_positive_int,
    check_positive_real,
    shown,
)

__all__ = [
    "DEFAULT_INTERVALS",
    "NEIGHBOURS",
    "SAMPLERS",
    "MaxStatisticMasses",
    "ShuffledEpoch",
    "log_phi_error",
    "max_statistic_masses",
]

#: The two neighbouring relations (module docstring).
NEIGHBOURS = ("add-remove", "replace-one")
#: The two epoch samplers: shuffled fixed-size batches and balls-and-bins batches.
SAMPLERS = ("shuffle", "balls-and-bins")
#: Intervals of the partition of the max statistic between its automatic ends.
DEFAULT_INTERVALS = 4096
#: The partition's ends: Q's CDF ``Phi(x)^T`` is about ``e^-LOW_LOG_MASS`` at the lower end;
#: the upper end lies ``HIGH_SIGMAS`` above the larger shift.
LOW_LOG_MASS = 60.0
HIGH_SIGMAS = 12.0
U = UNIT_ROUNDOFF
#: ulps moved outward after each rounded ``exp``/``expm1``/product.
OUTWARD_ULPS = 4


def _positive_sigma(value: object) -> float:
    return check_positive_real("sigma", value)


def _positive_clip(value: object) -> float:
    return check_positive_real("clip", value)


def _count_batch_size(value: object) -> int:
    return check_positive_int("batch_size", value)


def _count_dataset_size(value: object) -> int:
    return check_positive_int("dataset_size", value)


def _neighbours(instance: object, attribute: attrs.Attribute, value: object) -> None:
    check_choice("neighbours", value, NEIGHBOURS)


def _sampler(instance: object, attribute: attrs.Attribute, value: object) -> None:
    check_choice("sampler", value, SAMPLERS)


def log_phi_error(z: np.ndarray, log_phi: np.ndarray) -> np.ndarray:
    """The declared bound ``e(z) = 8 u + (256 u + 16 u z^2)(|ln Phi(z)| + [z < 0])`` on the
    absolute error of ``log_ndtr(z)`` (module docstring)."""
    below = (np.asarray(z) < 0.0).astype(np.float64)
    return 8.0 * U + (256.0 * U + 16.0 * U * z * z) * (np.abs(log_phi) + below)


def _outward(values: np.ndarray, towards: float) -> np.ndarray:
    for _ in range(OUTWARD_ULPS):
        values = np.nextafter(values, towards)
    return values


@attrs.frozen
class MaxStatisticMasses:
    """Enclosures ``p_low <= P(I_k) <= p_high`` and ``q_low <= Q(I_k) <= q_high`` of the masses
    of the intervals ``I_0 = (-inf, x_0]``, ``I_k = (x_(k-1), x_k]``, ``I_(K+1) = (x_K, inf)``
    under the laws of the max statistic (module docstring); ``edges`` are the ``x_k`` in units
    of ``sigma C``."""

    edges: np.ndarray
    p_low: np.ndarray
    p_high: np.ndarray
    q_low: np.ndarray
    q_high: np.ndarray


def _log_cdf(x: np.ndarray, shift: float, batches: int) -> tuple[np.ndarray, np.ndarray]:
    """``ln F(x) = ln Phi(x - shift) + (T - 1) ln Phi(x)`` and its error bound."""
    z = x - shift
    own, rest = special.log_ndtr(z), special.log_ndtr(x)
    value = own + (batches - 1) * rest
    error = (
        log_phi_error(z, own)
        + (batches - 1) * log_phi_error(x, rest)
        + 4.0 * U * (np.abs(own) + batches * np.abs(rest))
    )
    return value, error


def _interval_masses(x: np.ndarray, shift: float, batches: int) -> tuple[np.ndarray, np.ndarray]:
    """Enclosures of ``F(x_0), F(x_k) - F(x_(k-1)), 1 - F(x_K)`` for the CDF of
    :func:`_log_cdf` (module docstring)."""
    log_f, error = _log_cdf(x, shift, batches)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        # first interval: F(x_0)
        first = (
            _outward(np.exp(log_f[:1] - error[:1]), 0.0),
            _outward(np.exp(log_f[:1] + error[:1]), math.inf),
        )
        # last interval: 1 - F(x_K) = -expm1(ln F(x_K))
        last = (
            _outward(-np.expm1(log_f[-1:] + error[-1:]), 0.0),
            _outward(-np.expm1(log_f[-1:] - error[-1:]), math.inf),
        )
        # inner: e^(ln F(b)) (1 - e^d), d = ln F(a) - ln F(b) <= 0
        a, b = log_f[:-1], log_f[1:]
        spread = error[:-1] + error[1:] + 2.0 * U * (np.abs(a) + np.abs(b))
        d = a - b
        scale_low = _outward(np.exp(b - error[1:]), 0.0)
        scale_high = _outward(np.exp(b + error[1:]), math.inf)
        gap_low = _outward(-np.expm1(np.minimum(d + spread, 0.0)), 0.0)
        gap_high = _outward(-np.expm1(np.minimum(d - spread, 0.0)), math.inf)
        inner_low = _outward(scale_low * gap_low, 0.0)
        inner_high = _outward(scale_high * gap_high, math.inf)
    low = np.concatenate([first[0], inner_low, last[0]])
    high = np.concatenate([first[1], inner_high, last[1]])
    low = np.clip(np.nan_to_num(low, nan=0.0), 0.0, 1.0)
    high = np.clip(np.nan_to_num(high, nan=1.0), 0.0, 1.0)
    return low, np.maximum(high, low)


def max_statistic_masses(
    batches: int, shift_p: float, shift_q: float, edges: np.ndarray
) -> MaxStatisticMasses:
    """Enclosed masses of the max statistic ``max_t y_t`` of ``T = batches`` unit-variance
    outputs, one of them shifted by ``shift_p`` under ``P`` and by ``shift_q`` under ``Q``
    (``F(x) = Phi(x - shift) Phi(x)^(T-1)``), on the intervals cut at ``edges`` (increasing,
    finite, units of the noise standard deviation)."""
    batches = check_positive_int("batches", batches)
    x = np.asarray(edges, dtype=np.float64)
    if x.ndim != 1 or x.size < 1 or not np.isfinite(x).all() or np.any(np.diff(x) <= 0.0):
        raise InvalidInputError(
            f"edges must be a non-empty increasing array of finite numbers, got {shown(edges)}"
        )
    p_low, p_high = _interval_masses(x, shift_p, batches)
    q_low, q_high = _interval_masses(x, shift_q, batches)
    return MaxStatisticMasses(x, p_low, p_high, q_low, q_high)


@attrs.frozen(kw_only=True)
class ShuffledEpoch:
    """One epoch of DP-SGD with shuffled fixed-size batches (``sampler="shuffle"``) or
    balls-and-bins batches (``sampler="balls-and-bins"``): ``dataset_size`` examples, batches
    of ``batch_size`` (``T = ceil(n/b)``, the last one short when ``b`` does not divide
    ``n``), noise multiplier ``sigma``, clip ``clip``, ``neighbours`` ``"add-remove"`` (zero-out
    for fixed-size batches) or ``"replace-one"``; see the module docstring.

    Composed in :class:`~accountant.buckets.PrivacyBuckets` or
    :class:`~accountant.moments.ExtendedMA` it is its :attr:`dominating_mechanism`, the
    Gaussian with sensitivity ``clip`` (``2 clip`` replace-one): a certified upper bound,
    whose lower bound is the Gaussian's, not the sampler's. The sampler's certified bracket is
    :func:`accountant.epoch_samplers.shuffled_epochs_delta` /
    :func:`~accountant.epoch_samplers.shuffled_epochs_epsilon`.
    """

    sigma: float = attrs.field(converter=_positive_sigma)
    batch_size: int = attrs.field(converter=_count_batch_size)
    dataset_size: int = attrs.field(converter=_count_dataset_size)
    neighbours: str = attrs.field(default="add-remove", validator=_neighbours)
    sampler: str = attrs.field(default="shuffle", validator=_sampler)
    clip: float = attrs.field(default=1.0, converter=_positive_clip)

    def __attrs_post_init__(self) -> None:
        if self.batch_size > self.dataset_size:
            raise InvalidInputError(
                f"batch_size must be <= dataset_size={self.dataset_size!r}, "
                f"got batch_size={self.batch_size!r}"
            )

    @property
    def batches(self) -> int:
        """``T = ceil(n / b)`` batches per epoch."""
        return -(-self.dataset_size // self.batch_size)

    @property
    def last_batch_size(self) -> int:
        """Size of the shuffled epoch's last batch: ``n - (T - 1) b`` (``b`` when ``b``
        divides ``n``)."""
        return self.dataset_size - (self.batches - 1) * self.batch_size

    @property
    def sensitivity(self) -> float:
        """The shift of the one differing batch sum in units of ``clip``: 1 (add-remove) or
        2 (replace-one)."""
        return 1.0 if self.neighbours == "add-remove" else 2.0

    @property
    def dominating_mechanism(self) -> GaussianMechanism:
        """The Gaussian mechanism dominating one epoch (module docstring): noise multiplier
        ``sigma`` on sensitivity 1 or 2 (units of the clip, which changes no privacy value)."""
        return GaussianMechanism(sigma=self.sigma, sensitivity=self.sensitivity)

    @property
    def gaussian_domination(self) -> GaussianDomination:
        """The pair accountants compose for one epoch, :attr:`dominating_mechanism`'s, in
        closed form (:mod:`~accountant.buckets.gaussian_dominance`)."""
        return self.dominating_mechanism.gaussian_domination

    @property
    def poisson_twin(self) -> SubsampledTruncatedGaussian:
        """What a Poisson accountant composes for the same run, ``T`` times per epoch: the
        subsampled Gaussian at rate ``b / n``, no cut (add-remove, as Poisson accountants
        state it)."""
        return SubsampledTruncatedGaussian(
            sigma=self.sigma,
            sampling_rate=self.batch_size / self.dataset_size,
            cut=math.inf,
            clip=self.clip,
        )

    @property
    def description(self) -> str:
        """E.g. ``shuffled epoch (sigma=1.1, b=256, n=60000, T=235), add-remove, clip 1``."""
        name = "shuffled epoch" if self.sampler == "shuffle" else "balls-and-bins epoch"
        return (
            f"{name} (sigma={self.sigma:g}, b={self.batch_size}, n={self.dataset_size}, "
            f"T={self.batches}), {self.neighbours}, clip {self.clip:g}"
        )

    # -- the lower bound -------------------------------------------------------------

    def partition(self, intervals: int = DEFAULT_INTERVALS) -> np.ndarray:
        """The ``intervals + 1`` equidistant edges of the default partition of the max
        statistic (units of ``sigma clip``): from where ``Phi(x)^T`` is about
        ``e^-60`` (and 12 below the lower shift) to 12 above the larger shift. Doubling
        ``intervals`` refines it (the old edges are kept)."""
        intervals = check_positive_int("intervals", intervals)
        mu = 1.0 / self.sigma
        low_shift = -mu if self.neighbours == "replace-one" else 0.0
        low = min(float(special.ndtri(math.exp(-LOW_LOG_MASS / self.batches))), -HIGH_SIGMAS)
        return np.linspace(low + low_shift, mu + HIGH_SIGMAS, intervals + 1)

    def max_statistic_masses(self, intervals: int = DEFAULT_INTERVALS) -> MaxStatisticMasses:
        """The enclosed interval masses of the max statistic under the explicit pair (module
        docstring) on :meth:`partition`."""
        mu = 1.0 / self.sigma
        shift_q = -mu if self.neighbours == "replace-one" else 0.0
        return max_statistic_masses(self.batches, mu, shift_q, self.partition(intervals))

    def lower_bound_pairs(
        self, intervals: int = DEFAULT_INTERVALS
    ) -> tuple[WorstCasePair, WorstCasePair]:
        """``(P_low, Q_high)`` and ``(Q_low, P_high)``: finite pairs whose A/B deltas, composed
        ``E`` times, are at most the sampler's ``delta_{P/Q}`` and ``delta_{Q/P}`` over ``E``
        epochs (module docstring). Their totals are within ``1e-6`` of 1 (refused otherwise)
        and are accounted as given."""
        m = self.max_statistic_masses(intervals)
        tolerance = max(
            1e-9,
            *(abs(math.fsum(v.tolist()) - 1.0) for v in (m.p_low, m.p_high, m.q_low, m.q_high)),
        )
        if tolerance > 1e-6:  # pragma: no cover - the error model gives ~1e-12
            raise InvalidInputError(
                f"the max statistic's masses are not resolved (total off by {tolerance!r}); "
                f"sigma={self.sigma!r} is outside the range this bound covers"
            )
        name = f"max statistic of {self.description} on {m.edges.size + 1} intervals"
        forward = WorstCasePair(
            m.p_low, m.q_high, description=f"{name}, P/Q", mass_tolerance=2.0 * tolerance
        )
        backward = WorstCasePair(
            m.q_low, m.p_high, description=f"{name}, Q/P", mass_tolerance=2.0 * tolerance
        )
        return forward, backward

    # -- AnalyticMechanism: the dominating Gaussian ----------------------------------

    def log_moment(self, lam: float, direction: str) -> float:
        """The dominating Gaussian's ``Gamma_lambda``."""
        return self.dominating_mechanism.log_moment(lam, direction)

    def log_moment_slope(self, lam: float, direction: str) -> float:
        """The dominating Gaussian's ``dGamma/dlambda``."""
        return self.dominating_mechanism.log_moment_slope(lam, direction)

    def log_moment_error(self, lam: float, direction: str) -> float:
        """The dominating Gaussian's log-moment error bound."""
        return self.dominating_mechanism.log_moment_error(lam, direction)

    def distinguishing_mass(self, direction: str) -> float:
        """0 (the dominating Gaussian's)."""
        return self.dominating_mechanism.distinguishing_mass(direction)

    def mass_logs(self, direction: str) -> MassLogs:
        """The dominating Gaussian's (total mass 1)."""
        return self.dominating_mechanism.mass_logs(direction)

    def max_finite_loss(self, direction: str) -> float:
        """``inf`` (the dominating Gaussian's)."""
        return self.dominating_mechanism.max_finite_loss(direction)

    def bucket_release(self):
        """The dominating Gaussian's PrivacyBuckets release."""
        return self.dominating_mechanism.bucket_release()
