"""A catalogue of bad inputs through every public entry point and through the CLI.

For each public callable of ``accountant`` and ``optimizers`` that takes user input, and
each bad-value category of the issue that applies to it (NaN, inf, negative or
non-normalised mass, mismatched lengths, empty arrays, wrong dtypes, eps < 0, n not a
positive integer, sensitivity not a multiple of the grid step, q outside (0, 1],
impossible targets), the call raises a specific exception (``InvalidInputError``,
``InfeasibleTargetError`` or ``CheckpointError``, all ``ValueError``\\ s) whose one-line
message names the argument and shows the bad value. ``accountant audit`` and
``accountant learn`` exit with status 2 and one line on stderr, never a traceback.

This is the one catalogue: a meta-test checks that every public name is catalogued here
or listed as taking no user input, and that no CLI case here repeats one in
``tests/report/test_cli.py``. A last group checks that valid but awkward inputs (eps huge,
masses near the smallest float) give finite results.
"""

from __future__ import annotations

import re

import pytest

import accountant

try:
    import torch

    import optimizers
except ImportError:  # pragma: no cover - the [torch] extra is missing
    torch = None

try:
    from optimizers import opacus as opacus_integration
except ImportError:  # pragma: no cover - the [opacus] extra is missing
    opacus_integration = None


from tests.bad_inputs.cases_bounds import BOUND_CASES
from tests.bad_inputs.cases_calibration import CALIBRATION_CASES
from tests.bad_inputs.cases_dpsgd import DPSGD_CASES
from tests.bad_inputs.cases_engines import ENGINE_CASES
from tests.bad_inputs.cases_mechanisms import MECHANISM_CASES
from tests.bad_inputs.cases_noise import NOISE_CASES
from tests.bad_inputs.cases_opacus import OPACUS_CASES
from tests.bad_inputs.cases_optimizers import OPTIMIZER_CASES
from tests.bad_inputs.cases_pairs import PAIR_CASES
from tests.bad_inputs.cases_samplers import SAMPLER_CASES
from tests.bad_inputs.cases_storage import STORAGE_CASES
from tests.bad_inputs.catalogue import CATALOGUED

ACCOUNTANT_CASES = (
    NOISE_CASES
    + PAIR_CASES
    + MECHANISM_CASES
    + BOUND_CASES
    + ENGINE_CASES
    + DPSGD_CASES
    + CALIBRATION_CASES
    + STORAGE_CASES
    + SAMPLER_CASES
)
CASES = ACCOUNTANT_CASES + OPTIMIZER_CASES + OPACUS_CASES


@pytest.mark.parametrize(("call", "error", "argument", "shown"), CASES)
def test_bad_input_is_refused_naming_the_argument_and_the_value(
    call, error, argument, shown, tmp_path
):
    with pytest.raises(error) as info:
        call(tmp_path)
    assert isinstance(info.value, ValueError)  # both library errors subclass ValueError
    message = str(info.value)
    assert "\n" not in message and message.strip() == message, message
    assert re.search(rf"(?<![A-Za-z_]){re.escape(argument)}(?![A-Za-z_])", message), message
    assert shown in message, message


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


# ---------------------------------------------------------------------------------------
# every public name is catalogued, covered by an older table, or takes no user input

#: Public names that take no user input: exceptions, warnings, a protocol, and result
#: records the library builds (users only read them).
NO_USER_INPUT = {
    "AccountantError": "exception",
    "CertificationWarning": "warning",
    "InfeasibleTargetError": "exception",
    "InvalidInputError": "exception",
    "ShiftInvarianceWarning": "warning",
    "LearningWarning": "warning",
    "CheckpointError": "exception",
    "NoiseCollapseError": "exception",
    "LogMomentSource": "protocol (typing.Protocol, not instantiated)",
    "Bounds": "result of PrivacyBuckets.delta",
    "EpsilonBounds": "result of PrivacyBuckets.epsilon",
    "SamplerDeltaBounds": "result of shuffled_epochs_delta",
    "SamplerEpsilonBounds": "result of shuffled_epochs_epsilon",
    "Certificate": "result of certify",
    "GaussianBaseline": "result of best_truncated_gaussian",
    "LaplaceBaseline": "result of best_truncated_laplace",
    "StaircaseBaseline": "result of best_truncated_staircase",
    "DirectionalBound": "result of ExtendedMA.delta_details",
    "MomentsDelta": "result of ExtendedMA.delta_details",
    "MomentsGradient": "result of ExtendedMA.delta_and_gradient",
    "PairGradient": "result of ExtendedMA.delta_and_gradient",
    "NoiseBound": "result of noise_bound",
    "SmoothDelta": "result of smooth_bucket_delta",
    "optimal.OptimalNoise": "result of optimal_noise",
    "NoiseCalibration": "result of calibrate_noise_multiplier",
    "CalibrationPoint": "one evaluation inside a NoiseCalibration",
    "SavedAccountant": "result of save_accountant",
}


def _public_callables(package) -> set[str]:
    names = set()
    for name in package.__all__:
        value = getattr(package, name)
        if isinstance(value, type(accountant)):  # a public submodule: its own __all__
            names |= {
                f"{name}.{inner}" for inner in value.__all__ if callable(getattr(value, inner))
            }
        elif callable(value):
            names.add(name)
    return names


def test_every_public_callable_is_in_a_catalogue_or_takes_no_input():
    public = _public_callables(accountant)
    if torch is not None:
        public |= _public_callables(optimizers)
    if opacus_integration is not None:
        public |= _public_callables(opacus_integration)
    known = CATALOGUED | set(NO_USER_INPUT)
    assert sorted(public - known) == [], "new public API without bad-input cases"
    assert sorted(CATALOGUED - public) == []  # no stale names in the catalogue
