"""Import Gemini CLI's saved chats (``~/.gemini/tmp/<project>/chats/session-*.jsonl``) into the same sessions,
prompts, observations and turn summaries its hooks record, incrementally.

Gemini CLI records every conversation as it goes (its ``ChatRecordingService``): the first line holds the
session (``sessionId``, ``projectHash``, ``startTime``), then one line per message (``id``, ``timestamp``,
``type``: ``user``, ``gemini``, ``info``, ``error``, ``warning``; ``content``: a string or a list of parts).
A message is written again, whole, each time it grows (a ``gemini`` message gains its ``toolCalls``: ``id``,
``name``, ``args``, ``result`` as ``functionResponse`` parts, ``status``, ``resultDisplay``); ``{"$set": ...}``
lines change the session's fields (``summary``; ``messages``: the history again, after a compression), and
``{"$rewindTo": id}`` takes messages back, which cmem keeps (they happened). Chats written before Gemini CLI
moved to JSONL are one JSON object (``session-*.json``) with the same messages.

A tool call is recorded once, when it first appears (Gemini records a call when it has finished), through
the hook adapter's mapping (``replace`` is an Edit, ``run_shell_command`` a Bash call...). Gemini's hooks give
a call no id, so a call is keyed by its arguments and their occurrence in the session, as the AfterTool hook
keys it; a prompt by its text and occurrence, the turn summary by its prompt: importing a session the hooks
captured adds nothing. The folder a session ran in is the ``.project_root`` file Gemini CLI keeps beside
``chats/``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cmem_cli.capture.agent_dirs import gemini_dir
from cmem_cli.capture.hooks.adapters import gemini
from cmem_cli.capture.hooks.capture import Where
from cmem_cli.capture.hooks.tools import ToolCall
from cmem_cli.capture.turns import (
    FileReport,
    SessionImporter,
    TurnReader,
    first_line,
    timestamp_of,
)
from cmem_cli.core.errors import NotFound

AGENT = "gemini"
_SEEN = "seen\t"  # counts key of a message or tool call already read (a message is written again as it grows)


def chats_root() -> Path:
    """``$GEMINI_CLI_HOME/.gemini/tmp``, else ``~/.gemini/tmp``: one folder per project, chats in each."""
    return gemini_dir() / "tmp"


def discover(root: Path) -> list[Path]:
    """Every saved chat under ``root`` (``<project>/chats/session-*.jsonl``, and a ``.json`` one Gemini CLI
    has not moved to JSONL yet), oldest first."""
    if not root.is_dir():
        raise NotFound(f"no Gemini CLI chat directory {root}")
    files = []
    for path in root.glob("*/chats/session-*"):
        if not path.is_file() or path.suffix not in (".json", ".jsonl"):
            continue
        if path.suffix == ".json" and path.with_suffix(".jsonl").exists():
            continue  # resumed since: Gemini CLI copied it into the .jsonl
        files.append(path)
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


def _parts(content: Any) -> list[dict[str, Any]]:
    """A message's ``content`` (a string, a part, or a list of either) as a list of parts."""
    items = content if isinstance(content, list) else [content]
    return [
        {"text": item} if isinstance(item, str) else item for item in items if isinstance(item, str | dict)
    ]


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _response(result: Any) -> tuple[str, str | None]:
    """A tool call's output and error from its ``functionResponse`` parts (or plain text parts)."""
    outputs, errors = [], []
    for part in _parts(result):
        answer = part.get("functionResponse")
        response = answer.get("response") if isinstance(answer, dict) else None
        if isinstance(response, dict):
            if isinstance(response.get("output"), str):
                outputs.append(response["output"])
            if isinstance(response.get("error"), str):
                errors.append(response["error"])
        elif isinstance(part.get("text"), str):
            outputs.append(part["text"])
    return "\n".join(outputs), "\n".join(errors) or None


def mcp_servers(cwd: str | None) -> list[str]:
    """The MCP servers Gemini CLI knows (``mcpServers`` of the user's and the project's settings.json, and
    cmem's own), longest name first: a saved call names its tool ``mcp_<server>_<tool>`` alone, and the
    server's name is what tells the tool's apart (the hook has it from ``mcp_context``)."""
    names = {"cmem"}
    for folder in (gemini_dir(), Path(cwd) / ".gemini" if cwd else None):
        if folder is None:
            continue
        try:
            settings = json.loads((folder / "settings.json").read_bytes())
        except (OSError, ValueError):
            continue
        servers = settings.get("mcpServers") if isinstance(settings, dict) else None
        names.update(name for name in servers or () if isinstance(name, str) and name)
    return sorted(names, key=lambda name: (-len(name), name))


