"""Releases kept between the two passes of a rounded composition: the policy of
``ReleaseStore`` (no thrashing, a byte budget, a bounded number of groups), and in the
engine, each release computed once per direction and width when it fits, with the same
brackets as when nothing is kept."""

from __future__ import annotations

import numpy as np

import accountant.buckets.engine as engine_module
from accountant import PrivacyBuckets, mechanisms
from accountant.buckets.release_store import ReleaseStore


def _masses(size: int) -> np.ndarray:
    return np.full(size, 0.5)


def test_a_full_store_keeps_its_first_members_rather_than_thrashing():
    store = ReleaseStore(budget=3 * 80)  # three releases of ten float64 entries
    for index in range(5):
        store.put(("A/B", 0.1), index, _masses(10), None)
    assert [store.get(("A/B", 0.1), i) is not None for i in range(5)] == [1, 1, 1, 0, 0]
    assert store.nbytes == 240


def test_entry_errors_count_against_the_budget():
    store = ReleaseStore(budget=100)
    store.put(("A/B", 0.1), 0, _masses(10), _masses(10))
    assert store.get(("A/B", 0.1), 0) is None and store.nbytes == 0


def test_a_new_group_evicts_the_oldest_beyond_the_group_limit():
    store = ReleaseStore(budget=10_000, groups=2)
    store.put(("A/B", 0.1), 0, _masses(10), None)
    store.put(("B/A", 0.1), 0, _masses(10), None)
    store.put(("A/B", 0.05), 0, _masses(20), None)
    assert store.get(("A/B", 0.1), 0) is None
    assert store.get(("B/A", 0.1), 0) is not None
    assert store.get(("A/B", 0.05), 0) is not None
    assert store.nbytes == 80 + 160


def _run():
    buckets = PrivacyBuckets(accuracy=1e-3)
    for sigma, q in ((1.0, 0.01), (1.3, 0.02), (0.9, 0.005)):
        step = mechanisms.SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=q, cut=8.0)
        buckets = buckets.compose(step, 40)
    return buckets, buckets.epsilon(1e-6)


def test_kept_releases_change_no_bracket_and_save_the_second_computation(monkeypatch):
    calls: list[tuple] = []
    original = engine_module.PrivacyBuckets._single

    def counting(self, direction, width, rounds):
        make = original(self, direction, width, rounds)

        def single(index):
            calls.append((direction, width, index))
            return make(index)

        return single

    monkeypatch.setattr(engine_module.PrivacyBuckets, "_single", counting)
    buckets, kept = _run()
    assert len(calls) == len(set(calls))  # each release computed once
    assert buckets._store().nbytes > 0
    calls.clear()
    monkeypatch.setattr(engine_module, "STORE_ARRAYS", 0)
    _, recomputed = _run()
    assert len(calls) > len(set(calls))  # nothing kept: the second pass recomputes
    assert (kept.lower, kept.upper) == (recomputed.lower, recomputed.upper)
