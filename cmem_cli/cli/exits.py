"""The `cmem` command's exit codes, and the one table that maps the library's errors to them.

The library (kernel, store, services, API) raises typed errors that say what went wrong, not how a process
should end: exit codes are the command line's interface, which scripts rely on and the man page documents
(`cmem man`, EXIT STATUS). The MCP server maps the same errors to tool errors its own way.
"""

from __future__ import annotations

from cmem_cli.core.errors import (
    CmemError,
    DatabaseBusy,
    DatabaseCorrupt,
    InvalidInput,
    ModelError,
    NotFound,
    StorageError,
    SyncError,
    UsageError,
)

EXIT_OK = 0
EXIT_ERROR = 1  # unexpected failure (a bug): reported in one line, traceback only with CMEM_DEBUG=1
EXIT_USAGE = 2  # bad command-line usage (unknown option, missing argument)
EXIT_NOT_FOUND = 3  # an id, uid, path or name that does not exist
EXIT_INVALID = 4  # invalid input data: JSON, field values, sizes, encodings
EXIT_BUSY = 5  # the database stayed locked longer than the busy timeout
EXIT_CORRUPT = 6  # the database file is not a usable cmem database
EXIT_IO = 7  # the home directory or a file cannot be read or written
EXIT_MODEL = 8  # a model is missing, unusable, or could not be downloaded
EXIT_SYNC = 9  # sync failed: remote unreachable or refusing the login or the push, git missing or broken
EXIT_NO_MATCH = 10  # a search found nothing (not an error: grep's 1, which cmem already uses for bugs)

EXIT_BY_ERROR: dict[type[CmemError], int] = {
    UsageError: EXIT_USAGE,
    NotFound: EXIT_NOT_FOUND,
    InvalidInput: EXIT_INVALID,  # InvalidRecord too
    DatabaseBusy: EXIT_BUSY,
    DatabaseCorrupt: EXIT_CORRUPT,
    StorageError: EXIT_IO,
    ModelError: EXIT_MODEL,
    SyncError: EXIT_SYNC,
}


def exit_code(error: CmemError) -> int:
    """The documented exit code of ``error``: its class's (or nearest base's) in :data:`EXIT_BY_ERROR`,
    else 1 (a CmemError that names no kind of failure)."""
    for cls in type(error).__mro__:
        code = EXIT_BY_ERROR.get(cls)
        if code is not None:
            return code
    return EXIT_ERROR
