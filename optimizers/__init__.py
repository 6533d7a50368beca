"""Learn truncated noise by gradient descent (the PyTorch plugin of ``accountant``).

All privacy mathematics lives in :mod:`accountant`; this package only wraps it as
torch autograd functions and training loops. Install it with the ``torch`` extra::

    pip install 'truncated-noise-accountant[torch]'
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "optimizers needs PyTorch, which is not installed; install the [torch] extra: "
        "pip install 'truncated-noise-accountant[torch]' (or pip install '.[torch]' "
        "from a checkout)"
    ) from exc

__all__: list[str] = []
