"""Which kernels a query runs (issue 26): numpy for small inputs of an accountant of few
distinct releases, numba whatever the size for an accountant of many (a heterogeneous
schedule), decided by the accountant alone; the caches of rounded releases key on the
choice, so an answer never depends on what an earlier query of the process rendered."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import PrivacyBuckets, mechanisms
from accountant.buckets import lattice_quadrature, release_cache, vector_kernels
from accountant.buckets.release_cache import cached_lattice
from accountant.buckets.sources import release_source


@pytest.fixture(autouse=True)
def _empty_cache():
    release_cache.clear()
    yield
    release_cache.clear()


def _schedule(settings: int) -> list:
    """``settings`` distinct subsampled Gaussians (sigma 0.9 to 1.4, q 0.004 to 0.01)."""
    sigmas = np.linspace(0.9, 1.4, settings)
    rates = np.linspace(0.004, 0.01, settings)[::-1]
    return [
        mechanisms.SubsampledTruncatedGaussian(sigma=float(s), sampling_rate=float(q), cut=8.0)
        for s, q in zip(sigmas, rates, strict=True)
    ]


def _counted_kernels(monkeypatch) -> dict[str, int]:
    """Count the calls of the numpy and the numba split of the lattice quadrature."""
    counts = {"numpy": 0, "numba": 0}
    numpy_split, numba_split = vector_kernels.split_masses, lattice_quadrature.split_kernel

    def counting_numpy(*args):
        counts["numpy"] += 1
        return numpy_split(*args)

    def counting_numba(*args):
        counts["numba"] += 1
        return numba_split(*args)

    monkeypatch.setattr(vector_kernels, "split_masses", counting_numpy)
    monkeypatch.setattr(lattice_quadrature, "split_kernel", counting_numba)
    return counts


def _accountant(settings: int, times: int = 3) -> PrivacyBuckets:
    buckets = PrivacyBuckets(accuracy=1e-2)
    for mechanism in _schedule(settings):
        buckets = buckets.compose(mechanism, times)
    return buckets


@pytest.mark.parametrize(
    ("settings", "compiled"),
    [
        (4, False),
        (vector_kernels.COMPILED_COMPONENTS - 1, False),
        (vector_kernels.COMPILED_COMPONENTS, True),
    ],
)
def test_the_number_of_distinct_releases_chooses_the_kernels(monkeypatch, settings, compiled):
    counts = _counted_kernels(monkeypatch)
    bounds = _accountant(settings).epsilon(1e-6)
    assert 0.0 < bounds.lower <= bounds.upper
    ran = counts["numba"] if compiled else counts["numpy"]
    other = counts["numpy"] if compiled else counts["numba"]
    assert ran > 0 and other == 0, counts
    assert not vector_kernels.COMPILED.get()  # the choice ends with the query


def test_a_cached_release_is_kept_apart_per_kernel_choice():
    source = release_source(_schedule(1)[0])
    statistics = source.statistics("A/B", 1e-12)
    arguments = ("A/B", 2.0**-10, statistics.anchor, 1e-12, 1 << 20)
    with vector_kernels.compiled_kernels(True):
        compiled = cached_lattice(source, *arguments)
        assert cached_lattice(source, *arguments) is compiled
    plain = cached_lattice(source, *arguments)
    assert plain is not compiled
    fresh = source.lattice(*arguments)  # what a process that never compiled computes
    np.testing.assert_array_equal(plain.mass_a, fresh.mass_a)
    assert plain.relative_error == fresh.relative_error
    # both are certified renderings of one release: the same lattice, masses within their
    # own declared errors of each other
    assert plain.first_index == compiled.first_index and plain.size == compiled.size
    tolerance = (plain.relative_error + compiled.relative_error) * plain.mass_a + 1e-300
    assert np.all(
        np.abs(plain.mass_a - compiled.mass_a) <= tolerance + plain.error_a + compiled.error_a
    )


def test_an_answer_is_the_same_whatever_was_rendered_before():
    few = _accountant(3)
    first = few.epsilon(1e-6)
    release_cache.clear()
    with vector_kernels.compiled_kernels(True):  # as a query of many releases would
        _ = _accountant(3).epsilon(1e-6)
    again = _accountant(3).epsilon(1e-6)
    assert (again.lower, again.upper) == (first.lower, first.upper)


def test_a_coarser_accuracy_composes_coarser_and_stays_certified():
    """The aimed first width scales with ``sqrt(accuracy)`` (the bracket like ``w^2``):
    at 1e-2 the composition is coarser than at 1e-4, its bracket meets 1e-2, and both
    certified brackets contain the true eps, so they intersect."""
    schedule = _schedule(6)
    answers = {}
    for accuracy in (1e-4, 1e-2):
        buckets = PrivacyBuckets(accuracy=accuracy)
        for mechanism in schedule:
            buckets = buckets.compose(mechanism, 40)
        answers[accuracy] = buckets.epsilon(1e-6)
    fine, coarse = answers[1e-4], answers[1e-2]
    assert coarse.bucket_width >= 2.0 * fine.bucket_width
    assert (coarse.upper - coarse.lower) / coarse.upper <= 1e-2
    assert coarse.lower <= fine.upper and fine.lower <= coarse.upper
