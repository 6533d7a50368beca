"""``accountant="certified"``: Opacus's Gaussian DP-SGD, certified, through a real
``PrivacyEngine`` and Opacus's own methods."""

from __future__ import annotations

import math
import warnings

import pytest

pytest.importorskip("opacus")

from opacus import PrivacyEngine
from opacus.accountants import IAccountant, PRVAccountant, create_accountant
from opacus.accountants.utils import get_noise_multiplier as opacus_search
from scipy import optimize, stats

from accountant import (
    CertificationWarning,
    EpsilonBounds,
    InvalidInputError,
    PrivacyBuckets,
    SubsampledTruncatedGaussian,
)
from optimizers.opacus import (
    CertifiedGaussianAccountant,
    TruncatedDPOptimizer,
    TruncationSettings,
    get_noise_multiplier,
)
from tests.optimizers.opacus.support import model_and_optimizer, private, quietly, train


def test_registered_with_opacus():
    built = create_accountant(mechanism="certified")
    assert isinstance(built, CertifiedGaussianAccountant) and isinstance(built, IAccountant)
    assert built.mechanism() == "certified" and built.accuracy == 1e-3
    assert built.history == [] and len(built) == 0 and built.get_epsilon(1e-5) == 0.0
    assert isinstance(
        quietly(PrivacyEngine, accountant="certified").accountant, CertifiedGaussianAccountant
    )


def test_get_epsilon_is_the_certified_upper_bound_of_the_gaussian_steps():
    accountant = CertifiedGaussianAccountant()
    for sigma, rate in [(1.0, 0.1), (1.0, 0.1), (1.5, 0.1), (1.0, 0.1)]:
        accountant.step(noise_multiplier=sigma, sample_rate=rate)
    assert accountant.history == [(1.0, 0.1, 2), (1.5, 0.1, 1), (1.0, 0.1, 1)]
    direct = PrivacyBuckets(accuracy=1e-3)
    for sigma, times in [(1.0, 3), (1.5, 1)]:
        gaussian = SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=0.1, cut=math.inf)
        direct = direct.compose(gaussian, times=times)
    expected = direct.epsilon(1e-5)
    bounds = accountant.epsilon_bounds(1e-5)
    assert isinstance(bounds, EpsilonBounds) and bounds.releases == 4
    assert (bounds.lower, bounds.upper) == (expected.lower, expected.upper)
    assert accountant.get_epsilon(1e-5) == expected.upper > 0.0


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """eps of mu-GDP at ``delta``: the root of ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu -
    mu/2) = delta`` (Balle & Wang 2018, Theorem 8; Dong, Roth & Su 2022, Corollary 2.13)."""

    def excess(eps: float) -> float:
        high = stats.norm.cdf(-eps / mu + mu / 2)
        return high - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return optimize.brentq(excess, 0.0, 100.0, xtol=1e-12)


def test_full_batches_bracket_the_closed_form_gaussian():
    """Sampling rate 1: ``n`` steps at noise multiplier ``sigma`` are one Gaussian of
    ``mu = sqrt(n) / sigma`` (GDP composition), whose eps is known in closed form."""
    accountant = CertifiedGaussianAccountant()
    accountant.step(noise_multiplier=2.0, sample_rate=1.0, steps=16)
    exact = _gaussian_epsilon(math.sqrt(16) / 2.0, 1e-5)
    bounds = accountant.epsilon_bounds(1e-5)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper - bounds.lower < 1e-3 * exact
    assert exact == pytest.approx(9.9973, abs=1e-4)  # mu = 2


def test_prv_keywords_are_taken_and_a_wider_bracket_warns():
    accountant = CertifiedGaussianAccountant(accuracy=0.5)
    accountant.step(noise_multiplier=1.0, sample_rate=0.1, steps=10)
    upper = accountant.epsilon_bounds(1e-5).upper
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert accountant.get_epsilon(1e-5, eps_error=1.0, delta_error=1e-8) == upper
    with pytest.warns(CertificationWarning, match="wider than eps_error=1e-09"):
        assert accountant.get_epsilon(1e-5, eps_error=1e-9) == upper
    with pytest.raises(InvalidInputError, match=r"extra arguments \(\) \{'alphas': \[2\]\}"):
        accountant.get_epsilon(1e-5, alphas=[2])
    with pytest.raises(InvalidInputError, match=r"eps_error must be > 0, got -1\.0"):
        accountant.get_epsilon(1e-5, eps_error=-1.0)


