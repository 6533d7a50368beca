"""Opacus integration: DP-SGD with truncated Gaussian noise, certified by PrivacyBuckets.

Install with the ``opacus`` extra (``pip install 'truncated-noise-accountant[opacus]'``).
Importing this package registers :class:`TruncatedAccountant` with Opacus under the
name ``"truncated"``, so ``PrivacyEngine(accountant="truncated")`` accounts with it::

    import optimizers.opacus  # registers accountant="truncated"
    from optimizers.opacus import make_private_truncated, truncated_privacy_engine

    engine = truncated_privacy_engine(cut=8.0, truncation="renormalised")
    model, optimizer, loader = make_private_truncated(
        engine, module=model, optimizer=optimizer, data_loader=loader,
        noise_multiplier=1.0, max_grad_norm=1.0,
    )
    ...  # train as usual
    engine.get_epsilon(1e-5)  # certified upper bound on eps
    engine.accountant.epsilon_bounds(1e-5)  # the certified bracket

Each step adds noise cut at ``cut * noise_multiplier * max_grad_norm`` per coordinate
(:class:`TruncatedDPOptimizer`) and is accounted as one release of
:class:`accountant.SubsampledTruncatedGaussian` (SPEC section 1, "DP-SGD") on as many
coordinates as the optimiser noises, composed in :class:`accountant.dpsgd.DPSGDAccountant`:
the one-dimensional pair's certified lower bound, and an upper bound that covers every
coordinate's cut (the coupling with the uncut Gaussian; guide "Using with Opacus").
"""

try:
    import opacus  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "optimizers.opacus needs Opacus, which is not installed; install the [opacus] "
        "extra: pip install 'truncated-noise-accountant[opacus]'"
    ) from exc

from opacus.accountants import register_accountant

from optimizers.opacus.accountant import DEFAULT_ACCURACY, TruncatedAccountant
from optimizers.opacus.engine import (
    make_private_truncated,
    make_private_truncated_with_epsilon,
    truncated_privacy_engine,
)
from optimizers.opacus.noise import truncated_gaussian_noise
from optimizers.opacus.optimizer import TruncatedDPOptimizer
from optimizers.opacus.settings import (
    DEFAULT_CUT,
    DEFAULT_TRUNCATION,
    TRUNCATIONS,
    TruncationSettings,
)
from optimizers.opacus.state import MECHANISM

# force: importing again (e.g. a reloaded module) replaces the earlier class
register_accountant(MECHANISM, TruncatedAccountant, force=True)

__all__ = [
    "DEFAULT_ACCURACY",
    "DEFAULT_CUT",
    "DEFAULT_TRUNCATION",
    "MECHANISM",
    "TRUNCATIONS",
    "TruncatedAccountant",
    "TruncatedDPOptimizer",
    "TruncationSettings",
    "make_private_truncated",
    "make_private_truncated_with_epsilon",
    "truncated_gaussian_noise",
    "truncated_privacy_engine",
]
