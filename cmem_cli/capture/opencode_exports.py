"""Import opencode sessions from the JSON ``opencode export SESSION_ID`` prints, into the same sessions,
prompts, observations and turn summaries its plugin records.

opencode keeps its sessions in a private store whose layout has changed from release to release (JSON files
under ``~/.local/share/opencode/storage/``, then the SQLite ``opencode.db``, then V2's tables), so cmem does
not read it; ``opencode export`` is its documented way out: ``{"info": Session, "messages": [{"info":
Message, "parts": [Part...]}]}``. A session's ``info`` has its ``id``, ``directory`` (hence the project) and
``title`` (the session's label); a message's ``info`` its ``role`` (``user`` or ``assistant``) and
``time.created`` (epoch milliseconds); its parts are ``text`` (``synthetic`` ones are opencode's, not the
person's), ``tool`` (``callID``, ``tool``, ``state``: ``status``, ``input``, ``output``, ``error``,
``metadata``, ``time``) and others cmem has no use for (reasoning, steps, snapshots, patches...).

A tool call goes through the plugin's adapter (``capture/hooks/adapters/opencode.py``) as the plugin's
``tool.execute.after`` would, keyed by its ``callID`` as the plugin keys it; a prompt is its text parts as
the plugin joins them; so importing a session the plugin captured adds nothing. An export is read whole each
time it changed (the capture keys say what is stored already). Written against opencode's
``packages/opencode/src/session/message-v2.ts`` and ``cli/cmd/export.ts``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cmem_cli.capture.hooks.adapters import opencode
from cmem_cli.capture.hooks.capture import Where
from cmem_cli.capture.hooks.tools import ToolCall
from cmem_cli.capture.turns import FileReport, SessionImporter, TurnReader

AGENT = "opencode"
_FINISHED = ("completed", "error")  # a call still pending or running has no result yet


def _text(parts: list[Any]) -> str:
    """The text parts opencode did not add itself, joined as the plugin joins a prompt's."""
    return "\n".join(
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and not part.get("synthetic")
        and isinstance(part.get("text"), str)
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _millis(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def tool_call(part: dict[str, Any], session: str, cwd: str | None) -> tuple[ToolCall, str | None, int | None]:
    """A saved tool part as the plugin's ``tool.execute.after`` hands it on: the call, its id, its time."""
    state = _dict(part.get("state"))
    metadata = state.get("metadata")
    shaped = opencode.to_claude(
        {
            "session_id": session,
            "cwd": cwd,
            "tool": part.get("tool"),
            "call_id": part.get("callID"),
            "args": state.get("input"),
            "output": state.get("output") if isinstance(state.get("output"), str) else "",
            "metadata": metadata if isinstance(metadata, dict) else {},
            "error": state.get("error") if state.get("status") == "error" else None,
        },
        "tool.execute.after",
    )
    call = ToolCall(
        name=shaped["tool_name"],
        input=shaped["tool_input"],
        response=shaped["tool_response"],
        error=shaped.get("error"),
        cwd=cwd,
    )
    times = _dict(state.get("time"))
    return call, shaped.get("tool_use_id"), _millis(times.get("end")) or _millis(times.get("start"))


class _ExportReader(TurnReader):
    """One export: the session's messages in order."""

    noun = "opencode export"

    def __init__(self, importer: SessionImporter, path: Path, report: FileReport, counts: dict[str, int]):
        super().__init__(importer, path, report, counts)
        self.session = path.stem

    def here(self) -> Where:
        return self.where(self.session, AGENT)

    def consume(self, offset: int) -> int:
        size, doc = self.read_whole(offset)
        if doc is None:
            return size
        info = _dict(doc.get("info"))
        self.session = str(info.get("id") or self.session)
        if isinstance(info.get("directory"), str) and info["directory"]:
            self.cwd = info["directory"]
        self.capture.start_session(self.here(), at=_millis(_dict(info.get("time")).get("created")))
        if isinstance(info.get("title"), str) and info["title"].strip():
            self.capture.rec.label_sessions({self.session: info["title"]})
        for message in doc.get("messages") or []:
            if isinstance(message, dict):
                self.message(message)
        return size

    def message(self, message: dict[str, Any]) -> None:
        info = _dict(message.get("info"))
        found = message.get("parts")
        parts: list[Any] = found if isinstance(found, list) else []
        created = _millis(_dict(info.get("time")).get("created"))
        if info.get("role") == "user":
            text = _text(parts)
            if text.strip():
                self.prompt(0, self.here(), text, created)
            return
        if info.get("role") != "assistant":
            return
        self.answer(_text(parts))
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "tool":
                state = part.get("state")
                if isinstance(state, dict) and state.get("status") in _FINISHED:
                    call, call_id, at = tool_call(part, self.session, self.cwd)
                    self.record(self.here(), call, call_id, at or created)


class ExportImporter(SessionImporter):
    """Imports opencode session exports through one :class:`Capture`."""

    reader = _ExportReader
