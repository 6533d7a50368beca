"""Bad-input cases for the torch plugin (empty without the [torch] extra)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

try:
    import torch

    from optimizers import (
        LearnedNoise,
        LearningProblem,
        LogIncrementModel,
        Schedule,
        SigmoidStackModel,
        SymmetricWeightModel,
        buckets_delta,
        build_model,
        extended_ma_delta,
        learn,
    )
except ImportError:  # pragma: no cover - the [torch] extra is missing
    torch = None


from tests.bad_inputs.catalogue import (
    EPSILON,
    FINITE,
    INF,
    NAN,
    NOT_POSITIVE,
    PMF,
    POSITIVE_INT,
    POSITIVE_REAL,
    TG,
    Q,
    case,
    each,
)

if torch is not None:

    def _problem(**changes):
        values = {"bound": 4.0, "step": 0.25, "epsilon": 1.0, "times": 2, "target_delta": 0.2}
        return LearningProblem(**(values | changes))

    PMF_TENSOR = torch.tensor(TG.pmf, dtype=torch.float64, requires_grad=True)
    WRAPPER = {"step": 0.5, "sensitivity": 1.0, "epsilon": 1.0, "times": 2}

    def _write_result(tmp: Path, record: Any, arrays: dict | None = None) -> Path:
        directory = tmp / "result"
        directory.mkdir()
        (directory / "result.json").write_text(
            record if isinstance(record, str) else json.dumps(record)
        )
        np.savez(directory / "noise.npz", **(arrays or {"pmf": np.ones(1)}))
        return directory

    OPTIMIZER_CASES = [
        # --- LearningProblem (values not in tests/optimizers/test_learner.py) --------------
        *each(
            "LearningProblem", "bound", lambda v: _problem(bound=v), [(INF, "inf"), ("4", "'4'")]
        ),
        *each("LearningProblem", "step", lambda v: _problem(step=v), [(NAN, "nan"), (0.3, "0.3")]),
        *each("LearningProblem", "epsilon", lambda v: _problem(epsilon=v), EPSILON[:2]),
        *each("LearningProblem", "epsilon", lambda v: _problem(epsilon=v), [([1, 2], "2 values")]),
        *each("LearningProblem", "times", lambda v: _problem(times=v), POSITIVE_INT[1:]),
        *each(
            "LearningProblem",
            "sensitivity",
            lambda v: _problem(sensitivity=v),
            [
                (NAN, "got nan"),
                (0.6, "sensitivity=0.6 is not a whole number of grid steps (step=0.25)"),
                (8.0, "sensitivity=8.0 must be smaller than the noise range 2 * bound = 8.0"),
            ],
        ),
        *each("LearningProblem", "q", lambda v: _problem(q=v), Q[:2] + Q[3:]),
        *each("LearningProblem", "utility", lambda v: _problem(utility=v), [(None, "None")]),
        *each("LearningProblem", "conversion", lambda v: _problem(conversion=v), [("x", "'x'")]),
        *each(
            "LearningProblem",
            "target_delta",
            lambda v: _problem(target_delta=v),
            [(0.0, "got 0.0"), (NAN, "got nan"), (-0.1, "got -0.1")],
        ),
        *each(
            "LearningProblem",
            "bucket_width",
            lambda v: _problem(bucket_width=v),
            [(NAN, "got nan"), (0.0, "got 0.0")],
        ),
        *each("LearningProblem", "all_shifts", lambda v: _problem(all_shifts=v), [(1, "got 1")]),
        case(
            "LearningProblem",
            "all_shifts",
            "got q=0.1",
            lambda tmp: _problem(all_shifts=True, q=0.1),
            tag="with_q",
        ),
        case(
            "learn",
            "model",
            "got all_shifts=False",
            lambda tmp: learn(_problem(), Schedule(epochs=1, model="symmetric"), progress=False),
            tag="non_monotone_without_all_shifts",
        ),
        case(
            "learn",
            "warm_start",
            "got times=2",
            lambda tmp: learn(
                _problem(all_shifts=True),
                Schedule(epochs=1, model="symmetric", warm_start="optimal"),
                progress=False,
            ),
            tag="optimal_for_two_releases",
        ),
        case(
            "learn",
            "warm_start",
            "got model='sigmoid'",
            lambda tmp: learn(
                _problem(times=1), Schedule(epochs=1, model="sigmoid", warm_start="optimal")
            ),
            tag="optimal_for_the_sigmoid_model",
        ),
        # --- Schedule ------------------------------------------------------------------
        *each("Schedule", "epochs", lambda v: Schedule(epochs=v), POSITIVE_INT[1:]),
        *each(
            "Schedule",
            "learning_rate",
            lambda v: Schedule(learning_rate=v),
            [(0.0, "got 0.0"), (INF, "got inf")],
        ),
        *each(
            "Schedule",
            "learning_rate_decay",
            lambda v: Schedule(learning_rate_decay=v),
            [(0.0, "got 0.0"), (NAN, "got nan")],
        ),
        *each("Schedule", "utility_weight", lambda v: Schedule(utility_weight=v), NOT_POSITIVE),
        *each("Schedule", "weight_half_life", lambda v: Schedule(weight_half_life=v), FINITE[1:2]),
        *each("Schedule", "weight_min", lambda v: Schedule(weight_min=v), [(-1.0, "got -1.0")]),
        *each("Schedule", "penalty", lambda v: Schedule(penalty=v), [(NAN, "nan"), (0, "0.0")]),
        *each("Schedule", "sigmoids", lambda v: Schedule(sigmoids=v), POSITIVE_INT[:3]),
        *each(
            "Schedule",
            "seed",
            lambda v: Schedule(seed=v),
            [(1.5, "got 1.5"), (NAN, "got nan"), ("0", "got '0'"), (True, "got True")],
        ),
        *each("Schedule", "checkpoint_every", lambda v: Schedule(checkpoint_every=v), POSITIVE_INT),
        *each("Schedule", "model", lambda v: Schedule(model=v), [(None, "got None")]),
        *each("Schedule", "refine_every", lambda v: Schedule(refine_every=v), POSITIVE_INT),
        # --- learn (refused before any training) -----------------------------------------
        case(
            "learn",
            "checkpoint",
            "when resume=True, got None",
            lambda tmp: learn(_problem(), Schedule(epochs=2), resume=True),
            tag="resume_without_checkpoint",
        ),
        case("learn", "problem", "got dict", lambda tmp: learn({"bound": 4.0}, Schedule())),
        *each(
            "learn",
            "device",
            lambda v: learn(_problem(), Schedule(epochs=2), device=v),
            [
                ("gpu", "device='gpu' is not a device torch knows"),
                ("mps", "device='mps' is not supported"),
                ("cuda:99", "device='cuda:99'"),  # no GPU, or fewer than 100
                (3, "got int: 3"),
            ],
        ),
        case(
            "learn",
            "refine_every",
            "got loss='MA'",
            lambda tmp: learn(_problem(loss="MA"), Schedule(epochs=2, refine_every=1)),
        ),
        case("learn", "schedule", "got dict", lambda tmp: learn(_problem(), {"epochs": 2})),
        case("learn", "checkpoint", "got int", lambda tmp: learn(_problem(), checkpoint=3)),
        case("learn", "resume", "got 'yes'", lambda tmp: learn(_problem(), resume="yes")),
        *each(
            "learn",
            "time_limit",
            lambda v: learn(_problem(), time_limit=v),
            [(NAN, "got nan"), (-1.0, "got -1.0"), ("60", "got '60'")],
        ),
        *each(
            "learn",
            "certify_accuracy",
            lambda v: learn(_problem(), certify_accuracy=v),
            [(NAN, "got nan"), (2.0, "got 2.0")],
        ),
        # --- LearnedNoise.load -------------------------------------------------------------
        case(
            "LearnedNoise",
            "directory",
            "missing",
            lambda tmp: LearnedNoise.load(tmp / "missing"),
            tag="missing",
        ),
        case("LearnedNoise", "directory", "got int: 5", lambda tmp: LearnedNoise.load(5)),
        case(
            "LearnedNoise",
            "directory",
            "Expecting value",
            lambda tmp: LearnedNoise.load(_write_result(tmp, "")),
            tag="empty_json",
        ),
        case(
            "LearnedNoise",
            "directory",
            "missing entry 'problem'",
            lambda tmp: LearnedNoise.load(_write_result(tmp, {})),
        ),
        case(
            "LearnedNoise",
            "directory",
            "list indices must be integers",
            lambda tmp: LearnedNoise.load(_write_result(tmp, [1, 2])),
        ),
        # --- models --------------------------------------------------------------------------
        *each("SigmoidStackModel", "half_size", lambda v: SigmoidStackModel(v, 1.0), POSITIVE_INT),
        *each("SigmoidStackModel", "bound", lambda v: SigmoidStackModel(3, v), POSITIVE_REAL),
        *each(
            "SigmoidStackModel",
            "sigmoids",
            lambda v: SigmoidStackModel(3, 1.0, sigmoids=v),
            [(0, "0")],
        ),
        *each(
            "SigmoidStackModel",
            "slope",
            lambda v: SigmoidStackModel(3, 1.0, slope=v),
            [(NAN, "nan"), (0.0, "0.0")],
        ),
        *each(
            "SigmoidStackModel",
            "generator",
            lambda v: SigmoidStackModel(3, 1.0, generator=v),
            [(0, "got int")],
        ),
        *each("LogIncrementModel", "half_size", LogIncrementModel, POSITIVE_INT[:3]),
        *each(
            "LogIncrementModel",
            "init_increments",
            lambda v: LogIncrementModel(3, init_increments=v),
            [
                ([0.1, NAN, 0.1], "got nan at index 1"),
                (-1.0, "got -1.0 at index 0"),
                ([0.1, 0.1], "got shape (2,)"),
                ([], "got shape (0,)"),
                ("a", "got 'a'"),
            ],
        ),
        *each("LogIncrementModel", "pmf", LogIncrementModel.from_pmf, PMF, tag="from_pmf"),
        *each(
            "LogIncrementModel",
            "pmf",
            LogIncrementModel.from_pmf,
            [
                ([0.25, 0.25, 0.25, 0.25], "got length 4"),
                ([0.0, 1.0, 0.0], "got 0.0 at index 0"),
                ([0.1, 0.5, 0.4], "relative difference 0.75"),
                ([0.3, 0.1, 0.2, 0.1, 0.3], "pmf[0] = 0.3 > pmf[1] = 0.1"),
                (torch.tensor([0.25, NAN, 0.25]), "got nan at index 1"),
            ],
            tag="from_pmf_shape",
        ),
        *each("SymmetricWeightModel", "half_size", SymmetricWeightModel, POSITIVE_INT[:3]),
        *each(
            "SymmetricWeightModel",
            "generator",
            lambda v: SymmetricWeightModel(3, generator=v),
            [(0, "got int")],
        ),
        *each("SymmetricWeightModel", "pmf", SymmetricWeightModel.from_pmf, PMF, tag="from_pmf"),
        *each(
            "SymmetricWeightModel",
            "pmf",
            SymmetricWeightModel.from_pmf,
            [
                ([0.25, 0.25, 0.25, 0.25], "got length 4"),
                ([0.0, 1.0, 0.0], "got 0.0 at index 0"),
                ([0.1, 0.5, 0.4], "relative difference 0.75"),
            ],
            tag="from_pmf_shape",
        ),
        *[
            case("build_model", name, shown, lambda tmp, a=arguments: build_model(**a))
            for name, arguments, shown in [
                ("name", {"name": "mlp"}, "got 'mlp'"),
                ("half_size", {"half_size": 0}, "got 0"),
                ("bound", {"bound": NAN}, "got nan"),
                ("seed", {"seed": -1}, "got -1"),
                ("seed", {"seed": 1.5}, "got 1.5"),
                ("sigmoids", {"sigmoids": 2.5}, "got 2.5"),
            ]
            for arguments in [
                {"name": "sigmoid", "half_size": 3, "bound": 1.0, "seed": 0} | arguments
            ]
        ],
    ]
    for wrapper in (extended_ma_delta, buckets_delta):
        label = wrapper.__name__

        def call(changes, wrapper=wrapper, pmf=None):
            return wrapper(PMF_TENSOR if pmf is None else pmf, **(WRAPPER | changes))

        OPTIMIZER_CASES += [
            *each(label, "step", lambda v, c=call: c({"step": v}), FINITE + NOT_POSITIVE),
            *each(
                label,
                "sensitivity",
                lambda v, c=call: c({"sensitivity": v}),
                [(0.3, "sensitivity=0.3 is not a whole number of grid steps (step=0.5)")],
            ),
            *each(label, "sensitivity", lambda v, c=call: c({"sensitivity": v}), NOT_POSITIVE),
            *each(label, "epsilon", lambda v, c=call: c({"epsilon": v}), EPSILON),
            *each(label, "times", lambda v, c=call: c({"times": v}), POSITIVE_INT[:3]),
            *each(label, "q", lambda v, c=call: c({"q": v}), Q),
            *each(label, "direction", lambda v, c=call: c({"direction": v}), [("AB", "'AB'")]),
            *each(
                label,
                "pmf",
                lambda v, c=call: c({}, pmf=v),
                [
                    (torch.tensor([0.25, NAN, 0.25, 0.25, 0.25]), "got nan at index 1"),
                    (torch.full((5,), 0.25, dtype=torch.float64), "got sum 1.25"),
                    (torch.ones(3, 3) / 9, "got shape (3, 3)"),
                    (torch.tensor([], dtype=torch.float64), "must not be empty"),
                    ([0.25, 0.5, 0.25], "got list"),
                    (torch.tensor([0, 1, 0]), "got tensor of dtype torch.int64"),
                ],
            ),
        ]
    OPTIMIZER_CASES += [
        case(
            "extended_ma_delta",
            "conversion",
            "got 'exact'",
            lambda tmp: extended_ma_delta(PMF_TENSOR, **WRAPPER, conversion="exact"),
        ),
        *each(
            "buckets_delta",
            "kind",
            lambda v: buckets_delta(PMF_TENSOR, **WRAPPER, kind=v),
            [("MA", "got 'MA'"), ("x", "got 'x'")],
        ),
        *each(
            "buckets_delta",
            "width",
            lambda v: buckets_delta(PMF_TENSOR, **WRAPPER, width=v),
            [(NAN, "got nan"), (-0.01, "got -0.01")],
        ),
    ]
else:  # pragma: no cover
    OPTIMIZER_CASES = []
