"""An Opacus accountant that certifies DP-SGD with truncated Gaussian noise.

Each optimiser step of DP-SGD with noise multiplier ``sigma``, Poisson sampling rate ``q``
and noise cut at ``k sigma C`` is one release of
:class:`accountant.SubsampledTruncatedGaussian` ``(sigma, q, k, truncation)``, the pair

    A = noise,    B = (1 - q) noise + q (noise + C)

of SPEC section 1 ("DP-SGD"; paper, section "DP-SGD"), with ``noise`` the Gaussian of
standard deviation ``sigma C`` cut at ``+-k sigma C``. The steps are composed in
:class:`accountant.PrivacyBuckets` (SPEC section 2), which certifies
``lower <= eps(delta) <= upper``; :meth:`TruncatedAccountant.get_epsilon` returns the
certified ``upper``, :meth:`TruncatedAccountant.epsilon_bounds` the whole bracket.

For a gradient of ``d > 1`` coordinates, each cut separately, that pair gives the lower
bound and the coupling with the uncut Gaussian the upper one
(:class:`accountant.dpsgd.DPSGDAccountant`); ``d`` is read from the optimiser (or set by
:class:`~optimizers.opacus.engine.TruncatedPrivacyEngine` when it makes one). The
history, state and queries are those of
:class:`~optimizers.opacus.composing.ComposingAccountant`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from accountant import InvalidInputError, SubsampledTruncatedGaussian
from accountant.dpsgd import DPSGDAccountant
from accountant.validation import check_positive_int
from optimizers.opacus.composing import DEFAULT_ACCURACY, ComposingAccountant
from optimizers.opacus.settings import DEFAULT_CUT, DEFAULT_TRUNCATION, TruncationSettings
from optimizers.opacus.state import MECHANISM, checked_dimension, checked_settings

__all__ = ["DEFAULT_ACCURACY", "TruncatedAccountant"]


class TruncatedAccountant(ComposingAccountant):
    """Opacus accountant (``opacus.accountants.IAccountant``) for truncated Gaussian noise.

    ``cut``: ``k``, noise cut at ``+-k * noise_multiplier * max_grad_norm`` (default
    :data:`~optimizers.opacus.settings.DEFAULT_CUT` = 10); ``truncation``:
    ``"renormalised"`` (= ``"resampled"``, the default) or ``"clamped"``; ``accuracy``:
    the PrivacyBuckets accuracy (default 1e-4); ``dimension``: the number of noised
    coordinates per step (the trainable parameters). The bound depends on it
    (:class:`accountant.dpsgd.DPSGDAccountant`); left ``None``, it is read from the
    optimiser the accountant is attached to (when
    :class:`~optimizers.opacus.engine.TruncatedPrivacyEngine` makes it, else at its first
    step), and a query before it is known is refused. Use it through
    ``TruncatedPrivacyEngine(cut=..., truncation=...)``, which builds it and the
    optimiser that adds its noise; Opacus's ``create_accountant("truncated")`` (and so
    ``PrivacyEngine(accountant="truncated")``) is refused, since Opacus's own
    ``make_private`` adds untruncated noise (:mod:`optimizers.opacus.registry`).
    """

    MECHANISM: ClassVar[str] = MECHANISM
    LOADS: ClassVar[tuple[str, ...]] = (MECHANISM,)

    def __init__(
        self,
        cut: float = DEFAULT_CUT,
        truncation: str = DEFAULT_TRUNCATION,
        accuracy: float = DEFAULT_ACCURACY,
        dimension: int | None = None,
    ) -> None:
        self.settings = TruncationSettings(cut=cut, truncation=truncation)
        self._dimension = None if dimension is None else check_positive_int("dimension", dimension)
        super().__init__(accuracy)

    @property
    def dimension(self) -> int | None:
        """Noised coordinates per step (``None`` until known)."""
        return self._dimension

    def learn_dimension(self, dimension: int) -> None:
        """Set :attr:`dimension` (from the optimiser); refuses a different one once known,
        since the history was taken with the first."""
        dimension = check_positive_int("dimension", dimension)
        if self._dimension is None:
            self._dimension = dimension
            self._forget()
        elif dimension != self._dimension:
            raise InvalidInputError(
                f"dimension must stay {self._dimension} (the coordinates this accountant "
                f"has accounted), got {dimension}"
            )

    def release(self, sigma: float, rate: float) -> SubsampledTruncatedGaussian:
        """``SubsampledTruncatedGaussian(sigma, rate, cut, truncation)``."""
        return SubsampledTruncatedGaussian(
            sigma=sigma,
            sampling_rate=rate,
            cut=self.settings.cut,
            truncation=self.settings.truncation,
        )

    def empty(self) -> DPSGDAccountant:
        """``DPSGDAccountant(dimension, accuracy)`` (no step: nothing is composed, so any
        dimension will do)."""
        dimension = 1 if self._dimension is None else self._dimension
        return DPSGDAccountant(dimension=dimension, accuracy=self.accuracy)

    def check_ready(self) -> None:
        """Refuse a query while :attr:`dimension` is unknown."""
        if self._dimension is None:
            raise InvalidInputError(
                "dimension is unknown: make the optimiser with TruncatedPrivacyEngine"
                "(...).make_private, or build TruncatedAccountant(dimension=d) with d the "
                "number of noised coordinates per step"
            )

    def check_optimizer(self, optimizer: Any) -> None:
        """Refuse an optimiser that does not add this accountant's noise (e.g. Opacus's
        own ``DPOptimizer``, which adds untruncated Gaussian noise); learn
        :attr:`dimension` from its trainable parameters."""
        settings = getattr(optimizer, "truncation_settings", None)
        if not isinstance(settings, TruncationSettings) or not settings.same_law(self.settings):
            raise InvalidInputError(
                f"optimizer must add noise with {self.settings} (a TruncatedDPOptimizer "
                f"from TruncatedPrivacyEngine.make_private), got {type(optimizer).__name__} "
                f"with {settings if settings is not None else 'untruncated Gaussian noise'}"
            )
        self.learn_dimension(sum(p.numel() for p in optimizer.params))

    def extra_state(self) -> dict[str, Any]:
        """The ``settings`` the history was accounted with and the ``dimension``."""
        return {
            "settings": {"cut": self.settings.cut, "truncation": self.settings.truncation},
            "dimension": self._dimension,
        }

    def checked_extra_state(self, state: Any) -> Any:
        """Refuse other settings or another known dimension."""
        checked_settings(state, self.settings)
        dimension = checked_dimension(state, self._dimension)

        def apply() -> None:
            self._dimension = dimension

        return apply

    def __repr__(self) -> str:
        return (
            f"TruncatedAccountant(cut={self.settings.cut!r}, "
            f"truncation={self.settings.truncation!r}, accuracy={self.accuracy!r}, "
            f"dimension={self._dimension!r}, "
            f"steps={len(self)})"
        )
