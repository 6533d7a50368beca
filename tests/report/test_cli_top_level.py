"""``accountant --help`` and ``accountant --version`` (issue 25): the help says what every
subcommand does, the plugins' included, without importing a plugin or torch; the version
is the distribution's."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from importlib.metadata import EntryPoint

import pytest

import accountant
from accountant.report import cli
from accountant.report.cli import ENTRY_POINT_GROUP, build_parser, main

SUBCOMMANDS = ("audit", "calibrate", "sample", "learn", "sweep")
HEAVY = ("torch", "optimizers", "matplotlib")
WIDE = {**os.environ, "COLUMNS": "200"}  # one subcommand a line: argparse wraps to COLUMNS


def _run_main(argv: list[str]) -> tuple[subprocess.CompletedProcess, dict]:
    """``main(argv)`` in a fresh process: its output, exit status and the heavy modules
    it imported."""
    code = (
        "import json, sys\n"
        "from accountant.report.cli import main\n"
        "try:\n"
        f"    status = main({argv!r})\n"
        "except SystemExit as stop:\n"
        "    status = stop.code\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print('RESULT ' + json.dumps({'status': status, 'heavy': heavy}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=WIDE
    )
    line = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, (result.stdout, result.stderr)
    return result, json.loads(line[-1][len("RESULT ") :])


def _listed(help_text: str) -> dict[str, str]:
    """Subcommand -> its one-line description, as ``accountant --help`` lists them."""
    return {
        name: description.strip()
        for name, description in re.findall(r"^    ([a-z][\w-]*)\s+(.*)$", help_text, re.M)
    }


def test_top_level_help_describes_every_subcommand_without_importing_plugins():
    result, found = _run_main(["--help"])
    assert found == {"status": 0, "heavy": []}, result.stderr
    listed = _listed(result.stdout)
    assert set(SUBCOMMANDS) <= set(listed), result.stdout
    for name in SUBCOMMANDS:
        description = listed[name]
        assert len(description) > 20, (name, description)
        assert "plugin" not in description and ":register" not in description, description
    assert listed["learn"] == cli._PLUGIN_SUMMARIES["learn"]
    assert listed["sweep"] == cli._PLUGIN_SUMMARIES["sweep"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs the [torch] extra")
def test_plugin_summaries_are_the_help_the_plugins_register(monkeypatch):
    """The summaries shown without importing a plugin are the plugin's own ``help``."""
    monkeypatch.setenv("COLUMNS", "200")
    loaded = _listed(build_parser().format_help())  # every plugin imported and registered
    assert {name: loaded[name] for name in cli._PLUGIN_SUMMARIES} == cli._PLUGIN_SUMMARIES


def test_version_is_the_distributions_and_imports_no_plugin(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    expected = f"accountant {metadata.version('truncated-noise-accountant')}\n"
    assert capsys.readouterr().out == expected == f"accountant {accountant.__version__}\n"
    result, found = _run_main(["--version"])
    assert found == {"status": 0, "heavy": []}, result.stderr
    assert result.stdout.splitlines()[0] == expected.strip()


def _fake_entry_points(monkeypatch, **values: str) -> None:
    fake = [
        EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)
        for name, value in values.items()
    ]
    monkeypatch.setattr(
        cli, "entry_points", lambda group: fake if group == ENTRY_POINT_GROUP else []
    )


def test_a_third_party_plugin_is_listed_with_a_pointer_to_its_own_help(monkeypatch):
    # "learn" from another distribution does not borrow this distribution's summary.
    _fake_entry_points(monkeypatch, hello="their_plugin:register", learn="their_learn:register")
    monkeypatch.setenv("COLUMNS", "200")
    listed = _listed(build_parser(commands=()).format_help())
    assert (
        listed["hello"] == "plugin subcommand (their_plugin:register); see: accountant hello --help"
    )
    assert (
        listed["learn"] == "plugin subcommand (their_learn:register); see: accountant learn --help"
    )


def test_no_plugin_replaces_a_built_in_subcommand(monkeypatch):
    _fake_entry_points(
        monkeypatch,
        audit="x:register",
        calibrate="x:register",
        sample="x:register",
        hello="x:register",
    )
    assert list(cli._plugins()) == ["hello"]
    monkeypatch.setenv("COLUMNS", "200")
    listed = _listed(build_parser(commands=()).format_help())
    assert listed["sample"] == "draw noise for a release (secure, exactly on the grid)"
