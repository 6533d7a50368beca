"""Shared by the example scripts (not an example itself): where figures go, and how
warnings are reported (printed as notes, never hidden)."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def reported_warnings(label: str) -> Iterator[None]:
    """Run the block recording warnings, then print each one as a note (never hide one)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for item in caught:
        print(f"  note ({label}): {item.category.__name__}: {item.message}")


def add_output_option(parser: argparse.ArgumentParser) -> None:
    """``--output-dir DIR``: where the example writes its files."""
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="directory for the figures (created if needed; default: a new temporary "
        "directory, printed at the end). The figures of the docs: --output-dir "
        "docs/figures/examples",
    )


def output_directory(args: argparse.Namespace) -> Path:
    """``--output-dir`` (created if needed), else a new temporary directory, so that an
    example run as documented never writes into the repository."""
    if args.output_dir is None:
        return Path(tempfile.mkdtemp(prefix="accountant-example-"))
    directory = Path(args.output_dir)
    directory.mkdir(parents=True, exist_ok=True)
    return directory
