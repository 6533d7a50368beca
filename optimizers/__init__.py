"""Learn truncated noise by gradient descent (the PyTorch plugin of ``accountant``).

All privacy mathematics lives in :mod:`accountant`; this package only wraps it as
torch autograd functions and training loops. Install it with the ``torch`` extra::

    pip install 'truncated-noise-accountant[torch]'

>>> from optimizers import LearningProblem, Schedule, learn
>>> problem = LearningProblem(bound=5.0, step=0.05, epsilon=0.3, times=1, target_delta=0.0503)
>>> result = learn(problem, Schedule())  # doctest: +SKIP
>>> result.delta, result.utility  # certified PrivacyBuckets delta, U_L1  # doctest: +SKIP
>>> result.met_target, result.returned  # True, "learned" (or "baseline")  # doctest: +SKIP
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "optimizers needs PyTorch, which is not installed; install the [torch] extra: "
        "pip install 'truncated-noise-accountant[torch]' (or pip install '.[torch]' "
        "from a checkout)"
    ) from exc

import accountant
from optimizers.autograd import buckets_delta, extended_ma_delta
from optimizers.checkpoints import CheckpointError
from optimizers.learner import NoiseCollapseError, learn
from optimizers.models import (
    LogIncrementModel,
    SigmoidStackModel,
    SymmetricWeightModel,
    build_model,
)
from optimizers.problem import LearningProblem, Schedule
from optimizers.results import LearnedNoise, LearningWarning

#: The distribution's version: ``optimizers`` ships in it, next to ``accountant``.
__version__ = accountant.__version__

__all__ = [
    "CheckpointError",
    "LearnedNoise",
    "LearningProblem",
    "LearningWarning",
    "LogIncrementModel",
    "NoiseCollapseError",
    "Schedule",
    "SigmoidStackModel",
    "SymmetricWeightModel",
    "__version__",
    "buckets_delta",
    "build_model",
    "extended_ma_delta",
    "learn",
]
