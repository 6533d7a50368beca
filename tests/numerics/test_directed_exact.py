"""Directed rounding (``accountant/numerics/directed.py``, issue 28) against exact arithmetic.

Every certificate of the library rests on this module, so each public function is checked
here against values computed without rounding: :class:`fractions.Fraction` for sums,
products and the composed masses ``prod S_i^n_i - prod F_i^n_i`` (exact rationals), and
mpmath at 1,200 bits (over 360 digits, so a float bound is told apart from an exact value
that lies within 2^-1074 of it, as ``e^x`` does for subnormal ``x``) for ``exp`` and
``log1p``. A rounded-up result must be ``>=`` the exact value, a rounded-down one ``<=``,
and within the number of ulps the docstrings promise: none for the sums ("the smallest
float >= a + b", "the nearest floats around the exact sum"), and ``FUNCTION_ULPS + 1``
for a libm call moved ``FUNCTION_ULPS`` ulps (libm is within one ulp, says the module).

Ulps are counted on the ordered integer image of the IEEE-754 bit patterns (computed here
with :mod:`struct`, independently of ``math.nextafter``, on which the module is built)."""

from __future__ import annotations

import math
import struct
import sys
from fractions import Fraction

import mpmath
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from accountant.numerics.directed import (
    FUNCTION_ULPS,
    LogInterval,
    MassLogs,
    distinguishing_bounds,
    down,
    exp_down,
    exp_up,
    fsum_bounds,
    sum_down,
    sum_up,
    total_mass_up,
    up,
)
from tests.strategies import pmfs

MAX = sys.float_info.max
TINY = 2.0**-1074  # the smallest subnormal
MIN_NORMAL = 2.0**-1022
INF = math.inf
NAN = math.nan
#: The libm tightness the module's docstring promises: moved FUNCTION_ULPS ulps from a
#: result within one ulp, so at most FUNCTION_ULPS + 1 floats beyond the nearest bound.
LIBM_ULPS = FUNCTION_ULPS + 1
PRECISION_BITS = 1200

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
subnormals = st.integers(-(2**52) + 1, 2**52 - 1).map(lambda k: k * TINY)
edge_floats = st.sampled_from(
    [0.0, -0.0, TINY, -TINY, MIN_NORMAL - TINY, MIN_NORMAL, 1.0, -1.0, MAX, -MAX, 2.0**-53]
)
any_finite = st.one_of(finite_floats, subnormals, edge_floats)

# ---------------------------------------------------------------------------------------
# Exact helpers, independent of the module under test


