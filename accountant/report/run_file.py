"""A DP-SGD training run described in JSON, for ``accountant audit --run PATH``.

The file names the model's noised coordinates per step, how the noise is cut, and the
run as segments of equal steps::

    {
      "dimension": 1000000,
      "cut": 10,
      "truncation": "renormalised",
      "segments": [
        {"noise_multiplier": 1.1, "sampling_rate": 0.004, "steps": 10000},
        [0.9, 0.004, 2000]
      ]
    }

A segment is an object with exactly those three keys (and optionally its own ``"cut"``),
or a ``[noise_multiplier, sampling_rate, steps]`` triple: Opacus's accountant ``history``
as it is (``json.dump`` of ``engine.accountant.history``). ``cut`` is ``k`` in
``+-k * noise_multiplier * clip`` (``"inf"``: no cut); ``truncation`` is
``"renormalised"`` (default; = ``"resampled"``) or ``"clamped"``; ``accuracy`` is the
PrivacyBuckets accuracy (default 1e-4; 1e-3 is several times faster). Every field is
checked; an unknown key is an error, never ignored. :func:`run_accountant` composes the
run in :class:`~accountant.dpsgd.DPSGDAccountant`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import attrs

from accountant.dpsgd import DPSGDAccountant
from accountant.errors import InvalidInputError
from accountant.mechanisms.subsampled_gaussian import TRUNCATIONS, SubsampledTruncatedGaussian
from accountant.validation import (
    check_choice,
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_probability,
    shown,
)

__all__ = ["Segment", "TrainingRun", "read_run", "run_accountant", "single_segment_run"]

_TOP = {"dimension", "cut", "truncation", "accuracy", "segments"}
_SEGMENT = {"noise_multiplier", "sampling_rate", "steps"}


@attrs.frozen
class Segment:
    """``steps`` optimiser steps at ``noise_multiplier`` and ``sampling_rate``, the noise
    cut at ``cut`` noise standard deviations."""

    noise_multiplier: float
    sampling_rate: float
    steps: int
    cut: float


@attrs.frozen
class TrainingRun:
    """A checked run: ``dimension`` coordinates per step, ``truncation``, ``segments``,
    the ``accuracy`` to account it with, and the ``clip`` norm (it changes no privacy
    value; it names the units of the noise, as in
    :class:`~accountant.mechanisms.subsampled_gaussian.SubsampledTruncatedGaussian`)."""

    dimension: int
    truncation: str
    segments: tuple[Segment, ...]
    accuracy: float = 1e-4
    clip: float = 1.0


def _cut(name: str, value: Any) -> float:
    if value == "inf":
        return math.inf
    return check_positive_real(name, value)


def _segment(index: int, entry: Any, cut: float) -> Segment:
    where = f"segments[{index}]"
    if isinstance(entry, list) and len(entry) == 3:
        entry = dict(zip(("noise_multiplier", "sampling_rate", "steps"), entry, strict=True))
    if not isinstance(entry, dict):
        raise InvalidInputError(
            f"{where} must be an object with {sorted(_SEGMENT)} or a "
            f"[noise_multiplier, sampling_rate, steps] triple, got {shown(entry)}"
        )
    missing, unknown = _SEGMENT - set(entry), set(entry) - _SEGMENT - {"cut"}
    if missing or unknown:
        raise InvalidInputError(
            f"{where} must have the keys {sorted(_SEGMENT)} (and optionally 'cut'), "
            f"got {sorted(entry)}"
        )
    return Segment(
        noise_multiplier=check_positive_real(
            f"{where}.noise_multiplier", entry["noise_multiplier"]
        ),
        sampling_rate=check_probability(f"{where}.sampling_rate", entry["sampling_rate"]),
        steps=check_positive_int(f"{where}.steps", entry["steps"]),
        cut=_cut(f"{where}.cut", entry["cut"]) if "cut" in entry else cut,
    )


def parse_run(payload: Any) -> TrainingRun:
    """The run ``payload`` (the parsed JSON) describes, every field checked."""
    if not isinstance(payload, dict):
        raise InvalidInputError(f"a training run must be a JSON object, got {shown(payload)}")
    unknown = set(payload) - _TOP
    if unknown or not {"dimension", "cut", "segments"} <= set(payload):
        raise InvalidInputError(
            f"a training run must have the keys ['cut', 'dimension', 'segments'] (and "
            f"optionally 'truncation' and 'accuracy'), got {sorted(payload)}"
        )
    segments = payload["segments"]
    if not isinstance(segments, list) or not segments:
        raise InvalidInputError(f"segments must be a non-empty list, got {shown(segments)}")
    cut = _cut("cut", payload["cut"])
    return TrainingRun(
        dimension=check_positive_int("dimension", payload["dimension"]),
        truncation=check_choice(
            "truncation", payload.get("truncation", "renormalised"), TRUNCATIONS
        ),
        segments=tuple(_segment(i, entry, cut) for i, entry in enumerate(segments)),
        accuracy=check_open_fraction("accuracy", payload.get("accuracy", 1e-4)),
    )


def read_run(path: str | Path) -> TrainingRun:
    """The run described in the JSON file ``path`` (refusals name the path)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read the training run {str(path)!r}: {exc}") from exc
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"training run {str(path)!r} is not JSON ({exc})") from exc
    try:
        return parse_run(payload)
    except InvalidInputError as exc:
        raise InvalidInputError(f"training run {str(path)!r}: {exc}") from exc


def single_segment_run(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    cut: float,
    dimension: int,
    truncation: str = "renormalised",
    clip: float = 1.0,
) -> TrainingRun:
    """The run of ``steps`` equal steps (what ``accountant audit --noise-multiplier S
    --sampling-rate Q --steps N --cut K --dimension D`` audits), every value checked
    under the name of its option."""
    cut = math.inf if cut == math.inf else check_positive_real("--cut", cut)
    segment = Segment(
        noise_multiplier=check_positive_real("--noise-multiplier", noise_multiplier),
        sampling_rate=check_probability("--sampling-rate", sampling_rate),
        steps=check_positive_int("--steps", steps),
        cut=cut,
    )
    return TrainingRun(
        dimension=check_positive_int("--dimension", dimension),
        truncation=check_choice("--truncation", truncation, TRUNCATIONS),
        segments=(segment,),
        clip=check_positive_real("--clip", clip),
    )


def run_accountant(run: TrainingRun) -> DPSGDAccountant:
    """The run composed: one :class:`SubsampledTruncatedGaussian` per segment (the same
    object for repeated parameters), on ``run.dimension`` coordinates."""
    accountant = DPSGDAccountant(dimension=run.dimension, accuracy=run.accuracy)
    steps: dict[tuple[float, float, float], SubsampledTruncatedGaussian] = {}
    for segment in run.segments:
        key = (segment.noise_multiplier, segment.sampling_rate, segment.cut)
        if key not in steps:
            steps[key] = SubsampledTruncatedGaussian(
                sigma=segment.noise_multiplier,
                sampling_rate=segment.sampling_rate,
                cut=segment.cut,
                clip=run.clip,
                truncation=run.truncation,
            )
        accountant = accountant.compose(steps[key], segment.steps)
    return accountant
