"""Rounded releases shared by the accountants of a process (issue 26): each release is
computed once per direction and width, the answers are those of a process that computed
everything afresh, and an accountant with more steps of a mechanism takes a width already
computed when it is as good as the one it aims at."""

from __future__ import annotations

import pytest

from accountant import PrivacyBuckets, mechanisms
from accountant.buckets import release_cache
from accountant.buckets.sources import release_source
from accountant.mechanisms.subsampled_gaussian_release import SubsampledGaussianRelease


@pytest.fixture(autouse=True)
def _empty_cache():
    release_cache.clear()
    yield
    release_cache.clear()


def _steps():
    return [
        mechanisms.SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=q, cut=8.0)
        for sigma, q in ((1.0, 0.01), (1.3, 0.02), (0.9, 0.005))
    ]


def _run(steps, times: int = 40):
    buckets = PrivacyBuckets(accuracy=1e-3)
    for step in steps:
        buckets = buckets.compose(step, times)
    return buckets.epsilon(1e-6)


def _counting(monkeypatch) -> list[tuple]:
    calls: list[tuple] = []
    original = SubsampledGaussianRelease.lattice

    def counting(self, direction, width, anchor, tail_mass, max_buckets=1 << 62):
        calls.append((id(self), direction, width))
        return original(self, direction, width, anchor, tail_mass, max_buckets)

    monkeypatch.setattr(SubsampledGaussianRelease, "lattice", counting)
    return calls


def test_each_release_is_computed_once_and_the_answer_is_the_fresh_one(monkeypatch):
    calls = _counting(monkeypatch)
    first = _run(_steps())
    assert calls and len(calls) == len(set(calls))
    computed = len(calls)
    again = _run(_steps())  # equal mechanisms, new objects: nothing computed again
    assert len(calls) == computed
    release_cache.clear()
    fresh = _run(_steps())
    assert len(calls) == 2 * computed
    for other in (again, fresh):
        assert (other.lower, other.upper) == (first.lower, first.upper)


def test_equal_mechanisms_share_one_source_and_others_do_not():
    one, two = _steps()[0], _steps()[0]
    assert one is not two and release_source(one) is release_source(two)
    assert release_source(_steps()[1]) is not release_source(one)


def test_a_few_more_steps_take_the_widths_already_computed(monkeypatch):
    """Widths lie on a fixed grid (``widths.grid_width``): an accountant with a few more
    steps aims at widths in the same cells and computes no release."""
    step = mechanisms.SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.02, cut=8.0)
    base = PrivacyBuckets(accuracy=1e-3).compose(step, 400)
    base.epsilon(1e-5)
    calls = _counting(monkeypatch)
    longer = PrivacyBuckets(accuracy=1e-3).compose(step, 404)
    bounds = longer.epsilon(1e-5)
    assert calls == []  # every width it composed at was known
    assert (bounds.upper - bounds.lower) / bounds.upper <= 1e-3


def test_a_release_larger_than_the_store_is_not_kept(monkeypatch):
    monkeypatch.setattr(release_cache, "BYTES", 1024)
    calls = _counting(monkeypatch)
    _run(_steps()[:1], times=70)
    assert calls and len(calls) > len(set(calls))  # recomputed: nothing was kept
    assert release_cache.held_bytes() == 0


def test_a_group_larger_than_the_store_keeps_its_first_releases(monkeypatch):
    """Three releases of one direction and width, a store for about one: the first is
    kept while its group is read (computed once, or once more when the other direction's
    releases came in between two passes over its group), the others are computed in each
    pass; no release is evicted by a member of its own group
    (which would make every pass miss every one)."""
    calls = _counting(monkeypatch)
    probe = _steps()[0]
    PrivacyBuckets(accuracy=1e-3).compose(probe, 70).epsilon(1e-6)
    one = max(  # the largest release kept
        size for members in release_cache._groups.values() for _, _, size in members.values()
    )
    release_cache.clear()
    calls.clear()
    monkeypatch.setattr(release_cache, "BYTES", int(one * 1.5))
    _run(_steps(), times=70)
    counts = {key: calls.count(key) for key in set(calls)}
    assert min(counts.values()) <= 2  # a first member kept within each group's reading
    assert max(counts.values()) > min(counts.values())  # the rest recomputed each pass
    assert 0 < release_cache.held_bytes() <= int(one * 1.5)


def test_a_second_accountant_of_the_same_releases_composes_nothing(monkeypatch):
    """Compositions of rounded releases are kept for the process: a new accountant of the
    same steps (a repeated query, Opacus asking again) reads them, with the same answer."""
    step = mechanisms.SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.02, cut=8.0)
    first = PrivacyBuckets(accuracy=1e-3).compose(step, 400).epsilon(1e-5)
    composed = []
    original = PrivacyBuckets._compose_at
    monkeypatch.setattr(
        PrivacyBuckets,
        "_compose_at",
        lambda self, *args: composed.append(args) or original(self, *args),
    )
    again = PrivacyBuckets(accuracy=1e-3).compose(step, 400).epsilon(1e-5)
    assert composed == []
    assert (again.lower, again.upper) == (first.lower, first.upper)
    release_cache.clear()
    fresh = PrivacyBuckets(accuracy=1e-3).compose(step, 400).epsilon(1e-5)
    assert composed and (fresh.lower, fresh.upper) == (first.lower, first.upper)
