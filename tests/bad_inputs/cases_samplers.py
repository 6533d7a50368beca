"""Bad inputs of the epoch samplers: ``mechanisms.ShuffledEpoch``, ``shuffled_epochs_delta``,
``shuffled_epochs_epsilon`` and ``calibrate_shuffled_noise_multiplier``."""

from __future__ import annotations

import math

from accountant import (
    InfeasibleTargetError,
    calibrate_shuffled_noise_multiplier,
    shuffled_epochs_delta,
    shuffled_epochs_epsilon,
)
from accountant.epoch_samplers import shuffled_epochs_upper_epsilon
from accountant.mechanisms import ShuffledEpoch
from tests.bad_inputs.catalogue import each

EPOCH = "mechanisms.ShuffledEpoch"
DELTA = "shuffled_epochs_delta"
EPSILON = "shuffled_epochs_epsilon"
CALIBRATE = "calibrate_shuffled_noise_multiplier"
UPPER = "shuffled_epochs_upper_epsilon"


def _epoch(**kw):
    args = {"sigma": 1.0, "batch_size": 2, "dataset_size": 8}
    args.update(kw)
    return ShuffledEpoch(**args)


def _delta(**kw):
    args = {"sigma": 1.0, "batch_size": 2, "dataset_size": 8, "epochs": 1, "epsilon": 1.0}
    args.update(kw)
    return shuffled_epochs_delta(**args)


def _calibrate(**kw):
    args = {"epsilon": 2.0, "delta": 1e-5, "batch_size": 2, "dataset_size": 8, "epochs": 1}
    args.update(kw)
    return calibrate_shuffled_noise_multiplier(**args)


def _epsilon(**kw):
    args = {"sigma": 1.0, "batch_size": 2, "dataset_size": 8, "epochs": 1, "delta": 1e-5}
    args.update(kw)
    return shuffled_epochs_epsilon(**args)


