"""The two directions of a rung may compose on two threads (``engine.WORKERS``): the same
brackets as one after the other, and the progress bar still follows the query."""

from __future__ import annotations

import accountant.buckets.engine as engine_module
import accountant.buckets.progress as progress
from accountant import PrivacyBuckets, mechanisms


def _query():
    step = mechanisms.SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.02, cut=8.0)
    accountant = PrivacyBuckets(accuracy=1e-3).compose(step, 300)
    return accountant.epsilon(1e-6), accountant.delta([0.5, 1.0, 2.0])


def test_threads_give_the_same_brackets_as_one_after_the_other(monkeypatch):
    monkeypatch.setattr(engine_module, "WORKERS", 1)
    serial = _query()
    monkeypatch.setattr(engine_module, "WORKERS", 2)
    threaded = _query()
    assert (threaded[0].lower, threaded[0].upper) == (serial[0].lower, serial[0].upper)
    assert (threaded[1].lower == serial[1].lower).all()
    assert (threaded[1].upper == serial[1].upper).all()


def test_threads_report_to_the_querys_progress_bar(monkeypatch):
    ticks = []
    monkeypatch.setattr(engine_module, "WORKERS", 2)
    monkeypatch.setattr(progress, "progress_enabled", lambda: True)

    class Bar:
        def __init__(self, *args, **options):
            pass

        def update(self, count):
            ticks.append(count)

        def set_postfix_str(self, text, refresh=True):
            pass

        def close(self):
            pass

    import tqdm

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    step = mechanisms.SubsampledTruncatedGaussian(sigma=1.0, sampling_rate=0.02, cut=6.0)
    PrivacyBuckets(accuracy=1e-3).compose(step, 40).delta(1.0)
    assert ticks
