"""``cmem install AGENT`` for every agent: which files hold an agent's hooks and MCP servers, and what cmem
puts in them. Claude Code's own installer (``install_claude``, with its CLAUDE.md section) and MCP entry
(``install_mcp``) are used as they are; Codex CLI, Gemini CLI, Cursor and opencode each get their hook entries
(all running ``cmem hook --agent AGENT EVENT``: one runner, one capture path) and the MCP server, in their own
files and formats. Every change is a :class:`~cmem_cli.capture.install_files.Change`: shown by ``--dry-run``,
written with a backup, undone by ``--uninstall`` byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cmem_cli.capture import toml_block
from cmem_cli.capture.agents import NAMES, SCOPES, Where, spec
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

__all__ = ["AGENTS", "SCOPES", "Where", "files", "plan"]

AGENTS = NAMES


def files(agent: str, scope: str, cwd: Path) -> Where:
    """The files ``agent``'s install touches in ``scope`` (its registry spec says which)."""
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")
    return spec(agent).files(scope, cwd)


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
    agent_spec = spec(agent)
    where = files(agent, scope, cwd)
    if agent == "claude-code":
        return agent_spec.plan(
            where,
            scope=scope,
            cwd=cwd,
            uninstall=uninstall,
            register=bool(mcp),
            executable=executable,
            instructions=instructions,
        )
    register = True if mcp is None else mcp
    changes = agent_spec.plan(
        where, uninstall=uninstall, register=register or uninstall, executable=executable
    )
    changes = [change for change in changes if change.changed or not uninstall or register]
    if instructions and agent_spec.instructions is not None:
        path = agent_spec.instructions(scope, cwd)
        changes.append(plan_instructions(path, agent, uninstall=uninstall, executable=executable))
    return changes


def plan_instructions(path: Path, agent: str, *, uninstall: bool, executable: str | None) -> Change:
    """cmem's short section (the one CLAUDE.md gets) in the agent's own instructions file, marked as
    installed for ``agent``: added, replaced, or taken out byte for byte."""
    from cmem_cli.capture.install_claude import instruction_command, merge_instructions

    def merged(text: str | None, remove: bool) -> str | None:
        new = merge_instructions(text, uninstall=remove, command=instruction_command(executable))
        return new.replace("`cmem install claude-code", f"`cmem install {agent}", 2) if new else new

    def without_cmem(text: str | None) -> object:
        return (merge_instructions(text, uninstall=True) or "").rstrip("\n")

    old = read_text(path)
    new = merged(old, uninstall)
    if old is not None and new is not None and old.rstrip("\n") == new.rstrip("\n"):
        new = old
    if uninstall and new != old:
        new = restored(path, new, without_cmem)
    what = "instructions removed" if uninstall else "instructions added"
    return Change(path, old, new, what, without_cmem=without_cmem if uninstall else None)


# -- Claude Code: settings.json and CLAUDE.md (install_claude), the MCP server in ~/.claude.json on request --


def plan_claude(
    where: Where,
    *,
    scope: str,
    cwd: Path,
    uninstall: bool,
    register: bool,
    executable: str | None,
    instructions: bool = True,
) -> list[Change]:
    from cmem_cli.capture.install_claude import plan as plan_settings
    from cmem_cli.capture.install_mcp import plan_mcp

    changes = plan_settings(
        scope, uninstall=uninstall, cwd=cwd, executable=executable, instructions=instructions
    )
    if not (register or uninstall):
        return changes
    server = plan_mcp(scope, uninstall=uninstall, cwd=cwd, executable=executable)
    return changes + ([server] if register or server.changed else [])


# -- Codex CLI: hooks.json (Claude Code's layout) and [mcp_servers.cmem] in config.toml ---------------------


def plan_codex(where: Where, *, uninstall: bool, register: bool, executable: str | None) -> list[Change]:
    from cmem_cli.capture import agent_dirs
    from cmem_cli.capture.agents.codex import EVENTS

    entries = hook_entries(EVENTS, executable, "codex")
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
    return [hooks, config]


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


