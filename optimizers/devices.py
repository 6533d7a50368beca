"""The torch device a learning run trains on (``learn(..., device=...)``, ``--device``).

The model, its parameters and the training tensors (the pmf, the grid, the utility
loss) live on the device; the training bound's value and gradient are computed by
:mod:`accountant` on the CPU in float64 (:mod:`optimizers.autograd` copies the pmf to
the CPU and the gradient back), and everything certified is certified on the CPU. The
models are float64, so only CPU and CUDA devices are accepted (Apple's ``mps`` has no
float64).
"""

from __future__ import annotations

from typing import Any

import torch

from accountant.errors import InvalidInputError

__all__ = ["DEVICE_TYPES", "check_device"]

#: The device types a run may train on.
DEVICE_TYPES = ("cpu", "cuda")


def check_device(device: Any, *, available: bool = True) -> torch.device:
    """``device`` as a :class:`torch.device` (``None``: the CPU). Refused in one line
    (:class:`~accountant.errors.InvalidInputError` naming ``device`` and the value): not
    a string or :class:`torch.device`, a name torch does not parse, a type other than
    :data:`DEVICE_TYPES`, and, with ``available``, ``"cuda"`` when
    ``torch.cuda.is_available()`` is false or a CUDA index beyond
    ``torch.cuda.device_count()``."""
    if device is None:
        return torch.device("cpu")
    if not isinstance(device, str | torch.device):
        raise InvalidInputError(
            f"device must be None, a string such as 'cpu' or 'cuda:0', or a torch.device, "
            f"got {type(device).__name__}: {device!r}"
        )
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise InvalidInputError(
            f"device={str(device)!r} is not a device torch knows; use 'cpu', 'cuda' or 'cuda:N'"
        ) from exc
    if parsed.type not in DEVICE_TYPES:
        raise InvalidInputError(
            f"device={str(device)!r} is not supported: the models are float64, which runs on "
            f"{' and '.join(repr(t) for t in DEVICE_TYPES)} devices only"
        )
    if available and parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidInputError(
                f"device={str(device)!r} needs a CUDA GPU, but torch.cuda.is_available() is "
                "False on this machine (use device='cpu')"
            )
        count = torch.cuda.device_count()
        if parsed.index is not None and parsed.index >= count:
            raise InvalidInputError(
                f"device={str(device)!r} does not exist: this machine has {count} CUDA "
                f"device(s), cuda:0..cuda:{count - 1}"
            )
    return parsed
