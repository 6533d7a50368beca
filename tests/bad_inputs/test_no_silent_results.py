"""Valid inputs at the edges are kept as given and give finite answers; inputs just
outside them are refused everywhere. Never a silent renormalisation, never a NaN."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import InvalidInputError, NoiseDistribution, WorstCasePair, exact_delta, noise
from tests.bad_inputs.catalogue import PAIR_OMEGA


@pytest.mark.parametrize("excess", [1e-6, -1e-6, 1e-8])
def test_pmfs_just_outside_the_tolerance_are_refused_everywhere(excess):
    pmf = [0.25, 0.5, 0.25 + excess]
    builders = [
        lambda: noise.from_array(pmf, step=1.0),
        lambda: NoiseDistribution(pmf=pmf, step=1.0, start=-1.0),
        lambda: WorstCasePair(pmf, [0.25, 0.5, 0.25]),
        lambda: WorstCasePair([0.25, 0.5, 0.25], pmf),
        lambda: WorstCasePair.from_arrays(pmf, [0.25, 0.5, 0.25]),
    ]
    for build in builders:
        with pytest.raises(InvalidInputError, match=r"must sum to 1 \(tolerance 1e-09\)"):
            build()


def test_pmfs_within_the_tolerance_are_kept_as_given():
    pmf = np.array([0.25, 0.5, 0.25 + 5e-10])
    assert noise.from_array(pmf, step=1.0).pmf[2] == pmf[2]
    assert NoiseDistribution(pmf=pmf, step=1.0, start=-1.0).pmf[2] == pmf[2]
    assert WorstCasePair(pmf, pmf).a[2] == pmf[2]


def test_bad_inputs_never_produce_a_nan_result():
    """Every entry point above raises rather than returning NaN: spot-check the ones most
    likely to propagate a NaN silently (array epsilons and pair arrays)."""
    with pytest.raises(InvalidInputError):
        exact_delta(PAIR_OMEGA, np.array([0.1, np.nan, 0.2]))
    with pytest.raises(InvalidInputError):
        WorstCasePair([0.5, np.nan, 0.5], [0.5, 0.5, 0.0])
    values = exact_delta(PAIR_OMEGA, np.array([0.0, 1e-300, 700.0]))
    assert np.isfinite(values).all()
