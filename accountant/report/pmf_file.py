"""Read ``accountant audit --family file --pmf-file F``: a pmf, with or without its grid.

Formats (every error names ``--pmf-file`` and the file, and, where it applies, the index):

- a file that carries its grid: a text file of two columns ``x, p`` (whitespace- or, for
  ``.csv``, comma-separated; ``#`` starts a comment; at least two rows), a ``.npy`` array
  of shape ``(N, 2)``, or an ``.npz`` with arrays ``x`` and ``pmf``. The grid must be
  equidistant: ``|x[i] - (x[0] + i h)| <= GRID_TOLERANCE * h`` with
  ``h = (x[N-1] - x[0]) / (N - 1) > 0``. ``--step`` and ``--start``, if given, must agree
  with it to the same tolerance;
- a pmf alone: a text file with one value per line (or all on one line), a 1-D ``.npy``,
  or an ``.npz`` with ``pmf`` only. It needs ``--step``; ``--start`` (the position of the
  first value) defaults to centring the grid on 0, which needs an odd length.

The pmf is validated and never renormalised (:func:`accountant.noise.from_array`).
"""

from __future__ import annotations

import warnings

import numpy as np

from accountant import noise
from accountant.errors import AccountantError, InvalidInputError

__all__ = ["GRID_TOLERANCE", "read_pmf_file"]

#: Largest deviation of a grid point from the equidistant grid, relative to the step.
GRID_TOLERANCE = 1e-6


def _fail(path: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"--pmf-file {path!r}: {message}")


def _load(path: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``(pmf, x or None)`` as stored in ``path``."""
    try:
        # An empty text file makes loadtxt warn; the emptiness is reported by check_pmf.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            if path.endswith(".npz"):
                with np.load(path, allow_pickle=False) as archive:
                    arrays = {key: archive[key] for key in archive.files}
                return _from_archive(path, arrays)
            if path.endswith(".npy"):
                values = np.load(path, allow_pickle=False)
            else:
                delimiter = "," if path.endswith(".csv") else None
                values = np.loadtxt(path, delimiter=delimiter, ndmin=2)
    except (OSError, ValueError) as exc:
        raise _fail(path, f"cannot read it: {exc}") from None
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 2 and values.shape[0] >= 2:
        return values[:, 1], values[:, 0]
    if values.ndim == 2 and 1 in values.shape:
        return values.ravel(), None
    if values.ndim <= 1:
        return values.ravel(), None
    raise _fail(
        path,
        f"expected one column (the pmf) or two columns (x, p), got shape {values.shape}",
    )


def _from_archive(path: str, arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    unknown = sorted(set(arrays) - {"x", "pmf"})
    if "pmf" not in arrays or unknown:
        raise _fail(
            path, f"an .npz must hold the arrays 'pmf' and optionally 'x', got {sorted(arrays)}"
        )
    pmf, x = np.asarray(arrays["pmf"]), arrays.get("x")
    if x is not None and np.shape(x) != np.shape(pmf):
        raise _fail(path, f"'x' has shape {np.shape(x)} but 'pmf' has shape {np.shape(pmf)}")
    return pmf, x


def _grid(path: str, x: np.ndarray) -> tuple[float, float]:
    """``(start, step)`` of an equidistant grid ``x`` (see the module docstring)."""
    if x.dtype.kind not in "fiu":
        raise _fail(path, f"the grid x must be numeric, got dtype {x.dtype}")
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size < 2:
        raise _fail(path, f"a grid needs at least two points, got {x.size}")
    if not np.isfinite(x).all():
        index = int(np.flatnonzero(~np.isfinite(x))[0])
        raise _fail(path, f"the grid x must be finite, got {float(x[index])!r} at index {index}")
    step = (x[-1] - x[0]) / (x.size - 1)
    if not step > 0.0:
        raise _fail(
            path, f"the grid x must increase, got x[0] = {float(x[0])!r}, x[-1] = {float(x[-1])!r}"
        )
    expected = x[0] + step * np.arange(x.size)
    off = np.abs(x - expected) > GRID_TOLERANCE * step
    if off.any():
        index = int(np.flatnonzero(off)[0])
        raise _fail(
            path,
            f"the grid x is not equidistant within {GRID_TOLERANCE:g} of its step {step:.10g}: "
            f"x[{index}] = {float(x[index])!r}, expected {float(expected[index])!r}",
        )
    return float(x[0]), float(step)


def read_pmf_file(
    path: str, step: float | None, start: float | None
) -> tuple[noise.NoiseDistribution, str]:
    """The noise stored in ``path`` and a description of it; ``step`` and ``start`` are
    ``--step`` and ``--start`` (``None``: not given)."""
    pmf, x = _load(path)
    if x is not None:
        file_start, file_step = _grid(path, x)
        if step is not None and abs(step - file_step) > GRID_TOLERANCE * file_step:
            raise InvalidInputError(
                f"--step {step!r} disagrees with the grid of --pmf-file {path!r} "
                f"(step {file_step:.10g}); leave --step out to use the file's grid"
            )
        if start is not None and abs(start - file_start) > GRID_TOLERANCE * file_step:
            raise InvalidInputError(
                f"--start {start!r} disagrees with the grid of --pmf-file {path!r} "
                f"(x[0] = {file_start!r}); leave --start out to use the file's grid"
            )
        step = file_step if step is None else step
        start = file_start
        origin = "grid from the file"
    elif step is None:
        raise InvalidInputError(
            f"--pmf-file {path!r} holds a pmf without its grid, so --step is needed (or "
            "give a two-column x, p file, or an .npz with arrays x and pmf)"
        )
    else:
        origin = "grid from --step" + (" and --start" if start is not None else ", centred")
    try:
        values = np.asarray(pmf)
        if start is None and values.ndim == 1 and values.size and values.size % 2 == 0:
            raise InvalidInputError(
                f"the pmf has even length {values.size}, so it cannot be centred on 0; "
                "give --start (the position of its first value)"
            )
        result = noise.from_array(values, step, start)
    except AccountantError as exc:
        raise _fail(path, str(exc)) from None
    description = (
        f"pmf from {path} ({values.size} points, step {result.step:g}, "
        f"start {result.start:g}; {origin})"
    )
    return result, description