def _index(x: float) -> int:
    """The position of ``x`` among floats: consecutive floats have consecutive indices,
    ``0.0`` and ``-0.0`` both 0, ``inf`` one past ``MAX``."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFF_FFFF_FFFF_FFFF)


def _float_at(index: int) -> float:
    bits = index if index >= 0 else -index | -(2**63)
    return struct.unpack("<d", struct.pack("<q", bits))[0]


INF_INDEX = _index(INF)


def _step(x: float, n: int) -> float:
    """``x`` moved ``n`` floats up (down if negative), saturating at the infinities."""
    return _float_at(max(-INF_INDEX, min(INF_INDEX, _index(x) + n)))


def _ceil(value) -> float:
    """The smallest float ``>= value`` (a Fraction or an mpf; ``inf`` above ``MAX``)."""
    largest = Fraction(MAX) if isinstance(value, Fraction) else mpmath.mpf(MAX)
    if value > largest:
        return INF
    if value < -largest:
        return -MAX
    f = float(value)  # within an ulp of value (mpmath may truncate)
    while _below(f, value):
        f = _step(f, 1)
    while not _below(_step(f, -1), value):
        f = _step(f, -1)
    return f


def _floor(value) -> float:
    """The largest float ``<= value`` (``-inf`` below ``-MAX``)."""
    ceil = _ceil(value)
    return ceil if _le(ceil, value) else _step(ceil, -1)


def _as_exact(f: float, value):
    """``f`` in the kind of ``value`` (an mpf, or a Fraction where finite)."""
    if isinstance(value, Fraction):
        return Fraction(f) if math.isfinite(f) else f
    return mpmath.mpf(f)


def _below(f: float, value) -> bool:
    """``f < value`` exactly (``value`` a Fraction or an mpf; ``f`` possibly infinite)."""
    return _as_exact(f, value) < value


def _le(f: float, value) -> bool:
    """``f <= value`` exactly (never for a NaN ``f``)."""
    return f == f and _as_exact(f, value) <= value


def _ge(f: float, value) -> bool:
    """``f >= value`` exactly (never for a NaN ``f``)."""
    return f == f and _as_exact(f, value) >= value


def _ulps_above(bound: float, value) -> int:
    """How many floats ``bound`` lies above the smallest float ``>= value``."""
    return _index(bound) - _index(_ceil(value))


def _ulps_below(bound: float, value) -> int:
    return _index(_floor(value)) - _index(bound)


def _exp(x: float):
    with mpmath.workprec(PRECISION_BITS):
        return mpmath.exp(mpmath.mpf(x))


def _log1p(x: float):
    with mpmath.workprec(PRECISION_BITS):
        return mpmath.log1p(mpmath.mpf(x)) if x > -1.0 else mpmath.mpf("-inf")


# ---------------------------------------------------------------------------------------
# up / down


@given(x=any_finite, ulps=st.integers(0, 5))
def test_up_and_down_move_exactly_that_many_floats(x, ulps):
    assert _index(up(x, ulps)) == min(INF_INDEX, _index(x) + ulps)
    assert _index(down(x, ulps)) == max(-INF_INDEX, _index(x) - ulps)
    if ulps:
        assert _ge(up(x, ulps), Fraction(x)) and up(x, ulps) != x
        assert _le(down(x, ulps), Fraction(x)) and down(x, ulps) != x
        # exact arithmetic: no float lies strictly between x and up(x, 1)
        one = up(x, 1)
        if math.isfinite(one):
            middle = (Fraction(x) + Fraction(one)) / 2
            assert float(middle) in (x, one)
    assert up(x) == up(x, FUNCTION_ULPS) and down(x) == down(x, FUNCTION_ULPS)


def test_up_and_down_at_the_edges():
    assert up(0.0, 1) == TINY and up(-0.0, 1) == TINY
    assert down(0.0, 1) == -TINY and down(-0.0, 1) == -TINY
    assert Fraction(up(TINY, 3)) == 4 * Fraction(TINY)  # subnormal: an absolute step
    assert up(MIN_NORMAL - TINY, 1) == MIN_NORMAL and down(MIN_NORMAL, 1) == MIN_NORMAL - TINY
    assert Fraction(up(1.0, 1)) == 1 + Fraction(1, 2**52)
    assert Fraction(down(1.0, 1)) == 1 - Fraction(1, 2**53)  # the binade below is finer
    assert up(MAX, 1) == INF and down(-MAX, 1) == -INF
    assert up(INF) == INF and down(-INF) == -INF  # an infinite bound stays
    assert up(-INF, 1) == -MAX and down(INF, 1) == MAX  # still on the right side
    assert math.isnan(up(NAN)) and math.isnan(down(NAN))  # never a finite "bound"


# ---------------------------------------------------------------------------------------
# sum_up / sum_down: the nearest floats on each side, with no slack


@given(a=any_finite, b=any_finite)
@example(a=MAX, b=MAX)
@example(a=-MAX, b=-MAX)
@example(a=MAX, b=2.0**970)  # overflows by rounding only: the exact sum is finite
@example(a=-MAX, b=-(2.0**970))
@example(a=1e16, b=1.0)
@example(a=0.1, b=0.2)
@example(a=1.0, b=-(2.0**-60))
@example(a=TINY, b=-TINY)
def test_sum_up_and_sum_down_are_the_nearest_floats_around_the_exact_sum(a, b):
    exact = Fraction(a) + Fraction(b)
    assert sum_up(a, b) == _ceil(exact)
    assert sum_down(a, b) == _floor(exact)


@given(a=any_finite)
def test_sums_with_the_negation_or_zero_are_exact(a):
    assert sum_up(a, -a) == 0.0 == sum_down(a, -a)
    assert sum_up(a, 0.0) == a == sum_down(a, -0.0)


@pytest.mark.parametrize("x", [0.0, -1.0, MAX, -MAX, TINY])
def test_sums_with_infinities_and_nan(x):
    assert sum_up(-INF, x) == -INF == sum_down(x, -INF)  # ln 0 absorbs everything
    assert sum_up(INF, x) == INF == sum_down(x, INF)
    assert math.isnan(sum_up(NAN, x)) and math.isnan(sum_down(x, NAN))
    assert math.isnan(sum_up(INF, -INF)) and math.isnan(sum_down(-INF, INF))


# ---------------------------------------------------------------------------------------
# exp_up / exp_down against mpmath

exponents = st.one_of(
    st.floats(-760.0, 709.0, exclude_max=True),  # subnormal results and 0; exp_up is inf from 709
    st.floats(-1e-6, 1e-6),
    subnormals,
    st.sampled_from([0.0, -0.0, TINY, -TINY, 2.0**-53, -(2.0**-54), 1.0, -1.0, -745.2]),
)


@given(x=exponents)
def test_exp_up_and_exp_down_bracket_e_to_the_x_within_the_promised_ulps(x):
    exact = _exp(x)
    high, low = exp_up(x), exp_down(x)
    assert _ge(high, exact) and high > 0.0  # "positive whenever x > -inf"
    assert _le(low, exact) and low >= 0.0
    assert _ulps_above(high, exact) <= LIBM_ULPS
    assert _ulps_below(low, exact) <= LIBM_ULPS


@given(x=st.one_of(finite_floats, st.floats(700.0, 710.0), st.floats(-1e4, -700.0)))
@example(x=709.78)  # e^x just below MAX
@example(x=709.79)  # e^x above MAX
@example(x=-MAX)
@example(x=MAX)
def test_exp_bounds_are_sound_over_all_floats(x):
    """Soundness only: above x = 709 exp_up is inf and exp_down stays near e^709 (loose
    where e^x is finite, up to x = ln MAX = 709.78)."""
    exact = _exp(x)
    assert _ge(exp_up(x), exact) and exp_up(x) > 0.0
    assert _le(exp_down(x), exact) and exp_down(x) >= 0.0


def test_exp_at_the_edges():
    assert exp_up(0.0) == 1.0 == exp_down(0.0)  # exact by definition
    assert exp_up(-0.0) == 1.0 == exp_down(-0.0)
    assert exp_up(-INF) == 0.0 == exp_down(-INF)
    assert exp_up(INF) == INF and exp_down(INF) >= 1.0
    # e^x for x = +-2^-1074 is 1 +- 2^-1074: 1 is the nearest float on one side only
    assert exp_up(-TINY) == 1.0 and exp_down(-TINY) < 1.0
    assert exp_down(TINY) == 1.0 and exp_up(TINY) > 1.0
    assert 0.0 < exp_up(-1e4) <= up(0.0, LIBM_ULPS)  # underflow: still positive
    # NaN is no number: never a finite upper bound, never a positive lower bound
    assert not math.isfinite(exp_up(NAN))
    assert not exp_down(NAN) > 0.0


# ---------------------------------------------------------------------------------------
# LogInterval

log_ends = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    subnormals,
    st.sampled_from([-INF, 0.0, -0.0, -TINY, 1e300, -1e300]),
)


@st.composite
def log_intervals(draw):
    a, b = sorted([draw(log_ends), draw(log_ends)])
    return LogInterval(a, b)


@given(first=log_intervals(), second=log_intervals())
def test_log_interval_sum_is_the_tightest_float_interval_of_the_exact_sum(first, second):
    total = first + second
    for got, x, y, nearest in (
        (total.low, first.low, second.low, _floor),
        (total.high, first.high, second.high, _ceil),
    ):
        if -INF in (x, y):
            assert got == -INF
        else:
            assert got == nearest(Fraction(x) + Fraction(y))


@given(interval=log_intervals(), count=st.one_of(st.integers(1, 10**7), st.integers(1, 2**70)))
@example(interval=LogInterval(-1.0, 1.0), count=2**53 + 1)  # the count itself rounds
@example(interval=LogInterval(-MAX, MAX), count=3)  # overflow
@example(interval=LogInterval(-INF, -INF), count=5)
@example(interval=LogInterval(-TINY, TINY), count=7)
def test_log_interval_times_covers_count_times_the_ends(interval, count):
    result = interval.times(count)
    for got, end, outwards in ((result.low, interval.low, -1), (result.high, interval.high, 1)):
        if end == -INF:
            assert got == -INF
            continue
        exact = count * Fraction(end)
        if outwards < 0:
            assert _le(got, exact)
            assert (end == 0.0 and got == 0.0) or _ulps_below(got, exact) <= 2
        else:
            assert _ge(got, exact)
            assert (end == 0.0 and got == 0.0) or _ulps_above(got, exact) <= 2


@given(first=log_intervals(), second=log_intervals())
def test_log_interval_hull_is_the_smallest_cover(first, second):
    hull = first.hull(second)
    assert hull.low == min(first.low, second.low) and hull.high == max(first.high, second.high)
    assert hull == second.hull(first)


@given(interval=log_intervals())
def test_log_interval_middle_lies_inside(interval):
    middle = interval.middle
    if interval.low == -INF:
        assert middle == -INF  # the lower end when unbounded below
    else:
        assert interval.low <= middle <= interval.high
        assert abs(Fraction(middle) - (Fraction(interval.low) + Fraction(interval.high)) / 2) <= (
            Fraction(math.ulp(middle))
        )


def test_log_interval_exact_is_a_point():
    assert LogInterval.exact(-0.5) == LogInterval(-0.5, -0.5)
    assert LogInterval.exact(0.0) + LogInterval.exact(0.0) == LogInterval.exact(0.0)


# ---------------------------------------------------------------------------------------
# MassLogs.of: ln S from bounds on S - 1 (log1p), ln(1 - omega / S)

excesses = st.one_of(
    st.floats(-1.0, 1e300),
    st.floats(-1e-6, 1e-6),
    subnormals,
    st.sampled_from([0.0, -1.0, -1.0 + 2.0**-53, 2.0**-53, -(2.0**-54), TINY, -TINY, MAX]),
)


@given(x=excesses)
def test_log_total_brackets_log1p_of_the_excess_within_the_promised_ulps(x):
    logs = MassLogs.of((x, x), (0.0, 0.0))
    exact = _log1p(x)
    assert _le(logs.total.low, exact) and _ge(logs.total.high, exact)
    if x > -1.0:
        assert _ulps_below(logs.total.low, exact) <= LIBM_ULPS
        assert _ulps_above(logs.total.high, exact) <= LIBM_ULPS
    else:
        assert logs.total == LogInterval(-INF, -INF)  # S = 0: ln S = -inf exactly
    assert logs.finite_fraction == LogInterval(0.0, 0.0)  # omega = 0 stays exact


def test_mass_logs_of_exact_inputs_stays_exact():
    assert MassLogs.of((0.0, 0.0), (0.0, 0.0)) == MassLogs()
    assert distinguishing_bounds(MassLogs()) == (0.0, 0.0)
    assert total_mass_up(MassLogs()) == 1.0


#: Masses of one release: a pmf of the project's strategies (S = 1 to the last bit), or
#: positive floats of any size (S far from 1, tiny, or with S - 1 below one ulp of 1).
releases = st.one_of(
    pmfs(1, 6).map(lambda p: p.tolist()),
    st.lists(st.floats(1e-300, 4.0), min_size=1, max_size=6),
    st.sampled_from([[1.0, 1e-300], [1.0, -(2.0**-60)], [0.5, 0.5 - 2.0**-60], [1e-300]]),
)


@st.composite
def masses_and_omega(draw):
    """``(masses, omega_indices)``: a release's A-masses and which are distinguishing."""
    masses = draw(releases)
    if min(masses) < 0.0:  # a negative correction (S just below 1): never distinguishing
        return masses, []
    chosen = draw(st.sets(st.integers(0, len(masses) - 1), max_size=len(masses)))
    return masses, sorted(chosen)


