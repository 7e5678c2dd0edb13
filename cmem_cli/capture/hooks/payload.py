"""Parse the JSON object a hook receives on stdin, tolerating missing, extra and mistyped fields.

Claude Code sends one object per event with ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``
and per-event fields (``prompt``, ``tool_name``, ``tool_input``, ``tool_response``, ``error``, ``source``,
``reason``, ``agent_id``/``agent_type`` inside subagents). Anything else is ignored; a wrong type degrades to
"absent" instead of failing the hook, and so does a folder that no system could open (a relative path, one
over ``PATH_MAX``, a name over ``NAME_MAX``). Texts JSON can carry but no file can (a lone surrogate from a
``\\udXXX`` escape, NUL) become U+FFFD on arrival, so such an event is recorded like any other instead of
failing half-way.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, NamedTuple

from cmem_cli.core.errors import InvalidInput

MAX_PAYLOAD_BYTES = 32 * 1024 * 1024  # tool responses can be large; beyond this something is wrong
MAX_PATH = 4_096  # PATH_MAX: a longer cwd or transcript path names no folder this system could open
MAX_NAME = 255  # NAME_MAX, in bytes, for each part of it
# The escapes whose texts no file, database or terminal takes: NUL and surrogates (JSON has no other way to
# write them; a raw control character is invalid JSON). Only a payload holding one is walked. Patterns,
# compiled (by ``re``'s cache) when a payload has an escape at all: the surrogates' class alone costs a
# fraction of a millisecond, on every hook.
UNSAFE_ESCAPE = r"\\u(?:0000|[dD][89a-fA-F])"
_UNSAFE_CHAR = "[\x00\ud800-\udfff]"

# Canonical event names; the CLI argument may be spelled session-start, session_start, sessionstart...
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStop",
    "SessionEnd",
    "PreCompact",
    "Notification",
    "FileChanged",
)
_BY_KEY = {name.lower(): name for name in EVENTS}


def canonical_event(name: str | None) -> str | None:
    """``session-start`` -> ``SessionStart``; unknown names keep their spelling (they are tolerated)."""
    if not name:
        return None
    key = name.replace("-", "").replace("_", "").strip().lower()
    return _BY_KEY.get(key, name.strip())


class HookPayload(NamedTuple):
    """One hook event, normalised. (NamedTuples, not dataclasses, on the hook path: defining a dataclass
    costs a short-lived process noticeably more.)"""

    event: str
    tool_input: dict[str, Any]
    raw: dict[str, Any]
    session_id: str | None = None
    cwd: str | None = None
    transcript_path: str | None = None
    agent: str = "claude-code"
    prompt: str | None = None
    tool_name: str | None = None
    tool_response: Any = None
    tool_use_id: str | None = None
    error: str | None = None
    interrupted: bool = False
    source: str | None = None  # SessionStart: startup | resume | clear | compact
    reason: str | None = None  # SessionEnd: clear | logout | prompt_input_exit | other
    last_assistant_message: str | None = None


def _path(data: dict[str, Any], *names: str) -> str | None:
    """An absolute path a system could open, else None (the hook then works where it was started)."""
    for name in names:
        value = data.get(name)
        if not isinstance(value, str) or not value.strip():
            continue
        value = value.strip()
        if len(value) > MAX_PATH or "\ufffd" in value or not os.path.isabs(value):
            return None
        if any(len(part.encode("utf-8", "replace")) > MAX_NAME for part in value.split(os.sep)):
            return None
        return value
    return None


def _text(data: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    return None


# The key an agent's adapter (``cmem hook --agent NAME``) adds to the payload it hands the runner: the agent
# travels with the event, through the spool too, and wins over ``$CMEM_AGENT`` (which a shell may export).
AGENT_KEY = "cmem_agent"


def agent_name(data: dict[str, Any]) -> str:
    """``claude-code`` for the main agent, ``claude-code/<agent_type>`` inside a subagent; another agent's
    name when its adapter set :data:`AGENT_KEY`."""
    base = _text(data, AGENT_KEY) or os.environ.get("CMEM_AGENT") or "claude-code"
    sub = _text(data, "agent_type", "agentType") or _text(data, "agent_id", "agentId")
    return f"{base}/{sub}" if sub else base


def decode(raw: bytes | str) -> dict[str, Any]:
    """The stdin bytes as a JSON object; InvalidInput (one line) when it is not one."""
    if isinstance(raw, bytes):
        if len(raw) > MAX_PAYLOAD_BYTES:
            raise InvalidInput(f"hook payload too large ({len(raw)} bytes)")
        text = raw.decode("utf-8", errors="replace")
    else:
        text = raw
    if not text.strip():
        raise InvalidInput("empty hook payload")
    try:
        from cmem_cli.core.jsonin import loads_bounded

        data = loads_bounded(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"hook payload is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"hook payload must be a JSON object, got {type(data).__name__}")
    return valid_texts(data) if "\\u" in text and re.search(UNSAFE_ESCAPE, text) else data


def valid_texts(value: Any) -> Any:
    """``value`` with every NUL and lone surrogate in its texts (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return re.sub(_UNSAFE_CHAR, "\ufffd", value)
    if isinstance(value, list):
        return [valid_texts(item) for item in value]
    if isinstance(value, dict):
        return {valid_texts(key): valid_texts(item) for key, item in value.items()}
    return value


def parse_payload(raw: bytes | str, event: str | None = None) -> HookPayload:
    """The payload of a ``cmem hook EVENT`` call: Claude Code's, or Copilot CLI's when Copilot runs the
    hooks of a repository's ``.claude/settings.json`` (recorded as ``copilot``)."""
    data = decode(raw)
    if AGENT_KEY not in data and _maybe_copilot(data):
        from cmem_cli.capture.agents.copilot import is_copilot, to_claude

        if is_copilot(data):
            data = to_claude(data, event)
    return payload_from(data, event)


def _maybe_copilot(data: dict[str, Any]) -> bool:
    """Cheap first look (the hook path): Claude Code's payloads carry ``permission_mode`` or
    ``transcript_path`` and never ``timestamp``."""
    return "timestamp" in data or "tool_result" in data or "permission_mode" not in data


def payload_from(data: dict[str, Any], event: str | None = None) -> HookPayload:
    """The payload of a decoded Claude Code-shaped object (what every agent's adapter produces)."""
    name = canonical_event(event) or canonical_event(_text(data, "hook_event_name", "hookEventName"))
    if not name:
        raise InvalidInput("no hook event: pass it as `cmem hook EVENT` or in hook_event_name")
    tool_input = data.get("tool_input", data.get("toolInput"))
    if tool_input is None:
        tool_input = {}
    elif not isinstance(tool_input, dict):
        tool_input = {"input": tool_input}
    error = data.get("error", data.get("error_message"))
    if error is not None and not isinstance(error, str):
        error = json.dumps(error, ensure_ascii=False)[:4000]
    return HookPayload(
        event=name,
        session_id=_text(data, "session_id", "sessionId"),
        cwd=_path(data, "cwd"),
        transcript_path=_path(data, "transcript_path", "transcriptPath"),
        agent=agent_name(data),
        prompt=data["prompt"] if isinstance(data.get("prompt"), str) else None,
        tool_name=_text(data, "tool_name", "toolName"),
        tool_input=tool_input,
        tool_response=data.get("tool_response", data.get("tool_result", data.get("toolResponse"))),
        tool_use_id=_text(data, "tool_use_id", "toolUseId"),
        error=error or None,
        interrupted=bool(data.get("is_interrupt") or data.get("isInterrupt")),
        source=_text(data, "source"),
        reason=_text(data, "reason"),
        last_assistant_message=_text(data, "last_assistant_message"),
        raw=data,
    )
