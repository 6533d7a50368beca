"""Refining the bucket width never loosens a bracket without reason (issue 11, item 13).

PDP and eps queries refine as ADP delta queries do; the certified brackets of every width
tried are intersected, so a finer accuracy never returns a wider bracket than a coarser one;
where bucketing no longer limits a bracket (FFT round-off, a loss atom at eps) the engine
stops and says so with the achieved figure. Truths: the Gaussian mechanism composed n times
is the Gaussian mechanism with ``sigma / sqrt(n)`` (its loss is ``N(mu^2/2, mu^2)`` under A,
``mu = sqrt(n) / sigma``), hence Balle & Wang's analytic ADP delta and the PDP delta
``Phi(mu/2 - eps/mu)``; small pairs by exact enumeration of the composition.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from accountant import (
    CertificationWarning,
    InfeasibleTargetError,
    PrivacyBuckets,
    WorstCasePair,
    exact_delta_pdp,
    noise,
)
from accountant.buckets import walks
from accountant.mechanisms import GaussianMechanism
from tests.buckets.test_analytic_end_to_end import _gaussian_delta
from tests.buckets.test_soundness import PRECISION, _pair, exact_all
from tests.strategies import worst_case_pairs


def _gaussian_pdp(sigma: float, releases: int, eps: float) -> float:
    """``P_A[L > eps]`` with ``L ~ N(mu^2/2, mu^2)``: ``Phi(mu/2 - eps/mu)``."""
    mu = math.sqrt(releases) / sigma
    return float(ndtr(mu / 2.0 - eps / mu))


def _gaussian_epsilon(sigma: float, releases: int, target: float, kind: str) -> float:
    """The smallest eps with the closed-form delta at most ``target``."""
    mu = math.sqrt(releases) / sigma
    if kind == "PDP":
        return mu * (mu / 2.0 - float(ndtri(target)))
    return brentq(lambda e: _gaussian_delta(sigma, releases, e) - target, 0.0, 100.0, xtol=1e-14)


def _NO_CLOSED_FORM(components):
    """Patched over ``walks.composed_gaussian``: the Gaussian mechanism's queries go through
    the buckets (these tests are about them), not its closed form."""
    return None


def _quiet(call):
    """``call()`` with every CertificationWarning recorded: ``(result, messages)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CertificationWarning)
        result = call()
    messages = [str(w.message) for w in caught if issubclass(w.category, CertificationWarning)]
    return result, messages


def _dp_sgd_pair() -> WorstCasePair:
    """A DP-SGD grid pair whose delta near 3e-10 at n = 100, eps = 2 is limited by FFT
    round-off, not by bucketing: accuracy 1e-8 used to start at a finer width and return
    [1.8e-10, 4.6e-10] in 35 s where 1e-4 returned [2.8e-10, 3.7e-10] in 2 s."""
    return WorstCasePair.subsampled(noise.truncated_gaussian(1.0, 8.0, 0.1), q=0.01, clip=1.0)


# ---------------------------------------------------------------------------------------
# PDP refines as ADP does


def test_pdp_refines_to_the_accuracy_on_the_gaussian_mechanism():
    """One Gaussian release, eps 0.5 - 2: the PDP bracket was 3-14% wide (never refined)."""
    eps = np.array([0.5, 1.0, 2.0])
    accountant = PrivacyBuckets().compose(GaussianMechanism(sigma=1.0))
    bounds, messages = _quiet(lambda: accountant.delta_pdp(eps))
    assert messages == []
    assert bounds.achieved_accuracy <= accountant.accuracy
    for k, e in enumerate(eps):
        truth = _gaussian_pdp(1.0, 1, e)
        assert bounds.lower[k] <= truth <= bounds.upper[k], (e, bounds.lower[k], truth)
        assert bounds.upper[k] - bounds.lower[k] <= 1e-4 * bounds.upper[k]


@pytest.mark.parametrize(
    ("sigma", "releases", "eps"), [(2.0, 10, [0.5, 2.0, 5.0]), (4.0, 3, [1.0])]
)
def test_composed_pdp_brackets_the_closed_form(sigma, releases, eps):
    accountant = PrivacyBuckets(accuracy=1e-3).compose(GaussianMechanism(sigma), releases)
    bounds, messages = _quiet(lambda: accountant.delta_pdp(np.array(eps)))
    assert messages == [] and bounds.achieved_accuracy <= 1e-3
    for k, e in enumerate(eps):
        truth = _gaussian_pdp(sigma, releases, e)
        assert bounds.lower[k] <= truth <= bounds.upper[k], (e, bounds.lower[k], truth)