def _mass_logs(masses, chosen):
    omega = [masses[i] for i in chosen]
    return MassLogs.of(fsum_bounds([*masses, -1.0]), fsum_bounds(omega))


def _check_one_release(masses, chosen):
    logs = _mass_logs(masses, chosen)
    total = sum(map(Fraction, masses))
    omega = sum((Fraction(masses[i]) for i in chosen), Fraction(0))
    with mpmath.workprec(PRECISION_BITS):
        log_total = mpmath.log(mpmath.mpf(total.numerator) / total.denominator)
        rest = total - omega
        log_finite = (
            mpmath.log(mpmath.mpf(rest.numerator) / rest.denominator)
            if rest
            else mpmath.mpf("-inf")
        )
        log_fraction = log_finite - log_total
    assert _le(logs.total.low, log_total) and _ge(logs.total.high, log_total)
    fraction = logs.finite_fraction
    assert _le(fraction.low, log_fraction) and _ge(fraction.high, log_fraction)
    assert fraction.high <= 0.0
    finite = logs.log_finite_mass
    assert _le(finite.low, log_finite) and _ge(finite.high, log_finite)
    assert _ge(total_mass_up(logs), total)
    low, high = distinguishing_bounds(logs)
    assert _le(low, omega) and _ge(high, omega)
    if omega == 0:
        assert (low, high) == (0.0, 0.0)  # exactly 0 with no distinguishing outcome
    elif total >= Fraction(1, 4) and Fraction(2**-900) <= omega <= total / 2:
        # relative width: away from subnormal omega, from S ~ 0 (known through S - 1 only)
        # and from S - omega ~ 0, where ln(1 - omega / S) is ill-conditioned
        assert high - low <= 1e-13 * high


