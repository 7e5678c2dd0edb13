"""The library's errors: each class names a kind of failure, its ``message`` says what failed.

They carry no exit code: a front end decides what a failure means to its user. The CLI maps them to its
documented exit codes in one table (``cmem_cli.cli.exits``), the MCP server to tool and resource errors.
"""

from __future__ import annotations


class CmemError(Exception):
    """Base class: ``message`` is one line a person can act on (the CLI prints it after ``cmem: ``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotFound(CmemError):
    """An id, uid, path or name that does not exist."""


class InvalidInput(CmemError):
    """Invalid input data: JSON, field values, sizes, encodings."""


class InvalidRecord(InvalidInput):
    """Record number ``index`` (from 0) of a batch is invalid; nothing of the batch was stored."""

    def __init__(self, index: int, reason: str):
        super().__init__(f"record {index}: {reason}")
        self.index = index
        self.reason = reason


class UsageError(CmemError):
    """A request that cannot be made this way (options that do not combine, a missing argument)."""


class DatabaseBusy(CmemError):
    """The database stayed locked longer than the busy timeout."""


class DatabaseCorrupt(CmemError):
    """The database file is not a usable cmem database."""


class StorageError(CmemError):
    """The home directory or a file cannot be read or written."""


class ModelError(CmemError):
    """A model is missing, unusable, or could not be downloaded."""


class SyncError(CmemError):
    """Sync failed: git or the team database unreachable, refusing, missing or broken."""
