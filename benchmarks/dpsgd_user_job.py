"""One job of ``benchmarks/dpsgd_user_path.py``, run as a fresh process the way a user runs
an accounting job: import the library, build, compose, query, print one JSON line::

    python benchmarks/dpsgd_user_job.py '{"job": "epsilon", "accountant": "ours", ...}'

The clock starts at the first statement of this file, before any other import
(``seconds``: from there to the answer; ``import_seconds``: the accountant's library
imported). The parent adds its own wall time of the whole process (interpreter start-up
and exit included). The JSON line also holds the peak resident set (``VmHWM``) and every
warning raised, as text. A job raises nothing: a failure is a line with ``status``
``"error"`` or ``"out of memory"`` and the message.

Jobs (``job``), each for one accountant (``accountant``):

* ``epsilon``: eps at ``delta`` of ``steps`` DP-SGD steps (``sigma``, ``q``), or of a
  seeded heterogeneous schedule (``settings`` > 1, :func:`heterogeneous_schedule`).
  ``ours``: ``DPSGDAccountant(dimension=d)`` composing
  ``SubsampledTruncatedGaussian(sigma, q, cut)`` when ``ours`` is ``"truncated"``;
  ``PrivacyBuckets()`` composing the same mechanism with ``cut=inf`` when it is
  ``"gaussian"``. ``dp-pld`` and ``prv``: the peers (``dpsgd_peers``).
* ``calibrate``: the noise multiplier for ``(epsilon, delta)``.
* ``opacus``: a real ``opacus.PrivacyEngine`` on an MLP, ``get_epsilon(delta)`` after
  each epoch (:func:`opacus_job`).

This file imports nothing of the benchmark but ``dpsgd_peers`` (for the peers' jobs), so
the child's own cost is the library's.
"""

import time

STARTED = time.perf_counter()  # the job's clock: before any other import

import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

_MARKS: dict[str, float] = {}


def mark(name: str) -> None:
    """Record the seconds since :data:`STARTED` at the end of phase ``name``."""
    _MARKS[name] = time.perf_counter() - STARTED


def heterogeneous_schedule(
    seed: int, settings: int, steps: int, sigma_range, q_range
) -> list[tuple[float, float, int]]:
    """``settings`` entries ``(sigma, q, steps)``, sigma and q drawn uniformly from their
    ranges by ``random.Random(seed)`` (the draw of ``benchmarks/dpsgd.py: schedule``)."""
    draw = random.Random(seed)
    return [(draw.uniform(*sigma_range), draw.uniform(*q_range), steps) for _ in range(settings)]


def schedule_of(spec: dict) -> list[tuple[float, float, int]]:
    if spec.get("settings", 1) > 1:
        return heterogeneous_schedule(
            spec["seed"], spec["settings"], spec["steps"], spec["sigma_range"], spec["q_range"]
        )
    return [(spec["sigma"], spec["q"], spec["steps"])]


def _peak_rss_mib() -> float | None:
    try:
        with open("/proc/self/status") as status:
            text = status.read()
        return int(text.split("VmHWM:")[1].split()[0]) / 1024.0
    except (OSError, IndexError, ValueError):
        return None


