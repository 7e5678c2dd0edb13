"""The ``[hooks]`` config section: which tool calls are noise, which repeats merge, how much output to keep.

Defaults aim at a useful memory without an LLM: edits, commands, searches and delegations are kept; todo
bookkeeping, shell polling and trivial commands (``ls``, ``pwd``...) are skipped; re-reading a file or
re-running the same search in a session is counted on the first observation instead of stored again.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any, NamedTuple

from cmem_cli.core.errors import InvalidInput

DEFAULT_SKIP_TOOLS = (
    "TodoWrite",
    "TodoRead",
    "BashOutput",
    "KillBash",
    "KillShell",
    "LS",
    "ListMcpResourcesTool",
)
# Successful commands starting with these words are not worth remembering; failures always are. `cmem`
# itself is skipped: what an agent records with `cmem add` is already an observation.
DEFAULT_SKIP_COMMANDS = ("ls", "pwd", "cd", "echo", "clear", "which", "true", "whoami", "date", "cmem")
MERGE_SCOPES = ("session", "prompt", "off")


class HookRules(NamedTuple):
    skip_tools: tuple[str, ...] = DEFAULT_SKIP_TOOLS
    skip_commands: tuple[str, ...] = DEFAULT_SKIP_COMMANDS
    capture_reads: bool = True
    merge_repeats: str = "session"  # repeated reads/searches/fetches of the same target: session|prompt|off
    max_output_chars: int = 1_000
    context_on_start: bool = True
    context_budget: int = 1_500
    summary_on_stop: bool = True
    # How long a hook waits for a locked database before spooling its event for the next hook to replay;
    # below Claude Code's hook timeout, so the hook is never killed mid-write.
    busy_timeout_ms: int = 5_000

    def skips_tool(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.skip_tools)

    def skips_command(self, command: str) -> bool:
        """True when the command's first word (or its leading words) is listed in ``skip_commands``."""
        words = command.strip().split()
        # Leading VAR=value assignments do not change what the command is.
        while words and "=" in words[0] and not words[0].startswith("="):
            words.pop(0)
        if not words:
            return True
        # a program spelled with its path is the program: `/home/me/.local/bin/cmem add` is `cmem add`
        words[0] = words[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".exe")
        head = " ".join(words)
        return any(head == entry or head.startswith(entry + " ") for entry in self.skip_commands)


def _strings(section: Mapping[str, Any], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = section.get(name)
    if value is None:
        return default
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput(f"config [hooks] {name} must be a list of strings")
    return tuple(value)


def _bool(section: Mapping[str, Any], name: str, default: bool) -> bool:
    value = section.get(name, default)
    if not isinstance(value, bool):
        raise InvalidInput(f"config [hooks] {name} must be true or false")
    return value


def _int(section: Mapping[str, Any], name: str, default: int, minimum: int) -> int:
    value = section.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(f"config [hooks] {name} must be an integer >= {minimum}")
    return value


def rules_from_config(section: Mapping[str, Any] | None) -> HookRules:
    section = section or {}
    merge = section.get("merge_repeats", "session")
    if merge is False:
        merge = "off"
    if merge not in MERGE_SCOPES:
        raise InvalidInput(f"config [hooks] merge_repeats must be one of: {', '.join(MERGE_SCOPES)}")
    extra_tools = _strings(section, "also_skip_tools", ())
    extra_commands = _strings(section, "also_skip_commands", ())
    return HookRules(
        skip_tools=_strings(section, "skip_tools", DEFAULT_SKIP_TOOLS) + extra_tools,
        skip_commands=_strings(section, "skip_commands", DEFAULT_SKIP_COMMANDS) + extra_commands,
        capture_reads=_bool(section, "capture_reads", True),
        merge_repeats=merge,
        max_output_chars=_int(section, "max_output_chars", 1_000, 0),
        context_on_start=_bool(section, "context_on_start", True),
        context_budget=_int(section, "context_budget", 1_500, 50),
        summary_on_stop=_bool(section, "summary_on_stop", True),
        busy_timeout_ms=_int(section, "busy_timeout_ms", 5_000, 0),
    )
