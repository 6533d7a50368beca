"""Wiring a ``PrivacyEngine`` for truncated noise: one settings object for the noise and
the accountant.

``PrivacyEngine.make_private`` picks Opacus's optimiser class itself
(``get_optimizer_class``) and offers no way to pass another; :func:`make_private_truncated`
calls it (model, Poisson data loader, accountant hook) and then rebuilds the returned
``DPOptimizer`` as a :class:`~optimizers.opacus.optimizer.TruncatedDPOptimizer` with the
same arguments, the accountant's :class:`~optimizers.opacus.settings.TruncationSettings`
and the same step hook. Only the combination that yields a plain ``DPOptimizer`` is
supported: flat clipping, one process, per-example gradients by hooks or functorch, no
ghost clipping, Poisson sampling.
"""

from __future__ import annotations

from typing import Any

from opacus import PrivacyEngine
from opacus.optimizers import DPOptimizer

from accountant import InvalidInputError, NoiseCalibration, calibrate_noise_multiplier
from accountant.validation import (
    check_positive_int,
    check_positive_real,
    check_target_delta,
    shown,
)
from optimizers.opacus.accountant import DEFAULT_ACCURACY, TruncatedAccountant
from optimizers.opacus.optimizer import TruncatedDPOptimizer
from optimizers.opacus.settings import DEFAULT_CUT, DEFAULT_TRUNCATION, TruncationSettings

__all__ = [
    "make_private_truncated",
    "make_private_truncated_with_epsilon",
    "truncated_privacy_engine",
]

_UNSUPPORTED = {  # make_private arguments whose other values are not accounted
    "poisson_sampling": True,
    "clipping": "flat",
}


def truncated_privacy_engine(
    cut: float = DEFAULT_CUT,
    truncation: str = DEFAULT_TRUNCATION,
    accuracy: float = DEFAULT_ACCURACY,
    *,
    secure_mode: bool = False,
) -> PrivacyEngine:
    """``PrivacyEngine(accountant="truncated")`` whose accountant has these settings."""
    accountant = TruncatedAccountant(cut, truncation, accuracy)
    engine = PrivacyEngine(accountant="truncated", secure_mode=secure_mode)
    engine.accountant = accountant
    return engine


def _accountant_of(privacy_engine: Any, cut: Any, truncation: Any) -> TruncatedAccountant:
    accountant = getattr(privacy_engine, "accountant", None)
    if not isinstance(accountant, TruncatedAccountant):
        raise InvalidInputError(
            "privacy_engine.accountant must be a TruncatedAccountant "
            f"(PrivacyEngine(accountant='truncated')), got {shown(accountant)}"
        )
    own = accountant.settings
    asked = TruncationSettings(
        cut=own.cut if cut is None else cut,
        truncation=own.truncation if truncation is None else truncation,
    )
    if not asked.same_law(own):
        raise InvalidInputError(
            f"cut={asked.cut!r}, truncation={asked.truncation!r} do not match "
            f"privacy_engine.accountant ({own}); build the engine with "
            "truncated_privacy_engine(cut=..., truncation=...)"
        )
    return accountant


def _check_supported(kwargs: dict[str, Any]) -> None:
    for name, supported in _UNSUPPORTED.items():
        if name in kwargs and kwargs[name] != supported:
            raise InvalidInputError(
                f"{name}={kwargs[name]!r} is not supported with truncated noise (only "
                f"{name}={supported!r} is accounted)"
            )
    mode = kwargs.get("grad_sample_mode", "hooks")
    if mode not in ("hooks", "functorch", "ew"):
        raise InvalidInputError(
            f"grad_sample_mode={mode!r} is not supported with truncated noise "
            "(use 'hooks', 'functorch' or 'ew')"
        )


