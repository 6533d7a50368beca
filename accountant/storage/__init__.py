"""Saved accountants: any accountant, composed or not, to a file and back, so it can be
checkpointed with a model and audited later (``accountant audit --accountant PATH``).

>>> import tempfile, pathlib
>>> from accountant import PrivacyBuckets, load_accountant, mechanisms, save_accountant
>>> m = mechanisms.TruncatedGaussianMechanism(sigma=2.0, bound=10.0, sensitivity=1.0)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "accountant.json"
>>> saved = save_accountant(PrivacyBuckets().compose(m, times=4), path)
>>> load_accountant(path).history
'4 x truncated Gaussian (sigma=2, bound=10), sensitivity 1'

Modules: :mod:`~accountant.storage.saving` (the two functions and the file format),
:mod:`~accountant.storage.registry` and :mod:`~accountant.storage.mechanism_types` (the
mechanism types a file can hold), :mod:`~accountant.storage.values` (values in JSON),
:mod:`~accountant.storage.sidecar` (the ``.npz`` arrays and their sha256),
:mod:`~accountant.storage.digest` (the digest that makes the files tamper-evident),
:mod:`~accountant.storage.files` (paths; :func:`replaced_atomically`, the atomic write
any checkpoint can use).
"""

from accountant.storage.files import replaced_atomically
from accountant.storage.registry import MechanismType, register, registered_names
from accountant.storage.saving import (
    ACCOUNTANT_KINDS,
    FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    SavedAccountant,
    UncheckedAccountantWarning,
    load_accountant,
    save_accountant,
)

__all__ = [
    "ACCOUNTANT_KINDS",
    "FIELDS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MechanismType",
    "SavedAccountant",
    "UncheckedAccountantWarning",
    "load_accountant",
    "register",
    "registered_names",
    "replaced_atomically",
    "save_accountant",
]