# -- Gemini CLI: hooks and mcpServers, both in settings.json --------------------------------------------------


def plan_gemini(
    where: Where,
    *,
    events: Mapping[str, tuple[str | None, int | None]],
    agent: str,
    uninstall: bool,
    register: bool,
    executable: str | None,
) -> list[Change]:
    """Gemini CLI's layout (hooks and ``mcpServers`` in one settings.json), which Qwen Code shares."""
    entries = hook_entries(events, executable, agent, name="cmem")
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


def plan_cursor(
    where: Where,
    *,
    events: Mapping[str, Any],
    agent: str,
    uninstall: bool,
    register: bool,
    executable: str | None,
) -> list[Change]:
    commands = {event: hook_command(event, executable, agent) for event in events}

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


def plan_opencode(where: Where, *, uninstall: bool, register: bool, executable: str | None) -> list[Change]:
    from cmem_cli.capture.opencode_plugin import MARK, plugin_source

    return plan_plugin(
        where,
        plugin_source(server_argv(executable)[:-1]),
        MARK,
        uninstall=uninstall,
        register=register,
        executable=executable,
    )


def plan_plugin(
    where: Where, source: str, mark: str, *, uninstall: bool, register: bool, executable: str | None
) -> list[Change]:
    """opencode's layout, which Kilo Code shares: a plugin file of cmem's own and ``mcp`` in the JSON config."""
    changes = [
        owned_file(
            where.hooks,
            None if uninstall else source,
            mark,
            "plugin removed" if uninstall else "plugin installed",
        )
    ]
    if register:
        command = server_argv(executable)
        changes.append(
            plan_server(
                where.mcp,
                {"type": "local", "command": command, "enabled": True},
                uninstall=uninstall,
                key="mcp",
            )
        )
    return changes


# -- what several agents share ------------------------------------------------------------------------------


def owned_file(path: Path, new: str | None, mark: str, what: str, mode: int = 0o644) -> Change:
    """A file that is cmem's alone (a plugin, a hook script): written whole, deleted on uninstall, never
    backed up (nothing in it is the person's). A file of that name holding no ``mark`` is not cmem's: left
    alone, with a one-line error."""
    old = read_text(path)
    if old is not None and mark not in old:
        raise InvalidInput(f"{path} is not cmem's; not touching it")
    return Change(path, old, new, what, mode=mode, without_cmem=lambda text: None)


def plan_server(path: Path, entry: dict[str, Any], *, uninstall: bool, key: str = "mcpServers") -> Change:
    """``<key>.cmem`` in a JSON config file: ``entry`` set, or taken out."""

    def merge(data: dict[str, Any], remove: bool) -> dict[str, Any]:
        return merge_server(data, entry, uninstall=remove, key=key)

    def check(path: Path, data: dict[str, Any]) -> dict[str, Any]:
        return check_servers(path, data, key=key)

    return plan_json(path, merge, uninstall=uninstall, what="MCP server", check=check)


def plan_claude_layout(
    where: Where,
    *,
    events: Mapping[str, tuple[str | None, int | None]],
    agent: str,
    uninstall: bool,
    register: bool,
    executable: str | None,
    server: Mapping[str, Any] | None = None,
) -> list[Change]:
    """Claude Code's hook layout in the agent's hooks file (Factory Droid's, Codex's) and, when the MCP file
    is a JSON one, ``mcpServers.cmem`` there (``server`` adds the agent's own fields to the entry)."""
    changes = [plan_hooks(where.hooks, hook_entries(events, executable, agent), uninstall=uninstall)]
    if register:
        command, *args = server_argv(executable)
        entry = {**(server or {}), "command": command, "args": args}
        changes.append(plan_server(where.mcp, entry, uninstall=uninstall))
    return changes
