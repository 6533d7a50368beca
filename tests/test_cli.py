"""``accountant audit``: defaults, --json, and bad-argument exits."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from accountant import ExtendedMA, WorstCasePair, exact_delta, noise
from accountant.cli import main


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "accountant", *args], capture_output=True, text=True, timeout=300
    )


def test_default_audit_prints_the_papers_setting():
    result = run("audit")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "truncated Gaussian (sigma 100, bound 500, step 0.5), sensitivity 1" in out
    assert "n = 128" in out and "eps = 0.3" in out
    for row in (
        "distinguishing mass, one release",
        "distinguishing mass, after n = 128",
        "exact delta, one release (ADP)",
        "Extended MA delta, tight conversion",
        "Extended MA delta, paper conversion",
    ):
        assert row in out


def test_json_matches_the_library(capsys):
    assert main(["audit", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = {row["name"]: row for row in payload["rows"]}
    pair = WorstCasePair.additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0)
    ma = ExtendedMA().compose(pair, times=128)
    tight = rows["Extended MA delta, tight conversion, n = 128"]
    assert tight["reported"] == pytest.approx(ma.delta(0.3), rel=1e-12)
    assert tight["lambda A/B"] == pytest.approx(ma.delta_details(0.3).a_over_b.lam, rel=1e-9)
    exact = rows["exact delta, one release (ADP)"]
    assert exact["reported"] == pytest.approx(exact_delta(pair, 0.3), rel=1e-12)
    assert payload["compositions"] == 128 and payload["epsilon"] == 0.3


def test_target_delta_gives_epsilons(capsys):
    assert main(["audit", "--target-delta", "1e-5", "--json", "-n", "16"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    pair = WorstCasePair.additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0)
    expected = ExtendedMA().compose(pair, times=16).epsilon(1e-5)
    assert rows["Extended MA eps, tight conversion, n = 16"]["reported"] == pytest.approx(expected)


def test_other_families_direction_and_dp_sgd(capsys):
    args = [
        "audit",
        "--family",
        "truncated-laplace",
        "--scale",
        "2",
        "--bound",
        "10",
        "--step",
        "0.5",
        "--direction",
        "A/B",
        "--json",
    ]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["direction"] == "A/B"
    assert (
        main(
            [
                "audit",
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
                "--json",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert "DP-SGD" in payload["mechanism"]
    rows = {row["name"]: row for row in payload["rows"]}
    omega = rows["distinguishing mass, one release"]
    assert omega["A/B"] != omega["B/A"]  # the mixture pair is asymmetric


def test_non_monotone_file_noise_audits_every_shift(tmp_path, capsys):
    path = tmp_path / "noise.npy"
    np.save(path, np.array([0.1, 0.3, 0.1, 0.2, 0.3]))
    assert (
        main(
            [
                "audit",
                "--family",
                "file",
                "--pmf-file",
                str(path),
                "--step",
                "0.5",
                "--sensitivity",
                "1",
                "--json",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert "every grid shift 1..2" in payload["shift_invariance"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["audit", "--sigma", "-1"], "sigma"),
        (["audit", "--sigma", "nan"], "sigma"),
        (["audit", "--sigma", "abc"], "--sigma"),
        (["audit", "--sensitivity", "0.3"], "sensitivity=0.3"),
        (["audit", "-n", "0"], "--compositions"),
        (["audit", "-n", "2.5"], "-n/--compositions"),
        (["audit", "--epsilon", "-1"], "epsilon"),
        (["audit", "--target-delta", "2"], "target_delta"),
        (["audit", "--epsilon", "1", "--target-delta", "0.1"], "not allowed"),
        (["audit", "--direction", "up"], "--direction"),
        (["audit", "--sampling-rate", "1.5"], "q must lie in (0, 1]"),
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
    assert needle in lines[0]
    assert "Traceback" not in result.stderr


def test_infeasible_target_is_a_clean_error():
    result = run("audit", "--sigma", "1", "--bound", "2", "--target-delta", "1e-9", "-n", "100")
    assert result.returncode == 2
    assert "distinguishing mass" in result.stderr and "Traceback" not in result.stderr


def test_audit_reports_certified_privacy_buckets_rows(capsys):
    assert main(["audit", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    lower = rows["PrivacyBuckets ADP delta lower, n = 128"]["reported"]
    upper = rows["PrivacyBuckets ADP delta upper, n = 128"]["reported"]
    tight = rows["Extended MA delta, tight conversion, n = 128"]["reported"]
    assert 0 < lower <= upper <= tight
    assert (upper - lower) / upper <= 1e-4
    pdp_lower = rows["PrivacyBuckets PDP delta lower, n = 128"]["reported"]
    assert pdp_lower >= lower  # PDP counts every outcome above eps in full


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
