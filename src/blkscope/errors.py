"""The one error hierarchy that library code raises; the CLI turns it into `file:line: reason`.

Exit codes of the command line (the README and docs/ingest.md show this table):
  0   done (`check`: every threshold held)
  1   another failure: a dataset that cannot be written, a capture that cannot run, a
      threshold `check` found exceeded, a recorded command that failed
  2   bad input or usage: a malformed input line or file (ParseError, InputFormatError), a bad
      option value (OptionError), a user's SQL query that is malformed, names what does not
      exist or is refused (BadQueryError)
  130 interrupted (SIGINT / Ctrl-C): every output is its previous version or, if the
      command had already committed it, its new one; never half-written
"""

from __future__ import annotations

import copy


class BlkscopeError(Exception):
    """Base of every error blkscope reports to a user."""

    hint: str | None = None

    def location(self) -> str | None:
        """Return the `path[:line]` the error is about, if any."""
        return None

    def __str__(self) -> str:
        loc = self.location()
        msg = self.message()
        return f"{loc}: {msg}" if loc else msg

    def message(self) -> str:
        """Return the human reason without location."""
        return self.args[0] if self.args else self.__class__.__name__

    def relocated(self, old: str, new: str) -> BlkscopeError:
        """The same error with every mention of the path old said as new: a dataset's hidden
        next version is named by the folder the user gave."""
        err = copy.copy(self)
        err.args = tuple(a.replace(old, new) if isinstance(a, str) else a for a in self.args)
        for key, value in vars(self).items():
            if isinstance(value, str):
                setattr(err, key, value.replace(old, new))
        return err


class ParseError(BlkscopeError):
    """A line of an input file could not be parsed."""

    def __init__(self, path: str, line: int, reason: str, hint: str | None = None) -> None:
        super().__init__(path, line, reason)
        self.path = path
        self.line = line
        self.reason = reason
        self.hint = hint

    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def message(self) -> str:
        return self.reason


class _PathError(BlkscopeError):
    """An error about a whole file or folder: where, why, and what to try."""

    def __init__(self, path: str, reason: str, hint: str | None = None) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason
        self.hint = hint

    def location(self) -> str:
        return self.path

    def message(self) -> str:
        return self.reason


class InputFormatError(_PathError):
    """A whole input is not in the format expected (empty, binary, another tool's log)."""


class OptionError(InputFormatError):
    """A command-line option's value is unusable (not a number, nan, zero where it must be > 0)."""

    def location(self) -> str:
        return f"option {self.path}"


class DatasetError(_PathError):
    """A dataset folder is missing, incomplete, or cannot be written."""


class NotADatasetError(DatasetError, InputFormatError):
    """A folder given as a dataset (or a fleet) is not one, or its manifest or tables are
    damaged: bad input (exit 2), like any other input in the wrong format."""


class QueryError(BlkscopeError):
    """A user's SQL query (`blkscope sql`, `fleet sql`, Dataset.sql) failed: DuckDB's (or
    Spark's) message, and a hint. As such, a failure while it ran (out of memory, a table file
    that cannot be read, an internal error of the engine): exit 1."""

    def __init__(self, reason: str, hint: str | None = None) -> None:
        super().__init__(reason)
        self.hint = hint


class BadQueryError(QueryError):
    """The query itself is at fault: malformed, naming a table, view or column that does not
    exist, a value it cannot convert, or a statement that is refused (blkscope only reads):
    bad input, exit 2."""


class CaptureError(_PathError):
    """A capture cannot start or run on this machine (not root, no tracefs, no such device)."""


def does_not_exist(path: str, hint: str | None = None) -> NotADatasetError:
    """The error for an input path (a trace, capture, dataset or fleet) that is not there: said
    as such, rather than as a folder of the wrong kind (bad input, exit 2)."""
    return NotADatasetError(path, "does not exist", hint)
