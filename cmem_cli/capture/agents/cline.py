"""Cline: a hook is an executable file named after its event (``TaskStart``, ``UserPromptSubmit``,
``PostToolUse``, ``TaskComplete``, ``SessionShutdown``...) in ``~/Documents/Cline/Hooks/`` or a project's
``.clinerules/hooks/``; it gets one JSON object on stdin and may print ``{"cancel", "contextModification",
"errorMessage"}``. The payload (``hookName``: ``agent_start``, ``prompt_submit``, ``tool_result``, ``agent_end``,
``session_shutdown``...; ``taskId``, the session; ``workspaceRoots``; ``userPromptSubmit.prompt``;
``tool_result`` = ``{id, name, input, output, error}``; ``turn.outputText``, the answer) comes from the
extension's and the CLI's hook runners. Cline's hooks fail closed (a non-zero exit, output that is not JSON or
a timeout can block the action), so each of cmem's scripts always prints one JSON object and exits 0, whatever
cmem does. TaskStart's answer carries the briefing as ``contextModification`` (the CLI runs start hooks
detached unless its host asks otherwise, and then drops it). Its tools: ``read_files``, ``editor``
(``path``, ``old_text``, ``new_text``), ``run_commands`` (``commands``; results ``{query, result, error,
success}``), ``apply_patch``, ``search_codebase``, ``fetch_web_content``; the extension's ``execute_command``,
``write_to_file``, ``replace_in_file``, ``read_file``. MCP servers: ``cline_mcp_settings.json`` in
``~/.cline/data/settings`` (user scope only). Read in cline 3.0.65 (npm): @cline/core 0.0.86
``dist/index.js`` (hook files, payloads, control output) and @cline/shared ``dist/storage`` (folders).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture.agents import AgentSpec, Where, json_server

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

AGENT = "cline"
# The hook files cmem installs (Cline has no matchers; its own timeout applies)
EVENTS: dict[str, tuple[str | None, int | None]] = {
    event: (None, None)
    for event in (
        "TaskStart",
        "TaskResume",
        "UserPromptSubmit",
        "PostToolUse",
        "TaskComplete",
        "SessionShutdown",
    )
}
# Hook file names and the payload's hookName -> Claude Code's event
NAMES = {
    "TaskStart": "SessionStart",
    "TaskResume": "SessionStart",
    "UserPromptSubmit": "UserPromptSubmit",
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "TaskComplete": "Stop",
    "TaskCancel": "Stop",
    "SessionShutdown": "SessionEnd",
    "agent_start": "SessionStart",
    "agent_resume": "SessionStart",
    "prompt_submit": "UserPromptSubmit",
    "tool_call": "PreToolUse",
    "tool_result": "PostToolUse",
    "agent_end": "Stop",
    "agent_abort": "Stop",
    "session_shutdown": "SessionEnd",
}
MARK = "# cmem: added by `cmem install cline`; `cmem install cline --uninstall` removes this file"
_COMMAND = re.compile(r"^out=\$\((.*) 2>/dev/null\)$", re.MULTILINE)
_FAILED_CODE = re.compile(r"exit(?:ed with)?(?: code)?[ :]+(-?\d+)", re.IGNORECASE)
QUIET = {"cancel": False}  # the answer that lets Cline go on and adds nothing


def documents_hooks() -> Path:
    """Cline's folder of user hooks: ``~/Documents/Cline/Hooks`` (the extension's and the CLI's)."""
    return Path.home() / "Documents" / "Cline" / "Hooks"


def cline_dir() -> Path:
    """Cline's own folder: ``$CLINE_DIR``, else ``~/.cline``."""
    value = os.environ.get("CLINE_DIR")
    return Path(value).expanduser() if value else Path.home() / ".cline"


def mcp_settings() -> Path:
    value = os.environ.get("CLINE_MCP_SETTINGS_PATH")
    if value:
        return Path(value).expanduser()
    data = os.environ.get("CLINE_DATA_DIR")
    return (
        (Path(data).expanduser() if data else cline_dir() / "data") / "settings" / "cline_mcp_settings.json"
    )


def files(scope: str, cwd: Path) -> Where:
    """The hooks folder; the MCP file at user scope (a project has none: its ``mcp`` is the folder itself)."""
    if scope == "user":
        return Where(documents_hooks(), mcp_settings())
    hooks = cwd / ".clinerules" / "hooks"
    return Where(hooks, hooks)


