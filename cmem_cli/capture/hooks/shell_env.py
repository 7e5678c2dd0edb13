"""The SessionStart hook hands its session to the agent's shell, so that the notes an agent records itself
(`cmem add`, `cmem prompt add`, `cmem summary add` from its Bash tool) join the session the hooks record.

Claude Code gives SessionStart hooks ``CLAUDE_ENV_FILE``, a file whose ``export`` lines it runs before each
of the agent's Bash commands (hooks reference, "Persist environment variables"; kept across `/resume` and
`/clear` since Claude Code 2.1.136). Codex's pull requests proposed the same kind of file as
``CODEX_ENV_FILE`` (with ``CLAUDE_ENV_FILE`` as an alias of the same path), sourced before its later local
shell commands; Codex 0.169-0.171 has none, and gives its shell commands ``CODEX_SESSION_ID`` instead
(``cmem_cli.core.config.default_session`` reads it). The hook appends ``CMEM_SESSION`` and ``CMEM_AGENT`` to
the first of them that is set; the CLI reads both as its defaults. Without that file nothing is handed on, and
cmem never guesses: a note with no session stays without one rather than joining another agent's.
"""

from __future__ import annotations

import os
import shlex

ENV_FILES = ("CODEX_ENV_FILE", "CLAUDE_ENV_FILE")  # Codex sets both to one path: written once
MAX_VALUE = 200  # a session id or an agent name; anything longer is not one


def export_lines(session_id: str, agent: str) -> str:
    """The lines to append: shell-quoted, so a value can never run as a command."""
    return f"export CMEM_SESSION={shlex.quote(session_id)}\nexport CMEM_AGENT={shlex.quote(agent)}\n"


def env_file(environ: dict[str, str] | None = None) -> tuple[str, str] | None:
    """The agent's env file: ``(variable, path)`` of the first of :data:`ENV_FILES` that is set."""
    values = environ if environ is not None else os.environ
    for name in ENV_FILES:
        if values.get(name):
            return name, values[name]
    return None


def hand_to_shell(session_id: str | None, agent: str, environ: dict[str, str] | None = None) -> bool:
    """Append the session and agent to the agent's env file, if it gave one; True when written.

    Raises OSError when the file cannot be written (the hook logs it and goes on)."""
    found = env_file(environ)
    path = found[1] if found else None
    if not path or not session_id:
        return False
    if any(len(v) > MAX_VALUE or not v.isprintable() for v in (session_id, agent)):
        return False
    flags = (
        os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    )
    fd = os.open(path, flags | os.O_NONBLOCK, 0o600)
    try:
        if not _regular(fd):
            return False  # a FIFO or a device where the file should be: never block the hook on it
        data = export_lines(session_id, agent).encode("utf-8")
        os.write(fd, data)
    finally:
        os.close(fd)
    return True


def _regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)
