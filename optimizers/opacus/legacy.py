"""The functions of the first Opacus integration, kept working and deprecated:
:class:`~optimizers.opacus.engine.TruncatedPrivacyEngine` does what they did with
Opacus's own method names.

* ``truncated_privacy_engine(cut, truncation, accuracy)`` is
  ``TruncatedPrivacyEngine(cut=cut, truncation=truncation, accuracy=accuracy)``;
* ``make_private_truncated(engine, ...)`` is ``engine.make_private(...)`` with its first
  contract: flat clipping, Poisson sampling, per-example gradients by hooks, functorch
  or ``"ew"``, three objects returned; ``cut`` / ``truncation`` given must be the
  engine's;
* ``make_private_truncated_with_epsilon(engine, ...)`` is
  ``engine.make_private_with_epsilon(...)`` with that contract, returning the
  :class:`accountant.NoiseCalibration` as a fourth object (``engine.calibration``).
"""

from __future__ import annotations

from typing import Any

from opacus import PrivacyEngine

from accountant import InvalidInputError, NoiseCalibration
from accountant.learning.shuffled_calibration import SamplerCalibration
from accountant.validation import shown
from optimizers.opacus.accountant import DEFAULT_ACCURACY, TruncatedAccountant
from optimizers.opacus.engine import TruncatedPrivacyEngine
from optimizers.opacus.optimizer import TruncatedDPOptimizer
from optimizers.opacus.settings import DEFAULT_CUT, DEFAULT_TRUNCATION, TruncationSettings

__all__ = [
    "make_private_truncated",
    "make_private_truncated_with_epsilon",
    "truncated_privacy_engine",
]

_FIRST_CONTRACT = {  # make_private arguments whose other values these functions refuse
    "poisson_sampling": True,
    "clipping": "flat",
}


def truncated_privacy_engine(
    cut: float = DEFAULT_CUT,
    truncation: str = DEFAULT_TRUNCATION,
    accuracy: float = DEFAULT_ACCURACY,
    *,
    secure_mode: bool = False,
) -> TruncatedPrivacyEngine:
    """Deprecated: ``TruncatedPrivacyEngine(cut=..., truncation=..., accuracy=...)``."""
    return TruncatedPrivacyEngine(
        cut=cut, truncation=truncation, accuracy=accuracy, secure_mode=secure_mode
    )


def _engine_of(privacy_engine: Any, cut: Any, truncation: Any) -> TruncatedPrivacyEngine:
    accountant = getattr(privacy_engine, "accountant", None)
    if not isinstance(accountant, TruncatedAccountant):
        raise InvalidInputError(
            "privacy_engine.accountant must be a TruncatedAccountant "
            f"(TruncatedPrivacyEngine(cut=..., truncation=...)), got {shown(accountant)}"
        )
    if not isinstance(privacy_engine, TruncatedPrivacyEngine):
        raise InvalidInputError(
            "privacy_engine must be a TruncatedPrivacyEngine (Opacus's own make_private adds "
            f"untruncated noise), got {type(privacy_engine).__name__}"
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
            "TruncatedPrivacyEngine(cut=..., truncation=...)"
        )
    return privacy_engine


def _check_first_contract(kwargs: dict[str, Any]) -> None:
    for name, supported in _FIRST_CONTRACT.items():
        if name in kwargs and kwargs[name] != supported:
            raise InvalidInputError(
                f"{name}={kwargs[name]!r} is not supported by make_private_truncated (only "
                f"{name}={supported!r}; TruncatedPrivacyEngine.make_private takes "
                "clipping='per_layer' too)"
            )
    mode = kwargs.get("grad_sample_mode", "hooks")
    if mode not in ("hooks", "functorch", "ew"):
        raise InvalidInputError(
            f"grad_sample_mode={mode!r} is not supported by make_private_truncated (use "
            "'hooks', 'functorch' or 'ew'; TruncatedPrivacyEngine.make_private takes "
            "'ghost' too)"
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
    """Deprecated: ``privacy_engine.make_private(...)`` of a
    :class:`~optimizers.opacus.engine.TruncatedPrivacyEngine` (module docstring)."""
    engine = _engine_of(privacy_engine, cut, truncation)
    _check_first_contract(kwargs)
    return engine.make_private(
        module=module,
        optimizer=optimizer,
        data_loader=data_loader,
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        **kwargs,
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
) -> tuple[Any, TruncatedDPOptimizer, Any, NoiseCalibration | SamplerCalibration | None]:
    """Deprecated: ``privacy_engine.make_private_with_epsilon(...)`` of a
    :class:`~optimizers.opacus.engine.TruncatedPrivacyEngine`, with
    ``privacy_engine.calibration`` returned as a fourth object (module docstring)."""
    engine = _engine_of(privacy_engine, None, None)
    _check_first_contract(kwargs)
    module, optimizer, data_loader = engine.make_private_with_epsilon(
        module=module,
        optimizer=optimizer,
        data_loader=data_loader,
        target_epsilon=target_epsilon,
        target_delta=target_delta,
        epochs=epochs,
        max_grad_norm=max_grad_norm,
        tolerance=tolerance,
        **kwargs,
    )
    return module, optimizer, data_loader, engine.calibration
