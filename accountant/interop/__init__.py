"""Interoperation with Google's ``dp_accounting`` (the ``dp-accounting`` extra).

* :func:`to_dp_accounting_pld`: a worst-case pair as a pessimistic dp_accounting
  ``PrivacyLossDistribution`` (losses rounded up, distinguishing mass at ``+inf``).
* :class:`TruncatedNoiseDpEvent`: a ``DpEvent`` for additive truncated noise on a grid.
* :class:`CertifiedAccountant`: dp_accounting's ``PrivacyAccountant`` interface, composing
  dp_accounting's events and ours in :class:`accountant.PrivacyBuckets` (certified), under
  add/remove or replace-one neighbours.
* :func:`composed_to_dp_accounting_pld`: a composition as a pessimistic dp_accounting
  ``PrivacyLossDistribution`` that dp_accounting may compose further.

Importing this package without dp_accounting installed raises an :class:`ImportError`
that names the extra: ``pip install 'truncated-noise-accountant[dp-accounting]'``.
"""

from accountant.interop.requirement import require_dp_accounting

require_dp_accounting()

from accountant.interop.certified_accountant import CertifiedAccountant  # noqa: E402
from accountant.interop.composed_export import composed_to_dp_accounting_pld  # noqa: E402
from accountant.interop.events import TruncatedNoiseDpEvent  # noqa: E402
from accountant.interop.pld_export import (  # noqa: E402
    GridLosses,
    round_up_to_grid,
    to_dp_accounting_pld,
)

__all__ = [
    "CertifiedAccountant",
    "GridLosses",
    "TruncatedNoiseDpEvent",
    "composed_to_dp_accounting_pld",
    "require_dp_accounting",
    "round_up_to_grid",
    "to_dp_accounting_pld",
]