def test_pdp_at_a_loss_atom_reports_the_atom_instead_of_warning():
    """eps = 0.5 is a loss of the lattice pair: no width separates the atom from eps, so
    the bracket honestly spans its mass; ``atom`` reports it, and the accuracy applies to
    the rest of the bracket (this warned before: the atom is no failure to reach it)."""
    pair = WorstCasePair.additive(noise.truncated_gaussian(3.0, 12.0, 0.5), 1.0)
    accountant = PrivacyBuckets().compose(pair)
    bounds, messages = _quiet(lambda: accountant.delta_pdp(0.5))
    assert bounds.lower <= exact_delta_pdp(pair, 0.5) <= bounds.upper
    assert bounds.achieved_accuracy > 1e-3 and bounds.atom > 0.0
    assert (bounds.upper - bounds.atom - bounds.lower) / bounds.upper <= bounds.accuracy
    assert messages == []


# ---------------------------------------------------------------------------------------
# ADP delta: refine wherever bucketing limits, including the A-only estimates


def test_delta_refines_where_the_a_only_estimate_limits(monkeypatch):
    """At delta ~ 1e-6 (eps 8.3, sigma 2, n 10) e^eps times the B error makes the A-only
    estimates win; their bucketing gap was reported as 0, so nothing refined (6.3e-3 wide).
    Now the width is refined down to the memory budget, which the warning names."""
    eps = _gaussian_epsilon(2.0, 10, 1e-6, "ADP")
    accountant = PrivacyBuckets().compose(GaussianMechanism(2.0), 10)
    monkeypatch.setattr(walks, "composed_gaussian", _NO_CLOSED_FORM)
    bounds, messages = _quiet(lambda: accountant.delta(eps))
    assert bounds.lower <= _gaussian_delta(2.0, 10, eps) <= bounds.upper
    assert bounds.achieved_accuracy <= 1e-3
    assert len(messages) == 1 and "memory budget max_buckets=8388608" in messages[0]


# ---------------------------------------------------------------------------------------
# finer accuracy: never a wider bracket, never much more work where bucketing does not limit

NESTING_CASES = [
    ("dp-sgd", "ADP", 2.0),
    ("gaussian", "ADP", 8.0),
    ("gaussian", "PDP", 1.0),
]


def _accountant(name: str, accuracy: float) -> PrivacyBuckets:
    if name == "dp-sgd":
        return PrivacyBuckets(accuracy=accuracy).compose(_dp_sgd_pair(), 100)
    return PrivacyBuckets(accuracy=accuracy).compose(GaussianMechanism(1.0), 4)


@pytest.mark.parametrize(("name", "kind", "eps"), NESTING_CASES)
def test_a_finer_accuracy_never_gives_a_wider_bracket(name, kind, eps):
    brackets = {}
    for accuracy in (1e-4, 1e-8):
        accountant = _accountant(name, accuracy)
        query = accountant.delta if kind == "ADP" else accountant.delta_pdp
        brackets[accuracy], _ = _quiet(lambda q=query: q(eps))
    fine, coarse = brackets[1e-8], brackets[1e-4]
    assert coarse.lower <= fine.lower <= fine.upper <= coarse.upper, (fine, coarse)


def test_a_too_fine_request_does_no_useless_work(monkeypatch):
    """Where the cut tails, not bucketing, limit the bracket, asking for 1e-8 composes
    exactly the widths 1e-4 does (it used to compose 40 times more buckets for a worse
    bracket where FFT round-off limited it, which tilting has since removed), and says why
    it stopped."""
    widths: dict[float, list[float]] = {}
    original = PrivacyBuckets._compose_at

    def recording(self, direction, width, tilt):
        widths.setdefault(self.accuracy, []).append(width)
        return original(self, direction, width, tilt)

    monkeypatch.setattr(PrivacyBuckets, "_compose_at", recording)
    results = {}
    for accuracy in (1e-4, 1e-8):
        cut = PrivacyBuckets(accuracy=accuracy, tail_mass=1e-10).compose(_dp_sgd_pair(), 100)
        results[accuracy] = _quiet(lambda a=cut: a.delta(2.0))
    assert sorted(widths[1e-8]) == sorted(widths[1e-4])
    fine, messages = results[1e-8]
    assert (fine.lower, fine.upper) == (results[1e-4][0].lower, results[1e-4][0].upper)
    assert len(messages) == 1 and "bucketing no longer limits it" in messages[0]


