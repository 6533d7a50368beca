"""The noise options ``accountant audit`` and ``accountant sample`` share: ``--family``
and the parameters each family uses, checked so that an option the family would not use
is an error (never ignored), with the documented defaults applied here; ``--bits``, the
quantisation both name the same way (:func:`build_quantised`: the law ``sample`` draws is
the law ``audit --bits`` audits); and the help text on pmf files both print."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from accountant.errors import InvalidInputError
from accountant.noise.bits import MAX_BITS, MIN_BITS
from accountant.validation import check_finite_real, check_positive_int, check_positive_real

__all__ = [
    "FAMILY_OPTIONS",
    "NOISE_DEFAULTS",
    "NOISE_OPTIONS",
    "PMF_FILE_FORMATS",
    "add_noise_options",
    "audit_command",
    "build_noise",
    "build_quantised",
    "check_bits",
    "flag",
    "noise_settings",
]

#: How ``--family file`` reads ``--pmf-file`` (the help of every subcommand that takes it).
PMF_FILE_FORMATS = """\
--family file reads --pmf-file: a two-column text file "x p" (comma-separated for
.csv), an (N, 2) .npy, or an .npz with arrays x and pmf carry their own grid (it
must be equidistant; --step and --start, if given, must agree with it); a one-column
text file or a 1-D .npy holds the pmf alone and needs --step (--start, the position
of the first value, defaults to a grid centred on 0).
"""

#: The options each ``--family`` uses (argparse ``dest`` names); any other noise option
#: given with that family is an error.
FAMILY_OPTIONS = {
    "truncated-gaussian": ("sigma", "bound", "step"),
    "truncated-laplace": ("scale", "bound", "step"),
    "staircase": ("stair_epsilon", "gamma", "bound", "step"),
    "uniform": ("bound", "step"),
    "file": ("pmf_file", "step", "start"),
}
NOISE_OPTIONS = ("sigma", "scale", "stair_epsilon", "gamma", "bound", "step", "pmf_file", "start")

#: Documented defaults of the noise options, applied when the family uses an option that
#: is not given.
NOISE_DEFAULTS: dict[str, Any] = {
    "family": "truncated-gaussian",
    "sigma": 100.0,
    "scale": 100.0,
    "stair_epsilon": 0.3,
    "bound": 500.0,
    "step": 0.5,
}


def flag(dest: str) -> str:
    """The command-line flag of the argparse ``dest``: ``"pmf_file"`` -> ``--pmf-file``."""
    return "--" + dest.replace("_", "-")


def add_noise_options(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Add the ``noise`` option group (``--family`` and every family's parameters); returns
    it, for options a subcommand adds to it."""
    noise = parser.add_argument_group("noise")
    noise.add_argument(
        "--family",
        choices=tuple(FAMILY_OPTIONS),
        default=None,
        help="noise family (default: truncated-gaussian)",
    )
    noise.add_argument("--sigma", type=float, help="Gaussian sigma (default: 100)")
    noise.add_argument("--scale", type=float, help="Laplace scale b (default: 100)")
    noise.add_argument(
        "--stair-epsilon", type=float, help="staircase design epsilon (default: 0.3)"
    )
    noise.add_argument(
        "--gamma", type=float, help="staircase gamma in [0, 1] (default: the optimal gamma)"
    )
    noise.add_argument(
        "--bound", type=float, help="truncation bound r: noise on [-r, r] (default: 500)"
    )
    noise.add_argument(
        "--step", type=float, help="grid step (default: 0.5; for a pmf file, its grid)"
    )
    noise.add_argument(
        "--pmf-file", metavar="FILE", help="pmf of --family file (see above for the formats)"
    )
    noise.add_argument(
        "--start",
        type=float,
        help="position of the first value of a pmf-only --pmf-file (default: centred on 0)",
    )
    return noise


