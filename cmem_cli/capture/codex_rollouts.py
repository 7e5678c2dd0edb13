"""Import Codex CLI's session rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``) into the same
sessions, prompts, observations and turn summaries its hooks record, incrementally.

Each line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (the session's ``id`` and ``cwd``),
``turn_context`` (the ``cwd`` of a turn), ``event_msg`` (``user_message`` is a prompt as typed,
``agent_message`` an answer, ``task_complete`` the end of a turn with ``last_agent_message``) and
``response_item`` (``function_call``/``custom_tool_call`` with a ``call_id``, answered by a
``function_call_output``/``custom_tool_call_output`` with the same id; messages, reasoning). Instructions and
environment context, which Codex also stores as user messages, are not prompts: only ``user_message`` events
are. Tool calls go through the hooks' observation builder with the hook's names (``Bash``, ``apply_patch``),
keyed by their call id as the PostToolUse hook keys them (its ``tool_use_id``), so a session the hooks already
captured adds nothing. Offsets work as for Claude Code transcripts (``capture/transcripts.py``): only complete
lines are consumed, and a file still being written is read again from its first open turn.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from cmem_cli.capture.agent_dirs import codex_dir
from cmem_cli.capture.hooks.adapters.codex import shell_as_tool, shell_output
from cmem_cli.capture.hooks.capture import Where
from cmem_cli.capture.hooks.tools import ToolCall
from cmem_cli.capture.turns import (
    FileReport,
    SessionImporter,
    TurnReader,
    files_oldest_first,
    first_line,
    timestamp_of,
)

AGENT = "codex"
SHELL_TOOLS = frozenset({"shell", "exec_command", "shell_command", "local_shell", "container.exec"})


def sessions_root() -> Path:
    """``$CODEX_HOME/sessions``, else ``~/.codex/sessions``."""
    return codex_dir() / "sessions"


def discover(root: Path) -> list[Path]:
    """Every rollout under ``root``, oldest first."""
    return files_oldest_first(root, "*.jsonl", "Codex session")


def tool_call(name: str, arguments: Any) -> tuple[str, dict[str, Any]]:
    """A rollout's tool call as the hooks name it: the shell tools are ``Bash`` with a command line."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = {"input": arguments}
        arguments = parsed if isinstance(parsed, dict) else {"input": parsed}
    args: dict[str, Any] = arguments if isinstance(arguments, dict) else {}
    if name in SHELL_TOOLS:
        command = args.get("command", args.get("cmd"))
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            # ["bash", "-lc", "pytest -q"] is the line "pytest -q"
            command = command[2] if len(command) == 3 and command[1] in ("-lc", "-c") else shlex.join(command)
        return "Bash", {"command": command if isinstance(command, str) else ""}
    if name == "apply_patch":
        return "apply_patch", {"command": args.get("input", args.get("patch", args.get("command", "")))}
    return name, args


def tool_output(output: Any) -> dict[str, Any]:
    """The response the Bash builder reads from a call's output: a JSON ``{"output", "metadata": {"exit_code"}}``, a text
    ``Exit code: N ... Output:``, or plain text."""
    if isinstance(output, dict):
        output = output.get("content", output.get("output", ""))
    if isinstance(output, list):
        output = "\n".join(str(item.get("text", "")) for item in output if isinstance(item, dict))
    if not isinstance(output, str):
        return {}
    try:
        parsed = json.loads(output)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "output" in parsed:
        meta = parsed.get("metadata") if isinstance(parsed.get("metadata"), dict) else {}
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        response: dict[str, Any] = {"stdout": str(parsed.get("output") or "")}
        if isinstance(code, int) and not isinstance(code, bool):
            response["exit_code"] = code
        return response
    return shell_output(output) or {"stdout": output}


def _user_text(payload: dict[str, Any]) -> str | None:
    """The prompt of a completed ``UserMessage`` item (Codex 0.16x on: there is no ``user_message`` event
    any more; the ``response_item`` user messages also hold instructions and environment context)."""
    item = payload.get("item")
    if not isinstance(item, dict) or item.get("type") != "UserMessage":
        return None
    parts = item.get("content")
    texts = [
        part["text"]
        for part in (parts if isinstance(parts, list) else [])
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


class _RolloutReader(TurnReader):
    """One rollout: the session, the open turn, calls waiting for their output."""

    noun = "rollout"

    def __init__(self, importer: SessionImporter, path: Path, report: FileReport, counts: dict[str, int]):
        super().__init__(importer, path, report, counts)
        self.session = path.stem

    def here(self) -> Where:
        return self.where(self.session, AGENT)

    def resume(self, offset: int) -> None:
        """Resuming mid-file: the session's id and folder are on its first line."""
        meta = first_line(self.path)
        payload = meta.get("payload") if meta.get("type") == "session_meta" else None
        if isinstance(payload, dict):
            self.session = str(payload.get("id") or self.session)
            self.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None

    def consume(self, offset: int) -> int:
        # a record that cannot be stored is dropped by the base's guard: one bad line never stops the file
        for start, obj in self.lines(offset):
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                continue
            kind, item = obj.get("type"), payload.get("type")
            if kind == "session_meta":
                self.session = str(payload.get("id") or self.session)
                self.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else self.cwd
                self.capture.start_session(self.here(), at=timestamp_of(obj) or timestamp_of(payload))
            elif kind == "turn_context" and isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]
            elif kind == "event_msg" and item == "user_message" and isinstance(payload.get("message"), str):
                self.prompt(start, self.here(), payload["message"], timestamp_of(obj))
            elif kind == "event_msg" and item == "item_completed" and _user_text(payload) is not None:
                self.prompt(start, self.here(), _user_text(payload) or "", timestamp_of(obj))
            elif kind == "event_msg" and item in ("agent_message", "task_complete"):
                self.answer(payload.get("message", payload.get("last_agent_message")))
                if item == "task_complete":
                    self.close(abandon=False)
            elif kind == "response_item" and item in (
                "function_call",
                "custom_tool_call",
                "local_shell_call",
            ):
                name, args = tool_call(
                    str(payload.get("name") or ("local_shell" if item == "local_shell_call" else "")),
                    payload.get("arguments", payload.get("input", payload.get("action"))),
                )
                call_id = str(payload.get("call_id") or payload.get("id") or "")
                self.call(call_id, start, self.here(), name, args, timestamp_of(obj))
            elif kind == "response_item" and item in ("function_call_output", "custom_tool_call_output"):
                call_id = str(payload.get("call_id") or "")
                call = self.result(call_id)
                if call is not None:
                    response = tool_output(payload.get("output"))
                    name, args = call.name, call.input
                    if name == "Bash" and isinstance(args.get("command"), str):
                        name, args, response = shell_as_tool(args["command"], response)
                    tool = ToolCall(name=name, input=args, response=response, cwd=self.cwd)
                    self.record(call.where, tool, call_id, call.created_at)
        return self.end


class RolloutImporter(SessionImporter):
    """Imports Codex CLI rollouts through one :class:`Capture`."""

    reader = _RolloutReader