SAMPLER_CASES = [
    *each(
        EPOCH,
        "sigma",
        lambda v: _epoch(sigma=v),
        [(0.0, "got 0.0"), (-1.0, "got -1.0"), (math.nan, "got nan"), (math.inf, "got inf")],
    ),
    *each(
        EPOCH,
        "batch_size",
        lambda v: _epoch(batch_size=v),
        [(9, "dataset_size=8, got batch_size=9"), (0, "got 0"), (2.0, "got 2.0")],
    ),
    *each(EPOCH, "dataset_size", lambda v: _epoch(dataset_size=v), [(-3, "got -3")]),
    *each(
        EPOCH,
        "neighbours",
        lambda v: _epoch(neighbours=v),
        [("substitution", "got 'substitution'"), (None, "got None")],
    ),
    *each(EPOCH, "sampler", lambda v: _epoch(sampler=v), [("poisson", "got 'poisson'")]),
    *each(EPOCH, "clip", lambda v: _epoch(clip=v), [(math.nan, "got nan")]),
    *each(EPOCH, "intervals", lambda v: _epoch().partition(v), [(0, "got 0")]),
    *each(DELTA, "sigma", lambda v: _delta(sigma=v), [(math.nan, "got nan"), (-0.5, "got -0.5")]),
    *each(DELTA, "batch_size", lambda v: _delta(batch_size=v), [(16, "got batch_size=16")]),
    *each(DELTA, "epochs", lambda v: _delta(epochs=v), [(0, "got 0"), (1.5, "got 1.5")]),
    *each(DELTA, "epsilon", lambda v: _delta(epsilon=v), [(-1.0, "got -1.0"), (math.nan, "nan")]),
    *each(DELTA, "neighbours", lambda v: _delta(neighbours=v), [("add", "got 'add'")]),
    *each(DELTA, "intervals", lambda v: _delta(intervals=v), [(-1, "got -1")]),
    *each(DELTA, "accuracy", lambda v: _delta(accuracy=v), [(1.0, "got 1.0")]),
    *each(EPSILON, "delta", lambda v: _epsilon(delta=v), [(0.0, "got 0.0"), (math.nan, "nan")]),
    *each(EPSILON, "sigma", lambda v: _epsilon(sigma=v), [(0.0, "got 0.0")]),
    *each(EPSILON, "epochs", lambda v: _epsilon(epochs=v), [(-2, "got -2")]),
    *each(
        EPSILON,
        "neighbours",
        lambda v: _epsilon(neighbours=v),
        [("replace_one", "got 'replace_one'")],
    ),
    *each(EPSILON, "sampler", lambda v: _epsilon(sampler=v), [("balls", "got 'balls'")]),
    *each(EPSILON, "cut", lambda v: _epsilon(cut=v, dimension=4), [(-1.0, "got -1.0")]),
    *each(EPSILON, "dimension", lambda v: _epsilon(cut=8.0, dimension=v), [(0, "got 0")]),
    *each(EPSILON, "dimension", lambda v: _epsilon(cut=v), [(8.0, "cut=8.0")]),
    *each(DELTA, "truncation", lambda v: _delta(truncation=v), [("cut", "got 'cut'")]),
    *each(
        EPSILON,
        "steps",
        lambda v: _epsilon(epochs=2, steps=v),
        [(9, "steps=9"), (4, "steps=4"), (0, "got 0"), (5.5, "got 5.5")],
    ),
    *each(
        DELTA,
        "completed_epochs",
        lambda v: _delta(epochs=2, steps=6, completed_epochs=v),
        [(3, "got 3"), (-1, "got -1"), (1.0, "got 1.0"), (2, "completed_epochs=2")],
    ),
    *each(
        CALIBRATE,
        "epsilon",
        lambda v: _calibrate(epsilon=v),
        [(0.0, "got 0.0"), (math.nan, "got nan"), ("2", "got '2'")],
    ),
    *each(CALIBRATE, "delta", lambda v: _calibrate(delta=v), [(1.0, "got 1.0")]),
    *each(CALIBRATE, "epochs", lambda v: _calibrate(epochs=v), [(0, "got 0")]),
    *each(CALIBRATE, "batch_size", lambda v: _calibrate(batch_size=v), [(9, "got batch_size=9")]),
    *each(CALIBRATE, "dataset_size", lambda v: _calibrate(dataset_size=v), [(0, "got 0")]),
    *each(CALIBRATE, "sampler", lambda v: _calibrate(sampler=v), [("poisson", "got 'poisson'")]),
    *each(CALIBRATE, "neighbours", lambda v: _calibrate(neighbours=v), [("swap", "got 'swap'")]),
    *each(CALIBRATE, "tolerance", lambda v: _calibrate(tolerance=v), [(0.0, "got 0.0")]),
    *each(CALIBRATE, "accuracy", lambda v: _calibrate(accuracy=v), [(2.0, "got 2.0")]),
    *each(CALIBRATE, "max_sigma", lambda v: _calibrate(max_sigma=v), [(-1.0, "got -1.0")]),
    *each(CALIBRATE, "dimension", lambda v: _calibrate(cut=v), [(8.0, "cut=8.0")]),
    *each(CALIBRATE, "cut", lambda v: _calibrate(cut=v, dimension=3), [(0.0, "got 0.0")]),
    *each(
        CALIBRATE,
        "truncation",
        lambda v: _calibrate(cut=8.0, dimension=3, truncation=v),
        [("cut", "got 'cut'")],
    ),
    *each(
        UPPER,
        "dimension",
        lambda v: shuffled_epochs_upper_epsilon(1.0, 2, 8, 1, 1e-5, cut=6.0, dimension=v),
        [(0, "got 0"), (None, "cut=6.0")],
    ),
    *each(
        CALIBRATE,
        "max_sigma",
        lambda v: _calibrate(max_sigma=v),
        [(0.01, "max_sigma=0.01")],
        error=InfeasibleTargetError,
    ),
]
