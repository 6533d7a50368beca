"""``CertifiedPrivacyEngine``: Opacus's ``PrivacyEngine`` for plain Gaussian DP-SGD,
certified with Poisson sampling and without it.

* ``poisson_sampling=True`` (Opacus's default): exactly ``PrivacyEngine(accountant=
  "certified")`` (:class:`~optimizers.opacus.certified.CertifiedGaussianAccountant`).
* ``poisson_sampling=False``: Opacus keeps the caller's data loader, and every Opacus
  accountant would still account each step as Poisson-sampled at rate
  ``1 / len(data_loader)``, which can understate eps badly. This engine reads the loader's
  sampler before anything is made and accounts the epochs it really draws with a
  :class:`~optimizers.opacus.epochs.ShuffledEpochsAccountant`:

  - ``torch.utils.data.RandomSampler`` without replacement over the whole dataset
    (``DataLoader(shuffle=True)``): shuffled epochs;
  - ``torch.utils.data.SequentialSampler`` (``DataLoader(shuffle=False)``): the same order
    every epoch.

  ``dataset_size`` is ``len(data_loader.dataset)`` and ``batch_size`` is
  ``data_loader.batch_size``; with ``drop_last=False`` a short last batch is accounted as
  it stands (``accountant.shuffled_epochs_epsilon`` handles it). With ``drop_last=True`` and
  a batch size that does not divide the dataset, a fixed order never uses its last
  ``n mod b`` examples (accounted as a dataset of the ``b floor(n/b)`` it uses); shuffled
  epochs leave out a random ``n mod b`` examples per epoch, which the lower bound's pair
  does not describe: refused.

Refused at ``make_private``, naming the argument and its value, before the model is
touched (with ``poisson_sampling=False``): any other sampler (``WeightedRandomSampler``,
``RandomSampler(replacement=True)`` or with ``num_samples`` other than the dataset size,
``DistributedSampler``, a subclass or a custom one), a custom ``batch_sampler``, a loader
that is not a ``torch.utils.data.DataLoader``, shuffled ``drop_last=True`` as above,
clipping other than ``"flat"`` (adaptive clipping spends privacy on the clip norm;
per-layer clipping has no one-axis neighbour for the lower bound), ghost clipping (the step
hook checks each batch from the per-example gradients, which it does not keep), a
distributed model (each process draws its own batches), and mixing the two samplers on
one engine's history. ``make_private_with_epsilon`` with ``poisson_sampling=False``
calibrates the noise multiplier for the loader's own epochs
(:func:`accountant.calibrate_shuffled_noise_multiplier`, not Opacus's search, which
calibrates for Poisson sampling) and keeps what it found, with the Poisson figures beside
it, in ``engine.calibration``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import torch
from opacus import PrivacyEngine
from opacus.accountants import IAccountant
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel
from torch.distributed._composable.fsdp import FSDPModule
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

from accountant import InvalidInputError
from accountant.learning.shuffled_calibration import (
    SamplerCalibration,
    calibrate_shuffled_noise_multiplier,
)
from accountant.mechanisms.shuffled import DEFAULT_INTERVALS
from accountant.validation import (
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_target_delta,
)
from optimizers.opacus.certified import DEFAULT_CERTIFIED_ACCURACY, CertifiedGaussianAccountant
from optimizers.opacus.epochs import ShuffledEpochsAccountant
from optimizers.opacus.state import CERTIFIED

__all__ = [
    "CertifiedPrivacyEngine",
    "LoaderEpochs",
    "checked_epochs_request",
    "epochs_accountant_for",
    "loader_calibration",
    "loader_epochs",
    "poisson_accountant_for",
]


@attrs.frozen
class LoaderEpochs:
    """The epoch structure of a data loader: ``sampler`` ``"shuffle"`` or
    ``"fixed-order"``, ``dataset_size`` examples used per epoch, ``batch_size``."""

    sampler: str
    dataset_size: int
    batch_size: int


def loader_epochs(data_loader: Any) -> LoaderEpochs:
    """The epochs ``data_loader`` draws (module docstring), or
    :class:`~accountant.InvalidInputError` naming what cannot be mapped."""
    if not isinstance(data_loader, DataLoader):
        raise InvalidInputError(
            "data_loader must be a torch.utils.data.DataLoader with poisson_sampling=False, "
            f"got {type(data_loader).__name__}"
        )
    if data_loader.batch_size is None or type(data_loader.batch_sampler) is not BatchSampler:
        raise InvalidInputError(
            "data_loader.batch_sampler must be the one DataLoader(batch_size=..., "
            "shuffle=...) makes with poisson_sampling=False, got a custom "
            f"{type(data_loader.batch_sampler).__name__} (batch_size={data_loader.batch_size!r})"
        )
    sampler = data_loader.sampler
    try:
        # torch's stubs: a Dataset need not be Sized (hence the TypeError caught here)
        dataset_size = len(data_loader.dataset)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(
            "data_loader.dataset must have a length with poisson_sampling=False, got "
            f"{type(data_loader.dataset).__name__}"
        ) from None
    dataset_size = check_positive_int("len(data_loader.dataset)", dataset_size)
    if type(sampler) is RandomSampler:
        if sampler.replacement:
            raise InvalidInputError(
                "data_loader.sampler must draw without replacement with "
                "poisson_sampling=False, got RandomSampler(replacement=True) (use "
                "DataLoader(shuffle=True), or poisson_sampling=True)"
            )
        if sampler.num_samples != dataset_size:
            raise InvalidInputError(
                f"data_loader.sampler must permute the whole dataset "
                f"(len(data_loader.dataset)={dataset_size}), got RandomSampler with "
                f"num_samples={sampler.num_samples!r}"
            )
        kind = "shuffle"
    elif type(sampler) is SequentialSampler:
        if len(sampler) != dataset_size:
            raise InvalidInputError(
                f"data_loader.sampler must run over the whole dataset "
                f"(len(data_loader.dataset)={dataset_size}), got SequentialSampler over "
                f"{len(sampler)} examples"
            )
        kind = "fixed-order"
    else:
        raise InvalidInputError(
            "data_loader.sampler must be torch.utils.data.RandomSampler without replacement "
            "(shuffle=True) or SequentialSampler (shuffle=False) with poisson_sampling=False, "
            f"got {type(sampler).__module__}.{type(sampler).__qualname__}"
        )
    batch_size = check_positive_int("data_loader.batch_size", data_loader.batch_size)
    batch_size = min(batch_size, dataset_size)  # a larger batch is the whole dataset
    if data_loader.drop_last and dataset_size % batch_size:
        if kind == "shuffle":
            raise InvalidInputError(
                f"data_loader.drop_last=True with shuffle=True leaves out a random "
                f"{dataset_size % batch_size} of the {dataset_size} examples each epoch "
                f"(batch_size {batch_size}), which the certified lower bound does not cover: "
                "use drop_last=False (a short last batch is accounted as it is) or a batch "
                "size dividing the dataset size"
            )
        dataset_size -= dataset_size % batch_size  # the examples a fixed order never uses
    return LoaderEpochs(kind, dataset_size, batch_size)


def checked_epochs_request(
    *,
    module: Any,
    data_loader: Any,
    noise_multiplier: Any,
    max_grad_norm: Any,
    clipping: Any,
    grad_sample_mode: Any,
) -> LoaderEpochs:
    """The epochs of ``data_loader`` for ``make_private(poisson_sampling=False)``, after
    refusing what they cannot be accounted with (module docstring): clipping other than
    ``"flat"``, ghost clipping, a distributed model, a bad noise multiplier or clip norm."""
    if clipping != "flat":
        raise InvalidInputError(
            f"clipping={clipping!r} is not supported with poisson_sampling=False "
            "(only 'flat' is accounted with shuffled or fixed-order epochs)"
        )
    if "ghost" in str(grad_sample_mode):
        raise InvalidInputError(
            f"grad_sample_mode={grad_sample_mode!r} is not supported with "
            "poisson_sampling=False (the step hook checks each batch from the "
            "per-example gradients, which ghost clipping does not keep)"
        )
    distributed = (
        DifferentiallyPrivateDistributedDataParallel,
        DistributedDataParallel,
        FSDPModule,
    )
    if isinstance(module, distributed):
        raise InvalidInputError(
            f"module is a distributed {type(module).__name__}: not supported with "
            "poisson_sampling=False (each process draws its own batches)"
        )
    check_positive_real("noise_multiplier", noise_multiplier)
    check_positive_real("max_grad_norm", max_grad_norm)
    return loader_epochs(data_loader)


def epochs_accountant_for(
    current: Any,
    epochs: LoaderEpochs,
    new: Callable[[], ShuffledEpochsAccountant],
    engine: str,
) -> ShuffledEpochsAccountant:
    """The accountant of ``make_private(poisson_sampling=False)`` for ``epochs``, given the
    engine's ``current`` one: ``current`` if it has accounted steps of the same epochs (the
    next step starts an epoch), ``new()`` if it has accounted none; a history of other
    epochs or of Poisson sampling is refused (``engine``: the engine class to use anew)."""
    if isinstance(current, ShuffledEpochsAccountant) and len(current) > 0:
        if attrs.asdict(epochs) == current.structure():
            current.start_epoch()
            return current
        raise InvalidInputError(
            f"data_loader draws {epochs.sampler} epochs of {epochs.dataset_size} examples "
            f"in batches of {epochs.batch_size}, but this engine has accounted "
            f"{len(current)} steps of {current.structure()}: use a new {engine} for another "
            "data loader"
        )
    if not isinstance(current, ShuffledEpochsAccountant) and len(current) > 0:
        raise InvalidInputError(
            f"poisson_sampling=False on an engine whose accountant "
            f"({type(current).__name__}) has accounted {len(current)} Poisson-sampled "
            "steps: a Poisson history cannot be continued with shuffled or fixed-order "
            f"epochs (use a new {engine})"
        )
    return new()


def poisson_accountant_for(
    current: Any, new: Callable[[], IAccountant], engine: str
) -> IAccountant:
    """The accountant of ``make_private(poisson_sampling=True)`` given the engine's
    ``current`` one: ``current`` unless it accounts epochs, ``new()`` if those epochs have
    no step yet; a history of epochs is refused (``engine``: the engine class to use
    anew)."""
    if not isinstance(current, ShuffledEpochsAccountant):
        return current
    if len(current) > 0:
        raise InvalidInputError(
            f"poisson_sampling=True on an engine whose accountant has accounted "
            f"{len(current)} steps of {current.sampler} epochs: they cannot be "
            f"continued with Poisson sampling (use a new {engine})"
        )
    return new()


def loader_calibration(data_loader: Any, **arguments: Any) -> SamplerCalibration:
    """:func:`~accountant.learning.shuffled_calibration.calibrate_shuffled_noise_multiplier`
    for the epochs ``data_loader`` draws (:func:`loader_epochs`), with ``arguments`` (the
    target, ``epochs``, and the engine's accuracy, partition and noise)."""
    structure = loader_epochs(data_loader)
    return calibrate_shuffled_noise_multiplier(
        batch_size=structure.batch_size,
        dataset_size=structure.dataset_size,
        sampler=structure.sampler,
        **arguments,
    )


class CertifiedPrivacyEngine(PrivacyEngine):
    """Opacus's ``PrivacyEngine`` certifying plain Gaussian DP-SGD with or without Poisson
    sampling (module docstring): ``make_private`` and ``make_private_with_epsilon`` take
    Opacus's arguments and return what Opacus returns; ``get_epsilon(delta)`` is the
    certified upper bound on eps, ``accountant.epsilon_bounds(delta)`` the bracket (with
    the Poisson figure beside it when ``poisson_sampling=False``).

    ``accuracy``: PrivacyBuckets' accuracy (default that of ``"certified"``);
    ``intervals``: the partition of the shuffled lower bound's max statistic;
    ``secure_mode``: Opacus's. :attr:`accountant` is a
    :class:`~optimizers.opacus.certified.CertifiedGaussianAccountant` until
    ``make_private(poisson_sampling=False)`` replaces it by a
    :class:`~optimizers.opacus.epochs.ShuffledEpochsAccountant` for the loader's epochs.
    :attr:`calibration`: what ``make_private_with_epsilon(poisson_sampling=False)`` found
    (:class:`~accountant.learning.shuffled_calibration.SamplerCalibration`), else ``None``.
    """

    def __init__(
        self,
        *,
        accuracy: float = DEFAULT_CERTIFIED_ACCURACY,
        intervals: int = DEFAULT_INTERVALS,
        secure_mode: bool = False,
    ) -> None:
        self.accuracy = check_open_fraction("accuracy", accuracy)
        self.intervals = check_positive_int("intervals", intervals)
        super().__init__(accountant=CERTIFIED, secure_mode=secure_mode)
        self.accountant = CertifiedGaussianAccountant(self.accuracy)
        self.calibration: SamplerCalibration | None = None

    def _new_epochs(self, epochs: LoaderEpochs) -> ShuffledEpochsAccountant:
        return ShuffledEpochsAccountant(
            sampler=epochs.sampler,
            dataset_size=epochs.dataset_size,
            batch_size=epochs.batch_size,
            accuracy=self.accuracy,
            intervals=self.intervals,
        )

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
        """Opacus's ``make_private`` (same arguments, same return), accounted by the
        certified accountant of the loader's sampler (module docstring); what cannot be
        accounted is refused before anything is made."""
        if poisson_sampling is True:
            self.accountant = poisson_accountant_for(
                self.accountant,
                lambda: CertifiedGaussianAccountant(self.accuracy),
                "CertifiedPrivacyEngine",
            )
        elif poisson_sampling is False:
            epochs = checked_epochs_request(
                module=module,
                data_loader=data_loader,
                noise_multiplier=noise_multiplier,
                max_grad_norm=max_grad_norm,
                clipping=clipping,
                grad_sample_mode=grad_sample_mode,
            )
            self.accountant = epochs_accountant_for(
                self.accountant,
                epochs,
                lambda: self._new_epochs(epochs),
                "CertifiedPrivacyEngine",
            )
        else:
            raise InvalidInputError(
                f"poisson_sampling must be True or False, got {poisson_sampling!r}"
            )
        return super().make_private(
            module=module,
            optimizer=optimizer,
            data_loader=data_loader,
            noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            poisson_sampling=poisson_sampling,
            clipping=clipping,
            grad_sample_mode=grad_sample_mode,
            **kwargs,
        )

    def make_private_with_epsilon(self, **kwargs: Any) -> tuple[Any, ...]:
        """Opacus's ``make_private_with_epsilon`` (same arguments, same return).

        With Poisson sampling: Opacus's search of the noise multiplier with the
        ``"certified"`` accountant, as ``PrivacyEngine(accountant="certified")``. With
        ``poisson_sampling=False``: the noise multiplier certified for the loader's own
        epochs (:func:`accountant.calibrate_shuffled_noise_multiplier`: the dominating
        Gaussian of each epoch, ``epochs`` times; Opacus's search would calibrate for
        Poisson sampling and understate eps), kept with the Poisson figures beside it in
        :attr:`calibration`, then :meth:`make_private` with it."""
        poisson_sampling = kwargs.get("poisson_sampling", True)
        if poisson_sampling is True:
            self.accountant = poisson_accountant_for(
                self.accountant,
                lambda: CertifiedGaussianAccountant(self.accuracy),
                "CertifiedPrivacyEngine",
            )
            self.calibration = None
            return super().make_private_with_epsilon(**kwargs)
        if poisson_sampling is not False:
            raise InvalidInputError(
                f"poisson_sampling must be True or False, got {poisson_sampling!r}"
            )
        missing = [k for k in ("target_epsilon", "target_delta", "epochs") if k not in kwargs]
        if missing:
            raise InvalidInputError(f"make_private_with_epsilon needs {', '.join(missing)}")
        rest = dict(kwargs)
        epsilon = check_positive_real("target_epsilon", rest.pop("target_epsilon"))
        delta = check_target_delta("target_delta", rest.pop("target_delta"))
        epochs = check_positive_int("epochs", rest.pop("epochs"))
        self.calibration = loader_calibration(
            rest.get("data_loader"),
            epsilon=epsilon,
            delta=delta,
            epochs=epochs,
            intervals=self.intervals,
            accuracy=self.accuracy,
        )
        return self.make_private(noise_multiplier=self.calibration.sigma, **rest)
