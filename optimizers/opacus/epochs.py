"""An Opacus accountant for DP-SGD whose data loader covers every example once per epoch:
shuffled fixed-size batches (``DataLoader(shuffle=True)``) or a fixed order
(``DataLoader(shuffle=False)``), as Opacus trains with ``poisson_sampling=False``.

Opacus's own accountants (and ``"certified"``) account every step as Poisson-sampled at
rate ``1 / len(data_loader)``, which can understate eps badly for these samplers (Chua et
al., ICML 2024). :class:`ShuffledEpochsAccountant` records the steps of one epoch
structure (``dataset_size`` examples ``n``, ``batch_size`` ``b``, ``T = ceil(n / b)``
batches per epoch, the last one short when ``b`` does not divide ``n``) and one noise
multiplier ``sigma``, and bounds eps with :func:`accountant.shuffled_epochs_epsilon`
(add-remove, i.e. zero-out for fixed-size batches; guide "Batch samplers"):

* **upper** (what :meth:`~ShuffledEpochsAccountant.get_epsilon` reports): each epoch
  releases every example in exactly one batch, so it is dominated by the Gaussian mechanism
  with sensitivity ``C`` (no amplification claimed), and ``E`` epochs by ``E`` Gaussian
  releases: PrivacyBuckets' certified upper bound of that composition. A **partial last
  epoch counts as a whole one**: each example is released at most once in it, which the
  same Gaussian dominates.
* **lower**, shuffled epochs: the certified lower bound of the explicit pair of
  :func:`~accountant.shuffled_epochs_epsilon` over the *completed* epochs only (0 before
  the first is complete): that pair assumes each epoch ran to its end.
* **lower**, fixed order: the same Gaussian composition's certified lower bound over every
  started epoch. A fixed order is exactly that composition: the example in the first
  batch, with a gradient of norm ``C`` that does not depend on the model and every other
  gradient 0, shifts the first release of every started epoch by ``C`` and nothing else,
  which is the Gaussian pair once per epoch; the upper bound's argument shows nothing
  worse is possible. So the bracket is that of PrivacyBuckets' accuracy alone.
* **poisson**: what a Poisson accountant would report for the same steps (the subsampled
  Gaussian at rate ``b / n``, as :func:`~accountant.shuffled_epochs_epsilon` states it);
  it bounds nothing about these samplers.

All three come from one call of :func:`~accountant.shuffled_epochs_epsilon` with the
epochs started, those completed and the steps taken.

**Truncated noise** (``settings``, a
:class:`~optimizers.opacus.settings.TruncationSettings`; what
:class:`~optimizers.opacus.engine.TruncatedPrivacyEngine` builds with
``poisson_sampling=False``): each of the ``dimension`` noised coordinates of every step is
cut at ``+-cut sigma C``; the bracket is that of
:func:`~accountant.shuffled_epochs_epsilon` with that ``cut``, ``dimension`` and
``truncation`` (the uncut run's ends, coupled with the cut run). ``dimension`` is learnt
from the optimiser (:meth:`~ShuffledEpochsAccountant.learn_dimension`) and a query before
it is known is refused.

**Epochs.** Steps are counted in epochs of ``T``: a run of steps starts at an epoch
boundary (a new accountant, :meth:`~ShuffledEpochsAccountant.start_epoch`, which
``CertifiedPrivacyEngine.make_private`` calls when it reuses an accountant, and
:meth:`~ShuffledEpochsAccountant.load_state_dict`), and every ``T`` steps start another.
This is exact when each pass over the data loader runs to its end with one optimiser step
per batch; a pass abandoned early must be followed by ``start_epoch()`` (starting a pass
that is not announced is the one thing the accountant cannot see). The step hook refuses
what it can see is not such a run: a step over more examples than the loader's batch at
that position (in particular a full batch where the short last batch is due), gradient
accumulation over several batches per step, a changed noise multiplier (the bounds of
:func:`~accountant.shuffled_epochs_epsilon` are for one ``sigma``), and noise other than
the accountant's (truncated noise on a Gaussian accountant, other settings or none on a
truncated one).

Not registered with Opacus: ``create_accountant`` builds an accountant without arguments,
and the epoch structure comes from the data loader, which only the engine sees; use
:class:`~optimizers.opacus.certified_engine.CertifiedPrivacyEngine` (Gaussian noise) or
:class:`~optimizers.opacus.engine.TruncatedPrivacyEngine` (truncated noise).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from opacus.accountants import IAccountant

from accountant import (
    InvalidInputError,
    SamplerEpsilonBounds,
    shuffled_epochs_epsilon,
)
from accountant.mechanisms.shuffled import DEFAULT_INTERVALS
from accountant.validation import (
    check_choice,
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_probability,
    check_target_delta,
    shown,
)
from optimizers.opacus.certified import DEFAULT_CERTIFIED_ACCURACY
from optimizers.opacus.composing import prv_style_upper
from optimizers.opacus.settings import TruncationSettings
from optimizers.opacus.state import (
    GAUSSIAN_MECHANISMS,
    MECHANISM,
    SHUFFLED_EPOCHS,
    checked_dimension,
)

__all__ = ["EPOCH_SAMPLERS", "EpochSegment", "ShuffledEpochsAccountant"]

#: The loaders accounted: ``"shuffle"`` (a ``RandomSampler`` without replacement: a fresh
#: permutation every epoch) and ``"fixed-order"`` (a ``SequentialSampler``).
EPOCH_SAMPLERS = ("shuffle", "fixed-order")

#: One entry of the history: ``(noise_multiplier, steps)``, steps taken from an epoch
#: boundary on.
EpochSegment = tuple[float, int]


def _checked_segments(history: Any, name: str) -> list[EpochSegment]:
    """``history`` (called ``name`` in messages) as checked ``(noise_multiplier, steps)``
    entries, all of one noise multiplier."""
    if not isinstance(history, list | tuple):
        raise InvalidInputError(f"{name} must be a list, got {shown(history)}")
    segments: list[EpochSegment] = []
    for index, entry in enumerate(history):
        where = f"{name}[{index}]"
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            raise InvalidInputError(
                f"{where} must be (noise_multiplier, steps), got {shown(entry)}"
            )
        sigma = check_positive_real(f"{where} noise_multiplier", entry[0])
        steps = check_positive_int(f"{where} steps", entry[1])
        if segments and sigma != segments[0][0]:
            raise InvalidInputError(
                f"{where} noise_multiplier must be {segments[0][0]!r} (the run's), got "
                f"{sigma!r}: shuffled epochs are accounted for one noise multiplier"
            )
        segments.append((sigma, steps))
    return segments


def batch_size_of_step(optimizer: Any) -> int:
    """The examples of the batch ``optimizer`` is stepping on: the first dimension of its
    per-example gradients (Opacus's ``DPOptimizer.grad_samples``)."""
    try:
        return int(optimizer.grad_samples[0].shape[0])
    except (AttributeError, IndexError, TypeError, ValueError):
        raise InvalidInputError(
            f"optimizer must keep per-example gradients (Opacus's DPOptimizer.grad_samples) "
            f"for its batch to be checked against the epoch structure, got "
            f"{type(optimizer).__name__}"
        ) from None


class ShuffledEpochsAccountant(IAccountant):
    """Opacus accountant (``opacus.accountants.IAccountant``) for epochs that cover every
    example once, shuffled or in a fixed order (module docstring).

    ``sampler``: ``"shuffle"`` or ``"fixed-order"``; ``dataset_size``, ``batch_size``: the
    epoch structure (``len(data_loader.dataset)``, ``data_loader.batch_size``; at most
    ``dataset_size``); ``accuracy``: PrivacyBuckets' accuracy (default that of
    ``"certified"``); ``intervals``: the partition of the lower bound's max statistic;
    ``settings``: the truncation of the noise (``None``, the default: Gaussian noise) and
    ``dimension`` the coordinates noised per step (with ``settings``; ``None``: learnt from
    the optimiser).

    ``history`` is a list of ``(noise_multiplier, steps)``: each entry steps from an epoch
    boundary on. :meth:`get_epsilon` is the certified upper bound,
    :meth:`epsilon_bounds` the bracket with the Poisson figure.
    """

    MECHANISM: ClassVar[str] = SHUFFLED_EPOCHS

    def __init__(
        self,
        *,
        sampler: str,
        dataset_size: int,
        batch_size: int,
        accuracy: float = DEFAULT_CERTIFIED_ACCURACY,
        intervals: int = DEFAULT_INTERVALS,
        settings: TruncationSettings | None = None,
        dimension: int | None = None,
    ) -> None:
        self.sampler = check_choice("sampler", sampler, EPOCH_SAMPLERS)
        if settings is not None and not isinstance(settings, TruncationSettings):
            raise InvalidInputError(
                f"settings must be a TruncationSettings or None, got {shown(settings)}"
            )
        if settings is None and dimension is not None:
            raise InvalidInputError(
                f"dimension={dimension!r} is given without settings: the dimension only "
                "matters for truncated noise (each coordinate cut separately)"
            )
        self.settings = settings
        self._dimension = None if dimension is None else check_positive_int("dimension", dimension)
        self.dataset_size = check_positive_int("dataset_size", dataset_size)
        self.batch_size = check_positive_int("batch_size", batch_size)
        if self.batch_size > self.dataset_size:
            raise InvalidInputError(
                f"batch_size must be <= dataset_size={self.dataset_size!r}, "
                f"got batch_size={self.batch_size!r}"
            )
        self.accuracy = check_open_fraction("accuracy", accuracy)
        self.intervals = check_positive_int("intervals", intervals)
        self._open = False
        self._answers: dict[tuple, SamplerEpsilonBounds] = {}
        super().__init__()  # sets self.history = [] (the setter below)

    # -- the epoch structure ----------------------------------------------------------

    @property
    def batches_per_epoch(self) -> int:
        """``T = ceil(dataset_size / batch_size)``."""
        return -(-self.dataset_size // self.batch_size)

    @property
    def last_batch_size(self) -> int:
        """The examples of an epoch's last batch: ``n - (T - 1) b``."""
        return self.dataset_size - (self.batches_per_epoch - 1) * self.batch_size

    @property
    def sample_rate(self) -> float:
        """``1 / T``: the rate Opacus's ``make_private`` gives the step hook."""
        return 1.0 / self.batches_per_epoch

    def structure(self) -> dict[str, Any]:
        """``sampler``, ``dataset_size``, ``batch_size``: what the state records."""
        return {
            "sampler": self.sampler,
            "dataset_size": self.dataset_size,
            "batch_size": self.batch_size,
        }

    @property
    def dimension(self) -> int | None:
        """The coordinates noised per step (truncated noise; ``None`` until known)."""
        return self._dimension

    def learn_dimension(self, dimension: int) -> None:
        """Set :attr:`dimension` (from the optimiser) for truncated noise (with Gaussian
        noise every coordinate is accounted alike and nothing is kept); refuses a
        different one once known."""
        dimension = check_positive_int("dimension", dimension)
        if self.settings is None:
            return
        if self._dimension is not None and dimension != self._dimension:
            raise InvalidInputError(
                f"dimension must stay {self._dimension} (the coordinates this accountant "
                f"has accounted), got {dimension}"
            )
        self._dimension = dimension

    def _noise(self) -> dict[str, Any]:
        """The noise arguments of :func:`~accountant.shuffled_epochs_epsilon`."""
        if self.settings is None:
            return {}
        if self._dimension is None:
            raise InvalidInputError(
                "dimension is unknown: make the optimiser with TruncatedPrivacyEngine"
                "(...).make_private(poisson_sampling=False), or build "
                "ShuffledEpochsAccountant(..., dimension=d) with d the trainable coordinates"
            )
        return {
            "cut": self.settings.cut,
            "dimension": self._dimension,
            "truncation": self.settings.law,
        }

    # -- the history ------------------------------------------------------------------

    @property
    def history(self) -> list[EpochSegment]:
        """``(noise_multiplier, steps)`` per run of steps from an epoch boundary on.
        Assigning a list checks it and ends the current epoch."""
        return self._history

    @history.setter
    def history(self, value: Any) -> None:
        self._history = _checked_segments(value, "history")
        self._open = False

    @property
    def noise_multiplier(self) -> float | None:
        """The run's noise multiplier (``None`` before a step)."""
        return self._history[0][0] if self._history else None

    def epochs_started(self) -> int:
        """Epochs with at least one step (a partial epoch counts as one)."""
        return sum(-(-steps // self.batches_per_epoch) for _, steps in self._history)

    def epochs_completed(self) -> int:
        """Epochs of all ``T`` steps."""
        return sum(steps // self.batches_per_epoch for _, steps in self._history)

    def position_in_epoch(self) -> int:
        """The index in its epoch of the next step's batch (0 at an epoch boundary)."""
        if not self._open or not self._history:
            return 0
        return self._history[-1][1] % self.batches_per_epoch

    def start_epoch(self) -> None:
        """The next step starts an epoch (a new pass over the loader). A partial epoch so
        far stays counted as a whole one in the upper bound and as none in the lower."""
        self._open = False

    def step(self, *, noise_multiplier: float, sample_rate: float, steps: int = 1) -> None:
        """Account ``steps`` (default one) optimiser steps, each on the next batch of the
        epoch. ``sample_rate`` must be ``1 / T`` (what Opacus passes for this loader);
        ``noise_multiplier`` that of the steps so far."""
        sigma = check_positive_real("noise_multiplier", noise_multiplier)
        rate = check_probability("sample_rate", sample_rate)
        steps = check_positive_int("steps", steps)
        if not math.isclose(rate * self.batches_per_epoch, 1.0, rel_tol=1e-12):
            raise InvalidInputError(
                f"sample_rate must be 1/{self.batches_per_epoch} (one of the "
                f"{self.batches_per_epoch} batches of an epoch of {self.dataset_size} examples "
                f"in batches of {self.batch_size}), got {rate!r}"
            )
        if self._history and sigma != self._history[0][0]:
            raise InvalidInputError(
                f"noise_multiplier must stay {self._history[0][0]!r} (the run's; shuffled "
                f"epochs are accounted for one noise multiplier), got {sigma!r}: use a new "
                "CertifiedPrivacyEngine for another noise multiplier"
            )
        if self._open and self._history:
            self._history[-1] = (sigma, self._history[-1][1] + steps)
        else:
            self._history.append((sigma, steps))
        self._open = True

    def __len__(self) -> int:
        """The number of optimiser steps accounted."""
        return sum(steps for _, steps in self._history)

    @classmethod
    def mechanism(cls) -> str:
        """:data:`~optimizers.opacus.state.SHUFFLED_EPOCHS`."""
        return cls.MECHANISM

    # -- bounds -----------------------------------------------------------------------

    def epsilon_bounds(self, delta: float) -> SamplerEpsilonBounds:
        """Certified ``lower <= eps(delta) <= upper`` of the steps so far, and the Poisson
        figure ``poisson`` (module docstring), as a
        :class:`~accountant.SamplerEpsilonBounds` whose ``epochs`` are the epochs started,
        ``completed_epochs`` those run to their end and ``steps`` the steps taken (all 0
        before a step). Cached until the next step."""
        delta = check_target_delta("delta", delta)
        key = (delta, tuple(self._history))
        if key in self._answers:
            return self._answers[key]
        noise = self._noise()
        if not self._history:
            answer = SamplerEpsilonBounds(
                lower=0.0,
                upper=0.0,
                poisson=0.0,
                delta=delta,
                epochs=0,
                steps=0,
                batches_per_epoch=self.batches_per_epoch,
                sampler=self.sampler,
                neighbours="add-remove",
                intervals=self.intervals,
                completed_epochs=0,
                **noise,
            )
        else:
            answer = shuffled_epochs_epsilon(
                self._history[0][0],
                self.batch_size,
                self.dataset_size,
                self.epochs_started(),
                delta,
                sampler=self.sampler,
                intervals=self.intervals,
                accuracy=self.accuracy,
                steps=len(self),
                completed_epochs=self.epochs_completed(),
                **noise,
            )
        self._answers = {key: answer}
        return answer

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
        keywords, taken so that a call written for it runs: the upper bound needs no error
        allowance; a bracket wider than ``eps_error`` warns
        (:class:`~accountant.CertificationWarning`: the sampler's true eps is not known
        that closely). Other arguments are refused."""
        return prv_style_upper(
            self.epsilon_bounds,
            delta,
            (args, kwargs, eps_error, delta_error),
            f"the true eps of {self.sampler} epochs is not known that closely (the upper "
            "bound claims no amplification by the sampler)",
        )

    # -- Opacus's hook and state ------------------------------------------------------

    def check_step(self, optimizer: Any) -> None:
        """Refuse a step this accountant cannot account (module docstring): noise other
        than the accountant's, several batches accumulated, more examples than the loader's
        batch at this position of the epoch. With truncated noise, learn the dimension
        from the optimiser's parameters."""
        settings = getattr(optimizer, "truncation_settings", None)
        if self.settings is None and settings is not None:
            raise InvalidInputError(
                "optimizer must add Opacus's untruncated Gaussian noise to be accounted by "
                f"this ShuffledEpochsAccountant (built without settings), got "
                f"{type(optimizer).__name__} with {settings}: make truncated noise with "
                "TruncatedPrivacyEngine.make_private(poisson_sampling=False)"
            )
        if self.settings is not None:
            if not isinstance(settings, TruncationSettings) or not settings.same_law(self.settings):
                raise InvalidInputError(
                    f"optimizer must add noise with {self.settings} (a TruncatedDPOptimizer "
                    "from TruncatedPrivacyEngine.make_private), got "
                    f"{type(optimizer).__name__} with "
                    f"{settings if settings is not None else 'untruncated Gaussian noise'}"
                )
            self.learn_dimension(sum(p.numel() for p in optimizer.params))
        accumulated = optimizer.accumulated_iterations
        if accumulated != 1:
            raise InvalidInputError(
                f"optimizer.accumulated_iterations must be 1 with shuffled or fixed-order "
                f"epochs (one step per batch of the data loader), got {accumulated!r}: a step "
                "over several batches may release one example twice"
            )
        position = self.position_in_epoch()
        due = self.last_batch_size if position == self.batches_per_epoch - 1 else self.batch_size
        seen = batch_size_of_step(optimizer)
        if seen > due:
            raise InvalidInputError(
                f"the step's batch of {seen} examples is larger than batch {position} of an "
                f"epoch of {self.dataset_size} examples in batches of {self.batch_size} "
                f"({due} examples): the data loader is not iterated in whole epochs (call "
                "accountant.start_epoch() when a pass over it starts early) or is not the "
                "one make_private was given"
            )

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The step hook ``PrivacyEngine.make_private`` attaches: ``sample_rate`` must be
        ``1 / T``; each step is checked (:meth:`check_step`) before it is accounted."""
        rate = check_probability("sample_rate", sample_rate)
        if not math.isclose(rate * self.batches_per_epoch, 1.0, rel_tol=1e-12):
            raise InvalidInputError(
                f"sample_rate must be 1/{self.batches_per_epoch} (1 / len(data_loader) of "
                f"this accountant's loader), got {rate!r}"
            )

        def hook(optimizer: Any) -> None:
            self.check_step(optimizer)
            self.step(noise_multiplier=optimizer.noise_multiplier, sample_rate=rate)

        return hook

    def noise_state(self) -> dict[str, Any]:
        """``settings`` (``None``: Gaussian noise; else ``{"cut", "truncation"}``) and
        ``dimension``: the noise the history was accounted with."""
        settings = None
        if self.settings is not None:
            settings = {"cut": self.settings.cut, "truncation": self.settings.truncation}
        return {"settings": settings, "dimension": self._dimension}

    def state_dict(self, destination: Any = None) -> Any:
        """Opacus's ``history`` and ``mechanism``, the epoch structure (:meth:`structure`)
        and the noise (:meth:`noise_state`)."""
        destination = OrderedDict() if destination is None else destination
        destination["history"] = list(self._history)
        destination["mechanism"] = self.MECHANISM
        destination.update(self.structure())
        destination.update(self.noise_state())
        return destination

    def _checked_noise_state(self, state_dict: Mapping) -> int | None:
        """The dimension of ``state_dict``, refused when its noise is not this
        accountant's. A state without ``settings`` (written before truncated noise was
        accounted) is one of Gaussian noise."""
        settings = state_dict.get("settings")
        if settings is None or self.settings is None:
            if settings is not None or self.settings is not None:
                saved = "Gaussian noise" if settings is None else shown(settings)
                raise InvalidInputError(
                    f"state_dict['settings'] describes {saved}, but this accountant "
                    f"accounts {self.settings or 'Gaussian noise'}: build it with the same "
                    "noise"
                )
            return None
        if not isinstance(settings, Mapping) or set(settings) != {"cut", "truncation"}:
            raise InvalidInputError(
                "state_dict['settings'] must be None or {'cut': ..., 'truncation': ...}, "
                f"got {shown(settings)}"
            )
        given = TruncationSettings(cut=settings["cut"], truncation=settings["truncation"])
        if not given.same_law(self.settings):
            raise InvalidInputError(
                f"state_dict['settings'] describes noise with {given}, but this accountant "
                f"accounts {self.settings}: build it with the same cut and truncation"
            )
        return checked_dimension(state_dict, self._dimension)

    def load_state_dict(self, state_dict: Any) -> None:
        """Replace the history by that of ``state_dict``, a state of an accountant with the
        same epoch structure (every field checked first; this accountant is unchanged when
        it is refused). A Poisson-sampled history (``"certified"``, ``"prv"``, ``"rdp"``,
        ``"gdp"``, ``"truncated"``) is refused: it cannot be continued with these epochs.
        The next step starts an epoch (a resumed run starts a new pass)."""
        if not isinstance(state_dict, Mapping):
            raise InvalidInputError(
                "state_dict must be a mapping from an accountant's state_dict(), got "
                f"{shown(state_dict)}"
            )
        missing = sorted({"history", "mechanism", *self.structure()} - set(state_dict))
        mechanism = state_dict.get("mechanism")
        if mechanism in (*GAUSSIAN_MECHANISMS, MECHANISM):
            raise InvalidInputError(
                f"state_dict['mechanism'] is {mechanism!r}: a Poisson-sampled history cannot "
                f"be continued with {self.sampler} epochs (accounted as "
                f"{self.MECHANISM!r}); resume it with poisson_sampling=True"
            )
        if missing:
            raise InvalidInputError(
                f"state_dict lacks the keys {missing!r}, got keys {sorted(state_dict)!r}"
            )
        if mechanism != self.MECHANISM:
            raise InvalidInputError(
                f"state_dict['mechanism'] must be {self.MECHANISM!r}, got {shown(mechanism)}"
            )
        for key, value in self.structure().items():
            if state_dict[key] != value:
                raise InvalidInputError(
                    f"state_dict[{key!r}] must be {value!r} (this accountant's epochs), "
                    f"got {shown(state_dict[key])}"
                )
        dimension = self._checked_noise_state(state_dict)
        self.history = _checked_segments(state_dict["history"], "state_dict['history']")
        if dimension is not None:
            self._dimension = dimension

    def __repr__(self) -> str:
        return (
            f"ShuffledEpochsAccountant(sampler={self.sampler!r}, "
            f"dataset_size={self.dataset_size!r}, batch_size={self.batch_size!r}, "
            f"accuracy={self.accuracy!r}, settings={self.settings!r}, "
            f"dimension={self._dimension!r}, steps={len(self)})"
        )
