"""Agent adapters: each maps one coding agent's hook payload into the Claude Code-shaped object the hook
runner takes (:func:`cmem_cli.capture.hooks.payload.payload_from`), and the runner's answer back into what that
agent reads. An adapter holds no capture logic of its own: the runner, the rules, the privacy scrubbing, the
spool and the capture log are the same for every agent.

``cmem hook --agent codex SessionStart`` loads only the adapter the agent's spec names (``cmem hook`` without
``--agent`` is Claude Code and loads none).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any, Protocol

from cmem_cli.capture.hooks.payload import AGENT_KEY
from cmem_cli.core.errors import InvalidInput

# The event an adapter hands the runner for an agent event cmem has no use for: answered without opening the
# database (see runner.PASSIVE_EVENTS).
IGNORED = "Notification"


class AgentAdapter(Protocol):
    """What the runner calls; each adapter module provides these two functions."""

    def to_claude(self, data: dict[str, Any], event: str | None) -> dict[str, Any]: ...

    def reply(self, event: str, answer: dict[str, Any] | None) -> dict[str, Any] | None: ...


def adapter_for(agent: str) -> AgentAdapter:
    """The adapter module the agent's registry spec names (:mod:`cmem_cli.capture.agents`)."""
    from cmem_cli.capture.agents import spec

    module = spec(agent).adapter
    if module is None:
        raise InvalidInput(f"agent {agent!r} sends Claude Code's own payload: no --agent needed")
    adapter: AgentAdapter = importlib.import_module(module)
    return adapter


def text(data: Mapping[str, Any], *names: str) -> str | None:
    """The first of ``names`` holding a non-blank string."""
    for name in names:
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def renamed(tool_input: Any, fields: Mapping[str, str]) -> dict[str, Any]:
    """``tool_input`` with the agent's argument names replaced by Claude Code's (others kept as they are)."""
    if isinstance(tool_input, str):  # some agents pass a tool's arguments as a JSON string
        try:
            tool_input = json.loads(tool_input)
        except ValueError:
            return {"input": tool_input}
    if not isinstance(tool_input, dict):
        return {} if tool_input is None else {"input": tool_input}
    return {fields.get(key, key): value for key, value in tool_input.items()}


def claude_event(agent: str, data: dict[str, Any], event: str, **fields: Any) -> dict[str, Any]:
    """The Claude Code-shaped object for one event: the agent's own fields, Claude Code's names on top, and
    the agent's name (:data:`AGENT_KEY`), which the runner records and the spool keeps."""
    shaped = {**data, **{key: value for key, value in fields.items() if value is not None}}
    shaped["hook_event_name"] = event
    shaped[AGENT_KEY] = agent
    return shaped


def briefing(answer: dict[str, Any] | None) -> str | None:
    """The session-start briefing in the runner's (Claude Code's) answer, if there is one."""
    specific = answer.get("hookSpecificOutput") if answer else None
    context = specific.get("additionalContext") if isinstance(specific, dict) else None
    return context if isinstance(context, str) else None
