"""Who writes: the machine a memory is written on and, where known, the person.

Every new observation, summary and prompt records both (``machine``, ``author``), so a store, a git
remote or a team database that gathers several machines' memories can say whose each is. The machine is
``CMEM_MACHINE``, else the config file's ``machine``, else the name this home goes by on its team database,
else the host name; the person is ``CMEM_AUTHOR``, else the config file's ``author``, else git's global
``user.email`` (read from git's own files: no git process on the hot path), else unknown.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_EMAIL = re.compile(r"^\s*email\s*=\s*(?P<value>.+?)\s*$", re.IGNORECASE)
_SECTION = re.compile(r"^\s*\[(?P<name>[^\]\s\"]+)")


def machine_name(team_name: str | None = None, configured: str | None = None) -> str:
    """This machine's name: ``CMEM_MACHINE``, else ``configured`` (the config file's ``machine``), else
    ``team_name`` (this home's name on its team database), else the host name."""
    return os.environ.get("CMEM_MACHINE") or configured or team_name or host_name() or "unknown"


def host_name() -> str:
    """The host name, as ``socket.gethostname()`` says it, without importing socket (a write's start-up)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def person(configured: str | None = None) -> str | None:
    """The person writing: ``CMEM_AUTHOR``, else ``configured`` (the config file's ``author``), else git's
    global ``user.email``, else None."""
    return os.environ.get("CMEM_AUTHOR") or configured or git_email()


def git_email() -> str | None:
    """``user.email`` from git's global configuration files (the XDG one, then ``~/.gitconfig``, the later
    winning as git reads them); None when neither says. Includes are not followed."""
    home = Path(os.environ.get("HOME") or Path.home())
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    found: str | None = None
    for path in (xdg / "git" / "config", home / ".gitconfig"):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        section = ""
        for line in text.splitlines():
            header = _SECTION.match(line)
            if header:
                section = header.group("name").lower()
                continue
            match = _EMAIL.match(line) if section == "user" else None
            if match:
                found = match.group("value").strip('"') or found
    return found
