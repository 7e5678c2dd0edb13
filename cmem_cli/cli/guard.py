"""Turn every failure of a command into one line on stderr and an exit code (shared by both CLI paths)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable

from cmem_cli.cli.exits import EXIT_ERROR, EXIT_IO, exit_code
from cmem_cli.core.errors import CmemError

_CONTROL = r"[\x00-\x08\x0a-\x1f\x7f]"  # compiled where used (re caches it): on an error only


def say(message: str) -> None:
    """``cmem: message`` on stderr as one printable line: a message may echo user input holding control
    characters or bytes that were not UTF-8 (surrogates, which stderr cannot even encode)."""
    text = unsecret(message).encode("utf-8", "backslashreplace").decode("utf-8")
    text = re.sub(_CONTROL, lambda m: f"\\x{ord(m.group()):02x}", text)
    print(f"cmem: {text}", file=sys.stderr)


def unsecret(message: str) -> str:
    """``message`` with the password of any URL in it hidden (``cmem_cli.core.urls.hide_secrets``): whatever
    raised it, a URL a person typed may be quoted in it."""
    if "://" not in message and "password" not in message.lower():
        return message
    from cmem_cli.core.urls import hide_secrets

    return hide_secrets(message)


def run_guarded(command: Callable[[], int]) -> int:
    """Run ``command``; a CmemError becomes ``cmem: message`` and its exit code, a bug one line naming it
    (the traceback only with CMEM_DEBUG=1), a closed pipe a quiet success."""
    debug = os.environ.get("CMEM_DEBUG") == "1"
    try:
        return command()
    except CmemError as exc:
        if debug:
            raise
        say(exc.message)
        return exit_code(exc)
    except KeyboardInterrupt:
        print("cmem: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `cmem search | head`: the reader went away; not an error worth reporting.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        return 0
    except OSError as exc:
        # the file system refused (a name too long, a path through a file, no space): exit 7, as documented
        if debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        say(f"{where}{exc.strerror or exc}")
        return EXIT_IO
    except Exception as exc:  # a bug: say so in one line unless debugging
        if debug:
            raise
        translated = _database_error(exc)
        if translated is not None:
            say(translated.message)
            return exit_code(translated)
        say(f"internal error: {type(exc).__name__}: {exc} (set CMEM_DEBUG=1 for details)")
        return EXIT_ERROR


def failure(exc: BaseException) -> tuple[str, int]:
    """The one-line message and exit code :func:`run_guarded` gives ``exc`` (for a result object that
    reports a failure, e.g. `cmem sync --json`)."""
    if isinstance(exc, CmemError):
        return unsecret(exc.message), exit_code(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return unsecret(f"{where}{exc.strerror or exc}"), EXIT_IO
    translated = _database_error(exc) if isinstance(exc, Exception) else None
    if translated is not None:
        return unsecret(translated.message), exit_code(translated)
    return unsecret(f"internal error: {type(exc).__name__}: {exc} (set CMEM_DEBUG=1 for details)"), EXIT_ERROR


def _database_error(exc: Exception) -> CmemError | None:
    """A SQLite error raised where no store call translated it (rows read lazily from a cursor): a damaged,
    locked or unwritable store is still the user's problem to fix, not a bug, so it gets its exit code."""
    if type(exc).__module__ != "apsw":
        return None  # no SQLite error: the database module (and apsw) need not load
    from cmem_cli.core.db import escaped_error

    return escaped_error(exc)
