"""Plugin subcommands load lazily (issue 11, item 7): ``accountant --help`` and
``accountant audit`` never import torch, ``optimizers`` or matplotlib; the plugin is
imported only when its subcommand runs; a plugin that cannot be imported gives one line
and leaves ``audit`` working."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from accountant.report import cli
from accountant.report.cli import ENTRY_POINT_GROUP, main

HEAVY = ("torch", "optimizers", "matplotlib")
SMALL_AUDIT = ["audit", "--sigma", "2", "--bound", "4", "--step", "0.5", "-n", "2"]


def _modules_after(argv: list[str], prelude: str = "") -> tuple[subprocess.CompletedProcess, dict]:
    code = (
        "import json, sys\n"
        + prelude
        + "from accountant.report.cli import main\n"
        + "try:\n"
        + f"    status = main({argv!r})\n"
        + "except SystemExit as stop:\n"
        + "    status = stop.code\n"
        + f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        + "print('\\nRESULT ' + json.dumps({'status': status, 'heavy': heavy}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    line = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, (result.stdout, result.stderr)
    return result, json.loads(line[-1][len("RESULT ") :])


@pytest.mark.parametrize("argv", [["--help"], [], SMALL_AUDIT, [*SMALL_AUDIT, "--json"]])
def test_help_and_audit_import_no_plugin_torch_or_matplotlib(argv):
    result, found = _modules_after(argv)
    assert found["heavy"] == [], found
    assert found["status"] in (0, 2), result.stderr


def test_top_level_help_lists_plugins_from_metadata_without_loading_them():
    result, found = _modules_after(["--help"])
    assert found["status"] == 0 and found["heavy"] == []
    assert "audit" in result.stdout
    assert "learn" in result.stdout  # the entry point of this distribution


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs the [torch] extra")
def test_the_learn_plugin_is_loaded_when_asked_for():
    result, found = _modules_after(["learn", "--help"])
    assert found["status"] == 0, result.stderr
    assert "usage: accountant learn" in result.stdout
    assert "optimizers" in found["heavy"]


def test_learn_without_torch_is_one_line_naming_the_extra_and_audit_still_works():
    block = (  # a finder that refuses torch (sys.modules['torch'] = None would break scipy)
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    result, found = _modules_after(["learn"], prelude=block)
    assert found["status"] == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("accountant: error: ") and "[torch]" in lines[0]
    result, found = _modules_after(SMALL_AUDIT, prelude=block)
    assert found["status"] == 0, result.stderr


def _fake_plugins(monkeypatch, **values: str) -> None:
    plugins = {
        name: EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)
        for name, value in values.items()
    }
    monkeypatch.setattr(cli, "_plugins", lambda: plugins)


def test_a_broken_plugin_gives_one_line_and_exit_2(monkeypatch, capsys):
    _fake_plugins(monkeypatch, broken="no_such_module_for_accountant_tests:register")
    assert main(["broken", "--anything"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("accountant: error: 'accountant broken'")
    assert "no_such_module_for_accountant_tests" in err[0]
    assert main(SMALL_AUDIT) == 0


def test_only_the_requested_plugin_is_imported(monkeypatch, capsys):
    loaded = []

    def register(subparsers):
        loaded.append("hello")
        parser = subparsers.add_parser("hello", help="say hello")
        parser.add_argument("--name", default="world")
        parser.set_defaults(func=lambda args: print(f"hello {args.name}") or 0)

    monkeypatch.setitem(sys.modules, "fake_accountant_plugin", type(sys)("fake"))
    sys.modules["fake_accountant_plugin"].register = register
    _fake_plugins(monkeypatch, hello="fake_accountant_plugin:register")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert loaded == [] and "hello" in capsys.readouterr().out
    assert main(SMALL_AUDIT) == 0 and loaded == []
    capsys.readouterr()
    assert main(["hello", "--name", "you"]) == 0 and loaded == ["hello"]
    assert capsys.readouterr().out == "hello you\n"
