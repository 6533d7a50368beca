"""The noise drawn is the law accounted: inside the cut, and distributed as
``scipy.stats.truncnorm`` (renormalised) or the clamped normal."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from scipy import stats  # noqa: E402

from optimizers.opacus import TruncationSettings, truncated_gaussian_noise  # noqa: E402
from optimizers.opacus.noise import cut_in_dtype  # noqa: E402

SIZE = 200_000


def _draw(cut: float, truncation: str, std: float = 2.0, dtype=torch.float64) -> np.ndarray:
    generator = torch.Generator().manual_seed(7)
    reference = torch.zeros(SIZE, dtype=dtype)
    settings = TruncationSettings(cut=cut, truncation=truncation)
    noise = truncated_gaussian_noise(std, settings, reference, generator=generator)
    assert noise.shape == reference.shape and noise.dtype == dtype
    return noise.numpy().astype(np.float64)


@pytest.mark.parametrize("truncation", ["renormalised", "resampled"])
def test_rejection_sampling_has_the_truncated_law(truncation):
    x = _draw(1.5, truncation)
    assert np.abs(x).max() <= 3.0
    result = stats.kstest(x, stats.truncnorm(-1.5, 1.5, scale=2.0).cdf)
    assert result.pvalue > 1e-3, result
    # and not the untruncated normal (the test has the power to tell them apart)
    assert stats.kstest(x, stats.norm(scale=2.0).cdf).pvalue < 1e-10


def test_clamping_puts_the_tails_on_the_cut():
    x = _draw(1.5, "clamped")
    assert np.abs(x).max() == 3.0
    tail = stats.norm.sf(1.5)  # mass of each atom
    for side in (-3.0, 3.0):
        share = np.mean(x == side)
        assert abs(share - tail) < 5 * np.sqrt(tail * (1 - tail) / SIZE), (side, share)
    inside = x[np.abs(x) < 3.0]
    law = stats.truncnorm(-1.5, 1.5, scale=2.0)
    assert stats.kstest(inside, law.cdf).pvalue > 1e-3


def test_float32_noise_never_exceeds_the_cut():
    """The cut is rounded down to float32, so no float32 draw lies beyond the real cut."""
    bound = 1.2 * 1.0  # rounds up to float32 1.2000000476837158
    assert float(torch.tensor(bound, dtype=torch.float32)) > bound
    assert float(cut_in_dtype(bound, torch.float32)) <= bound
    for truncation in ("renormalised", "clamped"):
        x = _draw(1.2, truncation, std=1.0, dtype=torch.float32)
        assert np.abs(x).max() <= bound
