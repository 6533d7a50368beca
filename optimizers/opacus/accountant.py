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
(:class:`accountant.dpsgd.DPSGDAccountant`); ``d`` is read from the optimiser.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from opacus.accountants import IAccountant

from accountant import EpsilonBounds, InvalidInputError, SubsampledTruncatedGaussian
from accountant.dpsgd import DPSGDAccountant
from accountant.validation import (
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)
from optimizers.opacus.settings import DEFAULT_CUT, DEFAULT_TRUNCATION, TruncationSettings
from optimizers.opacus.state import (
    MECHANISM,
    HistoryEntry,
    checked_dimension,
    checked_entries,
    checked_history,
    checked_settings,
)

__all__ = ["DEFAULT_ACCURACY", "TruncatedAccountant"]

#: PrivacyBuckets accuracy (relative width of every certified delta bracket) by default.
DEFAULT_ACCURACY = 1e-4


def _accuracy(value: Any) -> float:
    result = check_positive_real("accuracy", value)
    if result >= 1.0:
        raise InvalidInputError(f"accuracy must lie in (0, 1), got {result!r}")
    return result


class TruncatedAccountant(IAccountant):
    """Opacus accountant (``opacus.accountants.IAccountant``) for truncated Gaussian noise.

    ``cut``: ``k``, noise cut at ``+-k * noise_multiplier * max_grad_norm`` (default
    :data:`~optimizers.opacus.settings.DEFAULT_CUT` = 10); ``truncation``:
    ``"renormalised"`` (= ``"resampled"``, the default) or ``"clamped"``; ``accuracy``:
    the PrivacyBuckets accuracy (default 1e-4); ``dimension``: the number of noised
    coordinates per step (the trainable parameters). The bound depends on it
    (:class:`accountant.dpsgd.DPSGDAccountant`); left ``None``, it is read from the
    optimiser the accountant is attached to at its first step, and a query before it is
    known is refused. Opacus's ``create_accountant("truncated")`` calls this without
    arguments, so ``PrivacyEngine(accountant="truncated")`` accounts the defaults; for
    other settings build one and assign it to ``privacy_engine.accountant`` before
    ``make_private`` (or use :func:`~optimizers.opacus.engine.truncated_privacy_engine`).

    ``history`` is Opacus's list of ``(noise_multiplier, sample_rate, steps)``, a repeated
    step merged into the last entry (as Opacus's RDP accountant does). The steps are
    composed when a bound is asked for, one mechanism per distinct
    ``(noise_multiplier, sample_rate)``, and the composition is kept until the history
    changes.
    """

    def __init__(
        self,
        cut: float = DEFAULT_CUT,
        truncation: str = DEFAULT_TRUNCATION,
        accuracy: float = DEFAULT_ACCURACY,
        dimension: int | None = None,
    ) -> None:
        self.settings = TruncationSettings(cut=cut, truncation=truncation)
        self.accuracy = _accuracy(accuracy)
        self._dimension = None if dimension is None else check_positive_int("dimension", dimension)
        super().__init__()  # sets self.history = [] (the setter below)

    @property
    def dimension(self) -> int | None:
        """Noised coordinates per step (``None`` until known)."""
        return self._dimension

    def learn_dimension(self, dimension: int) -> None:
        """Set :attr:`dimension` (from the optimiser at a step); refuses a different one
        once known, since the history was taken with the first."""
        dimension = check_positive_int("dimension", dimension)
        if self._dimension is None:
            self._dimension = dimension
            self._accounted = None
        elif dimension != self._dimension:
            raise InvalidInputError(
                f"dimension must stay {self._dimension} (the coordinates this accountant "
                f"has accounted), got {dimension}"
            )

    @property
    def history(self) -> list[HistoryEntry]:
        """Opacus's list of ``(noise_multiplier, sample_rate, steps)``. Assigning a list
        (as Opacus's ``get_noise_multiplier`` does) checks it and accounts it afresh;
        a list changed in place is checked and accounted afresh at the next query."""
        return self._history

    @history.setter
    def history(self, value: Any) -> None:
        self._rebuild(checked_entries(value, "history"))

    def _rebuild(self, entries: list[HistoryEntry]) -> None:
        """Take ``entries`` as the history (each checked to describe a valid step first;
        nothing changes if one is refused)."""
        mechanisms: dict[tuple[float, float], SubsampledTruncatedGaussian] = {}
        for sigma, rate, _ in entries:
            self._mechanism(mechanisms, sigma, rate)
        self._mechanisms, self._answers = mechanisms, {}
        self._history = list(entries)
        self._accounted: tuple | None = None
        self._composed: DPSGDAccountant | None = None

    def _synced(self) -> DPSGDAccountant:
        """The composition of :attr:`history` (composed again if the history changed)."""
        if self._dimension is None and self._history:
            raise InvalidInputError(
                "dimension is unknown: attach the accountant to a TruncatedDPOptimizer "
                "(make_private_truncated) or build TruncatedAccountant(dimension=d) with d "
                "the number of noised coordinates per step"
            )
        if self._composed is None or tuple(self._history) != self._accounted:
            entries = checked_entries(self._history, "history")
            # no step: nothing composed, whatever the dimension
            dimension = 1 if self._dimension is None else self._dimension
            composed = DPSGDAccountant(dimension=dimension, accuracy=self.accuracy)
            for sigma, rate, steps in entries:
                composed = composed.compose(self._mechanism(self._mechanisms, sigma, rate), steps)
            self._composed, self._answers = composed, {}
            self._history = list(entries)
            self._accounted = tuple(entries)
        return self._composed

    def _mechanism(
        self, cache: dict[tuple[float, float], Any], noise_multiplier: Any, sample_rate: Any
    ) -> SubsampledTruncatedGaussian:
        sigma = check_positive_real("noise_multiplier", noise_multiplier)
        rate = check_probability("sample_rate", sample_rate)
        if (sigma, rate) not in cache:
            cache[(sigma, rate)] = SubsampledTruncatedGaussian(
                sigma=sigma,
                sampling_rate=rate,
                cut=self.settings.cut,
                truncation=self.settings.truncation,
            )
        return cache[(sigma, rate)]

    def mechanism_of(
        self, noise_multiplier: float, sample_rate: float
    ) -> SubsampledTruncatedGaussian:
        """The release of one step (one object per ``(noise_multiplier, sample_rate)``)."""
        return self._mechanism(self._mechanisms, noise_multiplier, sample_rate)

    def step(self, *, noise_multiplier: float, sample_rate: float, steps: int = 1) -> None:
        """Account ``steps`` (default one) optimiser steps with these parameters."""
        mechanism = self.mechanism_of(noise_multiplier, sample_rate)
        steps = check_positive_int("steps", steps)
        entry = (mechanism.sigma, mechanism.sampling_rate)
        if self._history and self._history[-1][:2] == entry:
            self._history[-1] = (*entry, self._history[-1][2] + steps)
        else:
            self._history.append((*entry, steps))

    def privacy_accountant(self) -> DPSGDAccountant:
        """The certified accountant of every step so far (immutable)."""
        return self._synced()

    def epsilon_bounds(self, delta: float) -> EpsilonBounds:
        """Certified ``lower <= eps <= upper`` at ``delta`` (ADP, both directions) of the
        steps so far (``EpsilonBounds``; 0 before any step). Cached until the next step."""
        delta = check_target_delta("delta", delta)
        composed = self._synced()
        if delta not in self._answers:
            self._answers[delta] = composed.epsilon(delta)
        return self._answers[delta]

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """The certified upper bound on eps at ``delta`` (what Opacus reports)."""
        if args or kwargs:
            raise InvalidInputError(
                f"get_epsilon takes only delta, got extra arguments {args!r} {kwargs!r}"
            )
        return float(self.epsilon_bounds(delta).upper)

    def __len__(self) -> int:
        """The number of optimiser steps accounted (Opacus's RDP accountant returns the
        number of history entries instead)."""
        return sum(entry[2] for entry in self._history)

    @classmethod
    def mechanism(cls) -> str:
        """``"truncated"``."""
        return MECHANISM

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The step hook ``PrivacyEngine.make_private`` attaches to the optimiser. It refuses
        an optimiser that does not add this accountant's noise (e.g. Opacus's own
        ``DPOptimizer``, which adds untruncated Gaussian noise), before the step is taken."""
        rate = check_probability("sample_rate", sample_rate)

        def hook(optimizer: Any) -> None:
            settings = getattr(optimizer, "truncation_settings", None)
            if not isinstance(settings, TruncationSettings) or not settings.same_law(self.settings):
                raise InvalidInputError(
                    f"optimizer must add noise with {self.settings} (a TruncatedDPOptimizer "
                    f"from make_private_truncated), got {type(optimizer).__name__} with "
                    f"{settings if settings is not None else 'untruncated Gaussian noise'}"
                )
            self.learn_dimension(sum(p.numel() for p in optimizer.params))
            self.step(
                noise_multiplier=optimizer.noise_multiplier,
                sample_rate=rate * optimizer.accumulated_iterations,
            )

        return hook

    def state_dict(self, destination: Any = None) -> Any:
        """Opacus's state (``history``, ``mechanism``) and the ``settings`` it was
        accounted with (:mod:`~optimizers.opacus.state`)."""
        destination = OrderedDict() if destination is None else destination
        destination["history"] = list(self.history)
        destination["mechanism"] = MECHANISM
        destination["settings"] = {"cut": self.settings.cut, "truncation": self.settings.truncation}
        destination["dimension"] = self._dimension
        return destination

    def load_state_dict(self, state_dict: Any) -> None:
        """Replace the history by that of ``state_dict`` (every field checked first; this
        accountant is unchanged when it is refused)."""
        checked_settings(state_dict, self.settings)
        history = checked_history(state_dict)
        dimension = checked_dimension(state_dict, self._dimension)
        self._rebuild(history)
        self._dimension = dimension

    def __repr__(self) -> str:
        return (
            f"TruncatedAccountant(cut={self.settings.cut!r}, "
            f"truncation={self.settings.truncation!r}, accuracy={self.accuracy!r}, "
            f"dimension={self._dimension!r}, "
            f"steps={len(self)})"
        )
