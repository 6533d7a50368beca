"""Deferred imports (issue 26): the lazy module proxy imports its module at the first
attribute read and keeps what it read; a lazy numba kernel computes what the eager one
does, calls other lazy kernels, writes numba's on-disk cache, and logs the
first-compilation note once when (and only when) it has nothing cached.

Kernels of the tests are written to a temporary module and run in a fresh interpreter
whose ``NUMBA_CACHE_DIR`` is a temporary directory (an empty cache: a first run)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import uuid

import numpy as np
import pytest

from accountant.buckets import _kernels
from accountant.numerics import lazy

# ---------------------------------------------------------------------------------------
# lazy_module


@pytest.fixture
def probe_module(tmp_path, monkeypatch):
    """The name of a fresh importable module that counts its imports in ``IMPORTS``."""
    name = f"lazy_probe_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(
        "import builtins\n"
        "builtins.LAZY_PROBE_IMPORTS = getattr(builtins, 'LAZY_PROBE_IMPORTS', 0) + 1\n"
        "VALUE = 42\n"
        "def twice(x):\n"
        "    return 2 * x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("builtins.LAZY_PROBE_IMPORTS", 0, raising=False)
    yield name
    sys.modules.pop(name, None)


def test_lazy_module_imports_at_the_first_attribute_read_and_keeps_it(probe_module):
    import builtins

    proxy = lazy.lazy_module(probe_module)
    assert probe_module not in sys.modules and builtins.LAZY_PROBE_IMPORTS == 0
    assert proxy.twice(3) == 6
    assert probe_module in sys.modules and builtins.LAZY_PROBE_IMPORTS == 1
    # kept on the proxy: a later read is a plain attribute lookup, not __getattr__
    assert vars(proxy)["twice"] is sys.modules[probe_module].twice
    assert proxy.VALUE == 42 and builtins.LAZY_PROBE_IMPORTS == 1


def test_lazy_module_is_one_proxy_per_name_and_dunder_reads_import_nothing(probe_module):
    proxy = lazy.lazy_module(probe_module)
    assert lazy.lazy_module(probe_module) is proxy
    assert not hasattr(proxy, "__wrapped__") and not hasattr(proxy, "__file__")
    assert probe_module not in sys.modules
    assert repr(proxy) == f"<lazy module {probe_module!r}>"
    with pytest.raises(AttributeError):
        _ = proxy.no_such_name
    assert "twice" in dir(proxy)


def test_the_scipy_proxies_are_the_scipy_functions():
    from scipy import fft, optimize, sparse, special

    assert lazy.special.erfc is special.erfc and lazy.fft.rfft is fft.rfft
    assert lazy.optimize.brentq is optimize.brentq and lazy.sparse.eye is sparse.eye


# ---------------------------------------------------------------------------------------
# njit, in process


def test_a_kernel_keeps_its_name_doc_signature_and_python_function():
    kernel = _kernels.direct_convolve
    function = kernel.__wrapped__
    assert kernel.__name__ == "direct_convolve" and kernel.__doc__ == function.__doc__
    assert kernel.__module__ == "accountant.buckets._kernels"
    assert inspect.signature(kernel) == inspect.signature(function)
    assert not isinstance(function, lazy.LazyKernel) and inspect.isfunction(function)


def test_a_lazy_kernel_gives_what_the_eager_kernel_and_its_python_function_give():
    import numba

    rng = np.random.default_rng(26)
    x, y = rng.random(17), rng.random(9)
    x[3] = 0.0
    kernel = _kernels.direct_convolve
    eager = numba.njit(cache=False, nogil=True)(kernel.__wrapped__)
    got = kernel(x, y)
    np.testing.assert_array_equal(got, eager(x, y))
    np.testing.assert_array_equal(got, kernel.__wrapped__(x, y))


def test_materialising_makes_one_numba_dispatcher_of_the_function():
    """(Its replacing the kernel in its module is seen in a fresh process, below.)"""
    from numba.core.registry import CPUDispatcher

    kernel = lazy.LazyKernel(_kernels.bucket_indices.__wrapped__, {"cache": True})
    dispatcher = kernel.materialise()
    assert isinstance(dispatcher, CPUDispatcher) and kernel.materialise() is dispatcher
    assert dispatcher.py_func is _kernels.bucket_indices.__wrapped__


# ---------------------------------------------------------------------------------------
# njit and the first-compilation note, in a fresh process on an empty numba cache

KERNELS = '''
import numpy as np
from accountant.numerics.lazy import njit


@njit(cache=True, nogil=True)
def double(x):
    """Twice ``x``."""
    return 2.0 * x


@njit(cache=True, nogil=True)
def doubled_sum(values):
    """``sum 2 v``, through :func:`double` (a lazy kernel calling a lazy kernel)."""
    total = 0.0
    for v in values:
        total += double(v)
    return total
'''

RUN = """
import json, logging, sys
sys.path.insert(0, {folder!r})
records = []
handler = logging.Handler()
handler.emit = lambda record: records.append(record.getMessage())
logging.getLogger("accountant").addHandler(handler)
logging.getLogger("accountant").setLevel(logging.INFO)
import numpy as np
import {module} as kernels
from accountant.numerics.lazy import LazyKernel
before = [type(kernels.double).__name__, type(kernels.doubled_sum).__name__]
value = kernels.doubled_sum(np.arange(5.0))
again = kernels.doubled_sum(np.arange(3.0))
dispatcher = kernels.doubled_sum
print(json.dumps({{
    "before": before,
    "after": [type(kernels.double).__name__, type(kernels.doubled_sum).__name__],
    "value": value, "again": again, "records": records,
    "hits": sum(dispatcher.stats.cache_hits.values()),
    "misses": sum(dispatcher.stats.cache_misses.values()),
}}))
"""


def _run_kernels(folder, module: str, cache) -> dict:
    """What ``RUN`` reports in a fresh interpreter whose numba cache is ``cache``."""
    code = RUN.format(folder=str(folder), module=module)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the library itself prints nothing
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_lazy_kernels_compile_once_call_each_other_and_use_the_numba_cache(tmp_path):
    module = "lazy_kernels_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{module}.py").write_text(KERNELS)
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    first = _run_kernels(tmp_path, module, cache)
    assert first["before"] == ["LazyKernel", "LazyKernel"]
    assert first["after"] == ["CPUDispatcher", "CPUDispatcher"]  # replaced in the module
    assert first["value"] == 20.0 and first["again"] == 6.0
    assert first["records"] == [lazy.COMPILING_NOTE]  # once, though two kernels compiled
    assert first["misses"] == 1 and first["hits"] == 0
    written = sorted(p.name for p in cache.rglob("*.nbi"))
    assert len(written) == 2 and any(".double-" in n for n in written), written
    assert any(".doubled_sum-" in n for n in written), written

    warm = _run_kernels(tmp_path, module, cache)
    assert warm["value"] == 20.0 and warm["records"] == []  # loaded: no note
    assert warm["hits"] == 1 and warm["misses"] == 0


def test_the_note_is_not_shown_unless_asked_for(tmp_path):
    """Without a handler or level set, INFO is not printed (logging's last resort shows
    warnings only): a library user who configures nothing sees nothing."""
    (tmp_path / "kernel.py").write_text(KERNELS)
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import numpy as np, kernel\n"
        "print(kernel.doubled_sum(np.ones(2)))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "4.0" and done.stderr == ""
