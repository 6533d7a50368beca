"""The layout the architecture page promises: one concept per module (a module far past
:data:`MAX_LINES` holds several), no private names imported across subpackages,
``optimizers`` on the public API of ``accountant`` only."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Not a size rule (modules are cut by concept, never to meet a count): a module this long
#: almost surely holds more than one concept.
MAX_LINES = 1500


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _subpackage(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def _imports(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from X import name`` (``name`` empty for modules)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
    return found


def _private(module: str, name: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")) or name.startswith("_")


def test_no_module_is_far_past_one_concept():
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules("accountant") + _modules("optimizers")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_private_name_is_imported_across_subpackages():
    crossings = []
    for path in _modules("accountant"):
        home = _subpackage(path)
        for module, name in _imports(path):
            if not module.startswith("accountant"):
                continue
            target = ".".join(module.split(".")[:2])
            if target != home and _private(module, name):
                crossings.append(f"{path.relative_to(ROOT)}: {module}.{name}")
    assert crossings == []


def test_optimizers_imports_only_public_names_of_accountant():
    private = [
        f"{path.relative_to(ROOT)}: {module}.{name}"
        for path in _modules("optimizers")
        for module, name in _imports(path)
        if module.startswith("accountant") and _private(module, name)
    ]
    assert private == []


def test_the_checks_see_a_private_crossing(tmp_path):
    """The walker itself: a private import from another subpackage is found."""
    path = ROOT / "accountant" / "moments" / "x.py"
    assert _subpackage(path) == "accountant.moments"
    assert _private("accountant.buckets._kernels", "adp_scan")
    assert _private("accountant.buckets.engine", "_as_release")
    assert not _private("accountant.buckets.engine", "PrivacyBuckets")
    probe = tmp_path / "probe.py"
    probe.write_text("from accountant.buckets._kernels import adp_scan\n")
    assert _imports(probe) == [("accountant.buckets._kernels", "adp_scan")]
