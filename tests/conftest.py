"""Hypothesis profiles: random exploration locally, a fixed derandomised search in CI
(``CI=true``), so that a submission's CI result does not depend on a random seed while
local runs keep exploring new examples."""

from __future__ import annotations

import os

from hypothesis import settings

# No deadline: a first call may load numba kernels from their cache or import
# scipy.optimize (both lazily), which is time, not a failure.
settings.register_profile("local", deadline=None)
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.load_profile("local")
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
