"""The torch wrappers return the accountant's values and pass gradcheck in float64."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant import ExtendedMA, WorstCasePair, noise  # noqa: E402
from accountant.learning.smooth_loss import smooth_bucket_delta  # noqa: E402
from optimizers.autograd import buckets_delta, extended_ma_delta  # noqa: E402


def _asymmetric_logits() -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(9, dtype=torch.float64, generator=generator, requires_grad=True)


@pytest.mark.parametrize("conversion", ["tight", "paper"])
@pytest.mark.parametrize("direction", ["A/B", "B/A"])
def test_gradcheck_through_softmax(conversion, direction):
    def loss(logits):
        pmf = torch.softmax(logits, dim=0)
        return extended_ma_delta(
            pmf,
            step=0.5,
            sensitivity=1.0,
            epsilon=0.5,
            times=4,
            conversion=conversion,
            direction=direction,
        )

    assert torch.autograd.gradcheck(loss, (_asymmetric_logits(),), eps=1e-6, atol=1e-8)


def test_value_is_the_accountants():
    p = noise.truncated_gaussian(2.0, 6.0, 0.5)
    tensor = torch.tensor(p.pmf, dtype=torch.float64, requires_grad=True)
    value = extended_ma_delta(tensor, step=0.5, sensitivity=1.0, epsilon=0.7, times=16)
    expected = ExtendedMA().compose(WorstCasePair.additive(p, 1.0), 16).delta(0.7).upper
    assert value.item() == pytest.approx(expected, rel=1e-14)
    value.backward()
    assert torch.isfinite(tensor.grad).all() and tensor.grad.abs().sum() > 0


@pytest.mark.parametrize("kind", ["ADP", "PDP"])
@pytest.mark.parametrize("times", [1, 4])
@pytest.mark.parametrize("q", [None, 0.3])
def test_buckets_gradcheck_through_softmax(kind, times, q):
    def loss(logits):
        pmf = torch.softmax(logits, dim=0)
        return buckets_delta(
            pmf,
            step=0.5,
            sensitivity=1.0,
            epsilon=0.4,
            times=times,
            kind=kind,
            q=q,
            width=0.0123,
        )

    assert torch.autograd.gradcheck(loss, (_asymmetric_logits(),), eps=1e-6, atol=1e-7)


def test_extended_ma_gradcheck_for_the_dp_sgd_pair():
    def loss(logits):
        pmf = torch.softmax(logits, dim=0)
        return extended_ma_delta(pmf, step=0.5, sensitivity=0.5, epsilon=0.5, times=8, q=0.2)

    assert torch.autograd.gradcheck(loss, (_asymmetric_logits(),), eps=1e-6, atol=1e-8)


def test_buckets_value_is_the_accountants():
    p = noise.truncated_gaussian(2.0, 6.0, 0.5)
    tensor = torch.tensor(p.pmf, dtype=torch.float64)
    value = buckets_delta(tensor, step=0.5, sensitivity=1.0, epsilon=0.3, times=8, kind="PDP")
    pair = WorstCasePair.additive(p, 1.0)
    expected = smooth_bucket_delta(pair, 0.3, 8, kind="PDP").delta
    assert value.item() == expected
