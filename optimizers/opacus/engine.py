"""``TruncatedPrivacyEngine``: Opacus's ``PrivacyEngine`` whose ``make_private`` adds
truncated Gaussian noise and whose accountant certifies it.

``PrivacyEngine.make_private`` wraps the model, makes the data loader sample by Poisson
sampling and builds the DP optimiser of the class ``opacus.optimizers.
get_optimizer_class`` picks for the clipping, the grad-sample mode and whether the model
is distributed. :class:`TruncatedPrivacyEngine` keeps all of that and builds the class's
truncated twin instead (:mod:`optimizers.opacus.optimizer`), with the accountant's
:class:`~optimizers.opacus.settings.TruncationSettings`, and tells the accountant the
number of noised coordinates: the optimiser's trainable parameters. With
``DistributedDataParallel`` every process holds the whole model and the noise is drawn
on rank 0 only, once per step over all of them, so the dimension is the same.

``poisson_sampling=False`` (the caller's own ``DataLoader``, shuffled or in a fixed
order): the engine reads the loader's epochs as
:class:`~optimizers.opacus.certified_engine.CertifiedPrivacyEngine` does and accounts them
with a :class:`~optimizers.opacus.epochs.ShuffledEpochsAccountant` holding this engine's
cut and truncation (:func:`accountant.shuffled_epochs_epsilon` with the cut, per
coordinate, on the optimiser's trainable coordinates); ``make_private_with_epsilon``
calibrates for those epochs (:func:`accountant.calibrate_shuffled_noise_multiplier`). What
that engine refuses with ``poisson_sampling=False`` is refused here too (other samplers,
clipping other than flat, ghost clipping, a distributed model, mixing samplers on one
history).

Refused when asked, before the model is touched, naming the argument: adaptive clipping
(Opacus's ``AdaClipDPOptimizer`` spends privacy on the clip norm as well), FSDP
(``FSDPModule``, ``grad_sample_mode="ghost_fsdp"``: each rank noises its shard or a
share of the noise), a noise multiplier too small for the cut (``cut * noise_multiplier
<= 1/2``), and a model of another size than the one the accountant has accounted.

With per-layer clipping the noise is cut at ``cut * noise_multiplier * C``, ``C`` the L2
norm of the clip norms (Opacus's sensitivity): ``get_epsilon`` (the upper bound) holds;
the lower end of ``epsilon_bounds`` is that of flat clipping at ``C``, whose one-axis
neighbour per-layer clipping cannot produce, so it is not certified below the true eps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from opacus import PrivacyEngine
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel
from opacus.optimizers import DPOptimizer, get_optimizer_class
from torch.distributed._composable.fsdp import FSDPModule
from torch.nn.parallel import DistributedDataParallel

from accountant import (
    InvalidInputError,
    NoiseCalibration,
    SubsampledTruncatedGaussian,
    calibrate_noise_multiplier,
)
from accountant.learning.shuffled_calibration import SamplerCalibration
from accountant.mechanisms.shuffled import DEFAULT_INTERVALS
from accountant.validation import (
    check_positive_int,
    check_positive_real,
    check_target_delta,
    shown,
)
from optimizers.opacus.accountant import DEFAULT_ACCURACY, TruncatedAccountant
from optimizers.opacus.certified_engine import (
    LoaderEpochs,
    checked_epochs_request,
    epochs_accountant_for,
    loader_calibration,
    poisson_accountant_for,
)
from optimizers.opacus.epochs import ShuffledEpochsAccountant
from optimizers.opacus.optimizer import TruncatedDPOptimizer, truncated_optimizer_class
from optimizers.opacus.settings import DEFAULT_CUT, DEFAULT_TRUNCATION, TruncationSettings
from optimizers.opacus.state import CERTIFIED

__all__ = ["TruncatedPrivacyEngine", "noised_coordinates"]


def noised_coordinates(optimizer: Any) -> int:
    """The coordinates DP-SGD noises per step: those of ``optimizer``'s parameters that
    require a gradient (what ``DPOptimizer.params`` keeps)."""
    return sum(
        p.numel() for group in optimizer.param_groups for p in group["params"] if p.requires_grad
    )


def _trainable_tensors(optimizer: Any) -> int:
    return sum(1 for group in optimizer.param_groups for p in group["params"] if p.requires_grad)


def _checked_max_grad_norm(value: Any, clipping: str, optimizer: Any) -> Any:
    """One clip norm (flat clipping), or one per trainable parameter tensor (per-layer)."""
    if clipping != "per_layer":
        return check_positive_real("max_grad_norm", value)
    tensors = _trainable_tensors(optimizer)
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != tensors:
        raise InvalidInputError(
            f"max_grad_norm must be a list of {tensors} clip norms with clipping='per_layer' "
            f"(one per trainable parameter tensor), got {shown(value)}"
        )
    return [check_positive_real(f"max_grad_norm[{i}]", v) for i, v in enumerate(value)]


class TruncatedPrivacyEngine(PrivacyEngine):
    """Opacus's ``PrivacyEngine`` for truncated Gaussian noise (module docstring).

    ``cut``: ``k``, the noise is cut at ``+-k * noise_multiplier * max_grad_norm`` per
    coordinate (default :data:`~optimizers.opacus.settings.DEFAULT_CUT` = 10);
    ``truncation``: ``"renormalised"`` (= ``"resampled"``, the default) or ``"clamped"``;
    ``accuracy``: the PrivacyBuckets accuracy of the accountant (default 1e-4);
    ``intervals``: the partition of the shuffled lower bound's max statistic
    (``poisson_sampling=False``); ``secure_mode``: Opacus's. :attr:`accountant` is a
    :class:`~optimizers.opacus.accountant.TruncatedAccountant` with these settings (a
    :class:`~optimizers.opacus.epochs.ShuffledEpochsAccountant` with them after
    ``make_private(poisson_sampling=False)``);
    :meth:`make_private` and :meth:`make_private_with_epsilon` take Opacus's arguments and
    return what Opacus returns, the optimiser a truncated twin of Opacus's
    (:class:`~optimizers.opacus.optimizer.TruncatedDPOptimizer` or a subclass).
    ``get_epsilon(delta)`` is the certified upper bound on eps,
    ``accountant.epsilon_bounds(delta)`` the bracket.
    """

    def __init__(
        self,
        *,
        cut: float = DEFAULT_CUT,
        truncation: str = DEFAULT_TRUNCATION,
        accuracy: float = DEFAULT_ACCURACY,
        intervals: int = DEFAULT_INTERVALS,
        secure_mode: bool = False,
    ) -> None:
        accountant = TruncatedAccountant(cut, truncation, accuracy)
        self.intervals = check_positive_int("intervals", intervals)
        super().__init__(accountant=CERTIFIED, secure_mode=secure_mode)
        self.accountant = accountant
        #: What the last :meth:`make_private_with_epsilon` found: an
        #: :class:`accountant.NoiseCalibration` (Poisson sampling) or a
        #: :class:`~accountant.learning.shuffled_calibration.SamplerCalibration`
        #: (``poisson_sampling=False``); ``None`` before one.
        self.calibration: NoiseCalibration | SamplerCalibration | None = None

    @property
    def truncated_accountant(self) -> TruncatedAccountant:
        """:attr:`accountant`, checked to be a ``TruncatedAccountant`` (it may have been
        replaced, e.g. by ``TruncatedAccountant(...)`` with other settings)."""
        accountant = self.accountant
        if not isinstance(accountant, TruncatedAccountant):
            raise InvalidInputError(
                f"privacy_engine.accountant must be a TruncatedAccountant, got {shown(accountant)}"
            )
        return accountant

    @property
    def settings(self) -> TruncationSettings:
        """The accountant's cut and truncation: the noise every optimiser made adds."""
        accountant = self.accountant
        if isinstance(accountant, ShuffledEpochsAccountant) and accountant.settings is not None:
            return accountant.settings
        return self.truncated_accountant.settings

    def _new_epochs(self, epochs: LoaderEpochs) -> ShuffledEpochsAccountant:
        """A :class:`~optimizers.opacus.epochs.ShuffledEpochsAccountant` of ``epochs``
        with this engine's noise and accuracy."""
        return ShuffledEpochsAccountant(
            sampler=epochs.sampler,
            dataset_size=epochs.dataset_size,
            batch_size=epochs.batch_size,
            accuracy=self.accuracy,
            intervals=self.intervals,
            settings=self.settings,
        )

    @property
    def accuracy(self) -> float:
        """The PrivacyBuckets accuracy of this engine's accountant."""
        return float(self.accountant.accuracy)

    def _check_request(
        self,
        *,
        module: Any,
        optimizer: Any,
        data_loader: Any,
        noise_multiplier: Any,
        max_grad_norm: Any,
        poisson_sampling: Any,
        clipping: Any,
        grad_sample_mode: Any,
    ) -> tuple[float, Any]:
        """Everything :meth:`make_private` refuses (module docstring), before anything is
        made; returns the checked noise multiplier and clip norm(s)."""
        if poisson_sampling is not True and poisson_sampling is not False:
            raise InvalidInputError(
                f"poisson_sampling must be True or False, got {poisson_sampling!r}"
            )
        if isinstance(module, FSDPModule) or grad_sample_mode == "ghost_fsdp":
            raise InvalidInputError(
                f"grad_sample_mode={grad_sample_mode!r} with {type(module).__name__}: FSDP "
                "is not supported with truncated noise (each rank noises its own shard or "
                "a share of the noise)"
            )
        if clipping == "adaptive":
            raise InvalidInputError(
                "clipping='adaptive' is not supported with truncated noise (Opacus's "
                "AdaClipDPOptimizer also spends privacy on the clip norm)"
            )
        # as PrivacyEngine.make_private decides it (FSDP refused above)
        distributed = isinstance(
            module, DifferentiallyPrivateDistributedDataParallel | DistributedDataParallel
        )
        try:
            opacus_class = get_optimizer_class(
                clipping=clipping, distributed=distributed, grad_sample_mode=grad_sample_mode
            )
        except ValueError as error:
            raise InvalidInputError(
                f"clipping={clipping!r}, grad_sample_mode={grad_sample_mode!r} "
                f"(distributed={distributed}): Opacus refuses it: {error}"
            ) from None
        truncated_optimizer_class(opacus_class)
        clip = _checked_max_grad_norm(max_grad_norm, clipping, optimizer)
        sigma = check_positive_real("noise_multiplier", noise_multiplier)
        if poisson_sampling:
            accountant = poisson_accountant_for(
                self.accountant,
                lambda: TruncatedAccountant(
                    self.settings.cut, self.settings.truncation, self.accuracy
                ),
                "TruncatedPrivacyEngine",
            )
            rate = 1.0 / check_positive_int("len(data_loader)", len(data_loader))
        else:
            epochs = checked_epochs_request(
                module=module,
                data_loader=data_loader,
                noise_multiplier=sigma,
                max_grad_norm=clip,
                clipping=clipping,
                grad_sample_mode=grad_sample_mode,
            )
            accountant = epochs_accountant_for(
                self.accountant,
                epochs,
                lambda: self._new_epochs(epochs),
                "TruncatedPrivacyEngine",
            )
            rate = epochs.batch_size / epochs.dataset_size
        SubsampledTruncatedGaussian(  # refuses cut * sigma <= 1/2, naming them
            sigma=sigma,
            sampling_rate=rate,
            cut=self.settings.cut,
            truncation=self.settings.law,
        )
        dimension = noised_coordinates(optimizer)
        if dimension == 0:
            raise InvalidInputError(
                "optimizer has no trainable parameter (dimension 0): nothing to noise"
            )
        if accountant.dimension not in (None, dimension):
            raise InvalidInputError(
                f"the optimizer's {dimension} trainable coordinates differ from the "
                f"{accountant.dimension} this engine's accountant has accounted: use a new "
                "TruncatedPrivacyEngine for another model"
            )
        self.accountant = accountant
        return sigma, clip

    def make_private(
        self,
        *,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        data_loader: Any,
        noise_multiplier: float,
        max_grad_norm: float | list[float],
        poisson_sampling: bool = True,
        clipping: str = "flat",
        grad_sample_mode: str = "hooks",
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Opacus's ``make_private`` (same arguments, same return: ``(module, optimizer,
        data_loader)``, with ghost clipping ``(module, optimizer, criterion,
        data_loader)``) whose optimiser adds this engine's truncated noise and tells the
        accountant its dimension; with ``poisson_sampling=False`` the accountant is that of
        the loader's epochs (module docstring). Refuses what cannot be accounted before
        anything is made."""
        sigma, clip = self._check_request(
            module=module,
            optimizer=optimizer,
            data_loader=data_loader,
            noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            poisson_sampling=poisson_sampling,
            clipping=clipping,
            grad_sample_mode=grad_sample_mode,
        )
        made = super().make_private(
            module=module,
            optimizer=optimizer,
            data_loader=data_loader,
            noise_multiplier=sigma,
            max_grad_norm=clip,
            poisson_sampling=poisson_sampling,
            clipping=clipping,
            grad_sample_mode=grad_sample_mode,
            **kwargs,
        )
        private = made[1]
        if not isinstance(private, TruncatedDPOptimizer):  # pragma: no cover - Opacus changed
            raise InvalidInputError(
                f"make_private built {type(private).__name__}, not a TruncatedDPOptimizer"
            )
        self.accountant.learn_dimension(sum(p.numel() for p in private.params))
        return made

    def _prepare_optimizer(
        self,
        *,
        optimizer: torch.optim.Optimizer,
        noise_multiplier: float,
        max_grad_norm: float | list[float],
        expected_batch_size: float,
        loss_reduction: str = "mean",
        distributed: bool = False,
        clipping: str = "flat",
        noise_generator: torch.Generator | None = None,
        grad_sample_mode: str = "hooks",
        **kwargs: Any,
    ) -> TruncatedDPOptimizer:
        """``PrivacyEngine._prepare_optimizer`` with the truncated twin of the class it
        picks and this engine's settings (the generator as Opacus chooses it)."""
        if isinstance(optimizer, DPOptimizer):
            optimizer = optimizer.original_optimizer
        # its __init__ is Opacus's class's (per-layer clipping takes a list of norms)
        twin: Callable[..., TruncatedDPOptimizer] = truncated_optimizer_class(
            get_optimizer_class(
                clipping=clipping, distributed=distributed, grad_sample_mode=grad_sample_mode
            )
        )
        return twin(
            optimizer=optimizer,
            noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            expected_batch_size=expected_batch_size,
            settings=self.settings,
            loss_reduction=loss_reduction,
            generator=self.secure_rng if self.secure_mode else noise_generator,
            secure_mode=self.secure_mode,
            **kwargs,
        )

    def make_private_with_epsilon(
        self,
        *,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        data_loader: Any,
        target_epsilon: float,
        target_delta: float,
        epochs: int,
        max_grad_norm: float | list[float],
        tolerance: float = 1e-3,
        poisson_sampling: bool = True,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """:meth:`make_private` with the noise multiplier of the certified calibration, kept
        in :attr:`calibration`: the smallest found whose certified eps at ``target_delta``
        after ``epochs`` epochs on the optimiser's trainable coordinates, with this engine's
        cut and truncation, is at most ``target_epsilon`` (Opacus's own searches with its
        RDP or PRV estimate instead). With Poisson sampling
        (:func:`accountant.calibrate_noise_multiplier`): ``epochs * len(data_loader)``
        steps at rate ``1 / len(data_loader)``. With ``poisson_sampling=False``
        (:func:`accountant.calibrate_shuffled_noise_multiplier`): the loader's own epochs,
        with the Poisson figures beside them. ``tolerance``: the relative width ``sigma /
        sigma_low - 1`` sought. Returns what Opacus returns. Refuses an accountant that has
        already accounted steps (the calibration assumes none; Opacus only warns)."""
        if len(self.accountant) > 0:
            raise InvalidInputError(
                f"privacy_engine.accountant has already accounted {len(self.accountant)} "
                "steps; calibration assumes none (use a fresh engine)"
            )
        if poisson_sampling is not True and poisson_sampling is not False:
            raise InvalidInputError(
                f"poisson_sampling must be True or False, got {poisson_sampling!r}"
            )
        dimension = noised_coordinates(optimizer)
        if dimension == 0:
            raise InvalidInputError(
                "dimension is unknown: optimizer has no trainable parameter (pass the "
                "optimizer of the model to train, its parameters requiring gradients)"
            )
        epsilon = check_positive_real("target_epsilon", target_epsilon)
        delta = check_target_delta("target_delta", target_delta)
        epochs = check_positive_int("epochs", epochs)
        noise: dict[str, Any] = {
            "cut": self.settings.cut,
            "dimension": dimension,
            "truncation": self.settings.law,
            "tolerance": tolerance,
        }
        if poisson_sampling:
            batches = check_positive_int("len(data_loader)", len(data_loader))
            self.calibration = calibrate_noise_multiplier(
                epsilon=epsilon,
                delta=delta,
                sampling_rate=1.0 / batches,
                steps=epochs * batches,
                **noise,
            )
        else:
            self.calibration = loader_calibration(
                data_loader,
                epsilon=epsilon,
                delta=delta,
                epochs=epochs,
                intervals=self.intervals,
                accuracy=self.accuracy,
                **noise,
            )
        return self.make_private(
            module=module,
            optimizer=optimizer,
            data_loader=data_loader,
            noise_multiplier=self.calibration.sigma,
            max_grad_norm=max_grad_norm,
            poisson_sampling=poisson_sampling,
            **kwargs,
        )
