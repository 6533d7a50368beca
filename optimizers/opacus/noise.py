"""Drawing the truncated Gaussian noise that is accounted, in torch.

Each coordinate is drawn from ``N(0, std^2)`` and then, with ``r = cut * std``:

* ``"renormalised"`` / ``"resampled"``: every coordinate with ``|x| > r`` is drawn again,
  until none is left. A draw kept is a normal draw conditioned on ``|x| <= r``, so each
  coordinate has exactly the law ``phi(x / std) / (std Z)`` on ``[-r, r]``,
  ``Z = Phi(cut) - Phi(-cut)`` (the renormalised cut of
  :class:`accountant.SubsampledTruncatedGaussian`); the coordinates stay independent.
  The expected number of rounds is small: a coordinate is redrawn with probability
  ``2 Phi(-cut)``.
* ``"clamped"``: ``torch.clamp(x, -r, r)``: atoms of mass ``Phi(-cut)`` at ``+-r``.

``r`` is rounded down to the tensor's dtype, so no coordinate exceeds the real ``r``.
The law is that of the floating-point normal draws of ``torch.normal`` (as Opacus's own
noise); with ``secure_mode`` each draw is Opacus's sum of four normals halved (same law,
resists the floating-point attacks Opacus cites).
"""

from __future__ import annotations

from typing import Any, cast

import torch

from accountant import InvalidInputError
from accountant.validation import check_positive_real, shown
from optimizers.opacus.settings import TruncationSettings

__all__ = ["cut_in_dtype", "truncated_gaussian_noise"]


def cut_in_dtype(bound: float, dtype: torch.dtype) -> torch.Tensor:
    """``bound`` as a 0-d tensor of ``dtype``, rounded down (never above ``bound``)."""
    value = torch.tensor(bound, dtype=dtype)
    if value.item() > bound:
        value = torch.nextafter(value, torch.zeros_like(value))
    return value


def _normal(
    std: float,
    size: tuple[int, ...],
    like: torch.Tensor,
    generator: torch.Generator | None,
    secure_mode: bool,
) -> torch.Tensor:
    """``N(0, std^2)`` draws of shape ``size`` on ``like``'s device and dtype."""
    kw: dict[str, Any] = {
        "size": size,
        "device": like.device,
        "dtype": like.dtype,
        "generator": generator,
    }
    if not secure_mode:
        return torch.normal(0.0, std, **kw)
    torch.normal(0.0, std, size=(1, 1), device=like.device, generator=generator)
    # (a sum of tensors is a tensor; typeshed types sum() as possibly its start, 0)
    return cast(torch.Tensor, sum(torch.normal(0.0, std, **kw) for _ in range(4))) / 2


def truncated_gaussian_noise(
    std: float,
    settings: TruncationSettings,
    reference: torch.Tensor,
    generator: torch.Generator | None = None,
    secure_mode: bool = False,
) -> torch.Tensor:
    """Noise of ``reference``'s shape, dtype and device: ``N(0, std^2)`` per coordinate,
    cut at ``settings.cut * std`` as ``settings.truncation`` says (module docstring)."""
    std = check_positive_real("std", std)
    if not isinstance(settings, TruncationSettings):
        raise InvalidInputError(f"settings must be a TruncationSettings, got {shown(settings)}")
    if not isinstance(reference, torch.Tensor) or not reference.is_floating_point():
        raise InvalidInputError(
            f"reference must be a floating-point torch.Tensor, got {shown(reference)}"
        )
    noise = _normal(std, tuple(reference.shape), reference, generator, secure_mode)
    bound = cut_in_dtype(settings.bound(std), reference.dtype).to(reference.device)
    if settings.law == "clamped":
        return torch.clamp(noise, -bound, bound)
    outside = noise.abs() > bound
    while bool(outside.any()):
        redrawn = _normal(std, (int(outside.sum()),), reference, generator, secure_mode)
        noise[outside] = redrawn
        outside = noise.abs() > bound
    return noise