def _finite(value):
    """Strict JSON: non-finite floats as the strings ``"inf"``, ``"-inf"``, ``"nan"``."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# ------------------------------------------------------------------------------- ours


def ours_epsilon(spec: dict) -> dict:
    import accountant
    from accountant import DPSGDAccountant, PrivacyBuckets, SubsampledTruncatedGaussian

    mark("import")
    options = {} if spec.get("accuracy") is None else {"accuracy": spec["accuracy"]}
    if spec["ours"] == "truncated":
        composed, cut = DPSGDAccountant(dimension=int(spec["dimension"]), **options), spec["cut"]
        built = f"DPSGDAccountant(dimension={int(spec['dimension'])}{_shown(options)})"
    else:
        composed, cut = PrivacyBuckets(**options), math.inf
        built = f"PrivacyBuckets({_shown(options)[2:]})"
    for sigma, q, steps in schedule_of(spec):
        mechanism = SubsampledTruncatedGaussian(sigma=sigma, sampling_rate=q, cut=cut)
        composed = composed.compose(mechanism, int(steps))
    mark("build")
    bounds = composed.epsilon(spec["delta"])
    mark("query")
    lower, upper = float(bounds.lower), float(bounds.upper)
    rel = (upper - lower) / upper if upper > 0.0 and math.isfinite(upper) else None
    return {
        "lower": lower,
        "upper": upper,
        "rel": rel,
        "method": f"{built}, SubsampledTruncatedGaussian(cut={cut:g})",
        "engine": accountant.__file__.rsplit("/", 2)[0],
    }


def _shown(options: dict) -> str:
    return "".join(f", {k}={v!r}" for k, v in options.items())


def ours_calibrate(spec: dict) -> dict:
    from accountant import calibrate_noise_multiplier

    mark("import")
    found = calibrate_noise_multiplier(
        epsilon=spec["epsilon"],
        delta=spec["delta"],
        sampling_rate=spec["q"],
        steps=int(spec["steps"]),
        cut=spec["cut"],
        dimension=int(spec["dimension"]),
    )
    mark("query")
    return {
        "sigma": float(found.sigma),
        "sigma_low": None if found.sigma_low is None else float(found.sigma_low),
        "evaluations": getattr(found, "evaluations", None),
        "note": "; ".join(getattr(found, "notes", ()) or ()),
        "method": f"calibrate_noise_multiplier(cut={spec['cut']:g}, "
        f"dimension={int(spec['dimension'])}) defaults",
    }


# ------------------------------------------------------------------------------ peers


def peer_epsilon(spec: dict) -> dict:
    import dpsgd_peers as peers

    entries, delta = schedule_of(spec), spec["delta"]
    if spec["accountant"] == "dp-pld":
        import dp_accounting  # noqa: F401

        mark("import")
        upper = peers.dp_epsilon(entries, delta, spec["dp_interval"], True)
        mark("query")
        return {
            "upper": upper,
            "method": f"PLDAccountant(value_discretization_interval={spec['dp_interval']:g}), "
            "SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps), "
            "get_epsilon",
        }
    import prv_accountant  # noqa: F401

    mark("import")
    lower, estimate, upper = peers.prv_epsilon(entries, delta, spec["eps_error"])
    mark("query")
    return {
        "lower": lower,
        "estimate": estimate,
        "upper": upper,
        "method": f"PRVAccountant(eps_error={spec['eps_error']:g}, "
        f"delta_error=delta*{peers.DELTA_ERROR_FACTOR:g}), compute_epsilon",
    }


def peer_calibrate(spec: dict) -> dict:
    import dpsgd_peers as peers

    args = (spec["q"], int(spec["steps"]), spec["epsilon"], spec["delta"])
    if spec["accountant"] == "dp-pld":
        import dp_accounting  # noqa: F401

        mark("import")
        sigma = peers.dp_calibrate(*args, spec["dp_interval"], True)
        mark("query")
        return {
            "sigma": sigma,
            "method": "calibrate_dp_mechanism(PLDAccountant(value_discretization_interval="
            f"{spec['dp_interval']:g}), tol={peers.SIGMA_TOLERANCE:g})",
        }
    import prv_accountant  # noqa: F401

    mark("import")
    low, sigma, count = peers.prv_bisect(*args, spec["eps_error"])
    mark("query")
    return {
        "sigma": sigma,
        "sigma_low": low,
        "evaluations": count,
        "method": f"bisection on PRVAccountant(eps_error={spec['eps_error']:g}) upper eps, "
        f"to {peers.SIGMA_TOLERANCE:g} in sigma (dpsgd_peers.prv_bisect)",
    }


# ----------------------------------------------------------------------------- opacus


def _mlp(layers):
    from torch import nn

    parts = []
    for i, (width_in, width_out) in enumerate(itertools.pairwise(layers)):
        parts.append(nn.Linear(width_in, width_out))
        if i < len(layers) - 2:
            parts.append(nn.ReLU())
    return nn.Sequential(*parts)


def _synthetic(size: int, features: int, classes: int):
    """A dataset of ``size`` examples drawn on demand (seeded per index), so the job holds
    no data: only ``len`` matters to the accountant (the sampling rate)."""
    import torch
    from torch.utils.data import Dataset

    class Synthetic(Dataset):
        def __len__(self) -> int:
            return size

        def __getitem__(self, index: int):
            generator = torch.Generator().manual_seed(int(index))
            x = torch.randn(features, generator=generator)
            return x, int(index) % classes

    return Synthetic()


def opacus_job(spec: dict) -> dict:
    """``get_epsilon(delta)`` of a real ``PrivacyEngine`` after each of ``epochs`` epochs.

    The model: an MLP of widths ``layers`` (its trainable parameters are the dimension); the
    data: ``dataset`` synthetic examples, batch ``batch`` (Opacus's Poisson sampling rate
    ``1 / len(loader)``). The engine: ``"truncated"``, ``optimizers.opacus``'s
    ``TruncatedPrivacyEngine(cut=cut)`` with its ``make_private``; ``"certified"``, Opacus's
    ``PrivacyEngine(accountant="certified")`` (registered by ``optimizers.opacus``, plain
    Gaussian noise); Opacus's own ``"prv"`` and ``"rdp"`` with ``make_private``. One real
    DP-SGD step on a batch of two examples (per-example gradients, clipping, noise, the step
    hook); every further step calls the optimiser's step hook, the call ``DPOptimizer.step``
    makes after noising, so the accountant records the history a training run would, without
    the training. Times each ``get_epsilon`` call and prints a progress line after each (a
    job killed at its timeout keeps the last)."""
    import opacus
    import torch
    from opacus import PrivacyEngine
    from opacus.accountants import create_accountant
    from torch.utils.data import DataLoader

    name = spec["opacus_accountant"]
    if name in ("truncated", "certified"):
        import optimizers.opacus as ours
    mark("import")
    if name != "truncated":  # (refused by create_accountant: TruncatedPrivacyEngine adds it)
        try:
            create_accountant(name)
        except ValueError as error:
            return {"status": "not available", "message": f"accountant={name!r}: {error}"[:300]}
    torch.manual_seed(0)
    layers, sigma = spec["layers"], spec["sigma"]
    model = _mlp(layers)
    dimension = sum(p.numel() for p in model.parameters() if p.requires_grad)
    data = _synthetic(spec["dataset"], layers[0], layers[-1])
    loader = DataLoader(data, batch_size=spec["batch"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    common = {"module": model, "optimizer": optimizer, "data_loader": loader}
    common.update(noise_multiplier=sigma, max_grad_norm=1.0)
    if name == "truncated":
        engine = ours.TruncatedPrivacyEngine(cut=spec["cut"])
        model, optimizer, loader = engine.make_private(**common)
        how = f"TruncatedPrivacyEngine(cut={spec['cut']:g}) + make_private"
    else:
        engine = PrivacyEngine(accountant=name)
        model, optimizer, loader = engine.make_private(**common)
        how = f"PrivacyEngine(accountant={name!r}) + make_private"
    steps_per_epoch, rate = len(loader), float(loader.sample_rate)
    x = torch.stack([data[i][0] for i in range(2)])
    y = torch.tensor([data[i][1] for i in range(2)])
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()  # the one real step: the hook accounts it
    mark("setup")
    calls, values = [], []
    for epoch in range(spec["epochs"]):
        for _ in range(steps_per_epoch - (1 if epoch == 0 else 0)):
            optimizer.step_hook(optimizer)
        started = time.perf_counter()
        values.append(float(engine.get_epsilon(spec["delta"])))
        calls.append(time.perf_counter() - started)
        progress = {"epoch": epoch + 1, "call_seconds": calls[-1], "epsilon": values[-1]}
        print(json.dumps(progress | {"calls_seconds": sum(calls)}), flush=True)
    mark("query")
    return {
        "upper": values[-1],
        "epsilons": values,
        "calls": calls,
        "total_calls_seconds": sum(calls),
        "first_call_seconds": calls[0],
        "dimension": dimension,
        "steps_per_epoch": steps_per_epoch,
        "sample_rate": rate,
        "steps": steps_per_epoch * spec["epochs"],
        "accountant_class": type(engine.accountant).__name__,
        "method": how,
        "opacus": opacus.__version__,
    }


# ------------------------------------------------------------------------------- main


def run(spec: dict) -> dict:
    job, who = spec["job"], spec["accountant"]
    if job == "opacus":
        return opacus_job(spec)
    if job == "calibrate":
        return ours_calibrate(spec) if who == "ours" else peer_calibrate(spec)
    return ours_epsilon(spec) if who == "ours" else peer_epsilon(spec)


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    out: dict = {"status": "ok"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out.update(run(spec))
        except ImportError as error:
            out = {"status": "not installed", "message": f"{type(error).__name__}: {error}"}
        except MemoryError as error:
            out = {"status": "out of memory", "message": f"MemoryError: {error}"[:300]}
        except Exception as error:  # every failure is a result
            out = {"status": "error", "message": f"{type(error).__name__}: {error}"[:300]}
    out["seconds"] = time.perf_counter() - STARTED
    out["import_seconds"] = _MARKS.get("import")
    out["marks"] = dict(_MARKS)
    out["warnings"] = sorted({f"{w.category.__name__}: {w.message}"[:400] for w in caught})
    out["peak_mib"] = _peak_rss_mib()
    print(json.dumps(_finite(out)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
