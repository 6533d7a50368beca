"""Progress of long PrivacyBuckets queries: a bar on a terminal, silence elsewhere."""

from __future__ import annotations

import accountant.buckets.progress as progress
from accountant import PrivacyBuckets, WorstCasePair, noise


def _accountant() -> PrivacyBuckets:
    pair = WorstCasePair.subsampled(noise.truncated_gaussian(1.0, 4.0, 0.05), 0.1, 1.0)
    return PrivacyBuckets(accuracy=1e-3).compose(pair, 40)


def test_a_query_draws_a_bar_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(progress, "progress_enabled", lambda: True)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    _accountant().delta(1.0)
    _accountant().epsilon(1e-2)
    err = capsys.readouterr().err
    assert "PrivacyBuckets ADP delta" in err and "PrivacyBuckets ADP eps" in err
    assert "releases" in err  # the composition steps report how far they are


def test_no_output_without_a_terminal(capsys):
    # pytest's stderr is not a terminal: nothing at all is written
    _accountant().delta(1.0)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
