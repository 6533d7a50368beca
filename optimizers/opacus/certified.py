"""An Opacus accountant that certifies plain (Gaussian) DP-SGD: ``accountant="certified"``.

Each optimiser step of Opacus's DP-SGD with noise multiplier ``sigma`` and Poisson
sampling rate ``q`` adds ``N(0, (sigma C)^2 I_d)`` to the sum of per-example gradients
clipped to L2 norm ``C``. It is one release of
:class:`accountant.SubsampledTruncatedGaussian` ``(sigma, q, cut=inf)``, the pair

    A = N(0, sigma^2),    B = (1 - q) N(0, sigma^2) + q N(1, sigma^2)

(SPEC section 1, "DP-SGD", in units of ``C``), whatever the number ``d`` of coordinates:
the Gaussian is rotation invariant, so for neighbouring inputs whose clipped gradients
differ by a vector ``v`` (``|v| <= C``) the output projected on ``v``'s direction is that
pair (shifted by ``|v| <= C``, dominated by the shift ``C``), and the ``d - 1``
orthogonal coordinates have the same law under both inputs and carry nothing. So the
one-dimensional pair is the ``d``-dimensional mechanism exactly; no dimension is needed.
The steps are composed in :class:`accountant.PrivacyBuckets` (SPEC section 2), which
certifies ``lower <= eps(delta) <= upper``:
:meth:`CertifiedGaussianAccountant.get_epsilon` returns ``upper`` (what
``PrivacyEngine.get_epsilon`` reports), :meth:`CertifiedGaussianAccountant.epsilon_bounds`
the bracket. Opacus's own accountants give an estimate with an error allowance (PRV) or
a looser bound (RDP), no bracket.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any, ClassVar

from opacus import PrivacyEngine
from opacus.utils.uniform_sampler import (
    DistributedUniformWithReplacementSampler,
    UniformWithReplacementSampler,
)

from accountant import InvalidInputError, PrivacyBuckets, SubsampledTruncatedGaussian
from optimizers.opacus.composing import ComposingAccountant
from optimizers.opacus.state import CERTIFIED, GAUSSIAN_MECHANISMS

__all__ = [
    "DEFAULT_CERTIFIED_ACCURACY",
    "CertifiedGaussianAccountant",
    "non_poisson_loader_of_make_private",
]

#: PrivacyBuckets accuracy of ``CertifiedGaussianAccountant()`` (what ``create_accountant``
#: builds): a relative delta bracket of 1e-3, whose eps bracket is far narrower than
#: PRV's default ``eps_error`` of 0.01 (sigma 1.1, q 0.05, 40 steps, delta 1e-5: eps in
#: [2.00341, 2.00390]); Opacus's ``get_noise_multiplier`` queries about fifteen noise
#: multipliers, each about twice as fast as at 1e-4.
DEFAULT_CERTIFIED_ACCURACY = 1e-3


class CertifiedGaussianAccountant(ComposingAccountant):
    """Opacus accountant (``opacus.accountants.IAccountant``) for Opacus's Gaussian noise,
    registered as ``"certified"``: ``PrivacyEngine(accountant="certified")`` with Opacus's
    own ``make_private``, ``make_private_with_epsilon`` (through Opacus's
    ``get_noise_multiplier``, whose search keeps the largest noise multiplier's certified
    eps at or below the target), ``get_epsilon`` (the certified upper bound) and
    checkpoints. ``accuracy``: the PrivacyBuckets accuracy (default
    :data:`DEFAULT_CERTIFIED_ACCURACY`).

    :meth:`load_state_dict` also takes the state of Opacus's ``"prv"``, ``"rdp"`` and
    ``"gdp"`` accountants: their history is the same list of Gaussian steps. The step
    hook refuses an optimiser that adds truncated noise (a
    :class:`~optimizers.opacus.optimizer.TruncatedDPOptimizer`): the Gaussian does not
    bound it (its cut has distinguishing events); use
    :class:`~optimizers.opacus.engine.TruncatedPrivacyEngine`.

    **Poisson sampling only.** Every step is accounted as Poisson-sampled at Opacus's rate
    ``1 / len(data_loader)``. Opacus's ``make_private(poisson_sampling=False)`` keeps the
    caller's loader (shuffled or fixed-order batches), for which that figure is no bound;
    an accountant is only handed the rate, never the loader. What it can see: when Opacus's
    own ``PrivacyEngine.make_private`` asks for the step hook
    (:meth:`get_optimizer_hook_fn`), the loader it has prepared is a local of that call,
    and it is Poisson-sampled exactly when its batch sampler is Opacus's
    ``UniformWithReplacementSampler`` (or its distributed twin, what
    ``DPDataLoader`` uses). Any other loader is refused there, pointing to
    :class:`~optimizers.opacus.certified_engine.CertifiedPrivacyEngine` (by then Opacus
    has wrapped the model). A hook asked for any other way (not from
    ``PrivacyEngine.make_private``, or on an interpreter without frame introspection)
    cannot be checked: the steps are then accounted as Poisson-sampled, as Opacus's own
    accountants do. The batch sizes the step hook sees cannot tell the samplers apart
    soundly (Opacus's ``BatchMemoryManager`` splits batches; a Poisson batch may have
    exactly the expected size).
    """

    MECHANISM: ClassVar[str] = CERTIFIED
    LOADS: ClassVar[tuple[str, ...]] = GAUSSIAN_MECHANISMS

    def __init__(self, accuracy: float = DEFAULT_CERTIFIED_ACCURACY) -> None:
        super().__init__(accuracy)

    def release(self, sigma: float, rate: float) -> SubsampledTruncatedGaussian:
        """``SubsampledTruncatedGaussian(sigma, rate, cut=inf)``: the subsampled Gaussian."""
        return SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=rate, cut=math.inf)

    def empty(self) -> PrivacyBuckets:
        """``PrivacyBuckets(accuracy)``."""
        return PrivacyBuckets(accuracy=self.accuracy)

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The step hook (:meth:`ComposingAccountant.get_optimizer_hook_fn`); refused when
        Opacus's ``PrivacyEngine.make_private`` asks for it with a loader that is not
        Poisson-sampled (class docstring)."""
        loader = non_poisson_loader_of_make_private()
        if loader is not None:
            sampler = type(getattr(loader, "sampler", None)).__name__
            raise InvalidInputError(
                "poisson_sampling=False is not accounted by accountant='certified' (it "
                "accounts Poisson sampling at rate 1 / len(data_loader)), got a "
                f"{type(loader).__name__} with data_loader.sampler {sampler}: use "
                "optimizers.opacus.CertifiedPrivacyEngine(), which certifies shuffled and "
                "fixed-order epochs"
            )
        return super().get_optimizer_hook_fn(sample_rate)

    def check_optimizer(self, optimizer: Any) -> None:
        """Refuse an optimiser that adds truncated noise."""
        settings = getattr(optimizer, "truncation_settings", None)
        if settings is not None:
            raise InvalidInputError(
                "optimizer must add Opacus's untruncated Gaussian noise to be accounted by "
                f"CertifiedGaussianAccountant, got {type(optimizer).__name__} with {settings} "
                "(use TruncatedPrivacyEngine, whose accountant accounts the cut)"
            )

    def __repr__(self) -> str:
        return f"CertifiedGaussianAccountant(accuracy={self.accuracy!r}, steps={len(self)})"


#: Batch samplers of Opacus's Poisson-sampling ``DPDataLoader``.
POISSON_BATCH_SAMPLERS = (UniformWithReplacementSampler, DistributedUniformWithReplacementSampler)


def non_poisson_loader_of_make_private(depth: int = 4) -> Any:
    """The data loader prepared by Opacus's ``PrivacyEngine.make_private`` when it is on
    the call stack (within ``depth`` frames) and its loader is not Poisson-sampled (its
    ``batch_sampler`` not one of :data:`POISSON_BATCH_SAMPLERS`); ``None`` otherwise, or
    when the stack cannot be read."""
    frame = inspect.currentframe()
    try:
        for _ in range(depth):
            frame = frame.f_back if frame is not None else None
            if frame is None:
                return None
            if frame.f_code is PrivacyEngine.make_private.__code__:
                loader = frame.f_locals.get("data_loader")
                batches = getattr(loader, "batch_sampler", None)
                return None if isinstance(batches, POISSON_BATCH_SAMPLERS) else loader
        return None
    finally:
        del frame
