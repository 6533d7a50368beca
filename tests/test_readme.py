"""The README's two set-up commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bash_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_shows_exactly_two_setup_commands():
    blocks = _bash_blocks()
    assert len(blocks) == 2
    assert all(len(block.splitlines()) == 1 for block in blocks)
    assert blocks[0].endswith("accountant audit")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _bash_blocks()[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci
    assert "pytest" in test_command and "[torch,test]" in test_command


# The example's PDP query sits on a loss atom of W1 and warns, as the README says.
@pytest.mark.filterwarnings("ignore::accountant.errors.CertificationWarning")
def test_readme_python_example_runs():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    bounds = namespace["pb"].delta(0.3)
    assert bounds.lower <= bounds.upper <= namespace["ma"].delta(0.3).upper