def tool_call(record: dict[str, Any], cwd: str | None, servers: Sequence[str] = ()) -> ToolCall:
    """A saved tool call as the AfterTool hook would have handed it on."""
    output, error = _response(record.get("result"))
    status = record.get("status")
    display = record.get("resultDisplay")
    if status == "error" and not error:
        error = display if isinstance(display, str) and display.strip() else "tool failed"
    payload = {
        "tool_name": record.get("name"),
        "tool_input": record.get("args"),
        "tool_response": {"llmContent": output, "returnDisplay": display, "error": error},
    }
    name = record.get("name") or ""
    for server in servers if name.startswith("mcp_") else ():
        if name.startswith(f"mcp_{server}_"):
            payload["mcp_context"] = {"server_name": server, "tool_name": name[len(server) + 5 :]}
            break
    fields = gemini.tool_fields(payload)
    return ToolCall(
        name=fields["tool_name"],
        input=fields["tool_input"],
        response=fields["tool_response"],
        error=fields["error"] if status in ("error", "cancelled") else None,
        interrupted=status == "cancelled",
        cwd=cwd,
    )


class _ChatReader(TurnReader):
    """One saved chat: its messages in the order written, each read once."""

    noun = "chat"

    def __init__(self, importer: SessionImporter, path: Path, report: FileReport, counts: dict[str, int]):
        super().__init__(importer, path, report, counts)
        self.session = path.stem
        self.cwd = _project_root(path)
        self.servers = mcp_servers(self.cwd)

    def fallback_project(self) -> str:
        return self.path.parent.parent.name or "default"  # the project's folder under ~/.gemini/tmp

    def here(self) -> Where:
        return self.where(self.session, AGENT)

    def resume(self, offset: int) -> None:
        """Resuming mid-file: the session's id is on its first line."""
        session = first_line(self.path).get("sessionId")
        if isinstance(session, str):
            self.session = session

    def consume(self, offset: int) -> int:
        if self.path.suffix == ".json":
            return self.consume_whole(offset)
        for start, obj in self.lines(offset):
            with self.dropping("bad_lines"):
                self.line(start, obj)
        return self.end

    def consume_whole(self, offset: int) -> int:
        """A chat from before JSONL: one object, read from the start whenever it changed."""
        size, obj = self.read_whole(offset)
        if obj is not None:
            self.line(0, obj)
        return size

    def line(self, start: int, obj: dict[str, Any]) -> None:
        changes = obj.get("$set")
        if isinstance(changes, dict):  # a history rebuilt after compression holds nothing not seen before
            if isinstance(changes.get("summary"), str) and changes["summary"].strip():
                self.capture.rec.label_sessions({self.session: changes["summary"]})
            return
        if "$rewindTo" in obj:
            return
        if isinstance(obj.get("sessionId"), str) and "type" not in obj:  # the session's first line
            self.session = obj["sessionId"]
            self.capture.start_session(self.here(), at=timestamp_of(obj, "startTime"))
            for message in obj.get("messages") or []:  # a whole chat on one line (the pre-JSONL format)
                if isinstance(message, dict):
                    self.message(start, message)
            if isinstance(obj.get("summary"), str) and obj["summary"].strip():
                self.capture.rec.label_sessions({self.session: obj["summary"]})
            return
        self.message(start, obj)

    def message(self, start: int, message: dict[str, Any]) -> None:
        kind = message.get("type")
        parts = _parts(message.get("content"))
        created = timestamp_of(message)
        if kind == "user":
            seen = f"{_SEEN}{message.get('id')}"
            if seen in self.counts or any("functionResponse" in part for part in parts):
                return  # already read, or a tool's answer passed back to the model
            text = gemini.typed_prompt(_text(parts))
            if text.strip() and self.prompt(start, self.here(), text, created):
                self.counts[seen] = 1
        elif kind == "gemini":
            self.answer(_text(parts))
            for record in message.get("toolCalls") or []:
                if not isinstance(record, dict) or not isinstance(record.get("name"), str):
                    continue
                seen = f"{_SEEN}{record.get('id')}"
                if seen in self.counts:
                    continue
                self.counts[seen] = 1
                self.record(
                    self.here(),
                    tool_call(record, self.cwd, self.servers),
                    None,
                    timestamp_of(record) or created,
                )


def _project_root(path: Path) -> str | None:
    """The folder a chat's project is (``.project_root`` beside ``chats/``; older Gemini CLI kept none)."""
    try:
        with open(path.parent.parent / ".project_root", encoding="utf-8") as fh:
            root = fh.read(4096).strip()
    except OSError:
        return None
    return root or None


class ChatImporter(SessionImporter):
    """Imports Gemini CLI chats through one :class:`Capture`."""

    reader = _ChatReader
