"""What every Opacus accountant of this package shares: Opacus's step history, composed
in a certified accountant of this library when a bound is asked for.

Each optimiser step of DP-SGD with noise multiplier ``sigma`` and Poisson sampling rate
``q`` is one release of :class:`accountant.SubsampledTruncatedGaussian` (SPEC section 1,
"DP-SGD"); a subclass says which one (cut or not) and in which accountant the steps are
composed (:class:`accountant.PrivacyBuckets`, :class:`accountant.DPSGDAccountant`), and
which optimisers add the noise it accounts. :meth:`ComposingAccountant.get_epsilon`
returns the certified upper bound on eps, :meth:`ComposingAccountant.epsilon_bounds` the
certified bracket ``lower <= eps(delta) <= upper``.
"""

from __future__ import annotations

import abc
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from opacus.accountants import IAccountant

from accountant import (
    CertificationWarning,
    EpsilonBounds,
    InvalidInputError,
    SubsampledTruncatedGaussian,
)
from accountant.validation import (
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
)
from optimizers.opacus.state import (
    HistoryEntry,
    checked_entries,
    checked_history,
    checked_mechanism,
)

if TYPE_CHECKING:
    from accountant import DPSGDAccountant, PrivacyBuckets

__all__ = ["DEFAULT_ACCURACY", "ComposingAccountant"]

#: PrivacyBuckets accuracy (relative width of every certified delta bracket) by default.
DEFAULT_ACCURACY = 1e-4


def prv_style_upper(
    bracket: Callable[[float], Any], delta: float, call: tuple, advice: str
) -> float:
    """The certified upper end of ``bracket(delta)`` for a ``get_epsilon`` call written for
    Opacus's ``PRVAccountant``: ``call = (args, kwargs, eps_error, delta_error)``; extra
    arguments are refused by name, ``delta_error`` is checked (a certified bound needs no
    allowance), and a bracket wider than ``eps_error`` warns
    (:class:`~accountant.CertificationWarning`) with ``advice``."""
    args, kwargs, eps_error, delta_error = call
    if args or kwargs:
        raise InvalidInputError(
            f"get_epsilon takes only delta (and PRVAccountant's eps_error, delta_error), "
            f"got extra arguments {args!r} {kwargs!r}"
        )
    if delta_error is not None:
        check_positive_real("delta_error", delta_error)
    bounds = bracket(delta)
    if eps_error is not None and bounds.upper - bounds.lower > check_positive_real(
        "eps_error", eps_error
    ):
        warnings.warn(
            f"the certified eps bracket [{bounds.lower:.6g}, {bounds.upper:.6g}] is wider "
            f"than eps_error={eps_error!r}; {advice}",
            CertificationWarning,
            stacklevel=3,
        )
    return float(bounds.upper)


