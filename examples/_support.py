"""Shared by the example scripts (not an example itself): where figures go, and how
warnings are reported (printed as notes, never hidden)."""

from __future__ import annotations

import argparse
import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "figures" / "examples"


@contextlib.contextmanager
def reported_warnings(label: str) -> Iterator[None]:
    """Run the block recording warnings, then print each one as a note (never hide one)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for item in caught:
        print(f"  note ({label}): {item.category.__name__}: {item.message}")


def output_directory(args: argparse.Namespace) -> Path:
    """``--output-dir``, else the current directory in ``--fast`` mode, else the docs."""
    if args.output_dir is not None:
        directory = Path(args.output_dir)
    else:
        directory = Path.cwd() if args.fast else DEFAULT_OUTPUT
    directory.mkdir(parents=True, exist_ok=True)
    return directory
