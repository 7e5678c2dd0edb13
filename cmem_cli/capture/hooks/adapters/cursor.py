"""Cursor (agent hooks, ``hooks.json`` version 1): every event carries ``conversation_id``,
``generation_id``, ``workspace_roots`` and ``hook_event_name`` in camelCase (sessionStart,
beforeSubmitPrompt, afterFileEdit, beforeShellExecution, afterShellExecution, afterMCPExecution, stop,
sessionEnd). There is no generic tool event: a file edit (``file_path``, ``edits``) becomes Claude Code's
Edit, a shell command (``command``, ``output``, ``cwd``) its Bash, an MCP call (``tool_name``, ``tool_input``
as a JSON string, ``result_json``) an ``mcp__server__tool`` call. sessionStart answers with
``additional_context``; beforeSubmitPrompt, which Cursor waits on, with ``{"continue": true}``. Written
against cursor.com/docs/agent/hooks (see docs/agents.md for the date).
"""

from __future__ import annotations

import re
from typing import Any

from cmem_cli.capture.hooks.adapters import IGNORED, briefing, claude_event, renamed, text

AGENT = "cursor"
EVENTS = {
    "sessionStart": "SessionStart",
    "beforeSubmitPrompt": "UserPromptSubmit",
    "beforeShellExecution": "PreToolUse",
    "beforeMCPExecution": "PreToolUse",
    "beforeReadFile": "PreToolUse",
    "afterFileEdit": "PostToolUse",
    "afterShellExecution": "PostToolUse",
    "afterMCPExecution": "PostToolUse",
    "stop": "Stop",
    "sessionEnd": "SessionEnd",
}
_CMEM_SERVER = re.compile(r"(?:^|[\s/\\])cmem(?:_cli)?(?:\.exe)?\b")


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    raw_name = event or text(data, "hook_event_name") or ""
    name = EVENTS.get(raw_name, IGNORED)
    roots = data.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    fields: dict[str, Any] = {
        # one conversation is one session; sessionStart also names it session_id
        "session_id": text(data, "conversation_id", "session_id"),
        "cwd": text(data, "cwd") or root,
        "transcript_path": "",  # Cursor's transcript is not Claude Code's: never read for the answer
    }
    if raw_name == "afterFileEdit":
        edits = (
            [e for e in data["edits"] if isinstance(e, dict)] if isinstance(data.get("edits"), list) else []
        )
        # one edit is Claude Code's Edit, several its MultiEdit
        tool_input = {
            "file_path": data.get("file_path"),
            **(edits[0] if len(edits) == 1 else {"edits": edits}),
        }
        fields.update(tool_name="Edit", tool_input=tool_input, tool_response={})
    elif raw_name == "afterShellExecution":
        response: dict[str, Any] = {"stdout": text(data, "output") or ""}
        for key in ("exit_code", "exitCode"):
            if isinstance(data.get(key), int) and not isinstance(data.get(key), bool):
                response["exit_code"] = data[key]
        fields.update(tool_name="Bash", tool_input={"command": data.get("command")}, tool_response=response)
    elif raw_name == "afterMCPExecution":
        fields.update(
            tool_name=_mcp_name(data),
            tool_input=renamed(data.get("tool_input"), {}),
            tool_response=renamed(data.get("result_json"), {}),
        )
    return claude_event(AGENT, data, name, **fields)


def _mcp_name(data: dict[str, Any]) -> str:
    """``mcp__<server>__<tool>`` as Claude Code names it; cmem's own server (its command is cmem) is
    ``mcp__cmem__…``, which capture never records."""
    tool = text(data, "tool_name") or "tool"
    command = text(data, "command") or ""
    if _CMEM_SERVER.search(command):
        return f"mcp__cmem__{tool}"
    server = text(data, "server_name", "server")
    return f"mcp__{server}__{tool}" if server else tool


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    if event == "SessionStart":
        context = briefing(answer)
        return {"additional_context": context} if context else None
    if event == "UserPromptSubmit":
        return {"continue": True}  # Cursor waits for this answer before it sends the prompt
    return None