@given(release=masses_and_omega())
def test_mass_logs_of_one_release_brackets_its_exact_logs_and_omega(release):
    _check_one_release(*release)


@given(
    components=st.lists(st.tuples(masses_and_omega(), st.integers(1, 40)), min_size=1, max_size=3),
    alternative=st.one_of(st.none(), masses_and_omega()),
)
def test_composed_mass_logs_bracket_the_exact_rational_omega(components, alternative):
    """``Omega = prod S_i^n_i - prod (S_i - omega_i)^n_i`` in exact rationals, for the
    composition through ``+`` and ``times`` and the ``hull`` with an alternative release."""
    logs = MassLogs()
    total, finite = Fraction(1), Fraction(1)
    for (masses, chosen), count in components:
        logs = logs + _mass_logs(masses, chosen).times(count)
        s = sum(map(Fraction, masses))
        total *= s**count
        finite *= (s - sum((Fraction(masses[i]) for i in chosen), Fraction(0))) ** count
    cases = [(logs, total, total - finite)]
    if alternative is not None:
        masses, chosen = alternative
        other = _mass_logs(masses, chosen)
        s = sum(map(Fraction, masses))
        hull = logs.hull(other)
        cases += [(hull, total, total - finite)]
        cases += [(hull, s, sum((Fraction(masses[i]) for i in chosen), Fraction(0)))]
    for composed, exact_total, exact_omega in cases:
        assert _ge(total_mass_up(composed), exact_total)
        low, high = distinguishing_bounds(composed)
        assert _le(low, exact_omega) and _ge(high, exact_omega)
        assert 0.0 <= low <= high
        if exact_omega == 0 and composed is logs:
            assert (low, high) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("masses", "chosen"),
    [
        ([1.0], [0]),  # all mass distinguishing: omega = S, ln(1 - omega / S) = -inf
        ([0.5, 0.5], [1]),
        ([1.0 - 2.0**-53, 2.0**-53], [1]),  # omega one ulp of 1
        ([1.0, TINY], [1]),  # a subnormal omega
        ([1e-300, 1e-300], [0]),  # S - 1 rounds to -1
        ([1e16, 1.0, -1e16], []),  # S = 1 only by cancellation
    ],
)
def test_mass_logs_edge_releases(masses, chosen):
    _check_one_release(masses, chosen)


