"""Direct tests of ``accountant.report.plotting``: the files are PNGs, and what is drawn is the
accountants' numbers (every plotted upper bound at or above the certified lower band,
the distinguishing mass below every curve, the title naming n and the marks)."""

from __future__ import annotations

import matplotlib.pyplot as plt  # (the [test] extra installs matplotlib)
import numpy as np
import pytest

from accountant import WorstCasePair, noise
from accountant.report.plotting import plot_delta_curves, plot_noises


@pytest.fixture
def figures(monkeypatch):
    """The figures the plotting functions close, kept for inspection."""
    kept = []
    monkeypatch.setattr(plt, "close", lambda figure=None: kept.append(figure))
    return kept


def _is_png(path) -> bool:
    data = path.read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000


def test_delta_curves_draw_the_certified_band_under_every_upper_bound(tmp_path, figures):
    pair = WorstCasePair.additive(noise.truncated_gaussian(3.0, 15.0, 0.5), sensitivity=1.0)
    path = tmp_path / "curves.png"
    plot_delta_curves(pair, 16, str(path), title="a test", mark_epsilon=0.5, mark_delta=1e-3)
    assert _is_png(path)
    (axes,) = figures[0].axes
    curves = {line.get_label(): line.get_ydata() for line in axes.get_lines()}
    band = curves["PrivacyBuckets (certified lower..upper)"]
    lower = axes.collections[0].get_paths()[0].vertices[:, 1]  # the filled band's edge
    for label in ("Extended MA, tight conversion", "Extended MA, paper conversion"):
        assert (np.asarray(curves[label]) >= np.asarray(band) * (1 - 1e-9)).all()
    floor = curves["distinguishing mass after n releases"][0]
    assert (np.asarray(band) >= floor * (1 - 1e-9)).all() and np.min(lower) >= 0.0
    title = axes.get_title()
    assert "n = 16" in title and "eps = 0.5" in title and "target delta 0.001" in title


def test_noises_are_drawn_where_their_mass_is_positive(tmp_path, figures):
    gaussian = noise.truncated_gaussian(2.0, 6.0, 0.5)
    laplace = noise.truncated_laplace(2.0, 6.0, 0.5)
    path = tmp_path / "noises.png"
    plot_noises({"Gaussian": gaussian, "Laplace": laplace}, str(path), title="two noises")
    assert _is_png(path)
    (axes,) = figures[0].axes
    lines = axes.get_lines()
    assert [line.get_label() for line in lines] == ["Gaussian", "Laplace"]
    np.testing.assert_array_equal(lines[0].get_ydata(), gaussian.pmf[gaussian.pmf > 0])
    assert axes.get_title() == "two noises"
