"""The shared command-line conventions of accountant.report.terminal."""

from __future__ import annotations

import io
import warnings

import pytest

from accountant.errors import InvalidInputError
from accountant.report.terminal import (
    ERROR_PREFIX,
    check_output_path,
    error_line,
    note_line,
    progress_enabled,
)


def test_error_line_is_one_line_with_the_one_prefix():
    assert ERROR_PREFIX == "accountant: error: "
    assert error_line("--sigma: bad\nvalue") == "accountant: error: --sigma: bad value"
    assert error_line("accountant: error: x") == "accountant: error: x"


def test_note_line_accepts_text_warnings_and_caught_records():
    assert note_line("a\n b") == "note: a b"
    assert note_line(UserWarning("careful")) == "note: careful"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("from a record", UserWarning, stacklevel=1)
    line = note_line(caught[0])
    assert line == "note: from a record"
    assert ".py" not in line


def test_a_file_in_a_missing_directory_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match=r"--plot.*does not exist.*missing"):
        check_output_path("--plot", str(tmp_path / "missing" / "x.png"))
    with pytest.raises(InvalidInputError, match=r"/nonexistent/x\.png"):
        check_output_path("--plot", "/nonexistent/x.png")


def test_a_file_where_a_directory_is_or_under_a_file_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InvalidInputError, match="must name a file"):
        check_output_path("--plot", str(tmp_path))
    with pytest.raises(InvalidInputError, match="not a directory"):
        check_output_path("--plot", str(blocker / "x.png"))
    with pytest.raises(InvalidInputError, match="must name a directory"):
        check_output_path("--output", str(blocker), directory=True)
    with pytest.raises(InvalidInputError, match="not a directory"):
        check_output_path("--output", str(blocker / "a" / "b"), directory=True)


def test_writable_paths_are_accepted(tmp_path):
    check_output_path("--plot", str(tmp_path / "x.png"))
    check_output_path("--output", str(tmp_path / "new" / "deeper"), directory=True)
    check_output_path("--output", str(tmp_path), directory=True)
    assert list(tmp_path.iterdir()) == []  # the check creates nothing


def test_a_directory_that_cannot_be_written_is_refused():
    with pytest.raises(InvalidInputError, match=r"--plot.*'/proc' is not writable"):
        check_output_path("--plot", "/proc/x.png")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_an_interactive_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert progress_enabled(_Tty()) is True
    assert progress_enabled(io.StringIO()) is False
    assert progress_enabled(object()) is False
    monkeypatch.setenv("CI", "true")
    assert progress_enabled(_Tty()) is False