# ---------------------------------------------------------------------------------------
# distinguishing_bounds and total_mass_up on given logs, against mpmath

log_totals = st.one_of(
    st.floats(-800.0, 800.0),
    st.floats(-1e-6, 1e-6),
    st.sampled_from([-INF, 0.0, -0.0, TINY, -TINY, 2.0**-53, 709.0, -745.0]),
)
log_fractions = st.one_of(
    st.floats(-800.0, 0.0),
    st.floats(-1e-6, 0.0),
    subnormals.map(lambda x: -abs(x)),
    st.sampled_from([-INF, 0.0, -0.0, -TINY, -(2.0**-53), -1.0]),
)


def _omega(total: float, fraction: float):
    """``e^T (1 - e^D)`` at 1,200 bits."""
    with mpmath.workprec(PRECISION_BITS):
        return mpmath.exp(mpmath.mpf(total)) * -mpmath.expm1(mpmath.mpf(fraction))


@st.composite
def point_or_interval(draw, ends):
    a, b = sorted([draw(ends), draw(ends)])
    return LogInterval(a, a) if draw(st.booleans()) else LogInterval(a, b)


@given(total=point_or_interval(log_totals), fraction=point_or_interval(log_fractions))
@example(total=LogInterval(0.0, 0.0), fraction=LogInterval(-INF, -INF))  # Omega = 1
@example(total=LogInterval(-INF, -INF), fraction=LogInterval(-1.0, -1.0))  # Omega = 0
@example(total=LogInterval(0.0, 0.0), fraction=LogInterval(-TINY, -TINY))
@example(total=LogInterval(800.0, 800.0), fraction=LogInterval(-1.0, -1.0))  # overflow
def test_distinguishing_bounds_bracket_omega_over_the_intervals(total, fraction):
    """``Omega`` rises with ``T`` and falls with ``D``: its extremes over the intervals are
    at ``(T.low, D.high)`` and ``(T.high, D.low)``."""
    logs = MassLogs(total, fraction)
    low, high = distinguishing_bounds(logs)
    smallest, largest = _omega(total.low, fraction.high), _omega(total.high, fraction.low)
    assert _le(low, smallest) and _ge(high, largest) and 0.0 <= low <= high
    assert _ge(total_mass_up(logs), _exp(total.high))
    assert total_mass_up(logs) == exp_up(total.high)
    if fraction.low == 0.0:
        assert (low, high) == (0.0, 0.0)  # no distinguishing mass: exactly 0
    # promised tightness: e^T and 1 - e^D each within LIBM_ULPS ulps (relative 2^-52
    # each), their product rounded and moved one ulp: relative to Omega, where the
    # factors and the product are normal floats
    relative = (2 * LIBM_ULPS + 2) * 2.0**-52  # exact
    with mpmath.workprec(PRECISION_BITS):
        if smallest > 1e-290 and total.low < 709.0 and fraction.high < -1e-300:
            assert _ge(low, smallest * (1 - mpmath.mpf(relative)))
        if largest > 1e-290 and total.high < 709.0 and fraction.low < -1e-300:
            assert _le(high, largest * (1 + mpmath.mpf(relative)))