def instructions(scope: str, cwd: Path) -> Path:
    """A rule file of cmem's in Cline's rules: ``~/Documents/Cline/Rules/cmem.md``, or ``.clinerules/``."""
    if scope == "user":
        return Path.home() / "Documents" / "Cline" / "Rules" / "cmem.md"
    return cwd / ".clinerules" / "cmem.md"


def script(event: str, executable: str | None) -> str:
    """The hook file for ``event``: cmem's answer when it is a JSON object, else ``{"cancel": false}``;
    exit 0 always."""
    from cmem_cli.capture.install_files import hook_command

    return (
        "#!/bin/sh\n"
        f"{MARK}\n"
        "# Cline blocks its action when a hook fails: this one always prints a JSON object and exits 0.\n"
        f"out=$({hook_command(event, executable, AGENT)} 2>/dev/null)\n"
        'case "$out" in\n'
        "  '{'*) printf '%s\\n' \"$out\" ;;\n"
        f"  *) printf '%s\\n' '{json.dumps(QUIET)}' ;;\n"
        "esac\n"
        "exit 0\n"
    )


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import owned_file, plan_server
    from cmem_cli.capture.install_mcp import server_argv

    uninstall = options["uninstall"]
    what = "hook removed" if uninstall else "hook installed"
    changes = [
        owned_file(
            where.hooks / event,
            None if uninstall else script(event, options.get("executable")),
            MARK,
            what,
            0o755,
        )
        for event in EVENTS
    ]
    if options.get("register") and where.mcp != where.hooks:
        command, *args = server_argv(options.get("executable"))
        entry = {"command": command, "args": args, "disabled": False}
        changes.append(plan_server(where.mcp, entry, uninstall=uninstall))
    return changes


def installed(folder: Path) -> list[tuple[str, str]]:
    """(event, command) of each of cmem's hook files in the folder."""
    found = []
    for event in sorted({*EVENTS, *(n for n in NAMES if n[0].isupper())}):
        try:
            text = (folder / event).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        match = _COMMAND.search(text) if MARK in text else None
        if match:
            found.append((event, match.group(1)))
    return found


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    from cmem_cli.capture.hooks.adapters import IGNORED, claude_event, text

    hook = text(data, "hookName") or ""
    name = NAMES.get(hook) or NAMES.get(event or "", IGNORED)  # the payload says best which hook it is
    roots = data.get("workspaceRoots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    fields: dict[str, Any] = {
        "session_id": text(data, "taskId", "conversationId"),
        "cwd": root,
        "transcript_path": "",
        "source": "resume" if hook == "agent_resume" or event == "TaskResume" else "startup",
    }
    if name == "UserPromptSubmit":
        submitted = data.get("userPromptSubmit")
        fields["prompt"] = text(submitted, "prompt") if isinstance(submitted, dict) else None
    elif name == "PostToolUse":
        fields.update(tool_fields(data))
    elif name == "Stop":
        turn = data.get("turn")
        fields["last_assistant_message"] = text(turn, "outputText") if isinstance(turn, dict) else None
    shaped = claude_event(AGENT, data, name, **fields)
    if data.get("parent_agent_id") is None:  # the main agent: its agent_id names no subagent
        shaped.pop("agent_id", None)
    return shaped


def tool_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A Cline tool call (the CLI's ``tool_result`` record, or the extension's ``postToolUse``) as Claude
    Code's ``tool_name``, ``tool_input``, ``tool_response`` and ``error``."""
    from cmem_cli.capture.hooks.adapters import renamed, text

    record = data.get("tool_result")
    legacy = data.get("postToolUse")
    if isinstance(record, dict):
        tool, tool_input, output = text(record, "name") or "", record.get("input"), record.get("output")
        error = text(record, "error")
        call_id = text(record, "id")
    elif isinstance(legacy, dict):
        tool, tool_input, output = (
            text(legacy, "toolName") or "",
            legacy.get("parameters"),
            legacy.get("result"),
        )
        error = None if legacy.get("success") is not False else (text(legacy, "result") or "tool failed")
        call_id = None
    else:
        return {"tool_name": "", "tool_input": {}}
    tool_input = renamed(tool_input, {})
    claude, claude_input, response = _as_claude(tool, tool_input, output)
    if claude == "Bash" and isinstance(response, dict) and "exit_code" not in response and error:
        match = _FAILED_CODE.search(error)
        if match:
            response["exit_code"] = int(match.group(1))
    fields: dict[str, Any] = {
        "tool_name": claude,
        "tool_input": claude_input,
        "tool_response": response,
        "error": error,
    }
    if call_id:
        fields["tool_use_id"] = call_id
    return fields


