"""What ``import optimizers.opacus`` tells Opacus's accountant registry
(``opacus.accountants.register_accountant``, read by ``create_accountant``, which
``PrivacyEngine(accountant=...)`` and ``get_noise_multiplier(accountant=...)`` call).

* ``"certified"``: :class:`~optimizers.opacus.certified.CertifiedGaussianAccountant`, for
  Opacus's own Gaussian noise: ``PrivacyEngine(accountant="certified")`` is the one line
  a script written for Opacus's PRV or RDP accountant changes.
* ``"truncated"``: :func:`refuse_truncated`. Opacus builds a registered accountant and
  then, in its own ``make_private``, an optimiser adding untruncated Gaussian noise,
  which a truncated accountant does not account: the combination is refused when the
  engine is made, pointing to
  :class:`~optimizers.opacus.engine.TruncatedPrivacyEngine` (which builds the
  :class:`~optimizers.opacus.accountant.TruncatedAccountant` and the optimiser together).
"""

from __future__ import annotations

from typing import NoReturn

from opacus.accountants import register_accountant

from accountant import InvalidInputError
from optimizers.opacus.certified import CertifiedGaussianAccountant
from optimizers.opacus.state import CERTIFIED, MECHANISM

__all__ = ["refuse_truncated", "register"]


def refuse_truncated() -> NoReturn:
    """What ``create_accountant("truncated")`` calls: always refused (module docstring)."""
    raise InvalidInputError(
        "accountant='truncated' cannot be made by Opacus's create_accountant (its "
        "make_private adds untruncated noise): use optimizers.opacus.TruncatedPrivacyEngine"
        "(cut=..., truncation=...), and optimizers.opacus.get_noise_multiplier(..., "
        "dimension=...) for a noise multiplier; accountant='certified' for Gaussian noise"
    )


def register() -> None:
    """Register both names (again if imported again: a reloaded module replaces them)."""
    register_accountant(CERTIFIED, CertifiedGaussianAccountant, force=True)
    register_accountant(MECHANISM, refuse_truncated, force=True)
