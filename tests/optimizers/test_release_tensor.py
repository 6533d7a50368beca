"""release_tensor: the tensor wrapper of accountant.release gives the same law, keeps
shape, dtype and device, and refuses what it cannot release."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; CI installs it

from accountant import InvalidInputError, noise  # noqa: E402
from accountant.noise.quantised import quantise  # noqa: E402
from optimizers.release import release_tensor  # noqa: E402

NOISE = noise.truncated_laplace(1.0, 5.0, 0.25)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_tensor_release_is_the_array_release(dtype):
    values = torch.tensor([[0.5, -1.25], [3.0, 0.0]], dtype=dtype)
    q = quantise(NOISE)
    noisy, result = release_tensor(values, q, sensitivity=0.5, rng=np.random.default_rng(4))
    assert noisy.shape == values.shape and noisy.dtype == dtype
    assert np.array_equal(
        noisy.double().numpy(),
        result.values.astype(np.float32 if dtype == torch.float32 else np.float64),
    )
    offsets = result.grid_positions - np.array([[2, -5], [12, 0]])
    assert (np.abs(offsets) <= 20).all() and result.releases == 4
    again, _ = release_tensor(values, q, sensitivity=0.5, rng=np.random.default_rng(4))
    assert torch.equal(noisy, again)  # the simulated draw is reproducible; secure is not


def test_snapping_and_refusals():
    values = torch.tensor([0.1, 0.3])
    _, result = release_tensor(values, NOISE, sensitivity=1.0, snap="nearest")
    assert result.snapped and result.source == "os.urandom"
    with pytest.raises(InvalidInputError, match="is not on the noise grid"):
        release_tensor(torch.tensor([0.1], dtype=torch.float64), NOISE, sensitivity=1.0)
    with pytest.raises(InvalidInputError, match=r"values must be a torch\.Tensor, got ndarray"):
        release_tensor(np.zeros(2), NOISE, sensitivity=1.0)
    with pytest.raises(
        InvalidInputError, match=r"values must have a floating dtype, got torch\.int64"
    ):
        release_tensor(torch.zeros(2, dtype=torch.int64), NOISE, sensitivity=1.0)
