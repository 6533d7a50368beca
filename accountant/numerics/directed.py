"""Directed rounding for the few scalar quantities every certified bound depends on.

Float64 arithmetic rounds to nearest, so a computed upper bound can land one unit in
the last place (ulp) below the true value. The helpers here move a computed value
outwards far enough to cover the rounding of the operation that produced it, and they
stay sound for subnormal numbers, where a *relative* margin would not move anything:

* addition is made exact-or-directed with the error-free transformation TwoSum
  (Knuth): ``s = fl(a + b)`` and ``e = (a + b) - s`` exactly, so ``s`` moves one ulp
  only when it lies on the wrong side of the true sum;
* every other operation (``*``, ``/``, ``exp``, ``log1p``, ``expm1``) moves
  :data:`FUNCTION_ULPS` ulps (libm's ``exp``, ``log1p`` and ``expm1`` are accurate to
  within one ulp, a product or quotient to half an ulp), except where the result is
  exact by definition (``exp(0) = 1``, ``expm1(0) = log1p(0) = 0``, anything times 0).

The composed masses of independent releases of arrays as given (SPEC section 1; see
``docs/theory/pld.md``, "Masses as given") are kept as :class:`LogInterval` values of
``T = sum_i n_i ln S_i`` (total A-mass) and ``D = sum_i n_i ln(1 - omega_i / S_i)``
(the fraction with no distinguishing component); :func:`distinguishing_bounds` turns
them into certified bounds on ``Omega = e^T (1 - e^D) = prod S_i^{n_i} - prod F_i^{n_i}``.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import attrs

__all__ = [
    "FUNCTION_ULPS",
    "LogInterval",
    "MassLogs",
    "distinguishing_bounds",
    "down",
    "exp_down",
    "exp_up",
    "fsum_bounds",
    "sum_down",
    "sum_up",
    "total_mass_up",
    "up",
]

#: Ulps by which the result of a rounded operation or libm call is moved outwards.
FUNCTION_ULPS = 2


def up(value: float, ulps: int = FUNCTION_ULPS) -> float:
    """``value`` moved ``ulps`` ulps towards ``+inf`` (subnormal-safe; ``inf`` stays)."""
    for _ in range(ulps):
        value = math.nextafter(value, math.inf)
    return value


def down(value: float, ulps: int = FUNCTION_ULPS) -> float:
    """``value`` moved ``ulps`` ulps towards ``-inf`` (subnormal-safe; ``-inf`` stays)."""
    for _ in range(ulps):
        value = math.nextafter(value, -math.inf)
    return value


def _two_sum(a: float, b: float) -> tuple[float, float]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (finite inputs)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def sum_up(a: float, b: float) -> float:
    """The smallest float ``>= a + b`` (exact sums are returned unchanged)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a + b
    s, e = _two_sum(a, b)
    if s == -math.inf:  # finite a + b rounded past -MAX: the exact sum is above -inf
        return -sys.float_info.max
    return math.nextafter(s, math.inf) if e > 0.0 else s


