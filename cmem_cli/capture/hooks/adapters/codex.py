"""OpenAI Codex CLI: its hooks speak Claude Code's wire format (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``tool_name``/``tool_input``/``tool_response``/``tool_use_id``, ``last_assistant_message``,
and ``turn_id``, ``model``), so this adapter only names the agent and reads what differs: the shell tool's
output (``Exit code: N`` ... ``Output:``) and the ``apply_patch`` tool, whose ``tool_input.command`` is the
patch (``capture/hooks/tools.py`` builds its observation). Written against developers.openai.com/codex/hooks
and codex-rs/hooks/schema/generated (see docs/agents.md for the date).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from cmem_cli.capture.hooks.adapters import IGNORED, claude_event

AGENT = "codex"
# Codex events with Claude Code's names; others (PostCompact, StopFailure...) are acknowledged and ignored.
EVENTS = frozenset(
    {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "PreCompact",
        "Stop",
        "SubagentStart",
        "SubagentStop",
    }
)
_SHELL_OUTPUT = re.compile(r"\AExit code: (-?\d+)\n(?:Wall time: [^\n]*\n)?(?:Output:\n)?(.*)\Z", re.DOTALL)


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    name = event or data.get("hook_event_name") or ""
    name = name if name in EVENTS else IGNORED
    # the transcript is a Codex rollout, not Claude Code's: Stop's answer is last_assistant_message alone
    fields: dict[str, Any] = {"transcript_path": ""}
    tool_input = data.get("tool_input")
    if data.get("tool_name") == "Bash" and isinstance(tool_input, dict):
        command = tool_input.get("command")
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            fields["tool_input"] = {**tool_input, "command": shlex.join(command)}  # an argv, not a line
        response = shell_output(data.get("tool_response"))
        if response is not None:
            fields["tool_response"] = response
    return claude_event(AGENT, data, name, **fields)


def shell_output(text: Any) -> dict[str, Any] | None:
    """``Exit code: N`` / ``Wall time`` / ``Output:`` text as the Bash builder reads a response (also what
    Codex's rollouts hold for a shell call)."""
    match = _SHELL_OUTPUT.match(text) if isinstance(text, str) else None
    return {"stdout": match.group(2), "exit_code": int(match.group(1))} if match else None


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """Codex reads Claude Code's SessionStart and UserPromptSubmit answers as they are
    (``hookSpecificOutput.additionalContext``: the briefing, what prompt recall injects)."""
    return answer if event in ("SessionStart", "UserPromptSubmit") else None
