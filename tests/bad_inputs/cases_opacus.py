"""Bad-input cases for the Opacus integration (empty without the [opacus] extra)."""

from __future__ import annotations

try:
    import torch

    from optimizers.opacus import (
        CertifiedGaussianAccountant,
        CertifiedPrivacyEngine,
        ShuffledEpochsAccountant,
        TruncatedAccountant,
        TruncatedDPOptimizer,
        TruncatedPrivacyEngine,
        TruncationSettings,
        get_noise_multiplier,
        make_private_truncated,
        make_private_truncated_with_epsilon,
        truncated_gaussian_noise,
        truncated_privacy_engine,
    )
except ImportError:  # pragma: no cover - the [opacus] extra is missing
    torch = None

from tests.bad_inputs.catalogue import (
    FINITE,
    INF,
    NAN,
    NOT_POSITIVE,
    POSITIVE_INT,
    POSITIVE_REAL,
    TARGET_DELTA,
    Q,
    case,
    each,
)

TRUNCATION = [("gaussian", "got 'gaussian'"), (None, "got None"), ("Clamped", "got 'Clamped'")]

if torch is not None:
    import warnings

    from opacus import PrivacyEngine
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    def _engine(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return truncated_privacy_engine(**kw)

    def _rdp_engine():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return PrivacyEngine(accountant="rdp")

    def _step(**changes):
        values = {"noise_multiplier": 1.0, "sample_rate": 0.1} | changes
        return TruncatedAccountant().step(**values)

    def _state(**changes):
        state = TruncatedAccountant().state_dict() | changes
        return TruncatedAccountant().load_state_dict(state)

    def _private(call=None, engine=None, **changes):
        model = nn.Linear(4, 2)
        data = DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8).long()), batch_size=4)
        values = {
            "module": model,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
            "data_loader": data,
            "max_grad_norm": 1.0,
        }
        if call is None:
            call, values = make_private_truncated, values | {"noise_multiplier": 1.0}
        else:
            values |= {"target_epsilon": 2.0, "target_delta": 1e-5, "epochs": 1}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return call(_engine() if engine is None else engine, **(values | changes))

    def _epochs(**changes):
        values = {"sampler": "shuffle", "dataset_size": 8, "batch_size": 4} | changes
        return ShuffledEpochsAccountant(**values)

    def _epochs_private(**changes):
        from torch.utils.data import WeightedRandomSampler

        model = nn.Linear(4, 2)
        dataset = TensorDataset(torch.randn(8, 4), torch.zeros(8).long())
        sampler = changes.pop("sampler", None)
        if sampler == "weighted":
            sampler = WeightedRandomSampler([1.0] * 8, 8)
        values = {
            "module": model,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
            "data_loader": DataLoader(dataset, batch_size=4, sampler=sampler),
            "noise_multiplier": 1.0,
            "max_grad_norm": 1.0,
            "poisson_sampling": False,
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return CertifiedPrivacyEngine().make_private(**(values | changes))

    def _epochs_calibrated(**changes):
        model = nn.Linear(4, 2)
        dataset = TensorDataset(torch.randn(8, 4), torch.zeros(8).long())
        values = {
            "module": model,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
            "data_loader": DataLoader(dataset, batch_size=4, shuffle=True),
            "target_epsilon": 2.0,
            "target_delta": 1e-5,
            "epochs": 1,
            "max_grad_norm": 1.0,
            "poisson_sampling": False,
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return CertifiedPrivacyEngine().make_private_with_epsilon(**(values | changes))

    def _certified_step(**changes):
        values = {"noise_multiplier": 1.0, "sample_rate": 0.1} | changes
        return CertifiedGaussianAccountant().step(**values)

    def _truncated_engine(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return TruncatedPrivacyEngine(**kw)

    def _engine_private(method="make_private", **changes):
        model = nn.Linear(4, 2)
        data = DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8).long()), batch_size=4)
        values = {
            "module": model,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
            "data_loader": data,
            "max_grad_norm": 1.0,
        }
        if method == "make_private":
            values["noise_multiplier"] = 1.0
        else:
            values |= {"target_epsilon": 2.0, "target_delta": 1e-5, "epochs": 1}
        engine = _truncated_engine()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return getattr(engine, method)(**(values | changes))

    def _search(**changes):
        values = {"target_epsilon": 2.0, "target_delta": 1e-5, "sample_rate": 0.1, "steps": 10}
        return get_noise_multiplier(**(values | {"dimension": 10} | changes))

    def _optimizer(**changes):
        model = nn.Linear(1, 1)
        values = {
            "noise_multiplier": 1.0,
            "max_grad_norm": 1.0,
            "expected_batch_size": 4,
            "settings": TruncationSettings(),
        }
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        return TruncatedDPOptimizer(optimizer, **(values | changes))

    def _noise(**changes):
        values = {"std": 1.0, "settings": TruncationSettings(), "reference": torch.zeros(3)}
        return truncated_gaussian_noise(**(values | changes))

    OPACUS_CASES = [
        *each("TruncationSettings", "cut", lambda v: TruncationSettings(cut=v), POSITIVE_REAL),
        *each(
            "TruncationSettings",
            "truncation",
            lambda v: TruncationSettings(truncation=v),
            TRUNCATION,
        ),
        *each("TruncatedAccountant", "cut", lambda v: TruncatedAccountant(cut=v), FINITE),
        *each(
            "TruncatedAccountant",
            "truncation",
            lambda v: TruncatedAccountant(truncation=v),
            TRUNCATION[:1],
        ),
        *each(
            "TruncatedAccountant",
            "accuracy",
            lambda v: TruncatedAccountant(accuracy=v),
            [(0.0, "got 0.0"), (1.0, "got 1.0"), (NAN, "got nan")],
        ),
        *each(
            "TruncatedAccountant",
            "noise_multiplier",
            lambda v: _step(noise_multiplier=v),
            POSITIVE_REAL,
        ),
        *each("TruncatedAccountant", "sample_rate", lambda v: _step(sample_rate=v), Q),
        *each("TruncatedAccountant", "steps", lambda v: _step(steps=v), POSITIVE_INT),
        case(
            "TruncatedAccountant",
            "cut",
            "got cut=10.0 with sigma=0.05",
            lambda tmp: _step(noise_multiplier=0.05),
        ),
        *each(
            "TruncatedAccountant",
            "delta",
            lambda v: TruncatedAccountant().get_epsilon(v),
            TARGET_DELTA,
        ),
        *each(
            "TruncatedAccountant",
            "delta",
            lambda v: TruncatedAccountant().epsilon_bounds(v),
            TARGET_DELTA,
            tag="epsilon_bounds",
        ),
        case(
            "TruncatedAccountant",
            "get_epsilon",
            "{'alphas': [2]}",
            lambda tmp: TruncatedAccountant().get_epsilon(1e-5, alphas=[2]),
        ),
        *each(
            "TruncatedAccountant",
            "state_dict",
            lambda v: TruncatedAccountant().load_state_dict(v),
            [(None, "got None"), ([1], "got [1]"), ({"history": []}, "lacks the key 'mechanism'")],
        ),
        *each(
            "TruncatedAccountant",
            "mechanism",
            lambda v: _state(mechanism=v),
            [("rdp", "got 'rdp'"), ("prv", "got 'prv'")],
        ),
        *each(
            "TruncatedAccountant",
            "settings",
            lambda v: _state(settings=v),
            [
                ({"cut": 8.0}, "got {'cut': 8.0}"),
                ({"cut": 3.0, "truncation": "renormalised"}, "cut 3 sigma, renormalised"),
                ({"cut": 10.0, "truncation": "clamped"}, "cut 10 sigma, clamped"),
            ],
        ),
        *each(
            "TruncatedAccountant",
            "history",
            lambda v: _state(history=v),
            [
                ("1.0, 0.1, 3", "got '1.0, 0.1, 3'"),
                ([(1.0, 0.1)], "got (1.0, 0.1)"),
                ([(1.0, 0.1, 3), (NAN, 0.1, 1)], "[1] noise_multiplier must be finite, got nan"),
                ([(1.0, 0.0, 3)], "[0] sample_rate must lie in (0, 1], got 0.0"),
                ([(1.0, 0.1, 2.5)], "[0] steps must be a positive integer, got 2.5"),
            ],
        ),
        *each(
            "TruncatedAccountant",
            "history",
            lambda v: setattr(TruncatedAccountant(), "history", v),
            [
                (None, "got None"),
                ([(1.0, 0.1, 0)], "[0] steps must be a positive integer, got 0"),
                ([[INF, 0.1, 1]], "[0] noise_multiplier must be finite, got inf"),
            ],
        ),
        *each(
            "CertifiedGaussianAccountant",
            "accuracy",
            lambda v: CertifiedGaussianAccountant(accuracy=v),
            [(0.0, "got 0.0"), (1.0, "got 1.0"), (NAN, "got nan")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "accuracy",
            lambda v: CertifiedPrivacyEngine(accuracy=v),
            [(0.0, "got 0.0"), (NAN, "got nan")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "intervals",
            lambda v: CertifiedPrivacyEngine(intervals=v),
            POSITIVE_INT,
        ),
        *each(
            "CertifiedPrivacyEngine",
            "data_loader.sampler",
            lambda v: _epochs_private(sampler=v),
            [("weighted", "WeightedRandomSampler")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "poisson_sampling",
            lambda v: _epochs_private(poisson_sampling=v),
            [("no", "got 'no'"), (None, "got None")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "noise_multiplier",
            lambda v: _epochs_private(noise_multiplier=v),
            [(NAN, "got nan"), (0.0, "got 0.0")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "clipping",
            lambda v: _epochs_private(clipping=v),
            [("adaptive", "'adaptive'")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "target_epsilon",
            lambda v: _epochs_calibrated(target_epsilon=v),
            [(NAN, "got nan"), (-1.0, "got -1.0")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "target_delta",
            lambda v: _epochs_calibrated(target_delta=v),
            [(0.0, "got 0.0"), (1.5, "got 1.5")],
        ),
        *each(
            "CertifiedPrivacyEngine",
            "epochs",
            lambda v: _epochs_calibrated(epochs=v),
            [(0, "got 0"), (2.5, "got 2.5")],
        ),
        *each(
            "ShuffledEpochsAccountant",
            "sampler",
            lambda v: _epochs(sampler=v),
            [("poisson", "got 'poisson'"), (None, "got None")],
        ),
        *each(
            "ShuffledEpochsAccountant",
            "dataset_size",
            lambda v: _epochs(dataset_size=v),
            POSITIVE_INT,
        ),
        *each(
            "ShuffledEpochsAccountant",
            "settings",
            lambda v: _epochs(settings=v),
            [({"cut": 8.0}, "got {'cut': 8.0}"), (8.0, "got 8.0")],
        ),
        *each(
            "ShuffledEpochsAccountant",
            "dimension",
            lambda v: _epochs(dimension=v),
            [(10, "dimension=10")],
            tag="without settings",
        ),
        *each(
            "ShuffledEpochsAccountant",
            "dimension",
            lambda v: _epochs(settings=TruncationSettings(cut=8.0), dimension=v),
            [(0, "got 0"), (2.5, "got 2.5")],
        ),
        *each(
            "ShuffledEpochsAccountant",
            "settings",
            lambda v: _epochs().load_state_dict(_epochs().state_dict() | {"settings": v}),
            [({"cut": 8.0}, "describes {'cut': 8.0}")],
            tag="load_state_dict",
        ),
        *each(
            "ShuffledEpochsAccountant", "batch_size", lambda v: _epochs(batch_size=v), POSITIVE_INT
        ),
        *each(
            "ShuffledEpochsAccountant",
            "batch_size",
            lambda v: _epochs(batch_size=v),
            [(9, "got batch_size=9")],
            tag="larger than dataset_size",
        ),
        *each(
            "ShuffledEpochsAccountant",
            "sample_rate",
            lambda v: _epochs().step(noise_multiplier=1.0, sample_rate=v),
            [(0.25, "got 0.25"), *Q],
        ),
        *each(
            "ShuffledEpochsAccountant",
            "delta",
            lambda v: _epochs().epsilon_bounds(v),
            TARGET_DELTA,
            tag="epsilon_bounds",
        ),
        *each(
            "ShuffledEpochsAccountant",
            "mechanism",
            lambda v: _epochs().load_state_dict(_epochs().state_dict() | {"mechanism": v}),
            [("certified", "'certified'"), ("rdp", "'rdp'"), ("other", "got 'other'")],
        ),
        *each(
            "ShuffledEpochsAccountant",
            "history",
            lambda v: _epochs().load_state_dict(_epochs().state_dict() | {"history": v}),
            [
                ([(1.0, 0.5, 3)], "got (1.0, 0.5, 3)"),
                ([(1.0, 3), (2.0, 1)], "got 2.0"),
                ([(NAN, 3)], "got nan"),
            ],
        ),
        *each(
            "CertifiedGaussianAccountant",
            "noise_multiplier",
            lambda v: _certified_step(noise_multiplier=v),
            POSITIVE_REAL,
        ),
        *each(
            "CertifiedGaussianAccountant",
            "sample_rate",
            lambda v: _certified_step(sample_rate=v),
            Q,
        ),
        *each(
            "CertifiedGaussianAccountant",
            "delta",
            lambda v: CertifiedGaussianAccountant().get_epsilon(v),
            TARGET_DELTA,
        ),
        *each(
            "CertifiedGaussianAccountant",
            "eps_error",
            lambda v: CertifiedGaussianAccountant().get_epsilon(1e-5, eps_error=v),
            POSITIVE_REAL[:3] + NOT_POSITIVE,
        ),
        *each(
            "CertifiedGaussianAccountant",
            "mechanism",
            lambda v: CertifiedGaussianAccountant().load_state_dict(
                {"history": [], "mechanism": v}
            ),
            [("truncated", "got 'truncated'"), (None, "got None")],
        ),
        *each("TruncatedPrivacyEngine", "cut", lambda v: _truncated_engine(cut=v), FINITE),
        *each(
            "TruncatedPrivacyEngine",
            "truncation",
            lambda v: _truncated_engine(truncation=v),
            TRUNCATION[:1],
        ),
        *each(
            "TruncatedPrivacyEngine",
            "accuracy",
            lambda v: _truncated_engine(accuracy=v),
            [(2.0, "got 2.0")],
        ),
        *each(
            "TruncatedPrivacyEngine",
            "intervals",
            lambda v: _truncated_engine(intervals=v),
            [(0, "got 0"), (1.5, "got 1.5")],
        ),
        *each(
            "TruncatedPrivacyEngine",
            "noise_multiplier",
            lambda v: _engine_private(noise_multiplier=v),
            POSITIVE_REAL,
        ),
        *each(
            "TruncatedPrivacyEngine",
            "max_grad_norm",
            lambda v: _engine_private(max_grad_norm=v),
            [*FINITE, ([1.0], "got [1.0]")],
        ),
        *each(
            "TruncatedPrivacyEngine",
            "max_grad_norm",
            lambda v: _engine_private(max_grad_norm=v, clipping="per_layer"),
            [([1.0], "got [1.0]"), (1.0, "got 1.0")],
            tag="per_layer",
        ),
        *each(
            "TruncatedPrivacyEngine",
            "clipping",
            lambda v: _engine_private(clipping=v),
            [("adaptive", "'adaptive'"), ("per_sample", "'per_sample'")],
        ),
        *each(
            "TruncatedPrivacyEngine",
            "poisson_sampling",
            lambda v: _engine_private(poisson_sampling=v),
            [("no", "got 'no'"), (None, "got None")],
        ),
        *each(
            "TruncatedPrivacyEngine",
            "poisson_sampling",
            lambda v: _engine_private("make_private_with_epsilon", poisson_sampling=v),
            [(1, "got 1")],
            tag="make_private_with_epsilon",
        ),
        *each(
            "TruncatedPrivacyEngine",
            "grad_sample_mode",
            lambda v: _engine_private(grad_sample_mode=v),
            [("ghost_fsdp", "'ghost_fsdp'")],
        ),
        *each(
            "TruncatedPrivacyEngine",
            "target_epsilon",
            lambda v: _engine_private("make_private_with_epsilon", target_epsilon=v),
            POSITIVE_REAL,
        ),
        *each(
            "TruncatedPrivacyEngine",
            "target_delta",
            lambda v: _engine_private("make_private_with_epsilon", target_delta=v),
            TARGET_DELTA,
        ),
        *each(
            "TruncatedPrivacyEngine",
            "epochs",
            lambda v: _engine_private("make_private_with_epsilon", epochs=v),
            POSITIVE_INT,
        ),
        *each(
            "get_noise_multiplier",
            "target_epsilon",
            lambda v: _search(target_epsilon=v),
            POSITIVE_REAL,
        ),
        *each(
            "get_noise_multiplier", "target_delta", lambda v: _search(target_delta=v), TARGET_DELTA
        ),
        *each("get_noise_multiplier", "sample_rate", lambda v: _search(sample_rate=v), Q),
        *each("get_noise_multiplier", "steps", lambda v: _search(steps=v), POSITIVE_INT),
        *each(
            "get_noise_multiplier",
            "epochs",
            lambda v: _search(steps=None, epochs=v),
            POSITIVE_INT,
        ),
        *each(
            "get_noise_multiplier",
            "dimension",
            lambda v: _search(dimension=v),
            [(None, "got None"), *POSITIVE_INT],
        ),
        *each(
            "get_noise_multiplier",
            "cut",
            lambda v: _search(cut=v),
            [(NAN, "got nan"), (-1.0, "got -1.0")],
        ),
        *each("truncated_gaussian_noise", "std", lambda v: _noise(std=v), POSITIVE_REAL),
        *each(
            "truncated_gaussian_noise", "settings", lambda v: _noise(settings=v), [(8.0, "got 8.0")]
        ),
        *each(
            "truncated_gaussian_noise",
            "reference",
            lambda v: _noise(reference=v),
            [([0.0, 0.0], "got [0.0, 0.0]"), (torch.zeros(2, dtype=torch.int64), "tensor([0, 0])")],
        ),
        *each(
            "TruncatedDPOptimizer",
            "noise_multiplier",
            lambda v: _optimizer(noise_multiplier=v),
            POSITIVE_REAL,
        ),
        *each(
            "TruncatedDPOptimizer",
            "max_grad_norm",
            lambda v: _optimizer(max_grad_norm=v),
            [*FINITE, ([1.0, 2.0], "got [1.0, 2.0]")],
        ),
        *each(
            "TruncatedDPOptimizer",
            "settings",
            lambda v: _optimizer(settings=v),
            [(None, "got None"), ("clamped", "got 'clamped'")],
        ),
        *each("truncated_privacy_engine", "cut", lambda v: _engine(cut=v), FINITE),
        *each(
            "truncated_privacy_engine",
            "truncation",
            lambda v: _engine(truncation=v),
            TRUNCATION[:1],
        ),
        *each(
            "truncated_privacy_engine",
            "accuracy",
            lambda v: _engine(accuracy=v),
            [(2.0, "got 2.0")],
        ),
        *each(
            "make_private_truncated",
            "noise_multiplier",
            lambda v: _private(noise_multiplier=v),
            POSITIVE_REAL,
        ),
        *each(
            "make_private_truncated",
            "max_grad_norm",
            lambda v: _private(max_grad_norm=v),
            [*FINITE, ([1.0], "got [1.0]")],
        ),
        *each(
            "make_private_truncated",
            "cut",
            lambda v: _private(cut=v),
            [(3.0, "cut=3.0"), (NAN, "got nan")],
        ),
        *each(
            "make_private_truncated",
            "truncation",
            lambda v: _private(truncation=v),
            [("clamped", "'clamped'"), ("x", "got 'x'")],
        ),
        *each(
            "make_private_truncated",
            "clipping",
            lambda v: _private(clipping=v),
            [("per_layer", "'per_layer'"), ("adaptive", "'adaptive'")],
        ),
        *each(
            "make_private_truncated",
            "poisson_sampling",
            lambda v: _private(poisson_sampling=v),
            [(False, "False")],
        ),
        *each(
            "make_private_truncated",
            "grad_sample_mode",
            lambda v: _private(grad_sample_mode=v),
            [("ghost", "'ghost'")],
        ),
        case(
            "make_private_truncated",
            "privacy_engine.accountant",
            "got <opacus.accountants.rdp.RDPAccountant",
            lambda tmp: _private(engine=_rdp_engine()),
        ),
        *each(
            "make_private_truncated_with_epsilon",
            "epochs",
            lambda v: _private(make_private_truncated_with_epsilon, epochs=v),
            POSITIVE_INT,
        ),
        *each(
            "make_private_truncated_with_epsilon",
            "target_epsilon",
            lambda v: _private(make_private_truncated_with_epsilon, target_epsilon=v),
            POSITIVE_REAL,
        ),
        *each(
            "make_private_truncated_with_epsilon",
            "target_delta",
            lambda v: _private(make_private_truncated_with_epsilon, target_delta=v),
            TARGET_DELTA,
        ),
    ]
else:  # pragma: no cover
    OPACUS_CASES = []
