"""The session of an agent that gives its shell none, found through the process tree.

Claude Code hands its session to its Bash tool through ``CLAUDE_ENV_FILE`` and Codex through
``CODEX_SESSION_ID``. Gemini CLI, opencode, Kilo Code, Qwen Code, Factory Droid, Copilot CLI and Cline give
their shell commands neither, yet their hooks and their shell commands are children of the same agent
process. So the SessionStart hook writes one small file named after that process (its pid and start time,
which a reused pid does not share): ``shell-sessions/PID-START`` in cmem's home, holding the session and the
agent. A `cmem add` with no ``CMEM_SESSION`` walks up its own parents and takes the file of the first one
that has one. The agent process is the hook's nearest parent that is not a shell (a hook command may be run
through ``sh -c``). Linux only (``/proc``); elsewhere nothing is written and nothing is found, and a note
stays without a session rather than joining a guessed one. One process that runs several sessions at once
(an opencode server) hands its shells the session that started last.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

FOLDER = "shell-sessions"
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox", "env", "timeout"})
MAX_DEPTH = 32  # parents walked: an agent's shell command is a few levels below it
MAX_VALUE = 200


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(command name, parent pid, start time) of a process, None when it is gone or /proc is missing."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    head, _, rest = raw.rpartition(")")
    fields = rest.split()
    if len(fields) < 20:
        return None
    # after the name: state, ppid, ... the start time is the 22nd field of the line (the 20th after it)
    return head.partition("(")[2], int(fields[1]), fields[19]


def _key(pid: int) -> str | None:
    found = _stat(pid)
    return f"{pid}-{found[2]}" if found else None


def agent_process(start: int | None = None) -> int | None:
    """The agent that started this hook: the nearest parent that is not a shell."""
    pid = os.getppid() if start is None else start
    for _ in range(MAX_DEPTH):
        found = _stat(pid)
        if found is None or pid <= 1:
            return None
        name, parent, _start = found
        if name not in SHELLS:
            return pid
        pid = parent
    return None


def remember(home: Path, session_id: str, agent: str, pid: int | None = None) -> bool:
    """Name the agent process's session for its shell commands; True when written.

    Raises OSError when the file cannot be written (the hook logs it and goes on)."""
    pid = agent_process() if pid is None else pid
    key = _key(pid) if pid else None
    if key is None or any(len(v) > MAX_VALUE or not v.isprintable() for v in (session_id, agent)):
        return False
    folder = home / FOLDER
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)  # a folder made loose by hand (or by an old umask) is made private again
    _forget_the_gone(folder)
    data = json.dumps({"session": session_id, "agent": agent}).encode("utf-8")
    temporary = folder / f".{key}.{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(temporary, folder / key)
    return True


def _forget_the_gone(folder: Path) -> None:
    """Remove the files of processes that have ended (their pid gone or reused)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = name.partition("-")[0]
        if pid.isdigit() and _key(int(pid)) != name:
            with contextlib.suppress(OSError):
                os.unlink(folder / name)


def find(home: Path) -> tuple[str, str] | None:
    """(session, agent) handed to this process's shell by the agent it runs under, if any."""
    folder = home / FOLDER
    if not _private(folder, stat.S_ISDIR):
        return None  # a folder another user could write to names no session
    pid = os.getppid()
    for _ in range(MAX_DEPTH):
        found = _stat(pid)
        if found is None or pid <= 1:
            return None
        try:
            data = json.loads(_read_private(folder / f"{pid}-{found[2]}"))
        except (OSError, ValueError):
            pid = found[1]
            continue
        session, agent = data.get("session"), data.get("agent")
        if isinstance(session, str) and isinstance(agent, str) and session and agent:
            return session, agent
        return None
    return None


def _private(path: Path, kind: Callable[[int], bool]) -> bool:
    """Whether ``path`` (not followed) is of ``kind``, this user's own, and writable by no one else."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return _owned_alone(info) and kind(info.st_mode)


def _owned_alone(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_private(path: Path) -> bytes:
    """A sessions file's bytes, only when it is a regular file of this user that no one else may write:
    never a link followed, and never a FIFO waited on (opened without blocking, checked, then read)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _owned_alone(info):
            raise OSError(f"{path.name}: not a private regular file")
        return os.read(fd, 4096)
    finally:
        os.close(fd)
