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
# exec_command's output (Codex 0.16x on): a header, then the output
_EXEC_OUTPUT = re.compile(
    r"\A(?:Chunk ID: [^\n]*\n)?(?:Wall time: [^\n]*\n)?Process exited with code (-?\d+)\n"
    r"(?:Original token count: [^\n]*\n)?(?:Output:\n)?(.*)\Z",
    re.DOTALL,
)
# A command that only shows one file (how Codex reads: it has no read tool) is a Read of that file.
_SHOW_FILE = re.compile(
    r"\A\s*(?:cat|nl -ba|sed -n '?\d+,\d+p'?|head(?: -n \d+)?|tail(?: -n \d+)?)\s+([^\s;&|<>$`*?]+)\s*\Z"
)
_HEREDOC_PATCH = re.compile(r"\A\s*apply_patch\s+<<-?\s*['\"]?(\w+)['\"]?\n(.*)\n\1\s*\Z", re.DOTALL)
ROLLOUT_TAIL = 256 * 1024  # bytes of the rollout read back for a call's exit status


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    name = event or data.get("hook_event_name") or ""
    name = name if name in EVENTS else IGNORED
    # the transcript is a Codex rollout, not Claude Code's: Stop's answer is last_assistant_message alone
    fields: dict[str, Any] = {"transcript_path": ""}
    tool_input = data.get("tool_input")
    if name == "PostToolUse" and data.get("tool_name") == "Bash" and isinstance(tool_input, dict):
        fields.update(_shell_fields(data, tool_input))
    elif name == "Stop" and _exec_session(data.get("transcript_path")):
        fields[SESSION_ENDS] = True  # `codex exec` runs one turn: its session ends with it
    return claude_event(AGENT, data, name, **fields)


SESSION_ENDS = "cmem_session_ends"


def _shell_fields(data: dict[str, Any], tool_input: dict[str, Any]) -> dict[str, Any]:
    """A shell call as the runner takes it: the command as a line, its exit status (from the output's header,
    else from the rollout: Codex 0.16x hands the hook the bare output), a patch given to ``apply_patch`` as
    a heredoc as the apply_patch tool, and a command that only shows a file as a Read of it."""
    fields: dict[str, Any] = {}
    command = tool_input.get("command")
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = shlex.join(command)  # an argv, not a line
        fields["tool_input"] = {**tool_input, "command": command}
    response = shell_output(data.get("tool_response"))
    if response is None:
        output = data.get("tool_response")
        response = {"stdout": output if isinstance(output, str) else ""}
        code = rollout_exit_code(data.get("transcript_path"), data.get("tool_use_id"))
        if code is not None:
            response["exit_code"] = code
    fields["tool_response"] = response
    if isinstance(command, str):
        name, tool_input, response = shell_as_tool(command, response)
        if name != "Bash":
            fields.update(tool_name=name, tool_input=tool_input, tool_response=response)
    return fields


def shell_as_tool(command: str, response: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A shell command as the tool it stands for (hook and ``cmem import codex`` alike): a patch given to
    ``apply_patch`` as a heredoc is the apply_patch tool, a command that only shows one file a Read of it."""
    patch = _HEREDOC_PATCH.match(command)
    if patch:
        return "apply_patch", {"command": patch.group(2) + "\n"}, response
    shown = _SHOW_FILE.match(command)
    if shown and response.get("exit_code", 0) == 0:
        return "Read", {"file_path": shown.group(1)}, {"file": {"content": response.get("stdout", "")}}
    return "Bash", {"command": command}, response


def rollout_exit_code(transcript: Any, call_id: Any) -> int | None:
    """The exit status Codex wrote for ``call_id`` in the rollout's last lines (its ``CommandExecution``
    item or the output's ``Process exited with code N`` header); None when it is not there."""
    if not isinstance(transcript, str) or not transcript or not isinstance(call_id, str) or not call_id:
        return None
    import json
    import os

    try:
        with open(transcript, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - ROLLOUT_TAIL))
            tail = f.read()
    except OSError:
        return None
    needle = json.dumps(call_id).encode()
    for line in reversed(tail.splitlines()):
        if needle not in line:
            continue
        try:
            payload = json.loads(line).get("payload") or {}
        except (ValueError, AttributeError):
            continue
        item = payload.get("item") if isinstance(payload, dict) else None
        if isinstance(item, dict) and item.get("id") == call_id and isinstance(item.get("exit_code"), int):
            return int(item["exit_code"])
        if isinstance(payload, dict) and payload.get("call_id") == call_id:
            parsed = shell_output(payload.get("output"))
            if parsed is not None and "exit_code" in parsed:
                return int(parsed["exit_code"])
    return None


def _exec_session(transcript: Any) -> bool:
    """The rollout's first line says the session is ``codex exec``'s (``source`` "exec")."""
    if not isinstance(transcript, str) or not transcript:
        return False
    import json

    try:
        with open(transcript, "rb") as f:
            first = f.readline(1 << 20)
        payload = json.loads(first).get("payload") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(payload, dict) and payload.get("source") == "exec"


def shell_output(text: Any) -> dict[str, Any] | None:
    """``Exit code: N`` / ``Wall time`` / ``Output:`` text as the Bash builder reads a response (also what
    Codex's rollouts hold for a shell call)."""
    if not isinstance(text, str):
        return None
    match = _SHELL_OUTPUT.match(text) or _EXEC_OUTPUT.match(text)
    return {"stdout": match.group(2), "exit_code": int(match.group(1))} if match else None


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """Codex reads Claude Code's SessionStart, UserPromptSubmit and PostToolUse answers as they are
    (``hookSpecificOutput.additionalContext``: the briefing, what prompt recall injects, and what file recall
    injects after a command that shows a file, which Codex 0.171 puts in the model's next request)."""
    return answer if event in ("SessionStart", "UserPromptSubmit", "PostToolUse") else None
