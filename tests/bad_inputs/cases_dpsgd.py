"""Bad-input cases for the subsampled truncated Gaussian (``SubsampledTruncatedGaussian``,
public both at the top level and in ``accountant.mechanisms``)."""

from __future__ import annotations

from accountant import DPSGDAccountant, SubsampledTruncatedGaussian, mechanisms
from tests.bad_inputs.catalogue import INF, NAN, PAIR, POSITIVE_INT, POSITIVE_REAL, each


def _build(**changed):
    arguments = {"sigma": 1.1, "sampling_rate": 0.004, "cut": 8.0} | changed
    return SubsampledTruncatedGaussian(**arguments)


def _build_from_mechanisms(**changed):
    arguments = {"sigma": 1.1, "sampling_rate": 0.004, "cut": 8.0} | changed
    return mechanisms.SubsampledTruncatedGaussian(**arguments)


VALID = _build()
CONSTRUCTORS = {
    "SubsampledTruncatedGaussian": _build,
    "mechanisms.SubsampledTruncatedGaussian": _build_from_mechanisms,
}

DPSGD_CASES = [
    *[
        case
        for target, build in CONSTRUCTORS.items()
        for case in [
            *each(target, "sigma", lambda v, b=build: b(sigma=v), POSITIVE_REAL),
            *each(
                target,
                "sampling_rate",
                lambda v, b=build: b(sampling_rate=v),
                [
                    (0.0, "got 0.0"),
                    (-0.1, "got -0.1"),
                    (1.5, "got 1.5"),
                    (NAN, "got nan"),
                    (INF, "got inf"),
                    ("0.1", "got '0.1'"),
                ],
            ),
            *each(
                target,
                "cut",
                lambda v, b=build: b(cut=v),
                [
                    (0.0, "got 0.0"),
                    (-8.0, "got -8.0"),
                    (NAN, "got nan"),
                    (-INF, "got -inf"),
                    (None, "got None"),
                    (0.4, "got cut=0.4"),  # 0.4 sigma * 1.1 < 1/2: no overlap
                ],
            ),
            *each(target, "clip", lambda v, b=build: b(clip=v), [(0.0, "got 0.0"), (NAN, "nan")]),
            *each(
                target,
                "truncation",
                lambda v, b=build: b(truncation=v),
                [("renormalized", "got 'renormalized'"), ("clip", "got 'clip'"), (None, "None")],
            ),
        ]
    ],
    *each(
        "SubsampledTruncatedGaussian",
        "step",
        VALID.pair,
        [(NAN, "got nan"), (0.0, "got 0.0"), (0.3, "got step=0.3")],
    ),
    *each(
        "SubsampledTruncatedGaussian",
        "lam",
        lambda v: VALID.log_moment(v, "A/B"),
        [(-1.0, "got -1.0"), (NAN, "got nan"), (INF, "got inf")],
    ),
    *each(
        "SubsampledTruncatedGaussian",
        "direction",
        lambda v: VALID.log_moment_error(1.0, v),
        [("max", "got 'max'"), ("AB", "got 'AB'")],
    ),
    *each(
        "SubsampledTruncatedGaussian",
        "direction",
        VALID.distinguishing_mass,
        [("both", "got 'both'")],
        tag="omega",
    ),
    # --- DPSGDAccountant ----------------------------------------------------------
    *each("DPSGDAccountant", "dimension", lambda v: DPSGDAccountant(dimension=v), POSITIVE_INT),
    *each(
        "DPSGDAccountant",
        "accuracy",
        lambda v: DPSGDAccountant(dimension=2, accuracy=v),
        [(0.0, "got 0.0"), (1.0, "got 1.0"), (NAN, "got nan")],
    ),
    *each(
        "DPSGDAccountant",
        "mechanism",
        lambda v: DPSGDAccountant(dimension=2).compose(v),
        [(PAIR, "got WorstCasePair"), (None, "got NoneType")],
    ),
    *each(
        "DPSGDAccountant",
        "mechanism",
        lambda v: DPSGDAccountant(dimension=2).compose(VALID).compose(v),
        [(_build(truncation="clamped"), "got ['clamped', 'renormalised']")],
        tag="truncation",
    ),
    *each(
        "DPSGDAccountant",
        "delta",
        lambda v: DPSGDAccountant(dimension=2).compose(VALID).epsilon(v),
        [(0.0, "got 0.0"), (NAN, "got nan")],
    ),
]

__all__ = ["DPSGD_CASES"]