def make_private_truncated(
    privacy_engine: PrivacyEngine,
    *,
    module: Any,
    optimizer: Any,
    data_loader: Any,
    noise_multiplier: float,
    max_grad_norm: float,
    cut: float | None = None,
    truncation: str | None = None,
    **kwargs: Any,
) -> tuple[Any, TruncatedDPOptimizer, Any]:
    """``privacy_engine.make_private(...)`` with truncated Gaussian noise: returns
    ``(module, optimizer, data_loader)`` as Opacus does, the optimiser a
    :class:`~optimizers.opacus.optimizer.TruncatedDPOptimizer` sharing the accountant's
    settings. ``cut`` / ``truncation``: ``None`` takes the accountant's; a value that
    differs from it is refused. Further ``kwargs`` go to ``make_private`` (see the module
    docstring for what is supported)."""
    accountant = _accountant_of(privacy_engine, cut, truncation)
    _check_supported(kwargs)
    sigma = check_positive_real("noise_multiplier", noise_multiplier)
    check_positive_real("max_grad_norm", max_grad_norm)
    accountant.mechanism_of(sigma, 1.0 / check_positive_int("len(data_loader)", len(data_loader)))
    module, plain, data_loader = privacy_engine.make_private(
        module=module,
        optimizer=optimizer,
        data_loader=data_loader,
        noise_multiplier=sigma,
        max_grad_norm=max_grad_norm,
        **kwargs,
    )
    if type(plain) is not DPOptimizer:
        raise InvalidInputError(
            f"make_private chose {type(plain).__name__} (distributed training?); only the "
            "single-process DPOptimizer is supported with truncated noise"
        )
    truncated = TruncatedDPOptimizer(
        plain.original_optimizer,
        noise_multiplier=plain.noise_multiplier,
        max_grad_norm=plain.max_grad_norm,
        expected_batch_size=plain.expected_batch_size,
        settings=accountant.settings,
        loss_reduction=plain.loss_reduction,
        generator=plain.generator,
        secure_mode=plain.secure_mode,
    )
    truncated.attach_step_hook(plain.step_hook)
    return module, truncated, data_loader


def _noised_coordinates(optimizer: Any) -> int:
    """The coordinates DP-SGD noises per step: those of ``optimizer``'s parameters that
    require a gradient (what ``DPOptimizer.params`` keeps)."""
    return sum(
        p.numel() for group in optimizer.param_groups for p in group["params"] if p.requires_grad
    )


def make_private_truncated_with_epsilon(
    privacy_engine: PrivacyEngine,
    *,
    module: Any,
    optimizer: Any,
    data_loader: Any,
    target_epsilon: float,
    target_delta: float,
    epochs: int,
    max_grad_norm: float,
    tolerance: float = 1e-3,
    **kwargs: Any,
) -> tuple[Any, TruncatedDPOptimizer, Any, NoiseCalibration]:
    """:func:`make_private_truncated` with the noise multiplier from
    :func:`accountant.calibrate_noise_multiplier`: the smallest found whose certified
    delta at ``target_epsilon`` after ``epochs * len(data_loader)`` steps at sampling rate
    ``1 / len(data_loader)`` on the optimiser's trainable coordinates is at most
    ``target_delta``, with the accountant's cut and truncation. Returns ``(module,
    optimizer, data_loader, calibration)``. Refuses an accountant that has already
    accounted steps (the calibration assumes none)."""
    accountant = _accountant_of(privacy_engine, None, None)
    if len(accountant) > 0:
        raise InvalidInputError(
            f"privacy_engine.accountant has already accounted {len(accountant)} steps; "
            "calibration assumes none (use a fresh engine)"
        )
    batches = check_positive_int("len(data_loader)", len(data_loader))
    calibration = calibrate_noise_multiplier(
        epsilon=check_positive_real("target_epsilon", target_epsilon),
        delta=check_target_delta("target_delta", target_delta),
        sampling_rate=1.0 / batches,
        steps=check_positive_int("epochs", epochs) * batches,
        cut=accountant.settings.cut,
        dimension=_noised_coordinates(optimizer),
        truncation=accountant.settings.truncation,
        tolerance=tolerance,
    )
    module, truncated, data_loader = make_private_truncated(
        privacy_engine,
        module=module,
        optimizer=optimizer,
        data_loader=data_loader,
        noise_multiplier=calibration.sigma,
        max_grad_norm=max_grad_norm,
        **kwargs,
    )
    return module, truncated, data_loader, calibration
