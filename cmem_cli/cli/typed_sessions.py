"""Session ids as people type them: a unique prefix names a session, as git takes commit ids.

Only the CLI reads prefixes (a person copies a short id from a table); the API takes ids exactly, since a
program's ids (`run-1`, `run-10`) may start with one another. Every command that takes a session id from
its arguments or ``$CMEM_SESSION`` resolves it here once, then passes the full id on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmem_cli.core.errors import InvalidInput

if TYPE_CHECKING:
    from cmem_cli.api import Memory


def typed_session(memory: Memory, text: str | None) -> str | None:
    """The full id of the session ``text`` names (itself or a unique prefix); ``text`` itself when it names
    none (a new session's id); :class:`InvalidInput` for an ambiguous prefix."""
    if not text:
        return None
    return memory.resolve_session(text) or text


def refuse_ended_session(memory: Memory, session: str | None) -> None:
    """A CMEM_SESSION left exported after `cmem session end` must not silently collect new work."""
    status = memory.session_status(session) if session else None
    if status not in (None, "active"):
        raise InvalidInput(
            f"session {session} is {status}; start a new one (cmem session start) or unset CMEM_SESSION"
        )
