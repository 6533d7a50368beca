"""benchmarks/compare_accountants.py runs in its quick mode and writes a sane table.

The peers (dp_accounting, prv_accountant) are optional: without them the table holds
only this engine's rows, which is all this test checks. Times are never asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "compare_accountants.py"


def _table_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("| W"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_quick_benchmark_writes_our_w1_row(tmp_path):
    output = tmp_path / "benchmarks.md"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--output", str(output)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    text = output.read_text(encoding="utf-8")
    assert "| workload | accountant | setting | time (s) | lower | upper |" in text
    assert "python benchmarks/compare_accountants.py --quick" in text
    ours = [r for r in _table_rows(text) if r[0] == "W1" and r[1] == "this engine"]
    assert ours, text
    lower, upper = float(ours[0][4]), float(ours[0][5])
    assert 0.0 < lower <= upper < 1.0
    assert float(ours[0][3]) > 0.0  # a time was measured
    assert "| W4 | this engine |" in text
    assert result.stdout.strip()  # the report is printed too


def test_script_runs_without_the_peers(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for module in ("dp_accounting", "prv_accountant"):
        (blocked / f"{module}.py").write_text("raise ImportError('hidden by the test')\n")
    output = tmp_path / "benchmarks.md"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--workloads", "W1", "--output", str(output)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), str(ROOT)])},
    )
    assert result.returncode == 0, result.stderr
    text = output.read_text(encoding="utf-8")
    rows = _table_rows(text)
    assert [r[1] for r in rows if r[4]] == ["this engine"]
    assert "skipped: dp_accounting not installed" in text
    assert "skipped: prv_accountant not installed" in text


def test_sections_other_scripts_measure_are_carried_over(tmp_path):
    """The page's Sampling section (``benchmarks/sampling.py``'s figures, which a guide links
    to) survives a rewrite by ``compare_accountants.py``; nothing else of the old page does."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import compare_accountants
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    page = tmp_path / "b.md"
    assert compare_accountants.kept_sections(page) == ""
    page.write_text("# T\n\n## Results\n\nold rows\n\n## Sampling\n\nfigures\n\n## After\n\nx\n")
    kept = compare_accountants.kept_sections(page)
    assert kept == "\n## Sampling\n\nfigures\n"
