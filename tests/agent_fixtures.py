"""Hand-written Claude Code hook payloads and transcript lines, shaped like the documented formats.

Hook payloads: one JSON object on stdin with ``session_id``, ``transcript_path``, ``cwd``,
``permission_mode``, ``hook_event_name`` and per-event fields (``source``; ``prompt``; ``tool_name``,
``tool_input``, ``tool_response``, ``tool_use_id``; ``error``/``is_interrupt``; ``stop_hook_active``,
``last_assistant_message``; ``reason``). Transcripts: one JSON object per line, ``user``/``assistant`` lines
wrapping Anthropic Messages with envelope fields (``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``,
``cwd``, ``gitBranch``, ``version``), tool results on user lines with ``toolUseResult``, plus ``summary``,
``system`` and ``file-history-snapshot`` lines.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import apsw

AGENT_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents"


def recorded_payload(agent: str, name: str, project: Path, session: str) -> dict[str, Any]:
    """An agent's recorded (or documented) payload, tests/fixtures/agents/AGENT/NAME.json, with this test's
    folders and session filled in for its placeholders."""
    text = (AGENT_FIXTURES / agent / f"{name}.json").read_text()
    values = {
        "@CWD@": str(project),
        "@OUTSIDE@": str(project.parent.parent / "elsewhere"),
        "@HOME@": str(project.parent.parent / "user"),
        "@SESSION@": session,
    }
    for placeholder, value in values.items():
        text = text.replace(placeholder, json.dumps(value)[1:-1])
    data: dict[str, Any] = json.loads(text)
    return data


def payload(event: str, session: str, cwd: Path | str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-work-app/{session}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def tool_payload(
    session: str,
    cwd: Path | str,
    tool: str,
    tool_input: dict[str, Any],
    response: Any = None,
    tool_use_id: str | None = None,
    event: str = "PostToolUse",
    **fields: Any,
) -> dict[str, Any]:
    return payload(
        event,
        session,
        cwd,
        tool_name=tool,
        tool_input=tool_input,
        tool_response=response if response is not None else {},
        tool_use_id=tool_use_id or f"toolu_{uuid.uuid4().hex[:20]}",
        **fields,
    )


def db_rows(home: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = apsw.Connection(str(home / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def all_stored_bytes(home: Path) -> bytes:
    """Every byte cmem keeps: the database, its WAL and shared memory, and the whole export tree."""
    chunks = []
    for path in sorted(home.rglob("*")):
        if path.is_file() and "logs" not in path.parts:
            chunks.append(path.read_bytes())
    return b"\n".join(chunks)


class Transcript:
    """Builds a Claude Code session transcript line by line."""

    def __init__(self, session: str, cwd: Path | str, start: str = "2026-03-02T09:00:00"):
        self.session = session
        self.cwd = str(cwd)
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.second = 0
        self.start = start

    def _envelope(self, kind: str, **extra: Any) -> dict[str, Any]:
        self.second += 1
        line_uuid = str(uuid.uuid4())
        envelope = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": line_uuid,
            "timestamp": f"{self.start}.{self.second:03d}Z",
            **extra,
        }
        self.parent = line_uuid
        return envelope

    def summary(self, text: str) -> Transcript:
        self.lines.append({"type": "summary", "summary": text, "leafUuid": str(uuid.uuid4())})
        return self

    def prompt(self, text: str) -> Transcript:
        self.lines.append(self._envelope("user", message={"role": "user", "content": text}))
        return self

    def say(self, text: str) -> Transcript:
        self.lines.append(
            self._envelope(
                "assistant",
                message={
                    "id": f"msg_{uuid.uuid4().hex[:16]}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": None,
                    "usage": {"input_tokens": 1200, "output_tokens": 40},
                },
                requestId=f"req_{uuid.uuid4().hex[:12]}",
            )
        )
        return self

    def tool(
        self,
        name: str,
        tool_input: dict[str, Any],
        result: Any,
        *,
        structured: Any = None,
        is_error: bool = False,
        tool_id: str | None = None,
    ) -> Transcript:
        tool_id = tool_id or f"toolu_{uuid.uuid4().hex[:20]}"
        self.lines.append(
            self._envelope(
                "assistant",
                message={
                    "id": f"msg_{uuid.uuid4().hex[:16]}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
                    "stop_reason": "tool_use",
                },
            )
        )
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": result}
        if is_error:
            block["is_error"] = True
        extra = {"toolUseResult": structured} if structured is not None else {}
        self.lines.append(self._envelope("user", message={"role": "user", "content": [block]}, **extra))
        return self

    def tool_use_only(self, name: str, tool_input: dict[str, Any], tool_id: str) -> Transcript:
        self.lines.append(
            self._envelope(
                "assistant",
                message={
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
                },
            )
        )
        return self

    def tool_result_only(self, tool_id: str, result: str, structured: Any = None) -> Transcript:
        extra = {"toolUseResult": structured} if structured is not None else {}
        self.lines.append(
            self._envelope(
                "user",
                message={
                    "role": "user",
                    "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": result}],
                },
                **extra,
            )
        )
        return self

    def bookkeeping(self) -> Transcript:
        self.lines.append(
            {
                "type": "file-history-snapshot",
                "messageId": str(uuid.uuid4()),
                "snapshot": {"trackedFileBackups": {}},
                "isSnapshotUpdate": False,
            }
        )
        self.lines.append(self._envelope("system", subtype="turn_duration", content="", level="info"))
        return self

    def text(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text(), encoding="utf-8")
        return path
