"""The documentation site builds strictly, documents every public name, and every image
and example script it mentions exists."""

from __future__ import annotations

import html
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import accountant

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXAMPLE = re.compile(r"\bexamples/[\w\-]+\.py\b")


def _markdown_files() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mkdocs build --strict`` into a temporary directory (broken links, missing
    images and failed API pages are errors in strict mode)."""
    site_dir = tmp_path_factory.mktemp("docs") / "site"
    command = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        str(site_dir),
        "--config-file",
        str(ROOT / "mkdocs.yml"),
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (
        f"mkdocs build --strict failed ({result.returncode}); is the [test] extra "
        f"installed?\n{result.stderr[-4000:]}"
    )
    return site_dir


@pytest.fixture(scope="module")
def api_html(site: Path) -> str:
    pages = sorted((site / "api").rglob("index.html"))
    assert pages, "no API pages were built"
    return "\n".join(html.unescape(page.read_text(encoding="utf-8")) for page in pages)


def test_site_builds_strictly(site: Path):
    assert (site / "index.html").is_file()
    assert (site / "api" / "index.html").is_file()


def _public_names() -> list[tuple[str, object]]:
    import optimizers

    return [
        (f"{package.__name__}.{name}", getattr(package, name))
        for package in (accountant, optimizers)
        for name in package.__all__
        if name != "__version__"
    ]


@pytest.mark.parametrize("name", [name for name, _ in _public_names()])
def test_public_name_is_documented(name: str, api_html: str):
    package, _, attribute = name.partition(".")
    obj = getattr(sys.modules[package], attribute)
    assert (inspect.getdoc(obj) or "").strip(), f"{name} has no docstring"
    # mkdocstrings gives each rendered object an anchor id with its canonical path.
    path = obj.__name__ if inspect.ismodule(obj) else f"{obj.__module__}.{obj.__qualname__}"
    assert f'id="{path}"' in api_html, f"{name} ({path}) is not rendered in the API reference"


def test_the_api_index_lists_every_public_name():
    """``docs/api/index.md`` says it lists every exported name with its page: hold it to
    that (a name missing there is only findable by search)."""
    index = (Path(__file__).resolve().parent.parent / "docs" / "api" / "index.md").read_text()
    missing = [name for name, _ in _public_names() if f"`{name.partition('.')[2]}`" not in index]
    assert missing == [], f"docs/api/index.md does not list {missing}"


def test_rendered_docstrings_are_markdown(api_html: str):
    """Sphinx roles, reST literal markers and doctest prompts do not leak into the HTML."""
    assert ":class:`" not in api_html
    assert ":func:`" not in api_html
    assert "<p>>>>" not in api_html and "<blockquote>" not in api_html


def test_every_image_in_the_docs_exists():
    missing = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in _markdown_files()
        for target in IMAGE.findall(page.read_text(encoding="utf-8"))
        if "://" not in target and not (page.parent / target.split("#")[0]).resolve().is_file()
    ]
    assert not missing, "images referenced but missing:\n" + "\n".join(missing)


def test_every_example_script_in_the_docs_exists():
    mentioned = {
        script for page in _markdown_files() for script in EXAMPLE.findall(page.read_text())
    }
    missing = sorted(script for script in mentioned if not (ROOT / script).is_file())
    assert not missing, f"example scripts mentioned in docs/ but missing: {missing}"


def test_timing_markers_render_as_comments(site: Path):
    """The spans ``benchmarks/user_timings.py`` fills (``<!-- timing:... -->``) are HTML
    comments on the site: in its pages' source, never shown as text."""
    pages = [page.read_text(encoding="utf-8") for page in site.rglob("*.html")]
    assert any("<!-- timing:" in page for page in pages)
    assert not any("&lt;!-- timing" in page for page in pages)