@given(total=log_totals.filter(lambda t: -700.0 < t < 700.0), fraction=log_fractions)
def test_distinguishing_mass_estimates_omega(total, fraction):
    logs = MassLogs(LogInterval.exact(total), LogInterval.exact(fraction))
    exact = _omega(total, fraction)
    with mpmath.workprec(PRECISION_BITS):
        error = abs(mpmath.mpf(logs.distinguishing_mass) - exact)
        assert error <= 8 * 2.0**-53 * exact + TINY


# ---------------------------------------------------------------------------------------
# fsum_bounds: the nearest floats around the exact sum

summands = st.one_of(
    st.floats(-1e300, 1e300),
    subnormals,
    st.sampled_from([1e16, -1e16, 1.0, -1.0, 2.0**-60, 0.1, -0.0]),
)


@given(values=st.lists(summands, max_size=20))
@example(values=[1e16, 1.0, -1e16])
@example(values=[1e16, 1.0])
@example(values=[1.0, 2.0**-60, -1.0])
@example(values=[1.0, 2.0**-60])
@example(values=[-1.0, -(2.0**-60)])
@example(values=[0.1, 0.2, -0.3])
@example(values=[1e300, 1e-300, -1e300])
@example(values=[TINY, -TINY, TINY])
@example(values=[MAX, -MAX, 1.0])
@example(values=[])
def test_fsum_bounds_are_the_nearest_floats_around_the_exact_sum(values):
    exact = sum(map(Fraction, values), Fraction(0))
    assert fsum_bounds(values) == (_floor(exact), _ceil(exact))
    assert fsum_bounds(iter(values)) == fsum_bounds(values)  # any iterable


