"""``accountant audit``: defaults, --json against the library, bad-argument exits."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from accountant import ExtendedMA, WorstCasePair, exact_delta, noise
from accountant.report.cli import main


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "accountant", *args], capture_output=True, text=True, timeout=300
    )


def audit_json(capsys, *args: str) -> dict:
    assert main(["audit", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_default_audit_prints_the_papers_setting():
    result = run("audit")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "truncated Gaussian (sigma 100, bound 500, step 0.5), sensitivity 1" in out
    assert "delta at eps = 0.3 after n = 128 releases" in out
    for row in (
        "distinguishing mass, one release",
        "distinguishing mass, after n = 128",
        "exact delta, one release (ADP)",
        "Extended MA delta, tight conversion",
        "Extended MA delta, paper conversion",
        "PrivacyBuckets ADP delta upper, n = 128",
    ):
        assert row in out
    assert max(len(line) for line in out.splitlines()) <= 90


def test_json_matches_the_library(capsys):
    payload = audit_json(capsys)
    results = payload["results"]
    pair = WorstCasePair.additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0)
    ma = ExtendedMA().compose(pair, times=128)
    tight = results["extended_ma"]["tight"]
    assert tight["reported"] == pytest.approx(ma.delta(0.3).upper, rel=1e-12)
    assert tight["lambda"]["a_over_b"] == pytest.approx(ma.delta_details(0.3).a_over_b.lam)
    assert results["exact"]["adp"]["reported"] == pytest.approx(exact_delta(pair, 0.3), rel=1e-12)
    assert payload["query"] == {
        "quantity": "delta",
        "compositions": 128,
        "epsilon": 0.3,
        "target_delta": None,
        "direction": "max",
    }
    settings = payload["mechanism"]["settings"]
    assert settings["family"] == "truncated-gaussian" and settings["sigma"] == 100.0


def test_target_delta_gives_epsilons(capsys):
    payload = audit_json(capsys, "--target-delta", "1e-5", "-n", "16")
    pair = WorstCasePair.additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0)
    expected = ExtendedMA().compose(pair, times=16).epsilon(1e-5).upper
    assert payload["query"]["quantity"] == "epsilon"
    assert payload["results"]["extended_ma"]["tight"]["reported"] == pytest.approx(expected)
    adp = payload["results"]["privacy_buckets"]["adp"]
    assert adp["lower"]["reported"] <= adp["upper"]["reported"] <= expected


@pytest.mark.slow
def test_other_families_direction_and_dp_sgd(capsys):
    args = ["--family", "truncated-laplace", "--scale", "2", "--bound", "10", "--step", "0.5"]
    payload = audit_json(capsys, *args, "--direction", "A/B")
    assert payload["query"]["direction"] == "A/B"
    omega = payload["results"]["distinguishing_mass"]["one_release"]
    assert omega["reported"] == omega["a_over_b"]
    payload = audit_json(
        capsys,
        "--sampling-rate",
        "0.1",
        "--sigma",
        "2",
        "--bound",
        "10",
        "--step",
        "0.5",
        "-n",
        "64",
    )
    assert "DP-SGD" in payload["mechanism"]["description"]
    assert payload["mechanism"]["settings"]["sampling_rate"] == 0.1
    omega = payload["results"]["distinguishing_mass"]["one_release"]
    assert omega["a_over_b"] != omega["b_over_a"]  # the mixture pair is asymmetric


def test_non_monotone_file_noise_audits_every_shift(tmp_path, capsys):
    path = tmp_path / "noise.npy"
    np.save(path, np.array([0.1, 0.3, 0.1, 0.2, 0.3]))
    payload = audit_json(capsys, "--family", "file", "--pmf-file", str(path), "--step", "0.5")
    assert "every grid shift 1..2" in payload["mechanism"]["shifts"]
    assert payload["mechanism"]["pairs"] == 2
    assert payload["results"]["privacy_buckets"] is None
    assert any("PrivacyBuckets rows omitted" in note for note in payload["notes"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["audit", "--sigma", "-1"], "--sigma must be > 0, got -1.0"),
        (["audit", "--sigma", "nan"], "--sigma must be finite, got nan"),
        (["audit", "--sigma", "abc"], "--sigma"),
        (["audit", "--sensitivity", "0.3"], "sensitivity=0.3"),
        (["audit", "-n", "0"], "--compositions"),
        (["audit", "-n", "2.5"], "-n/--compositions"),
        (["audit", "--epsilon", "-1"], "--epsilon must be finite and >= 0, got -1.0"),
        (["audit", "--target-delta", "2"], "--target-delta must lie in (0, 1), got 2.0"),
        (["audit", "--epsilon", "1", "--target-delta", "0.1"], "not allowed"),
        (["audit", "--direction", "up"], "--direction"),
        (["audit", "--sampling-rate", "1.5"], "--sampling-rate must lie in (0, 1], got 1.5"),
        (["audit", "--family", "file"], "--pmf-file"),
        (["audit", "--family", "file", "--pmf-file", "/nonexistent.npy"], "cannot read"),
        (["audit", "--bound", "500.2"], "bound"),
        (["audit", "--no-such-flag"], "unrecognized"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, needle):
    result = run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("accountant: error: ")
    assert needle in lines[0]
    assert "Traceback" not in result.stderr


def test_infeasible_target_is_a_clean_error():
    result = run("audit", "--sigma", "1", "--bound", "2", "--target-delta", "1e-9", "-n", "100")
    assert result.returncode == 2
    assert "distinguishing mass" in result.stderr and "Traceback" not in result.stderr


def test_audit_reports_certified_privacy_buckets_rows(capsys):
    results = audit_json(capsys)["results"]
    buckets = results["privacy_buckets"]
    lower = buckets["adp"]["lower"]["reported"]
    upper = buckets["adp"]["upper"]["reported"]
    tight = results["extended_ma"]["tight"]["reported"]
    assert 0 < lower <= upper <= tight
    assert (upper - lower) / upper <= 1e-4
    assert buckets["pdp"]["lower"]["reported"] >= lower  # PDP counts outcomes above eps in full


def test_plot_writes_a_png(tmp_path):
    path = tmp_path / "curves.png"
    result = run(
        "audit", "--sigma", "2", "--bound", "10", "--step", "0.5", "-n", "8", "--plot", str(path)
    )
    assert result.returncode == 0, result.stderr
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {path}" in result.stdout


def test_plot_needs_png_name():
    result = run("audit", "--plot", "curves.pdf")
    assert result.returncode == 2 and "--plot" in result.stderr
