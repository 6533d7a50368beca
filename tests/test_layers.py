"""The layers of ``docs/architecture.md`` hold: import-linter's contracts in
``pyproject.toml`` are all kept, an upward import breaks them, and they declare the layers
the page lists (issue 28)."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: ``lint-imports`` as this interpreter runs it (the console script may not be on PATH).
LINT_IMPORTS = [
    sys.executable,
    "-c",
    "from importlinter.cli import lint_imports_command; lint_imports_command()",
]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _contract(contract_id: str) -> dict:
    found = [c for c in _config()["contracts"] if c.get("id") == contract_id]
    assert len(found) == 1, f"pyproject.toml declares no contract with id {contract_id!r}"
    return found[0]


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``pyproject.toml`` in ``cwd``, analysing the packages found
    there first (``python -c`` puts the working directory at the head of ``sys.path``)."""
    return subprocess.run(
        [*LINT_IMPORTS, "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _documented_layers() -> list[str]:
    """The fenced block under "## The layers" of docs/architecture.md, one layer a line."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert block, "docs/architecture.md: no layer list under '## The layers'"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def _top_level_parts() -> set[str]:
    package = ROOT / "accountant"
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name for p in package.glob("*/__init__.py")}
    return modules | packages


def test_every_contract_is_kept():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, f"broken import contract(s):\n{done.stdout}\n{done.stderr}"
    kept = re.findall(r"^(.+) KEPT$", done.stdout, re.MULTILINE)
    names = [contract["name"] for contract in _config()["contracts"]]
    assert sorted(kept) == sorted(names), done.stdout


def test_an_upward_import_breaks_the_layers(tmp_path):
    """A copy of the packages where ``numerics`` (the bottom layer) imports the command
    line: the contracts are broken, and the report names the added line."""
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("accountant", "optimizers"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    low = tmp_path / "accountant" / "numerics" / "directed.py"
    low.write_text(low.read_text() + "\nfrom accountant.report import cli  # upward\n")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout
    assert "imports run down the layers BROKEN" in done.stdout
    assert "accountant.numerics.directed -> accountant.report.cli" in done.stdout


def test_the_contracts_declare_the_documented_layers():
    layers = _contract("layers")
    assert layers["type"] == "layers" and layers["containers"] == ["accountant"]
    assert layers["layers"] == _documented_layers()
    # every top-level part is placed (import-linter also checks this: exhaustive = true)
    assert layers.get("exhaustive") is True
    placed = {part.strip() for layer in layers["layers"] for part in layer.split("|")}
    assert placed == _top_level_parts()
    assert layers["layers"][-1].split(" | ") == ["console", "errors", "numerics"]


def test_no_contract_has_exceptions_and_type_checking_imports_count():
    assert not _config().get("exclude_type_checking_imports", False)
    for contract in _config()["contracts"]:
        assert not contract.get("ignore_imports"), contract["name"]


def test_accountant_never_imports_its_plugin_or_torch():
    plugin = _contract("plugin")
    assert plugin["type"] == "forbidden" and plugin["source_modules"] == ["accountant"]
    assert {"optimizers", "torch"} <= set(plugin["forbidden_modules"])


@pytest.mark.parametrize("exclude_type_checking", [False, True])
def test_no_two_top_level_parts_import_each_other(exclude_type_checking):
    graph = grimp.build_graph(
        "accountant", exclude_type_checking_imports=exclude_type_checking, cache_dir=None
    )
    parts = sorted(graph.find_children("accountant"))
    cycles = [
        (a, b)
        for a, b in itertools.combinations(parts, 2)
        if graph.chain_exists(a, b, as_packages=True) and graph.chain_exists(b, a, as_packages=True)
    ]
    assert cycles == []