def test_the_hook_refuses_an_optimizer_adding_truncated_noise():
    _, optimizer = model_and_optimizer()
    truncated = TruncatedDPOptimizer(
        optimizer,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        expected_batch_size=16,
        settings=TruncationSettings(cut=4.0),
    )
    accountant = CertifiedGaussianAccountant()
    hook = accountant.get_optimizer_hook_fn(sample_rate=0.25)
    with pytest.raises(InvalidInputError, match="got TruncatedDPOptimizer with cut 4 sigma"):
        hook(truncated)
    assert accountant.history == []


def test_opacus_state_of_gaussian_accountants_loads(tmp_path):
    """A checkpoint of a run under Opacus's PRV accountant continues under
    ``"certified"`` (the same Gaussian steps); a truncated one is refused."""
    prv = quietly(PrivacyEngine, accountant="prv")
    model, optimizer, data = private(prv)
    train(model, optimizer, data)
    path = tmp_path / "prv.pt"
    prv.save_checkpoint(path=path, module=model)
    certified = quietly(PrivacyEngine, accountant="certified")
    certified.load_checkpoint(path=path, module=model)
    assert certified.accountant.history == [(1.0, 0.25, 4)] == prv.accountant.history
    state = certified.accountant.state_dict()
    assert dict(state) == {"history": [(1.0, 0.25, 4)], "mechanism": "certified"}
    again = CertifiedGaussianAccountant()
    again.load_state_dict(state)
    assert again.get_epsilon(1e-5) == certified.get_epsilon(1e-5)
    with pytest.raises(InvalidInputError, match=r"must be one of \('certified', .*got 'truncated'"):
        again.load_state_dict({"history": [], "mechanism": "truncated"})
    assert again.history == [(1.0, 0.25, 4)]


def test_opacus_noise_search_with_the_certified_accountant_is_certified():
    """Opacus's ``get_noise_multiplier`` keeps the largest noise multiplier whose reported
    eps is below the target, and stops within ``epsilon_tolerance`` (0.01) of it: with
    the certified upper bound reported, the target holds certified."""
    sigma = opacus_search(
        target_epsilon=2.0, target_delta=1e-5, sample_rate=0.25, steps=8, accountant="certified"
    )
    accountant = CertifiedGaussianAccountant()
    accountant.history = [(sigma, 0.25, 8)]
    assert 2.0 - 0.01 <= accountant.get_epsilon(1e-5) <= 2.0
    ours = get_noise_multiplier(
        target_epsilon=2.0, target_delta=1e-5, sample_rate=0.25, steps=8, cut=math.inf
    )
    accountant.history = [(ours, 0.25, 8)]
    assert accountant.privacy_accountant().delta(2.0).upper <= 1e-5
    assert ours <= sigma * 1.001  # no more noise than Opacus's search asks for


def test_make_private_with_epsilon_through_opacus_is_certified():
    engine = quietly(PrivacyEngine, accountant="certified")
    model, optimizer, data = private(engine, "make_private_with_epsilon", target_epsilon=2.0)
    assert type(optimizer).__name__ == "DPOptimizer"  # Opacus's own optimiser
    train(model, optimizer, data, epochs=2)
    assert engine.accountant.history == [(optimizer.noise_multiplier, 0.25, 8)]
    assert 2.0 - 0.01 <= engine.get_epsilon(1e-5) <= 2.0


def prv_interval(history, delta: float, eps_error: float = 0.01) -> tuple[float, float]:
    """Opacus's PRV accountant's interval ``[eps_lower, eps_upper]`` for ``history``:
    the true eps lies in it (Gopi, Lee & Wutschitz 2021); ``get_epsilon`` returns
    ``eps_upper`` (``delta_error`` its default ``delta / 1000``)."""
    prv = PRVAccountant()
    prv.history = list(history)
    dprv = prv._get_dprv(eps_error=eps_error, delta_error=delta / 1000)
    lower, _, upper = dprv.compute_epsilon(delta, delta / 1000, eps_error)
    assert upper == prv.get_epsilon(delta, eps_error=eps_error)
    return lower, upper


def test_prv_interval_is_what_opacus_reports():
    lower, upper = prv_interval([(1.0, 0.05, 40)], 1e-5)
    assert 0.0 < lower < upper < lower + 0.05


def test_the_bracket_lies_in_prv_interval_of_the_same_history():
    accountant = CertifiedGaussianAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.05, steps=40)
    bounds = accountant.epsilon_bounds(1e-5)
    lower, upper = prv_interval(accountant.history, 1e-5)
    assert lower <= bounds.lower <= bounds.upper <= upper
