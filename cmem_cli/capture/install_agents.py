"""``cmem install AGENT`` for every agent: which files hold an agent's hooks and MCP servers, and what cmem
puts in them. Claude Code's own installer (``install_claude``, with its CLAUDE.md section) and MCP entry
(``install_mcp``) are used as they are; Codex CLI, Gemini CLI, Cursor and opencode each get their hook entries
(all running ``cmem hook --agent AGENT EVENT``: one runner, one capture path) and the MCP server, in their own
files and formats. Every change is a :class:`~cmem_cli.capture.install_files.Change`: shown by ``--dry-run``,
written with a backup, undone by ``--uninstall`` byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from cmem_cli.capture import agent_dirs, toml_block
from cmem_cli.capture.install_files import (
    Change,
    check_hook_groups,
    hook_command,
    hook_entries,
    is_cmem_command,
    plan_hooks,
    plan_json,
    read_text,
    restored,
)
from cmem_cli.capture.install_mcp import check_servers, merge_server, server_argv
from cmem_cli.core.errors import InvalidInput

AGENTS = ("claude-code", "codex", "gemini", "cursor", "opencode")
SCOPES = ("user", "project")

# The events each agent's hooks are installed for: event -> (matcher or None, timeout). Codex and Cursor
# take seconds, Gemini CLI milliseconds.
CODEX_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PostToolUse": (None, 10),
    "Stop": (None, 10),
}
GEMINI_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 15_000),
    "BeforeAgent": (None, 10_000),
    "AfterTool": ("*", 10_000),
    "AfterAgent": (None, 10_000),
    "SessionEnd": (None, 10_000),
}
# beforeShellExecution is not installed: Cursor waits on its answer as a permission decision, which a memory
# tool has no business giving; afterShellExecution records the command with its output.
CURSOR_EVENTS = (
    "sessionStart",
    "beforeSubmitPrompt",
    "afterFileEdit",
    "afterShellExecution",
    "afterMCPExecution",
    "postToolUse",
    "afterAgentResponse",
    "stop",
    "sessionEnd",
)


class Where(NamedTuple):
    """The files an agent's install touches, for one scope."""

    hooks: Path
    mcp: Path


def files(agent: str, scope: str, cwd: Path) -> Where:
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")
    user = scope == "user"
    if agent == "codex":
        base = agent_dirs.codex_dir() if user else cwd / ".codex"
        return Where(base / "hooks.json", base / "config.toml")
    if agent == "gemini":
        base = agent_dirs.gemini_dir() if user else cwd / ".gemini"
        return Where(base / "settings.json", base / "settings.json")
    if agent == "cursor":
        base = agent_dirs.cursor_dir() if user else cwd / ".cursor"
        return Where(base / "hooks.json", base / "mcp.json")
    if agent == "opencode":
        config = agent_dirs.opencode_dir() if user else cwd / ".opencode"
        return Where(config / "plugins" / "cmem.js", (config if user else cwd) / "opencode.json")
    if agent == "claude-code":
        from cmem_cli.capture.install_claude import settings_paths
        from cmem_cli.capture.install_mcp import mcp_config_path

        return Where(settings_paths(scope, cwd)[0], mcp_config_path(scope, cwd))
    raise InvalidInput(f"unknown agent {agent!r} (expected one of: {', '.join(AGENTS)})")


def plan(
    agent: str,
    scope: str,
    *,
    uninstall: bool,
    mcp: bool | None = None,
    instructions: bool = True,
    cwd: Path | None = None,
    executable: str | None = None,
) -> list[Change]:
    """The changes installing (or uninstalling) ``agent`` makes. ``mcp`` None: the MCP server is registered
    for every agent but Claude Code, whose ~/.claude.json holds its account state (there only when asked);
    uninstall always takes it out."""
    cwd = cwd or Path.cwd()
    where = files(agent, scope, cwd)
    register = (agent != "claude-code") if mcp is None else mcp
    if agent == "claude-code":
        from cmem_cli.capture.install_claude import plan as plan_claude
        from cmem_cli.capture.install_mcp import plan_mcp

        changes = plan_claude(
            scope, uninstall=uninstall, cwd=cwd, executable=executable, instructions=instructions
        )
        if not (register or uninstall):
            return changes
        server = plan_mcp(scope, uninstall=uninstall, cwd=cwd, executable=executable)
        return changes + ([server] if register or server.changed else [])
    planners: dict[str, Callable[..., list[Change]]] = {
        "codex": _codex,
        "gemini": _gemini,
        "cursor": _cursor,
        "opencode": _opencode,
    }
    extra = {"instructions": instructions} if agent == "codex" else {}
    changes = planners[agent](
        where, uninstall=uninstall, register=register or uninstall, executable=executable, **extra
    )
    return [change for change in changes if change.changed or not uninstall or register]


# -- Codex CLI: hooks.json (Claude Code's layout) and [mcp_servers.cmem] in config.toml ---------------------