def test_a_finer_accuracy_gives_an_eps_bracket_as_narrow_around_the_truth():
    """Eps queries aim at their accuracy (their tail mass and widths depend on it), so
    their brackets need not nest as delta brackets do; each contains the closed-form eps,
    and the finer accuracy's is at most a few percent wider (its smaller tail mass)."""
    brackets = {}
    truth = _gaussian_epsilon(2.0, 10, 1e-9, "ADP")
    for accuracy in (1e-4, 1e-8):
        accountant = PrivacyBuckets(accuracy=accuracy).compose(GaussianMechanism(2.0), 10)
        brackets[accuracy], _ = _quiet(lambda a=accountant: a.epsilon(1e-9))
        assert brackets[accuracy].lower <= truth <= brackets[accuracy].upper
    fine, coarse = brackets[1e-8], brackets[1e-4]
    assert fine.upper - fine.lower <= 1.1 * (coarse.upper - coarse.lower), (fine, coarse)


def test_a_query_does_not_depend_on_earlier_queries():
    """Rungs are cached, not the width of the last query: the same question gets the same
    certified answer on a used accountant and on a fresh one."""
    used = PrivacyBuckets().compose(GaussianMechanism(1.0), 4)
    _quiet(lambda: used.delta(8.0))  # refines deep for a small delta
    _quiet(lambda: used.epsilon(1e-3))
    fresh = PrivacyBuckets().compose(GaussianMechanism(1.0), 4)
    for eps in (0.5, 2.0):
        again, _ = _quiet(lambda e=eps: used.delta(e))
        first, _ = _quiet(lambda e=eps: fresh.delta(e))
        assert (again.lower, again.upper) == (first.lower, first.upper)


# ---------------------------------------------------------------------------------------
# eps queries refine as delta queries do


@pytest.mark.parametrize(
    ("sigma", "releases", "target", "kind"),
    [(2.0, 10, 1e-6, "ADP"), (1.0, 1, 1e-2, "PDP"), (2.0, 10, 1e-3, "PDP")],
)
def test_epsilon_meets_the_accuracy_where_delta_does(sigma, releases, target, kind):
    """eps for 1e-6 was 3.6e-4 wide (one refinement, sized for the upper end); PDP eps was
    never refined."""
    accountant = PrivacyBuckets().compose(GaussianMechanism(sigma), releases)
    found, messages = _quiet(lambda: accountant.epsilon(target, kind=kind))
    truth = _gaussian_epsilon(sigma, releases, target, kind)
    assert found.lower <= truth <= found.upper, (found, truth)
    assert messages == []
    assert found.upper - found.lower <= accountant.accuracy * found.upper, found


def test_epsilon_below_the_round_off_warns_honestly(monkeypatch):
    """delta = 1e-13 (sigma 2, n 10): the delta brackets there are FFT round-off, not
    bucketing; the eps bracket still holds the closed form and the warning says why."""
    accountant = PrivacyBuckets().compose(GaussianMechanism(2.0), 10)
    monkeypatch.setattr(walks, "composed_gaussian", _NO_CLOSED_FORM)
    found, messages = _quiet(lambda: accountant.epsilon(1e-13))
    truth = _gaussian_epsilon(2.0, 10, 1e-13, "ADP")
    assert found.lower <= truth <= found.upper, (found, truth)
    achieved = (found.upper - found.lower) / found.upper
    assert len(messages) == 1 and f"relative eps bracket of {achieved:.3g}" in messages[0]
    assert "bucketing no longer limits it" in messages[0]


# ---------------------------------------------------------------------------------------
# soundness of the refined eps path against exact enumeration


@settings(max_examples=40, deadline=None)
@given(
    pair=worst_case_pairs(max_size=5),
    times=st.integers(1, 3),
    kind=st.sampled_from(["ADP", "PDP"]),
    target=st.floats(1e-9, 0.9),
)
@example(pair=_pair([0.5, 0.25, 0.25], [0.25, 0.25, 0.5]), times=3, kind="PDP", target=0.4)
@example(pair=_pair([0.6, 0.4], [0.4, 0.6]), times=2, kind="ADP", target=1e-3)
def test_epsilon_bracket_against_exact_enumeration(pair, times, kind, target):
    """At ``upper`` the exact delta is at most the target; at ``lower`` (when > 0) it
    exceeds it: ``lower`` is a point the search saw fail, not the first one that held."""
    accountant = PrivacyBuckets().compose(pair, times=times)
    try:
        found, _ = _quiet(lambda: accountant.epsilon(target, kind=kind))
    except InfeasibleTargetError:  # refused, not answered: the message is tested elsewhere
        return
    points = [found.upper] + ([found.lower] if found.lower > 0.0 else [])
    exact = exact_all([(pair.a, pair.b, times)], points)[(kind, "max")]
    with mpmath.workprec(PRECISION):
        assert exact[0] <= target, (found, float(exact[0]))
        if found.lower > 0.0:
            assert exact[1] > target, (found, float(exact[1]))
