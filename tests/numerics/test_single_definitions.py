"""One definition of each float constant and of the Gauss-Legendre rule (issue 28).

The unit roundoff, the smallest normal float and the underflow allowance live in
``accountant/numerics/floats.py``; Gauss-Legendre nodes and weights are computed only in
``accountant/numerics/quadrature.py``. Every other module imports them, so a second literal
definition anywhere under ``accountant/`` fails here."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from accountant.numerics import floats
from accountant.numerics.quadrature import gauss_legendre

PACKAGE = Path(__file__).resolve().parents[2] / "accountant"
FLOATS_HOME = PACKAGE / "numerics" / "floats.py"
QUADRATURE_HOME = PACKAGE / "numerics" / "quadrature.py"

#: The spellings a re-definition would take, with the module allowed to hold them.
LITERALS = {
    "unit roundoff": (
        r"\b2(?:\.0*)?\s*\*\*\s*\(?\s*-\s*53\b"
        r"|1\.1102230246251565e-0?16"
        r"|ldexp\(\s*1(?:\.0*)?\s*,\s*-53\s*\)",
        FLOATS_HOME,
    ),
    "machine epsilon": (r"\b2(?:\.0*)?\s*\*\*\s*\(?\s*-\s*52\b|2\.220446049250313e-0?16", None),
    "smallest normal": (
        r"\b2(?:\.0*)?\s*\*\*\s*\(?\s*-\s*1022\b|2\.2250738585072014e-308",
        FLOATS_HOME,
    ),
    "underflow allowance": (r"\b2\.3e-308\b", FLOATS_HOME),
    "Gauss-Legendre rule": (r"leggauss", QUADRATURE_HOME),
}


def _hits(pattern: str) -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if re.search(pattern, path.read_text()))


@pytest.mark.parametrize("name", sorted(LITERALS))
def test_defined_only_at_home(name):
    pattern, home = LITERALS[name]
    assert _hits(pattern) == ([home] if home else [])


@pytest.mark.parametrize(
    "source",
    [
        "U = 2.0**-53",
        "x * 2 ** -53",
        "2.0 ** (-53)",
        "u = 1.1102230246251565e-16",
        "ldexp(1.0, -53)",
    ],
)
def test_the_scan_sees_a_unit_roundoff(source):
    assert re.search(LITERALS["unit roundoff"][0], source)
    assert not re.search(LITERALS["unit roundoff"][0], "2.0**-530 + 12**-53")


def test_the_constants():
    assert np.finfo(np.float64).eps / 2 == floats.UNIT_ROUNDOFF
    assert np.finfo(np.float64).smallest_normal == floats.SMALLEST_NORMAL
    assert floats.TINY >= floats.SMALLEST_NORMAL


def test_the_rule_is_numpys_shared_and_read_only():
    for order in (1, 16, 24, 40):
        nodes, weights = gauss_legendre(order)
        expected = np.polynomial.legendre.leggauss(order)
        assert nodes.dtype == weights.dtype == np.float64
        assert np.array_equal(nodes, expected[0]) and np.array_equal(weights, expected[1])
        assert gauss_legendre(order)[0] is nodes
        with pytest.raises(ValueError):
            nodes[0] = 0.0