def noise_settings(args: argparse.Namespace) -> dict:
    """``{"family": ..., <each option the family uses>: value}``, defaults applied; refuses
    every noise option the family would ignore and every bad value, naming the option,
    and a grid that memory cannot hold (naming ``--step``, ``--bound`` and the memory)."""
    family = args.family or NOISE_DEFAULTS["family"]
    used = FAMILY_OPTIONS[family]
    shown = f"--family {family}" + ("" if args.family else " (the default)")
    for dest in NOISE_OPTIONS:
        if getattr(args, dest) is not None and dest not in used:
            hint = "; add --family file" if dest == "pmf_file" else ""
            raise InvalidInputError(
                f"{flag(dest)} does not apply to {shown}, which would ignore it{hint}"
            )
    if family == "file" and args.pmf_file is None:
        raise InvalidInputError("--family file needs --pmf-file")
    settings: dict = {"family": family}
    for dest in used:
        value = getattr(args, dest)
        if value is None and family != "file":
            value = NOISE_DEFAULTS.get(dest)
        if value is not None and dest in ("sigma", "scale", "stair_epsilon", "bound", "step"):
            value = check_positive_real(flag(dest), value)
        elif value is not None and dest in ("gamma", "start"):
            value = check_finite_real(flag(dest), value)
        settings[dest] = value
    if family != "file":  # a grid the memory cannot hold is refused before it is built
        from accountant.noise.families import check_grid_size  # numpy: not for --help

        check_grid_size(
            settings["bound"], settings["step"], bound_name="--bound", step_name="--step"
        )
    return settings


def check_bits(value: object) -> int:
    """``--bits``: an integer in ``[MIN_BITS, MAX_BITS]`` (8 to 53), named in the refusal."""
    bits = check_positive_int("--bits", value)
    if not MIN_BITS <= bits <= MAX_BITS:
        raise InvalidInputError(f"--bits must lie in [{MIN_BITS}, {MAX_BITS}], got {bits}")
    return bits


def _shown(value: float) -> str:
    """``value`` as short as it reads back exactly (``2.0`` -> ``2``, ``0.1`` -> ``0.1``)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def audit_command(settings: dict, bits: int) -> str:
    """The ``accountant audit`` command line that audits the noise ``settings`` describe
    quantised to ``bits`` bits: every noise option the settings hold (defaults spelt
    out, so a changed default cannot change the law), the staircase's ``--sensitivity``
    (its design sensitivity, which the audit also takes), and ``--bits``."""
    words = ["accountant", "audit", "--family", settings["family"]]
    for dest in FAMILY_OPTIONS[settings["family"]]:
        value = settings.get(dest)
        if value is None:
            continue
        words += [flag(dest), value if isinstance(value, str) else _shown(value)]
    if settings["family"] == "staircase":
        words += ["--sensitivity", _shown(settings["sensitivity"])]
    words += ["--bits", str(bits)]
    return shlex.join(words)


def build_quantised(settings: dict, bits: int):
    """The noise ``settings`` describe quantised to ``bits`` bits
    (:func:`accountant.noise.quantised.quantise`; its ``noise`` is the law drawn and
    audited) and its description, which says so."""
    from accountant.noise.quantised import quantise

    chosen, description = build_noise(settings)
    return quantise(chosen, bits), f"{description}, quantised to {bits} bits"


def build_noise(settings: dict):
    """The noise distribution ``settings`` describe and its description (the staircase
    also needs ``settings["sensitivity"]``)."""
    from accountant import noise

    family = settings["family"]
    if family == "file":
        from accountant.report.pmf_file import read_pmf_file

        return read_pmf_file(settings["pmf_file"], settings["step"], settings["start"])
    grid = f"bound {settings['bound']:g}, step {settings['step']:g}"
    if family == "truncated-gaussian":
        s = settings["sigma"]
        return noise.truncated_gaussian(s, settings["bound"], settings["step"]), (
            f"truncated Gaussian (sigma {s:g}, {grid})"
        )
    if family == "truncated-laplace":
        b = settings["scale"]
        return noise.truncated_laplace(b, settings["bound"], settings["step"]), (
            f"truncated Laplace (scale {b:g}, {grid})"
        )
    if family == "staircase":
        e, gamma = settings["stair_epsilon"], settings["gamma"]
        stair = noise.staircase(
            settings["sensitivity"], e, settings["bound"], settings["step"], gamma
        )
        return stair, f"truncated staircase (eps {e:g}, {grid})"
    return noise.uniform(settings["bound"], settings["step"]), f"uniform ({grid})"