def _codex(
    where: Where, *, uninstall: bool, register: bool, executable: str | None, instructions: bool = True
) -> list[Change]:
    entries = hook_entries(CODEX_EVENTS, executable, "codex")
    hooks = plan_hooks(where.hooks, entries, uninstall=uninstall)
    # Codex runs a hook only once it is trusted: cmem's own entries are trusted as Codex's /hooks review
    # would trust them (their hash in config.toml), for the user's hooks.json, which only the person edits
    trust = (
        {}
        if uninstall or where.hooks.parent != agent_dirs.codex_dir()
        else codex_trust(where.hooks, hooks.new)
    )
    config = _codex_config(
        where.mcp, uninstall=uninstall, server=register, trust=trust, executable=executable
    )
    changes = [hooks, config]
    if instructions or uninstall:
        user = where.hooks.parent == agent_dirs.codex_dir()
        agents_md = where.hooks.parent / "AGENTS.md" if user else where.hooks.parent.parent / "AGENTS.md"
        changes.append(_codex_instructions(agents_md, uninstall=uninstall, executable=executable))
    return changes


def _codex_instructions(path: Path, *, uninstall: bool, executable: str | None) -> Change:
    """cmem's section of AGENTS.md (``$CODEX_HOME/AGENTS.md``, or the repository's), which Codex reads in every
    session: the same few lines as Claude Code's CLAUDE.md section, so that Codex records what it decides."""
    from cmem_cli.capture.install_claude import instruction_command, instructions, merge_instructions

    block = instructions(instruction_command(executable))

    def merge(text: str | None, remove: bool) -> str | None:
        merged = merge_instructions(text, uninstall=remove, command=instruction_command(executable))
        if remove or merged is None or not merged.endswith(block):
            return merged
        return merged[: -len(block)] + block.replace("cmem install claude-code", "cmem install codex")

    def without_cmem(text: str | None) -> object:
        return (merge(text, True) or "").rstrip("\n")

    old = read_text(path)
    new = merge(old, uninstall)
    if old is not None and new is not None and old.rstrip("\n") == new.rstrip("\n"):
        new = old
    if uninstall and new != old:
        new = restored(path, new, without_cmem)
    what = "instructions removed" if uninstall else "instructions added"
    return Change(path, old, new, what, without_cmem=without_cmem if uninstall else None)


def codex_trust(hooks_file: Path, text: str | None) -> dict[str, str]:
    """The ``[hooks.state]`` key and ``trusted_hash`` Codex expects for each of cmem's entries in a
    hooks.json text (see :func:`codex_hook_hash`)."""
    import json

    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    found: dict[str, str] = {}
    hooks = data.get("hooks") if isinstance(data, dict) else None
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for i, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if isinstance(handler, dict) and is_cmem_command(handler.get("command")):
                    key = f"{hooks_file}:{_snake(event)}:{g}:{i}"
                    found[key] = codex_hook_hash(event, group.get("matcher"), handler)
    return found


def codex_hook_hash(event: str, matcher: Any, handler: dict[str, Any]) -> str:
    """Codex's hash of one command hook (codex-rs hooks, 0.171: SHA-256 of the compact, key-sorted JSON of the
    event's snake_case name, the matcher and the handler with its defaults); a changed command or timeout
    changes it, and Codex then asks again."""
    import hashlib
    import json

    normalized: dict[str, Any] = {
        "async": bool(handler.get("async", False)),
        "command": handler.get("command"),
    }
    if handler.get("statusMessage") is not None:
        normalized["statusMessage"] = handler["statusMessage"]
    normalized["timeout"] = handler.get("timeout", handler.get("timeoutSec", 600))
    normalized["type"] = "command"
    identity: dict[str, Any] = {"event_name": _snake(event), "hooks": [normalized]}
    if matcher is not None:
        identity["matcher"] = matcher
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"sha256:{digest}"


def _snake(event: str) -> str:
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def _codex_config(
    path: Path, *, uninstall: bool, server: bool, trust: dict[str, str], executable: str | None
) -> Change:
    """cmem's tables as a marked block at the end of config.toml (``[mcp_servers.cmem]`` and the trust of
    cmem's hooks): every other byte is the person's, and tables Codex writes into the block are kept."""
    old = read_text(path)
    toml_block.parse(path, old)  # a file Codex cannot read is left alone

    def without_cmem(text: str | None) -> object:
        return toml_block.without_block(text or "")

    base = toml_block.without_block(old or "")
    parsed = toml_block.parse(path, base)
    servers = parsed.get("mcp_servers")
    theirs = isinstance(servers, dict) and "cmem" in servers  # an mcp_servers.cmem the person wrote
    hooks = parsed.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    trusted = state if isinstance(state, dict) else {}
    items: list[tuple[str, dict[str, Any]]] = []
    if server and not theirs:
        command, *args = server_argv(executable)
        items.append(("mcp_servers.cmem", {"command": command, "args": args}))
    items += [
        (f"hooks.state.{toml_block.value(key)}", {"trusted_hash": digest})
        for key, digest in trust.items()
        if key not in trusted  # the person's own entry for it stays theirs (doctor says if it is stale)
    ]
    new: str | None
    if uninstall or not items:
        new = old if toml_block.BEGIN not in (old or "") else (base if base.strip() else None)
        if uninstall and new != old:
            new = restored(path, new, without_cmem)
    else:
        block = toml_block.tables(
            items, "added by `cmem install codex`; `cmem install codex --uninstall` removes it"
        )
        new = toml_block.with_block(old or "", block)
        toml_block.parse(path, new)  # never write a file Codex could not read
    what = "MCP server and hook trust" if server else "hook trust"
    what = f"{what} removed" if uninstall else f"{what} installed"
    return Change(path, old, new, what, without_cmem=without_cmem if uninstall else None)