def _results(output: Any) -> list[dict[str, Any]]:
    """The per-item results Cline's tools return (``[{query, result, error, success}]``)."""
    items = output if isinstance(output, list) else [output]
    return [item for item in items if isinstance(item, dict)]


def _as_claude(tool: str, given: dict[str, Any], output: Any) -> tuple[str, dict[str, Any], Any]:
    from cmem_cli.capture.hooks.adapters import text

    path = text(given, "path", "file_path", "absolutePath")
    if tool == "run_commands" or tool == "execute_command":
        commands = given.get("commands", given.get("command"))
        lines = [
            c if isinstance(c, str) else (text(c, "command") if isinstance(c, dict) else None) or ""
            for c in (commands if isinstance(commands, list) else [commands])
        ]
        results = _results(output)
        failed = [r for r in results if r.get("success") is False]
        stdout = (
            "\n".join(str(r.get("result") or "") for r in results)
            if results
            else (output if isinstance(output, str) else "")
        )
        response: dict[str, Any] = {"stdout": stdout}
        if failed:
            response["stderr"] = "\n".join(str(r.get("error") or "") for r in failed)
            match = _FAILED_CODE.search(response["stderr"])
            response["exit_code"] = int(match.group(1)) if match else 1
        return "Bash", {"command": "\n".join(line for line in lines if line)}, response
    if tool == "editor" or tool == "replace_in_file":
        old, new = given.get("old_text"), given.get("new_text", given.get("diff"))
        if tool == "editor" and old is None and given.get("insert_line") is None:
            return "Write", {"file_path": path, "content": new or ""}, {}
        return "Edit", {"file_path": path, "old_string": old or "", "new_string": new or ""}, {}
    if tool == "write_to_file":
        return "Write", {"file_path": path, "content": given.get("content") or ""}, {}
    if tool == "read_files" or tool == "read_file":
        first = _first_file(given)
        return "Read", first, {}
    if tool == "apply_patch":
        return "apply_patch", {"command": given.get("input") or ""}, {}
    if tool == "fetch_web_content":
        requests = given.get("requests")
        url = (
            text(requests[0], "url")
            if isinstance(requests, list) and requests and isinstance(requests[0], dict)
            else None
        )
        return "WebFetch", {"url": url or ""}, {}
    if tool == "search_codebase" or tool == "search_files":
        queries = given.get("queries", given.get("regex"))
        pattern = queries[0] if isinstance(queries, list) and queries else queries
        return "Grep", {"pattern": pattern if isinstance(pattern, str) else ""}, {}
    if tool == "ask_question" or tool == "ask_followup_question":
        return "AskUserQuestion", given, {}
    return (
        tool,
        given,
        {"stdout": output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)[:4000]},
    )


def _first_file(given: dict[str, Any]) -> dict[str, Any]:
    """read_files' first file as Read's ``file_path``, ``offset`` and ``limit`` (its lines count from 1)."""
    from cmem_cli.capture.hooks.adapters import text

    files = given.get("files", given.get("file_paths", given.get("paths", given)))
    first = files[0] if isinstance(files, list) and files else files
    if isinstance(first, str):
        return {"file_path": first}
    if not isinstance(first, dict):
        return {}
    found: dict[str, Any] = {"file_path": text(first, "path", "file_path", "filePath")}
    start, end = first.get("start_line"), first.get("end_line")
    if isinstance(start, int) and start >= 1:
        found["offset"] = start
        if isinstance(end, int) and end >= start:
            found["limit"] = end - start + 1
    return found


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any]:
    """Always an answer Cline accepts; TaskStart's carries the briefing, a tool_result's what file recall
    injects (the CLI appends it to what the model reads next)."""
    from cmem_cli.capture.hooks.adapters import briefing

    context = briefing(answer) if event in ("SessionStart", "PostToolUse") else None
    return {**QUIET, "contextModification": context} if context else dict(QUIET)


SPEC = AgentSpec(
    name=AGENT,
    instructions=instructions,
    title="Cline",
    program="cline",
    user_dir=cline_dir,
    files=files,
    events=EVENTS,
    timeout_unit="",
    plan=plan,
    adapter=__name__,
    installed=installed,
    mcp_registered=json_server(),
    reference="cline 3.0.65 (npm): @cline/core 0.0.86 and @cline/shared, their hook runners",
    briefing="TaskStart contextModification",
)
