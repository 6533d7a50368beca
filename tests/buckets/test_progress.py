"""Progress of long PrivacyBuckets queries: a bar on a terminal, silence elsewhere."""

from __future__ import annotations

from typing import ClassVar

import tqdm as tqdm_module

import accountant.buckets.progress as progress
from accountant import PrivacyBuckets, WorstCasePair, noise


def _accountant() -> PrivacyBuckets:
    pair = WorstCasePair.subsampled(noise.truncated_gaussian(1.0, 4.0, 0.05), 0.1, 1.0)
    return PrivacyBuckets(accuracy=1e-3).compose(pair, 40)


class _RecordingBar:
    """Stands in for tqdm: records what a query reports (tqdm itself redraws at most every
    0.1 s, so what it prints depends on the machine's speed)."""

    bars: ClassVar[list[_RecordingBar]] = []

    def __init__(self, desc: str, **options):
        self.desc, self.options, self.updates, self.statuses = desc, options, 0, []
        _RecordingBar.bars.append(self)

    def update(self, count: int) -> None:
        self.updates += count

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.statuses.append(text)

    def close(self) -> None:
        self.closed = True


def test_a_query_reports_its_composition_steps_on_a_terminal(monkeypatch):
    monkeypatch.setattr(progress, "progress_enabled", lambda: True)
    monkeypatch.setattr(tqdm_module, "tqdm", _RecordingBar)
    _RecordingBar.bars = []
    _accountant().delta(1.0)
    _accountant().epsilon(1e-2)
    delta_bar, eps_bar = _RecordingBar.bars
    assert delta_bar.desc == "PrivacyBuckets ADP delta" and eps_bar.desc == "PrivacyBuckets ADP eps"
    for bar in (delta_bar, eps_bar):
        assert bar.updates > 0 and bar.closed
        assert bar.options["delay"] == progress.DELAY and bar.options["leave"] is False
        assert any(status.endswith("of 40 releases") for status in bar.statuses)


def test_the_real_bar_draws_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(progress, "progress_enabled", lambda: True)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    _accountant().delta(1.0)
    assert "PrivacyBuckets ADP delta" in capsys.readouterr().err


def test_no_output_without_a_terminal(capsys):
    # pytest's stderr is not a terminal: nothing at all is written
    _accountant().delta(1.0)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