def sum_down(a: float, b: float) -> float:
    """The largest float ``<= a + b`` (exact sums are returned unchanged)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a + b
    s, e = _two_sum(a, b)
    if s == math.inf:  # finite a + b rounded past MAX: the exact sum is below inf
        return sys.float_info.max
    return math.nextafter(s, -math.inf) if e < 0.0 else s


def exp_up(x: float) -> float:
    """A float ``>= e^x``: positive whenever ``x > -inf``, even where ``e^x`` underflows."""
    if x == -math.inf:
        return 0.0
    if x == 0.0:
        return 1.0
    if x < 0.0:
        return min(1.0, up(math.exp(x)))  # e^x < 1
    return up(math.exp(x)) if x < 709.0 else math.inf


def exp_down(x: float) -> float:
    """A float ``<= e^x`` (and ``>= 0``)."""
    if x == 0.0:
        return 1.0
    if x == -math.inf:
        return 0.0
    if x > 0.0:
        return max(1.0, down(math.exp(min(x, 709.0))))  # e^x > 1
    return max(0.0, down(math.exp(x)))


def _times(count: int, value: float, *, towards: float) -> float:
    if count == 0 or value == 0.0:  # no release (an empty composition) or ln 1: exactly 0
        return 0.0
    if not math.isfinite(value):
        return count * value
    product = count * value
    return up(product, 1) if towards > 0 else down(product, 1)


@attrs.frozen
class LogInterval:
    """A closed interval ``[low, high]`` of log-masses (``-inf`` allowed), kept sound under
    addition and multiplication by a count: composition adds logs of masses."""

    low: float
    high: float

    @classmethod
    def exact(cls, value: float) -> LogInterval:
        """A value known exactly (for example ``ln 1 = 0`` for a probability measure)."""
        return cls(value, value)

    def __add__(self, other: LogInterval) -> LogInterval:
        return LogInterval(sum_down(self.low, other.low), sum_up(self.high, other.high))

    def times(self, count: int) -> LogInterval:
        """``count`` independent releases: ``count * [low, high]``, rounded outwards."""
        return LogInterval(
            _times(count, self.low, towards=-1.0), _times(count, self.high, towards=1.0)
        )

    def hull(self, other: LogInterval) -> LogInterval:
        """The smallest interval containing both (the worst case over alternatives)."""
        return LogInterval(min(self.low, other.low), max(self.high, other.high))

    @property
    def middle(self) -> float:
        """A point estimate (the lower end when the interval is unbounded below)."""
        if self.low == -math.inf:
            return self.high if self.high == -math.inf else self.low
        return 0.5 * (self.low + self.high)


ZERO = LogInterval.exact(0.0)


@attrs.frozen
class MassLogs:
    """The logs of one release's masses in one direction, as given:
    ``total = ln S`` (all A-mass) and ``finite_fraction = ln(1 - omega / S)`` (the share of
    A-mass on outcomes with a finite loss). Both add under composition."""

    total: LogInterval = ZERO
    finite_fraction: LogInterval = ZERO

    @classmethod
    def of(cls, excess: tuple[float, float], distinguishing: tuple[float, float]) -> MassLogs:
        """From bounds ``(low, high)`` on the excess ``S - 1`` of the total A-mass over 1 and
        on the distinguishing mass ``omega`` (for example from :func:`fsum_bounds`, which
        gives ``S - 1`` to the last bit even where ``S`` itself rounds to 1). ``S - 1 = 0``
        and ``omega = 0`` stay exact."""
        excess_low, excess_high = excess
        log_total = LogInterval(_log1p_down(excess_low), _log1p_up(excess_high))
        omega_low, omega_high = distinguishing
        if omega_high == 0.0:
            return cls(log_total, ZERO)
        total_low, total_high = down(1.0 + excess_low, 1), up(1.0 + excess_high, 1)
        ratio_low = max(0.0, down(omega_low / total_high, 1)) if omega_low > 0.0 else 0.0
        ratio_high = up(omega_high / total_low, 1) if total_low > 0.0 else math.inf
        fraction_low = _log1p_down(-ratio_high) if ratio_high < 1.0 else -math.inf
        fraction_high = min(0.0, _log1p_up(-ratio_low))
        return cls(log_total, LogInterval(fraction_low, fraction_high))

    def __add__(self, other: MassLogs) -> MassLogs:
        return MassLogs(self.total + other.total, self.finite_fraction + other.finite_fraction)

    def times(self, count: int) -> MassLogs:
        """``count`` independent releases."""
        return MassLogs(self.total.times(count), self.finite_fraction.times(count))

    def hull(self, other: MassLogs) -> MassLogs:
        """Covers either release (the worst case over alternatives)."""
        return MassLogs(
            self.total.hull(other.total), self.finite_fraction.hull(other.finite_fraction)
        )

    @property
    def distinguishing_mass(self) -> float:
        """Point estimate of ``Omega = e^T (1 - e^D)``."""
        fraction = self.finite_fraction.middle
        return math.exp(self.total.middle) * (0.0 - math.expm1(fraction))

    @property
    def log_finite_mass(self) -> LogInterval:
        """``ln F = T + D``: the log of the A-mass with no distinguishing component."""
        return self.total + self.finite_fraction


def _log1p_down(x: float) -> float:
    """A float ``<= ln(1 + x)`` (exact 0 at ``x = 0``, ``-inf`` at ``x <= -1``)."""
    if x == 0.0:
        return 0.0
    return down(math.log1p(x)) if x > -1.0 else -math.inf


def _log1p_up(x: float) -> float:
    """A float ``>= ln(1 + x)``."""
    if x == 0.0:
        return 0.0
    return up(math.log1p(x)) if x > -1.0 else -math.inf


def fsum_bounds(values) -> tuple[float, float]:
    """``(low, high)``: the nearest floats around the exact sum of ``values`` (a list of
    floats). ``math.fsum`` is correctly rounded, and the exact residual
    ``sum(values) - fsum(values)`` is a sum of floats too, so its correctly rounded value is
    0 exactly when the sum is exact, and has the residual's sign otherwise. An exact sum
    beyond the float range gives ``(MAX, inf)`` (or ``(-inf, -MAX)``); an infinity of one
    sign gives that infinity twice; NaN or infinities of both signs raise ``ValueError``."""
    values = list(values)
    if any(not math.isfinite(v) for v in values):
        # NaN, or infinities of both signs: no sum; one infinity (one sign): that infinity
        infinite = {v for v in values if math.isinf(v)}
        if any(math.isnan(v) for v in values) or len(infinite) > 1:
            raise ValueError(
                f"fsum_bounds: the values have no sum (non-finite: {sorted(infinite)})"
            )
        end = infinite.pop()
        return end, end
    try:
        total = math.fsum(values)
    except OverflowError:  # an intermediate sum left the float range
        return _exact_fsum_bounds(values)
    residual = math.fsum([*values, -total])
    if residual > 0.0:
        return total, math.nextafter(total, math.inf)
    if residual < 0.0:
        return math.nextafter(total, -math.inf), total
    return total, total


def _exact_fsum_bounds(values: list[float]) -> tuple[float, float]:
    """:func:`fsum_bounds` of finite ``values`` whose running sum overflows inside
    ``math.fsum`` (the exact sum may still be small): the sum in exact rationals, rounded
    to its nearest floats (``float`` of a fraction rounds correctly); beyond the float
    range ``(MAX, inf)`` or ``(-inf, -MAX)``. Only for such rare inputs: slow but exact."""
    exact = sum((Fraction(v) for v in values), Fraction(0))
    try:
        nearest = float(exact)
    except OverflowError:
        nearest = math.inf if exact > 0 else -math.inf
    if math.isinf(nearest):  # rounds beyond MAX: the exact sum lies past the last float
        if exact > 0:
            return sys.float_info.max, math.inf
        return -math.inf, -sys.float_info.max
    if Fraction(nearest) == exact:
        return nearest, nearest
    if Fraction(nearest) < exact:
        return nearest, math.nextafter(nearest, math.inf)
    return math.nextafter(nearest, -math.inf), nearest


def _neg_expm1_down(x: float) -> float:
    """A float ``<= 1 - e^x`` for ``x <= 0`` (``>= 0``)."""
    if x == 0.0:
        return 0.0
    if x == -math.inf:
        return 1.0
    return max(0.0, down(0.0 - math.expm1(x)))


def _neg_expm1_up(x: float) -> float:
    """A float ``>= 1 - e^x`` for ``x <= 0``."""
    if x == 0.0:
        return 0.0
    if x == -math.inf:
        return 1.0
    return min(1.0, up(0.0 - math.expm1(x)))


def total_mass_up(logs: MassLogs) -> float:
    """A float ``>= e^T``, the composed total A-mass (the largest any delta can be)."""
    return exp_up(logs.total.high)


def distinguishing_bounds(logs: MassLogs) -> tuple[float, float]:
    """Floats ``low <= Omega <= high`` for ``Omega = e^T (1 - e^D)``; ``0`` exactly when no
    release has a distinguishing outcome."""
    share_low = _neg_expm1_down(logs.finite_fraction.high)
    share_high = _neg_expm1_up(logs.finite_fraction.low)
    low = max(0.0, down(exp_down(logs.total.low) * share_low, 1)) if share_low > 0.0 else 0.0
    if share_high == 0.0:
        return 0.0, 0.0
    total_high = total_mass_up(logs)
    return low, min(total_high, up(total_high * share_high, 1))
