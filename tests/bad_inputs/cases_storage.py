"""Bad-input cases for saving and loading accountants (the refusals of a foreign, corrupt
or newer file are tested with the files in ``tests/storage``)."""

from __future__ import annotations

from accountant import PrivacyBuckets, load_accountant, save_accountant
from tests.bad_inputs.catalogue import case, each

NOT_PATHS = [(5, "got 5"), (None, "got None"), (b"a.json", "got b'a.json'")]

STORAGE_CASES = [
    *each(
        "save_accountant",
        "accountant",
        lambda v: save_accountant(v, "unused.json"),
        [("x", "got 'x'"), (None, "got None"), (PrivacyBuckets, "got <class")],
    ),
    *each("save_accountant", "path", lambda v: save_accountant(PrivacyBuckets(), v), NOT_PATHS),
    case(
        "save_accountant",
        "path",
        "nodir' does not exist",
        lambda tmp: save_accountant(PrivacyBuckets(), tmp / "nodir" / "saved.json"),
    ),
    *each("load_accountant", "path", load_accountant, NOT_PATHS),
]
