"""Import Claude Code transcripts (``~/.claude/projects/<dir>/<session>.jsonl``) into sessions, prompts,
observations and turn summaries, incrementally.

Each line is one JSON object: ``user`` and ``assistant`` lines wrap an Anthropic Messages ``message``
(text, ``tool_use`` and ``tool_result`` blocks; a user line carrying tool results also has the structured
``toolUseResult``, the same object a PostToolUse hook receives); ``summary``, ``system``,
``file-history-snapshot`` and any other types are tolerated. Tool calls go through the hook's observation
builder, so a hook and an import of the same session store the same records once.

Incremental: the byte offset reached in each file is kept in ``transcript_offsets``. Only lines ending in a
newline are consumed (a half-written last line is read again next time), and the offset stops at the start
of a turn that is still open (its tool results or final answer may come later). Lines read again are
recognised by their capture keys, so nothing is imported twice.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cmem_cli.capture.agent_dirs import claude_dir
from cmem_cli.capture.hooks.capture import Where
from cmem_cli.capture.hooks.tools import ToolCall, response_text
from cmem_cli.capture.turns import (
    FileReport,
    SessionImporter,
    TurnReader,
    timestamp_of,
)
from cmem_cli.core.errors import InvalidInput, NotFound
from cmem_cli.core.jsonin import loads_bounded

TAIL_BYTES = 512 * 1024
_MARKUP_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-caveat>",
    "<command-args>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)
_INTERRUPTED = ("[Request interrupted by user", "[Request cancelled")


def claude_projects_root() -> Path:
    """``$CLAUDE_CONFIG_DIR/projects`` when set, else ``~/.claude/projects``."""
    return claude_dir() / "projects"


def discover(root: Path) -> list[Path]:
    """Every ``*.jsonl`` under ``root`` (subagent transcripts included), oldest first; tool-result side
    files are not transcripts."""
    if not root.is_dir():
        raise NotFound(f"no transcript directory {root}")
    files = [p for p in root.rglob("*.jsonl") if p.is_file() and "tool-results" not in p.parts]
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


# --- message helpers ----------------------------------------------------------------------------------------


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text_of(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))


def _is_prompt(obj: dict[str, Any], blocks: list[dict[str, Any]]) -> str | None:
    """The text of a real user prompt, or None for tool results, meta lines, commands and subagent input."""
    if obj.get("isSidechain") or obj.get("isMeta") or obj.get("isCompactSummary"):
        return None
    if any(b.get("type") == "tool_result" for b in blocks):
        return None
    text = _text_of(blocks).strip()
    if not text or text.startswith(_MARKUP_PREFIXES) or text.startswith(_INTERRUPTED):
        return None
    return text


def last_assistant_text(path: Path, max_bytes: int = TAIL_BYTES) -> str | None:
    """The newest assistant text in a transcript, reading only its tail (the Stop hook's summary). Only a
    regular file is read, and at most ``max_bytes`` of it: a FIFO or a device named by the payload would
    hold the hook (and the agent) for ever, or read until memory runs out."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = os.pread(fd, max_bytes, max(0, info.st_size - max_bytes))
    except OSError:
        return None
    finally:
        os.close(fd)
    for raw in reversed(data.splitlines()):
        try:
            obj = loads_bounded(raw)
        except (ValueError, InvalidInput):
            continue
        if not isinstance(obj, dict) or obj.get("isSidechain"):
            continue
        kind = obj.get("type")
        if kind == "message" and isinstance(obj.get("message"), dict):
            kind = obj["message"].get("role")  # Factory Droid's session file: the role is in the message
        if kind == "user" and _is_prompt(obj, _blocks(obj.get("message"))):
            return None  # a new turn began after the last answer
        if kind == "assistant":
            text = _text_of(_blocks(obj.get("message"))).strip()
            if text:
                return text
    return None


# --- import -------------------------------------------------------------------------------------------------


class _ClaudeReader(TurnReader):
    """One Claude Code transcript: ``user`` lines are prompts or tool results, ``assistant`` lines answers
    and tool calls, ``summary`` and ``custom-title`` lines the session's label."""

    def __init__(self, importer: SessionImporter, path: Path, report: FileReport, counts: dict[str, int]):
        super().__init__(importer, path, report, counts)
        self.labels: dict[str, str] = {}

    def fallback_project(self) -> str:
        return self.path.parent.name.lstrip("-") or "default"

    def line_where(self, obj: dict[str, Any]) -> Where:
        session = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None
        if isinstance(obj.get("cwd"), str) and obj["cwd"]:
            self.cwd = obj["cwd"]
        agent = "claude-code"
        if obj.get("isSidechain") and isinstance(obj.get("agentId"), str):
            agent = f"claude-code/{obj['agentId']}"
        return self.where(session or self.path.stem, agent)

    def consume(self, offset: int) -> int:
        for start, obj in self.lines(offset):
            with self.dropping("bad_lines"):
                self.line(start, obj)
        return self.end

    def line(self, start: int, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if kind == "user":
            self.user_line(start, obj)
        elif kind == "assistant":
            self.assistant_line(start, obj)
        elif kind in ("summary", "custom-title") and isinstance(
            obj.get("summary") or obj.get("customTitle"), str
        ):
            self.labels[obj.get("sessionId") or self.path.stem] = obj.get("summary") or obj["customTitle"]

    def user_line(self, start: int, obj: dict[str, Any]) -> None:
        blocks = _blocks(obj.get("message"))
        created = timestamp_of(obj)
        prompt = _is_prompt(obj, blocks)
        if prompt:
            self.prompt(start, self.line_where(obj), prompt, created)
            return
        structured = obj.get("toolUseResult")
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for block in results:
            pending = self.result(str(block.get("tool_use_id")))
            if pending is None:
                continue
            response = (
                structured if isinstance(structured, dict) and len(results) == 1 else block.get("content")
            )
            failed = block.get("is_error") is True
            error = response_text(block.get("content")) if failed else None
            call = ToolCall(
                name=pending.name,
                input=pending.input,
                response=response,
                error=(error or "tool failed") if failed else None,
                interrupted=bool(error and error.startswith(_INTERRUPTED)),
                cwd=self.cwd,
            )
            self.record(pending.where, call, str(block.get("tool_use_id")), created or pending.created_at)

    def assistant_line(self, start: int, obj: dict[str, Any]) -> None:
        blocks = _blocks(obj.get("message"))
        where = self.line_where(obj)
        if not obj.get("isSidechain"):
            self.answer(_text_of(blocks))
        for block in blocks:
            if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                raw_input = block.get("input")
                tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                self.call(str(block.get("id")), start, where, block["name"], tool_input, timestamp_of(obj))

    def finish(self, end: int, settled: bool) -> tuple[int, dict[str, int]]:
        if self.labels:
            self.capture.rec.label_sessions(self.labels)
        return super().finish(end, settled)


class TranscriptImporter(SessionImporter):
    """Imports Claude Code transcript files through one :class:`Capture`."""

    reader = _ClaudeReader
