"""scipy and numba loaded where they are first used, so ``import accountant`` and
``accountant --help`` load neither (together they take 0.5-1.5 s to import).

* :func:`lazy_module` stands for a module until one of its attributes is read: the first
  read imports the module, and every attribute read is kept on the proxy, so a later
  ``special.erfc`` costs one attribute lookup, as it would on the module. The proxies
  :data:`special`, :data:`fft`, :data:`optimize` and :data:`sparse` stand for
  ``scipy.special``, ``scipy.fft``, ``scipy.optimize`` and ``scipy.sparse``.
* :func:`njit` is ``numba.njit(**options)`` deferred to a kernel's first call
  (:class:`LazyKernel`): numba is imported then, and the kernel is compiled, or loaded from
  numba's on-disk cache (``cache=True``: the same files as an eager ``numba.njit``, keyed
  on the kernel's source file, name and line). The lazy kernels that a kernel calls are
  made numba dispatchers first, in place in the calling module's globals, so that numba
  can type the calls.
* When a kernel with ``cache=True`` has no cached compilation (the first run on a
  machine, or after the kernel's source file changed), :data:`COMPILING_NOTE` is logged
  once per process at level INFO on :data:`logger` (``accountant.numerics.lazy``), just
  before numba starts compiling. The library prints nothing; the ``accountant`` command
  shows it as one ``note:`` line on stderr. A library user sees it with, e.g.::

      import logging
      logging.basicConfig(level=logging.INFO)  # or handle the "accountant" logger only
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "COMPILING_NOTE",
    "LazyKernel",
    "LazyModule",
    "fft",
    "lazy_module",
    "logger",
    "njit",
    "optimize",
    "sparse",
    "special",
]

#: The logger of the first-compilation note (a child of the ``accountant`` logger).
logger = logging.getLogger(__name__)

#: Logged (INFO) once per process before numba compiles a kernel it has not cached.
COMPILING_NOTE = "compiling the numba kernels (first run on this machine; cached for later runs)"


class LazyModule:
    """Stands for the module ``name``, imported at the first read of an attribute (names
    starting with ``__`` excepted: introspection does not import it). Each attribute read
    is stored on the proxy, where later reads find it without :meth:`__getattr__`."""

    def __init__(self, name: str) -> None:
        self._lazy_name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        value = getattr(importlib.import_module(self._lazy_name), attribute)
        setattr(self, attribute, value)
        return value

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self._lazy_name))

    def __repr__(self) -> str:
        return f"<lazy module {self._lazy_name!r}>"


_MODULES: dict[str, LazyModule] = {}


def lazy_module(name: str) -> LazyModule:
    """The proxy of the module ``name`` (one per name), importing nothing yet."""
    proxy = _MODULES.get(name)
    if proxy is None:
        proxy = _MODULES.setdefault(name, LazyModule(name))
    return proxy


special = lazy_module("scipy.special")
fft = lazy_module("scipy.fft")
optimize = lazy_module("scipy.optimize")
sparse = lazy_module("scipy.sparse")

#: Guards the creation of dispatchers (re-entrant: a kernel materialises those it calls).
_LOCK = threading.RLock()
#: The functions of lazy kernels with ``cache=True``: a compilation of one of them is a
#: cache miss (numba announces compilations only, never loads from its cache).
_CACHED: set[Callable] = set()
_numba: types.ModuleType | None = None
_announced = False


def _announce_compilation(event: Any) -> None:
    """Log :data:`COMPILING_NOTE` the first time numba compiles a cached lazy kernel."""
    global _announced
    dispatcher = event.data.get("dispatcher") if isinstance(event.data, dict) else None
    if _announced or getattr(dispatcher, "py_func", None) not in _CACHED:
        return
    _announced = True
    logger.info(COMPILING_NOTE)


def _import_numba() -> types.ModuleType:
    """numba, imported once, with the listener of its compilations registered."""
    global _numba
    if _numba is None:
        import numba
        from numba.core import event

        class _FirstCompilation(event.Listener):
            def on_start(self, event: Any) -> None:
                _announce_compilation(event)

            def on_end(self, event: Any) -> None:
                pass

        event.register("numba:compile", _FirstCompilation())
        _numba = numba
    return _numba


def _global_names(code: types.CodeType) -> Iterator[str]:
    """The global (and attribute) names ``code`` and the code nested in it read."""
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _global_names(constant)


class LazyKernel:
    """A numba kernel created on its first call: ``numba.njit(**options)(function)``.

    Calls go to the numba dispatcher (:meth:`materialise`). ``__name__``, ``__doc__``,
    ``__wrapped__`` (the Python function) and the signature are the function's."""

    # Set by functools.update_wrapper in __init__ (declared for the type checker).
    __wrapped__: Callable[..., Any]
    __qualname__: str

    def __init__(self, function: Callable, options: dict[str, Any]) -> None:
        functools.update_wrapper(self, function)
        self._options = dict(options)
        self._pending: Callable | None = None
        self._dispatcher: Callable | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dispatcher = self._dispatcher
        if dispatcher is None:
            dispatcher = self.materialise()
        return dispatcher(*args, **kwargs)

    def __repr__(self) -> str:
        state = "lazy" if self._dispatcher is None else "materialised"
        return f"<{state} numba kernel {self.__module__}.{self.__qualname__}>"

    def materialise(self) -> Callable:
        """The numba dispatcher, created once. It replaces this kernel in its module's
        globals, and every lazy kernel its function reads from its globals is
        materialised first and replaced there by its dispatcher (numba types calls to
        dispatchers, not to this proxy). Nothing is compiled here: numba compiles, or
        loads from its cache, at the dispatcher's first call with new argument types."""
        if self._dispatcher is not None:
            return self._dispatcher
        with _LOCK:
            if self._dispatcher is not None:
                return self._dispatcher
            if self._pending is not None:  # a kernel it calls calls it back
                return self._pending
            numba = _import_numba()
            function = self.__wrapped__
            if self._options.get("cache"):
                _CACHED.add(function)
            dispatcher = numba.njit(**self._options)(function)
            self._pending = dispatcher
            namespace = function.__globals__
            if namespace.get(function.__name__) is self:
                namespace[function.__name__] = dispatcher
            for name in set(_global_names(function.__code__)):
                value = namespace.get(name)
                if isinstance(value, LazyKernel):
                    namespace[name] = value.materialise()
            self._dispatcher = dispatcher
        return dispatcher


def njit(**options: Any) -> Callable[[Callable], LazyKernel]:
    """``numba.njit(**options)`` deferred to the first call (:class:`LazyKernel`); use it as
    ``@njit(cache=True, nogil=True)``. numba is not imported until then."""

    def decorate(function: Callable) -> LazyKernel:
        return LazyKernel(function, options)

    return decorate
