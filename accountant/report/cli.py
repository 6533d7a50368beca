"""Command line: ``accountant audit ...``, ``accountant calibrate ...`` and subcommands
registered by plugins.

Plugins (e.g. the torch extra's ``accountant learn``) register a callable under the
entry-point group ``accountant.commands``; it receives the subparsers object and adds its
own subcommand, setting ``func`` to the function that runs it. Plugins are loaded lazily:
their names come from the installed metadata, and a plugin is imported only when its
subcommand is run (or its ``--help`` is asked for), so ``accountant --help`` and
``accountant audit`` never import it (nor torch). The one-line help that
``accountant --help`` shows for a plugin it has not imported is kept here for the
plugins of this distribution (``learn``, ``sweep``); a third-party plugin is listed with a
pointer to ``accountant NAME --help``.

Every error is one line on stderr, ``accountant: error: <message naming the option>``,
with exit status 2, never a traceback (see :mod:`accountant.report.terminal`).

``accountant --help`` imports neither scipy nor numba (nor torch or a plugin): both load
where first used (:mod:`accountant.numerics.lazy`). A command that makes numba compile
its kernels (the first run on a machine) says so first, in one line on stderr:
``note: compiling the numba kernels (first run on this machine; cached for later runs)``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Collection, Sequence
from importlib.metadata import EntryPoint, entry_points

import accountant
from accountant.errors import AccountantError
from accountant.numerics import lazy
from accountant.report.terminal import check_output_path, error_line, show_notes

__all__ = ["ENTRY_POINT_GROUP", "build_parser", "check_output_path", "main"]

ENTRY_POINT_GROUP = "accountant.commands"
#: The distribution whose plugins ``_PLUGIN_SUMMARIES`` describes.
_DISTRIBUTION = "truncated-noise-accountant"
#: Subcommands of the ``accountant`` command itself; a plugin cannot take these names.
_BUILT_IN = ("audit", "calibrate", "sample")

#: One-line help of the plugins this distribution installs (its ``accountant.commands``
#: entry points in pyproject.toml), shown by ``accountant --help`` without importing them:
#: an entry point carries no text. Each is the ``help`` its plugin registers (a test checks
#: that they agree).
_PLUGIN_SUMMARIES: dict[str, str] = {
    "learn": "learn truncated noise by gradient descent (needs the [torch] extra)",
    "sweep": "a grid of learning runs on a process pool or a Dask cluster (needs [torch])",
}

#: Tokens that are numbers, negative ones included ("-1e-5", "-inf"), so that argparse
#: passes them on as values (to be validated and refused by name) instead of reading
#: them as unknown options.
_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class _UsageError(Exception):
    """A bad command-line argument (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line and whose values may be negative."""

    #: The top-level parser's plugins that could not be imported (set by build_parser).
    unavailable: dict[str, str]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NUMBER

    def error(self, message: str):  # one line, no usage dump
        raise _UsageError(message)


def _plugins() -> dict[str, EntryPoint]:
    """Installed plugin subcommands by name, read from metadata without importing them."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _BUILT_IN}


def _add_unavailable(subparsers, name: str, reason: ImportError) -> str:
    """List a subcommand whose plugin cannot be imported; returns the one-line reason
    that running it reports."""
    subparsers.add_parser(name, help=f"(unavailable: {reason})", add_help=False)
    return f"'accountant {name}' is unavailable: {reason}"


def _is_ours(entry_point: EntryPoint) -> bool:
    """Whether ``entry_point`` is installed by this distribution (not a third party's
    plugin that happens to share a name with one of ours)."""
    dist = getattr(entry_point, "dist", None)
    return dist is not None and dist.name == _DISTRIBUTION


def _add_not_loaded(subparsers, name: str, entry_point: EntryPoint) -> None:
    """A placeholder listed by ``accountant --help``; never run (see :func:`main`).

    Its help is the plugin's summary if this distribution installs it, else a pointer to
    the plugin's own ``--help`` naming where it comes from (``entry_point.value``)."""
    summary = _PLUGIN_SUMMARIES.get(name) if _is_ours(entry_point) else None
    if summary is None:
        summary = f"plugin subcommand ({entry_point.value}); see: accountant {name} --help"
    stub = subparsers.add_parser(name, help=summary, add_help=False)
    stub.add_argument("arguments", nargs=argparse.REMAINDER)


def build_parser(commands: Collection[str] | None = None) -> _Parser:
    """The ``accountant`` parser with ``audit``, ``calibrate``, ``sample`` and the installed plugin
    subcommands.

    ``commands``: the plugin subcommands to import and register in full; the others are
    listed by name only. ``None`` (the default) imports every plugin. A plugin that cannot
    be imported is listed as unavailable; the reason is kept in the parser's
    ``unavailable`` mapping (name -> message).
    """
    from accountant.report.cli_audit import add_audit
    from accountant.report.cli_calibrate import add_calibrate
    from accountant.report.cli_sample import add_sample

    parser = _Parser(
        prog="accountant",
        description="Numerical differential-privacy accounting of truncated noise.",
    )
    parser.add_argument(
        "--version", action="version", version=f"accountant {accountant.__version__}"
    )
    parser.unavailable = {}
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_audit(subparsers)
    add_calibrate(subparsers)
    add_sample(subparsers)
    for name, entry_point in _plugins().items():
        if commands is not None and name not in commands:
            _add_not_loaded(subparsers, name, entry_point)
            continue
        try:
            register = entry_point.load()
        except ImportError as exc:  # e.g. the [torch] extra is not installed
            parser.unavailable[name] = _add_unavailable(subparsers, name, exc)
            continue
        register(subparsers)
    return parser


def _requested_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: its first token that is not an option."""
    return next((token for token in argv if not token.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``accountant`` console script; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        command = _requested_command(arguments)
        parser = build_parser(commands=() if command is None else (command,))
        if command in parser.unavailable:
            raise ImportError(parser.unavailable[command])
        args = parser.parse_args(arguments)
        if args.command is None:
            parser.print_help()
            return 2
        show_notes(lazy.logger)  # e.g. that numba compiles its kernels (a first run)
        return int(args.func(args))
    except KeyboardInterrupt:
        print("accountant: interrupted", file=sys.stderr)
        return 130
    except (_UsageError, AccountantError, ValueError, ImportError, OSError) as exc:
        # ImportError: an optional extra is missing. OSError: e.g. an output path that
        # became unwritable during the run.
        print(error_line(str(exc)), file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