@pytest.mark.parametrize(
    "values",
    [
        [MAX, MAX, -MAX],
        [-MAX, -MAX, MAX, 1.0],
        [MAX, 1e292],
        [-MAX, -(2.0**970)],
        [MAX, MAX],
        [-MAX, -MAX, TINY],
        [MAX, MAX, -MAX, -(2.0**-1050)],
        [MAX, MAX, -MAX, 2.0**-1050],
        [-MAX, -MAX, MAX, 2.0**-1074],
    ],
)
def test_fsum_bounds_are_exact_or_beyond_the_range_on_overflow(values):
    """An overflow inside ``math.fsum`` neither refuses a sum nor bounds it wrongly: a sum
    within the float range gets its nearest floats, one beyond it ``(MAX, inf)``."""
    _check_fsum_bounds(values)


@given(
    values=st.lists(
        st.one_of(
            st.floats(allow_nan=False, allow_infinity=False),
            st.sampled_from([MAX, -MAX, 2.0**1023, -(2.0**1023), 2.0**-1050, -(2.0**-1074)]),
            st.floats(min_value=-1e-300, max_value=1e-300),
        ),
        max_size=8,
    )
)
@example(values=[8.289046e-317, -(2.0**1023), -(2.0**1023), 2.0**1023, 2.0**1023])
def test_fsum_bounds_hold_for_any_finite_floats(values):
    """Sound and tight for any finite floats, huge and subnormal ones mixed (an overflow
    inside ``math.fsum`` takes the exact rational path)."""
    exact = sum(map(Fraction, values), Fraction(0))
    low, high = fsum_bounds(values)
    assert _le(low, exact) and _ge(high, exact)
    if abs(exact) <= Fraction(MAX):
        assert low == _floor(exact) and high == _ceil(exact)


def _check_fsum_bounds(values: list[float]) -> None:
    exact = sum(map(Fraction, values), Fraction(0))
    low, high = fsum_bounds(values)
    if abs(exact) > Fraction(MAX):
        assert (low, high) == ((MAX, INF) if exact > 0 else (-INF, -MAX))
    else:
        assert low == _floor(exact) and high == _ceil(exact)


@pytest.mark.parametrize("values", [[INF, 1.0], [1.0, -INF], [INF, INF, -MAX]])
def test_fsum_bounds_of_one_infinity_is_that_infinity(values):
    infinity = next(v for v in values if math.isinf(v))
    assert fsum_bounds(values) == (infinity, infinity)


@pytest.mark.parametrize("values", [[INF, -INF], [NAN, 1.0], [1.0, NAN, INF]])
def test_fsum_bounds_refuses_values_without_a_sum(values):
    with pytest.raises(ValueError, match="no sum"):
        fsum_bounds(values)


@given(interval=log_intervals())
@example(interval=LogInterval(-INF, -1.0))
@example(interval=LogInterval(-INF, INF))
def test_log_interval_times_zero_is_the_empty_composition(interval):
    """No release: the log of a mass 1, exactly 0 at both ends (never NaN from 0 * inf)."""
    assert interval.times(0) == LogInterval(0.0, 0.0)
