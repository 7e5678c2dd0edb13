"""Errors that the CLI turns into a one-line message and a documented exit code."""

from __future__ import annotations

# Exit codes are part of the interface that scripts rely on; README documents them.
EXIT_OK = 0
EXIT_ERROR = 1  # unexpected failure (a bug): reported in one line, traceback only with CMEM_DEBUG=1
EXIT_USAGE = 2  # bad command-line usage (unknown option, missing argument)
EXIT_NOT_FOUND = 3  # an id, uid, path or name that does not exist
EXIT_INVALID = 4  # invalid input data: JSON, field values, sizes, encodings
EXIT_BUSY = 5  # the database stayed locked longer than the busy timeout
EXIT_CORRUPT = 6  # the database file is not a usable cmem database
EXIT_IO = 7  # the home directory or a file cannot be read or written
EXIT_MODEL = 8  # a model is missing, unusable, or could not be downloaded
EXIT_SYNC = 9  # git sync failed: remote unreachable or refusing the push, git missing or broken
EXIT_NO_MATCH = 10  # a search found nothing (not an error: grep's 1, which cmem already uses for bugs)


class CmemError(Exception):
    """Base class: `message` is what the user sees after `cmem: `."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotFound(CmemError):
    exit_code = EXIT_NOT_FOUND


class InvalidInput(CmemError):
    exit_code = EXIT_INVALID


class InvalidRecord(InvalidInput):
    """Record number ``index`` (from 0) of a batch is invalid; nothing of the batch was stored."""

    def __init__(self, index: int, reason: str):
        super().__init__(f"record {index}: {reason}")
        self.index = index
        self.reason = reason


class UsageError(CmemError):
    exit_code = EXIT_USAGE


class DatabaseBusy(CmemError):
    exit_code = EXIT_BUSY


class DatabaseCorrupt(CmemError):
    exit_code = EXIT_CORRUPT


class StorageError(CmemError):
    exit_code = EXIT_IO


class ModelError(CmemError):
    exit_code = EXIT_MODEL


class SyncError(CmemError):
    exit_code = EXIT_SYNC
