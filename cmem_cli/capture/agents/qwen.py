"""Qwen Code: a Gemini CLI fork whose hooks took Claude Code's names and payload (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ``timestamp``; ``prompt``; ``tool_name``, ``tool_input``,
``tool_response``, ``tool_use_id``; ``error`` on PostToolUseFailure; ``last_assistant_message`` on Stop), in
``settings.json`` beside ``mcpServers``, timeouts in seconds. Its tools keep Gemini CLI's names and results
(``run_shell_command`` with ``Exit Code: N`` in ``llmContent``, ``read_file`` from a 0-based ``offset``), so
the payload goes through Gemini CLI's tool mapping. SessionStart and UserPromptSubmit answer as Claude Code's
(``hookSpecificOutput.additionalContext``). Read in @qwen-code/qwen-code 0.24.4 (npm):
``chunks/chunk-DPEB6S2R.js`` (HookEventHandler, createBaseInput, firePostToolUseEvent) and
``chunk-QA5TENCT.js`` (HookEventName). Project hooks run only in a folder Qwen Code trusts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture.agents import AgentSpec, Where, json_hooks, json_server

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

AGENT = "qwen"
# Event -> (matcher or None, timeout in seconds)
EVENTS: dict[str, tuple[str | None, int | None]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PostToolUse": ("*", 10),
    "PostToolUseFailure": ("*", 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
}
HANDLED = frozenset({*EVENTS, "PreToolUse", "PreCompact", "SubagentStart", "SubagentStop"})
# Qwen Code tool -> Gemini CLI's name for it (the rest are the same), or Claude Code's where Gemini has none
_AS_GEMINI = {"edit": "replace", "todo_write": "write_todos", "web_search": "google_web_search"}
_AS_CLAUDE = {"agent": "Task", "ask_user_question": "AskUserQuestion", "exit_plan_mode": "ExitPlanMode"}


def qwen_dir() -> Path:
    """Qwen Code's folder: ``~/.qwen``."""
    return Path.home() / ".qwen"


def files(scope: str, cwd: Path) -> Where:
    base = qwen_dir() if scope == "user" else cwd / ".qwen"
    return Where(base / "settings.json", base / "settings.json")


def instructions(scope: str, cwd: Path) -> Path:
    """Qwen Code's context file: ``~/.qwen/QWEN.md``, or ``QWEN.md`` at the project's root."""
    return qwen_dir() / "QWEN.md" if scope == "user" else cwd / "QWEN.md"


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_gemini

    options.pop("scope", None)
    return plan_gemini(where, events=EVENTS, agent=AGENT, **options)


def to_claude(data: dict[str, Any], event: str | None) -> dict[str, Any]:
    from cmem_cli.capture.hooks.adapters import IGNORED, claude_event, text

    name = event or text(data, "hook_event_name") or ""
    name = name if name in HANDLED else IGNORED
    fields: dict[str, Any] = {"transcript_path": ""}  # Qwen's transcript is its own: never read as Claude's
    if name in ("PostToolUse", "PostToolUseFailure"):
        fields.update(tool_fields(data, failed=name == "PostToolUseFailure"))
    return claude_event(AGENT, data, name, **fields)


def tool_fields(data: dict[str, Any], *, failed: bool) -> dict[str, Any]:
    """The tool call as Claude Code's fields, through Gemini CLI's mapping; a failed call's ``error`` is
    its output (a failed shell command's holds ``Exit Code: N``)."""
    from cmem_cli.capture.hooks.adapters import gemini, text

    tool = text(data, "tool_name") or ""
    error = text(data, "error")
    response = {"llmContent": error or ""} if failed else data.get("tool_response")
    fields = gemini.tool_fields({**data, "tool_name": _AS_GEMINI.get(tool, tool), "tool_response": response})
    if tool in _AS_CLAUDE:
        fields["tool_name"] = _AS_CLAUDE[tool]
    if failed:
        fields["error"] = error or "tool failed"
    return fields


def reply(event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """Qwen Code reads SessionStart's, UserPromptSubmit's and PostToolUse's
    ``hookSpecificOutput.additionalContext`` as Claude Code does (the briefing; prompt recall, added after
    the prompt; file recall, in the model's next request, as the real-client harness shows)."""
    return answer if event in ("SessionStart", "UserPromptSubmit", "PostToolUse") else None


SPEC = AgentSpec(
    name=AGENT,
    instructions=instructions,
    title="Qwen Code",
    program="qwen",
    user_dir=qwen_dir,
    files=files,
    events=EVENTS,
    plan=plan,
    adapter=__name__,
    installed=json_hooks,
    mcp_registered=json_server(),
    reference="@qwen-code/qwen-code 0.24.4 (npm), its bundled hook code",
    briefing="SessionStart hookSpecificOutput.additionalContext",
)
