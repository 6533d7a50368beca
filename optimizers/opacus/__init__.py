"""Opacus integration: DP-SGD certified by PrivacyBuckets, with Opacus's Gaussian noise or
with truncated Gaussian noise.

Install with the ``opacus`` extra (``pip install 'truncated-noise-accountant[opacus]'``).
Importing this package registers :class:`CertifiedGaussianAccountant` with Opacus under
the name ``"certified"`` (:mod:`optimizers.opacus.registry`). For Opacus's own Gaussian
noise a script changes one line::

    import optimizers.opacus  # registers accountant="certified"

    engine = PrivacyEngine(accountant="certified")  # was "prv" or "rdp"
    model, optimizer, loader = engine.make_private(...)  # or make_private_with_epsilon
    ...  # train as usual
    engine.get_epsilon(1e-5)  # certified upper bound on eps
    engine.accountant.epsilon_bounds(1e-5)  # the certified bracket

With ``poisson_sampling=False`` (the caller's own shuffled or fixed-order data loader)
Opacus's accountants, ``"certified"`` included, would account Poisson sampling; the
engine that reads the loader's sampler and certifies its epochs is
:class:`CertifiedPrivacyEngine` (:class:`ShuffledEpochsAccountant`)::

    from optimizers.opacus import CertifiedPrivacyEngine

    engine = CertifiedPrivacyEngine()  # was PrivacyEngine()
    model, optimizer, loader = engine.make_private(..., poisson_sampling=False)
    engine.get_epsilon(1e-5)  # certified upper bound for the loader's epochs
    engine.accountant.epsilon_bounds(1e-5)  # lower, upper and the Poisson figure

For truncated noise the engine is :class:`TruncatedPrivacyEngine`, with Opacus's methods::

    from optimizers.opacus import TruncatedPrivacyEngine

    engine = TruncatedPrivacyEngine(cut=10.0, truncation="renormalised")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader,
        noise_multiplier=1.0, max_grad_norm=1.0,
    )

Each step adds noise cut at ``cut * noise_multiplier * max_grad_norm`` per coordinate (a
:class:`TruncatedDPOptimizer`, or its twin for per-layer clipping,
``DistributedDataParallel`` or ghost clipping). With ``poisson_sampling=False`` the engine
accounts the loader's own shuffled or fixed-order epochs with that noise, as
:class:`CertifiedPrivacyEngine` does with Gaussian noise; with Poisson sampling each step is
accounted as one release of :class:`accountant.SubsampledTruncatedGaussian` (SPEC section 1,
"DP-SGD") on as many coordinates as the optimiser noises, composed in
:class:`accountant.dpsgd.DPSGDAccountant`: the one-dimensional pair's certified lower bound,
and an upper bound that covers every coordinate's cut (the coupling with the uncut Gaussian;
guide "Using with Opacus"). ``PrivacyEngine(accountant="truncated")`` is refused: Opacus's
own ``make_private`` would add untruncated noise.
"""

try:
    import opacus  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "optimizers.opacus needs Opacus, which is not installed; install the [opacus] "
        "extra: pip install 'truncated-noise-accountant[opacus]'"
    ) from exc

from optimizers.opacus.accountant import DEFAULT_ACCURACY, TruncatedAccountant
from optimizers.opacus.calibration import get_noise_multiplier
from optimizers.opacus.certified import CertifiedGaussianAccountant
from optimizers.opacus.certified_engine import CertifiedPrivacyEngine
from optimizers.opacus.engine import TruncatedPrivacyEngine
from optimizers.opacus.epochs import ShuffledEpochsAccountant
from optimizers.opacus.legacy import (
    make_private_truncated,
    make_private_truncated_with_epsilon,
    truncated_privacy_engine,
)
from optimizers.opacus.noise import truncated_gaussian_noise
from optimizers.opacus.optimizer import TruncatedDPOptimizer
from optimizers.opacus.registry import register
from optimizers.opacus.settings import (
    DEFAULT_CUT,
    DEFAULT_TRUNCATION,
    TRUNCATIONS,
    TruncationSettings,
)
from optimizers.opacus.state import CERTIFIED, MECHANISM, SHUFFLED_EPOCHS

register()

__all__ = [
    "CERTIFIED",
    "DEFAULT_ACCURACY",
    "DEFAULT_CUT",
    "DEFAULT_TRUNCATION",
    "MECHANISM",
    "SHUFFLED_EPOCHS",
    "TRUNCATIONS",
    "CertifiedGaussianAccountant",
    "CertifiedPrivacyEngine",
    "ShuffledEpochsAccountant",
    "TruncatedAccountant",
    "TruncatedDPOptimizer",
    "TruncatedPrivacyEngine",
    "TruncationSettings",
    "get_noise_multiplier",
    "make_private_truncated",
    "make_private_truncated_with_epsilon",
    "truncated_gaussian_noise",
    "truncated_privacy_engine",
]