class ComposingAccountant(IAccountant):
    """Opacus accountant (``opacus.accountants.IAccountant``) whose ``history`` is
    composed in a certified accountant of this library (module docstring).

    ``accuracy``: the PrivacyBuckets accuracy (default 1e-4). ``history`` is Opacus's list
    of ``(noise_multiplier, sample_rate, steps)``, a repeated step merged into the last
    entry (as Opacus's RDP and PRV accountants do). The steps are composed when a bound
    is asked for, one mechanism per distinct ``(noise_multiplier, sample_rate)``, and the
    composition is kept until the history changes.

    A subclass names its :data:`MECHANISM` and the mechanisms whose states it loads
    (:data:`LOADS`), and implements :meth:`release` (one step), :meth:`empty` (the
    accountant that composes the steps) and :meth:`check_optimizer` (refuse an optimiser
    adding other noise); it may refine :meth:`check_ready` and the state hooks.
    """

    #: The name Opacus knows the accountant by (``mechanism()``).
    MECHANISM: ClassVar[str]
    #: The ``mechanism`` of the states :meth:`load_state_dict` accepts.
    LOADS: ClassVar[tuple[str, ...]]

    def __init__(self, accuracy: float = DEFAULT_ACCURACY) -> None:
        self.accuracy = check_open_fraction("accuracy", accuracy)
        super().__init__()  # sets self.history = [] (the setter below)

    # -- what a subclass says ---------------------------------------------------------

    @abc.abstractmethod
    def release(self, sigma: float, rate: float) -> SubsampledTruncatedGaussian:
        """The release of one step at noise multiplier ``sigma`` and sampling rate
        ``rate`` (both checked)."""

    @abc.abstractmethod
    def empty(self) -> PrivacyBuckets | DPSGDAccountant:
        """The certified accountant the steps are composed in, with nothing composed."""

    @abc.abstractmethod
    def check_optimizer(self, optimizer: Any) -> None:
        """Refuse ``optimizer`` (at a step, before it is accounted) unless it adds the
        noise this accountant accounts; learn from it what the bound needs."""

    def check_ready(self) -> None:
        """Refuse a query that the accountant cannot answer yet (called with steps)."""

    def extra_state(self) -> dict[str, Any]:
        """What :meth:`state_dict` records beside ``history`` and ``mechanism``."""
        return {}

    def checked_extra_state(self, state: Any) -> Callable[[], None]:
        """Check the extra fields of ``state``; return what applies them (called after
        the history is taken, so that a refused state changes nothing)."""
        return lambda: None

    # -- Opacus's interface -----------------------------------------------------------

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
        self._answers: dict[float, EpsilonBounds]
        self._mechanisms, self._answers = mechanisms, {}
        self._history = list(entries)
        self._accounted: tuple | None = None
        self._composed: PrivacyBuckets | DPSGDAccountant | None = None

    def _forget(self) -> None:
        """Drop the composition (a setting it depends on changed)."""
        self._accounted = None

    def _synced(self) -> PrivacyBuckets | DPSGDAccountant:
        """The composition of :attr:`history` (composed again if the history changed)."""
        if self._history:
            self.check_ready()
        if self._composed is None or tuple(self._history) != self._accounted:
            entries = checked_entries(self._history, "history")
            composed = self.empty()
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
            cache[(sigma, rate)] = self.release(sigma, rate)
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

    def privacy_accountant(self) -> PrivacyBuckets | DPSGDAccountant:
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

    def get_epsilon(
        self,
        delta: float,
        *args: Any,
        eps_error: float | None = None,
        delta_error: float | None = None,
        **kwargs: Any,
    ) -> float:
        """The certified upper bound on eps at ``delta`` (what Opacus reports).

        ``eps_error`` and ``delta_error`` are Opacus's ``PRVAccountant.get_epsilon``
        keywords, taken so that a call written for it runs: a certified upper bound needs
        no error allowance; a bracket (:meth:`epsilon_bounds`) wider than ``eps_error``
        warns (:class:`~accountant.CertificationWarning`). Other arguments are refused.
        """
        return prv_style_upper(
            self.epsilon_bounds,
            delta,
            (args, kwargs, eps_error, delta_error),
            f"build the accountant with a smaller accuracy (now {self.accuracy!r})",
        )

    def __len__(self) -> int:
        """The number of optimiser steps accounted (Opacus's RDP and PRV accountants
        return the number of history entries instead)."""
        return sum(entry[2] for entry in self._history)

    @classmethod
    def mechanism(cls) -> str:
        """:data:`MECHANISM`."""
        return cls.MECHANISM

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The step hook ``PrivacyEngine.make_private`` attaches to the optimiser: it
        refuses an optimiser that does not add this accountant's noise
        (:meth:`check_optimizer`) before the step is accounted, else accounts one step at
        ``sample_rate`` times the batches accumulated (as Opacus's hook)."""
        rate = check_probability("sample_rate", sample_rate)

        def hook(optimizer: Any) -> None:
            self.check_optimizer(optimizer)
            self.step(
                noise_multiplier=optimizer.noise_multiplier,
                sample_rate=rate * optimizer.accumulated_iterations,
            )

        return hook

    def state_dict(self, destination: Any = None) -> Any:
        """Opacus's state (``history``, ``mechanism``) and :meth:`extra_state`
        (:mod:`~optimizers.opacus.state`)."""
        destination = OrderedDict() if destination is None else destination
        destination["history"] = list(self.history)
        destination["mechanism"] = self.MECHANISM
        destination.update(self.extra_state())
        return destination

    def load_state_dict(self, state_dict: Any) -> None:
        """Replace the history by that of ``state_dict`` (every field checked first; this
        accountant is unchanged when it is refused)."""
        checked_mechanism(state_dict, self.LOADS)
        apply = self.checked_extra_state(state_dict)
        self._rebuild(checked_history(state_dict))
        apply()
