"""``accountant audit --accountant PATH``, ``--run PATH`` and ``--save PATH``: audit a
saved accountant or a DP-SGD training run described in JSON
(:mod:`accountant.report.run_file`), or save the accountant an audit composed.

A saved accountant's file (or a run's) already says what was composed and how often, so
every noise, mechanism and ``-n`` option given with ``--accountant`` or ``--run`` is an
error (nothing is silently ignored), as is ``--plot`` (it draws the curves of one noise's
pairs), and so is giving both.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from accountant.errors import InvalidInputError
from accountant.report.terminal import check_output_path, note_line

__all__ = ["add_saved_options", "check_saved_options", "load_audited", "save_audited"]


def add_saved_options(audit: argparse.ArgumentParser) -> None:
    """Add ``--accountant`` and ``--save`` to the ``audit`` parser."""
    saved = audit.add_argument_group("saved accountants")
    saved.add_argument(
        "--accountant",
        metavar="PATH",
        help="audit the accountant saved at PATH (accountant.save_accountant or --save); "
        "its file says what was composed, so no noise, mechanism or -n option is taken",
    )
    saved.add_argument(
        "--run",
        metavar="PATH",
        help="audit the DP-SGD training run described in the JSON file PATH: "
        '{"dimension": d, "cut": k, "truncation": ..., "segments": '
        '[{"noise_multiplier": s, "sampling_rate": q, "steps": n}, ...]} '
        "(a segment may also be Opacus's history entry [s, q, n])",
    )
    saved.add_argument(
        "--save",
        metavar="PATH",
        help="also save the audited accountant to PATH (JSON, with an .npz sidecar next to "
        "it) for a later --accountant audit",
    )


def check_saved_options(args: argparse.Namespace, composing: dict[str, str]) -> None:
    """Refuse, before any work: with ``--accountant``, any option of ``composing``
    (argparse ``dest`` -> its flag) that was given, and ``--plot``; a ``--save`` path
    that cannot be written."""
    if args.save is not None:
        check_output_path("--save", args.save)
    if args.accountant is not None and args.run is not None:
        raise InvalidInputError(
            f"--run cannot be given with --accountant ({args.accountant!r}): audit one of them"
        )
    source = "--accountant" if args.accountant is not None else "--run"
    path = args.accountant if args.accountant is not None else args.run
    if path is None:
        return
    for dest, flag in composing.items():
        if getattr(args, dest) is not None:
            raise InvalidInputError(
                f"{flag} cannot be given with {source}: the file {path!r} already says "
                "what was composed"
            )
    if args.plot is not None:
        raise InvalidInputError(
            f"--plot does not apply to {source} (it draws the curves of one noise's pairs)"
        )


def load_audited(args: argparse.Namespace) -> tuple[Any, str, str]:
    """The accountant ``--accountant`` or ``--run`` names, its path, and where it comes
    from (``"saved"`` or ``"training run"``); refusals name the path. A warning while
    loading (a saved file of format version 1, which cannot be checked for edits) is
    printed as one ``note:`` line on stderr."""
    if args.run is not None:
        from accountant.report.run_file import read_run, run_accountant

        return run_accountant(read_run(args.run)), args.run, "training run"
    from accountant.storage import load_accountant

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # e.g. UncheckedAccountantWarning
        accountant = load_accountant(args.accountant)
    for note in dict.fromkeys(str(w.message) for w in caught):
        print(note_line(note), file=sys.stderr)
    return accountant, args.accountant, "saved"


def save_audited(path: str, accountant: Any) -> str:
    """Save ``accountant`` to ``path``; returns a note saying what was saved where."""
    from accountant.storage import save_accountant

    saved = save_accountant(accountant, path)
    kind = type(accountant).__name__
    if kind == "ExtendedMA":
        kind += " (the worst case over shifts has no single PrivacyBuckets composition)"
    return f"saved the audited {kind} accountant to {path} (arrays: {saved.sidecar.name})"