CODEX_PROJECT_NOTE = (
    "codex: Codex runs a repository's hooks only once you trust them: start `codex` here, trust the folder, "
    "and trust cmem's hooks when Codex asks (or in /hooks); `cmem doctor` says when they are untrusted"
)


# -- Gemini CLI: hooks and mcpServers, both in settings.json --------------------------------------------------


def _gemini(where: Where, *, uninstall: bool, register: bool, executable: str | None) -> list[Change]:
    entries = hook_entries(GEMINI_EVENTS, executable, "gemini", name="cmem")
    command, *args = server_argv(executable)
    server = {"command": command, "args": args}

    def with_server(data: dict[str, Any], remove: bool) -> dict[str, Any]:
        return merge_server(data, server, uninstall=remove)

    def check(path: Path, data: dict[str, Any]) -> dict[str, Any]:
        return check_servers(path, check_hook_groups(path, data))

    if not register:
        return [plan_hooks(where.hooks, entries, uninstall=uninstall, check=check)]
    what = "hooks and MCP server"
    return [plan_hooks(where.hooks, entries, uninstall=uninstall, also=with_server, what=what, check=check)]


# -- Cursor: hooks.json version 1 ({event: [{"command": ...}]}) and mcp.json -----------------------------------


def _check_cursor(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    check_hook_groups(path, data)
    if data.get("version", 1) != 1:
        raise InvalidInput(f"{path}: hooks.json version {data['version']!r} is not 1; not touching it")
    return data


def merge_cursor_hooks(data: dict[str, Any], commands: dict[str, str], *, uninstall: bool) -> dict[str, Any]:
    """Cursor's hooks with cmem's commands removed from every event, then (unless uninstalling) added."""
    import json

    result: dict[str, Any] = json.loads(json.dumps(data))
    hooks: dict[str, Any] = result.get("hooks") or {}
    for event in list(hooks):
        kept = [h for h in hooks[event] if not (isinstance(h, dict) and is_cmem_command(h.get("command")))]
        if kept or not hooks[event]:
            hooks[event] = kept
        else:
            del hooks[event]
    if not uninstall:
        for event, command in commands.items():
            hooks.setdefault(event, []).append({"command": command})
        result = {"version": result.get("version", 1), **result, "hooks": hooks}
    elif hooks:
        result["hooks"] = hooks
    else:  # nothing but cmem's hooks: the file goes (or its backup comes back)
        result.pop("hooks", None)
        if result.get("version") == 1:
            result.pop("version")
    return result


def _cursor(where: Where, *, uninstall: bool, register: bool, executable: str | None) -> list[Change]:
    commands = {event: hook_command(event, executable, "cursor") for event in CURSOR_EVENTS}

    def merge(data: dict[str, Any], remove: bool) -> dict[str, Any]:
        return merge_cursor_hooks(data, commands, uninstall=remove)

    changes = [plan_json(where.hooks, merge, uninstall=uninstall, what="hooks", check=_check_cursor)]
    if register:
        command, *args = server_argv(executable)
        server = {"command": command, "args": args}

        def merge_mcp(data: dict[str, Any], remove: bool) -> dict[str, Any]:
            return merge_server(data, server, uninstall=remove)

        changes.append(
            plan_json(where.mcp, merge_mcp, uninstall=uninstall, what="MCP server", check=check_servers)
        )
    return changes


# -- opencode: a plugin file of cmem's own, and "mcp" in opencode.json --------------------------------------------


def _opencode(where: Where, *, uninstall: bool, register: bool, executable: str | None) -> list[Change]:
    from cmem_cli.capture.opencode_plugin import MARK, plugin_source

    old = read_text(where.hooks)
    if old is not None and not old.startswith(MARK):
        raise InvalidInput(f"{where.hooks} is not cmem's plugin; not touching it")
    new = None if uninstall else plugin_source(server_argv(executable)[:-1])
    # the file is cmem's own: it needs no backup (nothing in it is the person's)
    changes = [
        Change(
            where.hooks,
            old,
            new,
            "plugin removed" if uninstall else "plugin installed",
            without_cmem=lambda text: None,
        )
    ]
    if register:
        command = server_argv(executable)
        server = {"type": "local", "command": command, "enabled": True}

        def merge(data: dict[str, Any], remove: bool) -> dict[str, Any]:
            return merge_server(data, server, uninstall=remove, key="mcp")

        def check(path: Path, data: dict[str, Any]) -> dict[str, Any]:
            return check_servers(path, data, key="mcp")

        changes.append(plan_json(where.mcp, merge, uninstall=uninstall, what="MCP server", check=check))
    return changes
