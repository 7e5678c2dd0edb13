"""The SessionStart hook hands its session to the agent's shell, so that the notes an agent records itself
(`cmem add`, `cmem prompt add`, `cmem summary add` from its Bash tool) join the session the hooks record.

Claude Code gives SessionStart hooks ``CLAUDE_ENV_FILE``, a file whose ``export`` lines it runs before each
of the agent's Bash commands (hooks reference, "Persist environment variables"; kept across `/resume` and
`/clear` since Claude Code 2.1.136). Codex's pull requests proposed the same kind of file as
``CODEX_ENV_FILE`` (with ``CLAUDE_ENV_FILE`` as an alias of the same path), sourced before its later local
shell commands; Codex 0.169-0.171 has none, and gives its shell commands ``CODEX_SESSION_ID`` instead
(``cmem_cli.core.config.default_session`` reads it). The hook appends one line, ``export CMEM_SESSION=...
CMEM_AGENT=...``, to the first of them that is set; the CLI reads both as its defaults. Only the agent that
gives a file writes into it (another agent started from Claude Code's shell inherits ``CLAUDE_ENV_FILE``),
and a session whose line is already the file's last (SessionStart runs again on resume, ``/clear`` and
compaction) is not written again. An agent that gives no file (Gemini CLI, opencode, Kilo Code, Qwen Code,
Factory Droid, Copilot CLI, Cline) has the session named after its process instead
(:mod:`cmem_cli.core.process_session`); where neither works, cmem never guesses: a note with no session stays
without one rather than joining a session that may be another agent's.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# The env files each agent gives its SessionStart hooks, first choice first. Codex sets both to one path.
ENV_FILES_OF = {"claude-code": ("CLAUDE_ENV_FILE",), "codex": ("CODEX_ENV_FILE", "CLAUDE_ENV_FILE")}
ENV_FILES = ("CODEX_ENV_FILE", "CLAUDE_ENV_FILE")  # every variable some agent gives
MAX_VALUE = 200  # a session id or an agent name; anything longer is not one
_TAIL = 4096  # how much of the file's end is read to find its last line: a line is under 500 bytes


def export_line(session_id: str, agent: str) -> str:
    """The line to append: shell-quoted, so a value can never run as a command."""
    return f"export CMEM_SESSION={shlex.quote(session_id)} CMEM_AGENT={shlex.quote(agent)}\n"


def env_file(environ: dict[str, str] | None = None, agent: str | None = None) -> tuple[str, str] | None:
    """The agent's env file: ``(variable, path)`` of the first variable ``agent`` gives (any agent's when
    ``agent`` is None) that is set."""
    values = environ if environ is not None else os.environ
    names = ENV_FILES if agent is None else ENV_FILES_OF.get(agent.split("/")[0], ())
    for name in names:
        if values.get(name):
            return name, values[name]
    return None


def hand_to_shell(
    session_id: str | None, agent: str, environ: dict[str, str] | None = None, home: Path | None = None
) -> bool:
    """Append the session and agent to the agent's env file, if it gave one; True when written. An agent
    that gives none has them named after its process in ``home`` (:mod:`cmem_cli.core.process_session`).

    Raises OSError when the file cannot be written (the hook logs it and goes on)."""
    found = env_file(environ, agent)
    path = found[1] if found else None
    if not session_id:
        return False
    if not path:
        if home is None:
            return False
        from cmem_cli.core.process_session import remember

        return remember(home, session_id, agent)
    if any(len(v) > MAX_VALUE or not v.isprintable() for v in (session_id, agent)):
        return False
    flags = (
        os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    )
    fd = os.open(path, flags | os.O_NONBLOCK, 0o600)
    try:
        if not _regular(fd):
            return False  # a FIFO or a device where the file should be: never block the hook on it
        import fcntl  # two hooks of one session at once: one reads the other's line, not both write

        fcntl.flock(fd, fcntl.LOCK_EX)
        data = export_line(session_id, agent).encode("utf-8")
        if _last_export(path) == data:
            return False
        os.write(fd, data)
    finally:
        os.close(fd)
    return True


def _last_export(path: str) -> bytes | None:
    """The file's last ``export CMEM_SESSION=`` line (with its newline), None when it has none. (Opened
    for reading apart: opening a FIFO to write fails at once, the check a read-write open would lose.)"""
    fd = os.open(
        path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    )
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, _TAIL, max(0, size - _TAIL))
    finally:
        os.close(fd)
    for line in reversed(tail.splitlines(keepends=True)):
        if line.startswith(b"export CMEM_SESSION="):
            return line if line.endswith(b"\n") else line + b"\n"
    return None


def _regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)
