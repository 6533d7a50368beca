"""Import hygiene: accountant never needs torch; optimizers names the [torch] extra. Project
basics: one version, the license, the citation, the changelog and the project URLs agree."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import accountant

ROOT = Path(__file__).resolve().parent.parent
BLOCK_TORCH = "import sys; sys.modules['torch'] = None; "


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_accountant_imports_without_torch():
    result = _python(
        BLOCK_TORCH + "from accountant import ExtendedMA; "
        "import accountant.report.cli, accountant.report.audit; "
        "print(ExtendedMA.__name__)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ExtendedMA"


def test_optimizers_without_torch_names_the_extra():
    result = _python(BLOCK_TORCH + "import optimizers")
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "[torch]" in result.stderr


def test_no_torch_import_anywhere_in_accountant():
    for path in (ROOT / "accountant").rglob("*.py"):
        text = path.read_text()
        assert "import torch" not in text and "from torch" not in text, path


def test_public_names_are_exported_and_documented():
    for name in accountant.__all__:
        obj = getattr(accountant, name)
        if not isinstance(obj, str):
            assert obj.__doc__, f"{name} has no docstring"


# Project basics (issue 25): one version, the license, the citation, the changelog, the URLs.

DISTRIBUTION = "truncated-noise-accountant"
REPOSITORY = "https://github.com/truncated-noise-accountant/truncated-noise-accountant"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_written_once_and_read_by_pyproject():
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "accountant.__version__"
    # A string literal, so that setuptools reads it without importing accountant (a build
    # needs no numpy) and `import accountant` reads no installed metadata.
    tree = ast.parse((ROOT / "accountant" / "__init__.py").read_text())
    literals = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
    ]
    assert literals == [accountant.__version__]


def test_package_command_and_metadata_versions_agree():
    installed = metadata.version(DISTRIBUTION)
    assert accountant.__version__ == installed, "reinstall: pip install -e '.[torch,test]'"
    result = subprocess.run(
        [sys.executable, "-m", "accountant", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"accountant {installed}\n"


def test_optimizers_version_is_the_distributions():
    optimizers = pytest.importorskip("optimizers")
    assert "__version__" in optimizers.__all__
    assert optimizers.__version__ == metadata.version(DISTRIBUTION) == accountant.__version__


def test_license_file_matches_pyproject_and_ships_in_the_metadata():
    text = (ROOT / "LICENSE").read_text()
    assert _pyproject()["project"]["license"] == {"text": "MIT"}
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 truncated-noise-accountant developers" in text
    assert "LICENSE" in (metadata.metadata(DISTRIBUTION).get_all("License-File") or [])


def test_project_urls_are_the_docs_sites_repository():
    urls = _pyproject()["project"]["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Source", "Changelog", "Issues"}
    assert all(url.startswith(REPOSITORY) for url in urls.values()), urls
    assert urls["Changelog"].endswith("/CHANGELOG.md")
    mkdocs = (ROOT / "mkdocs.yml").read_text()
    assert re.findall(r"^repo_url: (\S+)$", mkdocs, flags=re.M) == [urls["Source"]]
    installed = metadata.metadata(DISTRIBUTION).get_all("Project-URL") or []
    assert sorted(installed) == sorted(f"{name}, {url}" for name, url in urls.items())


def test_citation_names_the_software_and_prefers_the_paper():
    import yaml  # with mkdocs, in the [test] extra

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    assert citation["type"] == "software" and citation["title"] == DISTRIBUTION
    assert citation["license"] == "MIT"
    assert citation["repository-code"] == REPOSITORY
    # The version is not written a second time; if it ever is, it must agree.
    assert citation.get("version", accountant.__version__) == accountant.__version__
    paper = citation["preferred-citation"]
    # The title and authors of the paper's LaTeX source (\title, \author).
    title = "Learning Numeric Optimal Differentially Private Truncated Additive Mechanisms"
    assert paper["title"] == title
    assert title in " ".join((ROOT / "README.md").read_text().split())
    assert [author["family-names"] for author in paper["authors"]] == [
        "Sommer",
        "Abfalterer",
        "Zingg",
        "Mohammadi",
    ]
    assert paper["year"] == 2021


def _changelog_sections() -> dict[str, str]:
    """``## [...]`` heading -> its text, of CHANGELOG.md."""
    text = (ROOT / "CHANGELOG.md").read_text()
    parts = re.split(r"^## \[([^\]]+)\].*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_changelog_has_unreleased_and_the_current_version():
    sections = _changelog_sections()
    assert next(iter(sections)) == "Unreleased"
    assert accountant.__version__ in sections
    groups = {
        heading: " ".join(text.split())
        for heading, text in re.findall(
            r"^### (\w+)\n(.*?)(?=^### |\Z)", sections[accountant.__version__], re.M | re.S
        )
    }
    assert set(groups) >= {"Added", "Changed", "Fixed"}
    # Facts the API reference listed before it pointed here (a sample, one per group).
    assert "`ExtendedMA.delta_pdp(eps)`" in groups["Added"]
    assert "returns a `DeltaUpperBound`" in groups["Changed"]
    assert "`optimizers.opacus.DimensionWarning`" in groups["Removed"]
    assert "floored at 1e-250 of its largest weight" in groups["Fixed"]


def test_api_reference_points_to_the_changelog_instead_of_keeping_a_list():
    text = (ROOT / "docs" / "api" / "index.md").read_text()
    _, heading, section = text.partition("## Changes to the public API\n")
    assert heading, "the API reference lost its pointer to the changelog"
    section = section.split("\n## ", 1)[0]
    assert "CHANGELOG.md" in section
    assert not re.search(r"^\s*[-*] ", section, flags=re.M), (
        "list API changes in CHANGELOG.md (its [Unreleased] section), not in docs/api"
    )
