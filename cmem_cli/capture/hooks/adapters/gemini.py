"""Gemini CLI: hooks in ``settings.json`` receive ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name`` and ``timestamp`` plus per-event fields, and its events and tools have names of their own.
This adapter maps them onto Claude Code's: BeforeAgent (``prompt``) is UserPromptSubmit, AfterTool
(``tool_name``, ``tool_input``, ``tool_response`` = ``{llmContent, returnDisplay, error}``) is PostToolUse with
the tool renamed (``replace`` -> Edit, ``run_shell_command`` -> Bash...), AfterAgent (``prompt_response``) is
Stop, SessionStart and SessionEnd keep their names. SessionStart's answer has the same shape as Claude Code's
(``hookSpecificOutput.additionalContext``). Written against docs/hooks/reference.md and
packages/core/src/hooks/types.ts of google-gemini/gemini-cli (see docs/agents.md for the version).
"""

from __future__ import annotations

import re
from typing import Any

from cmem_cli.capture.hooks.adapters import IGNORED, claude_event, renamed, text

AGENT = "gemini"
EVENTS = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
    "AfterAgent": "Stop",
    "SessionEnd": "SessionEnd",
    "PreCompress": "PreCompact",
}
# Gemini CLI tool -> (Claude Code tool, argument renames)
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "read_file": ("Read", {}),
    "read_many_files": ("ReadManyFiles", {}),
    "write_file": ("Write", {}),
    "replace": ("Edit", {"allow_multiple": "replace_all"}),
    "run_shell_command": ("Bash", {"dir_path": "cwd"}),
    "glob": ("Glob", {"dir_path": "path"}),
    "grep_search": ("Grep", {"dir_path": "path", "include_pattern": "glob"}),
    "search_file_content": ("Grep", {"dir_path": "path", "include": "glob"}),
    "list_directory": ("LS", {"dir_path": "path"}),
    "google_web_search": ("WebSearch", {}),
    "web_fetch": ("WebFetch", {}),
    "write_todos": ("TodoWrite", {}),
    "ask_user": ("AskUserQuestion", {}),
}
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)$", re.MULTILINE)
_OUTPUT = re.compile(r"^Output: (.*?)(?=^(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): |\Z)",
                     re.MULTILINE | re.DOTALL)  # fmt: skip


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    name = EVENTS.get(event or text(data, "hook_event_name") or "", IGNORED)
    fields: dict[str, Any] = {}
    if name == "PostToolUse":
        fields.update(tool_fields(data))
    elif name == "UserPromptSubmit" and isinstance(data.get("prompt"), str):
        fields["prompt"] = typed_prompt(data["prompt"])
    elif name == "Stop":
        fields["last_assistant_message"] = text(data, "prompt_response")
        fields["transcript_path"] = ""  # Gemini's transcript is not Claude Code's: never read for the answer
    return claude_event(AGENT, data, name, **fields)


# Gemini CLI (0.61) puts SessionStart's context before the first prompt, and hands BeforeAgent (and its saved
# chat) that text: the briefing is not what the person typed. BeforeAgent's own context (prompt recall) is
# appended after the prompt the same way, in the saved chat.
_HOOK_CONTEXT = re.compile(r"\A\s*<hook_context>.*?</hook_context>\s*", re.DOTALL)
_HOOK_CONTEXT_AFTER = re.compile(r"\s*<hook_context>(?:(?!<hook_context>).)*</hook_context>\s*\Z", re.DOTALL)


def typed_prompt(prompt: str) -> str:
    """The prompt as the person typed it, without the ``<hook_context>`` Gemini CLI put before or after it."""
    return _HOOK_CONTEXT_AFTER.sub("", _HOOK_CONTEXT.sub("", prompt, count=1), count=1)


def tool_fields(data: dict[str, Any]) -> dict[str, Any]:
    """An AfterTool payload's tool as Claude Code's ``tool_name``, ``tool_input``, ``tool_response`` and
    ``error`` (``cmem import gemini`` builds the same payload from a saved chat's tool call)."""
    tool = text(data, "tool_name") or ""
    context = data.get("mcp_context")
    server = text(context, "server_name") if isinstance(context, dict) else None
    fields: dict[str, str] = {}
    if server:  # an MCP tool: mcp_<server>_<tool> is Claude Code's mcp__<server>__<tool>
        name = text(context, "tool_name") if isinstance(context, dict) else None
        claude = f"mcp__{server}__{name or tool.removeprefix(f'mcp_{server}_')}"
    else:
        claude, fields = TOOLS.get(tool, (tool, {}))
    response = data.get("tool_response")
    response = response if isinstance(response, dict) else {"llmContent": response}
    error = response.get("error")
    message = text(error, "message") if isinstance(error, dict) else error if isinstance(error, str) else None
    output = response.get("llmContent")
    if not isinstance(output, str):
        output = text(response, "returnDisplay") or ""
    result: dict[str, Any] = {"stdout": output}
    if claude == "Bash":
        exit_code = _EXIT_CODE.search(output)
        printed = _OUTPUT.search(output)
        result = {"stdout": printed.group(1).strip() if printed else output}
        if exit_code:
            result["exit_code"] = int(exit_code.group(1))
    return {
        "tool_name": claude,
        "tool_input": _lines_from_one(tool, renamed(data.get("tool_input"), fields)),
        "tool_response": result,
        "error": message,
    }


def _lines_from_one(tool: str, tool_input: Any) -> Any:
    """read_file's ``offset`` is the 0-based line number to start from (Gemini CLI's tool schema); Claude
    Code's Read, whose shape the runner takes, counts lines from 1."""
    if tool != "read_file" or not isinstance(tool_input, dict):
        return tool_input
    offset = tool_input.get("offset")
    if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
        return {**tool_input, "offset": offset + 1}
    return tool_input


# The runner's (Claude Code's) events whose context Gemini CLI takes, by Gemini's name for them.
CONTEXT_EVENTS = {
    "SessionStart": "SessionStart",
    "UserPromptSubmit": "BeforeAgent",
    "PostToolUse": "AfterTool",
}


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """Gemini CLI reads ``hookSpecificOutput.additionalContext`` as Claude Code does, from SessionStart (the
    briefing), BeforeAgent (prompt recall) and AfterTool (file recall, appended after the tool's result)."""
    name = CONTEXT_EVENTS.get(event)
    specific = answer.get("hookSpecificOutput") if answer and name else None
    if not isinstance(specific, dict):
        return None
    return {**answer, "hookSpecificOutput": {**specific, "hookEventName": name}}  # type: ignore[dict-item]
