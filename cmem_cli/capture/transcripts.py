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
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from cmem_cli.capture.hooks.capture import Capture, Where
from cmem_cli.capture.hooks.state import fingerprint, prompt_prefix
from cmem_cli.capture.hooks.tools import ToolCall, response_text
from cmem_cli.core.errors import CmemError, InvalidInput, NotFound
from cmem_cli.core.jsonin import loads_bounded
from cmem_cli.core.timeutil import now_ms, parse_iso

DEFAULT_SETTLE_SECONDS = 300  # a transcript untouched this long is finished: its last turn is closed
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
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "projects"


def discover(root: Path) -> list[Path]:
    """Every ``*.jsonl`` under ``root`` (subagent transcripts included), oldest first; tool-result side
    files are not transcripts."""
    if not root.is_dir():
        raise NotFound(f"no transcript directory {root}")
    files = [p for p in root.rglob("*.jsonl") if p.is_file() and "tool-results" not in p.parts]
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


# --- reading lines ------------------------------------------------------------------------------------------


def read_lines(path: Path, offset: int) -> Iterator[tuple[int, int, dict[str, Any] | None]]:
    """``(start, end, object)`` for each complete line from ``offset``; ``object`` is None for a line that is
    not a JSON object. A last line without its newline is yielded only if it already parses (a writer that
    ended the file without one); otherwise it is left for the next run."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    pos = 0
    while pos < len(data):
        newline = data.find(b"\n", pos)
        complete = newline != -1
        end = newline + 1 if complete else len(data)
        line = data[pos:end].strip()
        obj: dict[str, Any] | None = None
        if line:
            try:
                parsed = loads_bounded(line.decode("utf-8", errors="replace"))
                obj = parsed if isinstance(parsed, dict) else None
            except (ValueError, InvalidInput):
                if not complete:
                    return  # truncated: retried later
        elif not complete:
            return
        if line:
            yield offset + pos, offset + end, obj
        pos = end


def _head(path: Path) -> str:
    """Identity of a file's beginning: if it changes, the file was replaced and is read from the start."""
    with open(path, "rb") as fh:
        first = fh.readline(4096)
    return fingerprint(first)


# --- message helpers ----------------------------------------------------------------------------------------


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text_of(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))


def _timestamp(obj: dict[str, Any]) -> int | None:
    value = obj.get("timestamp")
    if isinstance(value, str):
        try:
            return parse_iso(value)
        except InvalidInput:
            return None
    return None


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
        if obj.get("type") == "user" and _is_prompt(obj, _blocks(obj.get("message"))):
            return None  # a new turn began after the last answer
        if obj.get("type") == "assistant":
            text = _text_of(_blocks(obj.get("message"))).strip()
            if text:
                return text
    return None


# --- import -------------------------------------------------------------------------------------------------


class FileReport:
    """What importing one file did (``--json`` prints it)."""

    def __init__(self, path: str, error: str | None = None):
        self.path = path
        self.sessions: list[str] = []
        self.prompts = 0
        self.observations = 0
        self.summaries = 0
        self.bad_lines = 0
        self.offset = 0
        self.complete = False  # the whole file was consumed (nothing left open)
        self.error = error

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Pending(NamedTuple):
    """A tool call waiting for its result."""

    start: int
    counts: dict[str, int]
    where: Where
    name: str
    input: dict[str, Any]
    created_at: int | None


class _Turn:
    """The turn in progress: its prompt and the agent's latest answer. (Plain classes here: the Stop hook
    imports this module, and defining dataclasses costs a short-lived process.)"""

    __slots__ = ("answer", "counts", "created_at", "key", "prompt", "start", "where")

    def __init__(
        self, start: int, counts: dict[str, int], where: Where, prompt: str, key: str, created_at: int | None
    ):
        self.start = start
        self.counts = counts  # prompt occurrence counts before this turn's prompt
        self.where = where
        self.prompt = prompt
        self.key = key
        self.created_at = created_at
        self.answer: str | None = None


class TranscriptImporter:
    """Imports transcript files through one :class:`Capture`."""

    def __init__(
        self,
        capture: Capture,
        *,
        project: str | None = None,
        settle_seconds: float = DEFAULT_SETTLE_SECONDS,
        now: float | None = None,
    ):
        self.capture = capture
        self.project = project
        self.settle_seconds = settle_seconds
        self.now = now
        self._projects: dict[str, str] = {}

    def project_of(self, cwd: str) -> str:
        """The project of a session that ran in ``cwd`` (its repository's), asked once per folder."""
        found = self._projects.get(cwd)
        if found is None:
            found = self._projects[cwd] = self.capture.rec.project_of(cwd)
        return found

    def import_file(self, path: Path) -> FileReport:
        path = path.expanduser().resolve()
        report = FileReport(path=str(path))
        state = self.capture.state
        try:
            stat = path.stat()
        except OSError as exc:
            raise NotFound(f"cannot read transcript {path}: {exc.strerror}") from None
        if not path.is_file():
            raise InvalidInput(
                f"{path} is not a transcript file (for a folder: `cmem import claude-code --root`)"
            )
        head = _head(path) if stat.st_size else ""
        saved = state.offset(str(path))
        offset, counts = 0, {}
        if saved and saved["head"] == head and saved["offset"] <= stat.st_size:
            offset, counts = saved["offset"], dict(saved["counts"])
        # A zero settle time means "treat the file as finished": comparing against a just-written file's
        # mtime could otherwise come out negative by a clock tick and leave the last turn open.
        settled = (
            self.settle_seconds <= 0 or ((self.now or now_ms() / 1000) - stat.st_mtime) >= self.settle_seconds
        )
        run = _FileRun(self, path, report, counts)
        end = run.consume(offset)
        safe, safe_counts = run.finish(end, settled)
        report.offset = safe
        report.complete = safe >= stat.st_size
        state.set_offset(str(path), safe, head, safe_counts, report.sessions[0] if report.sessions else None)
        return report


class _FileRun:
    """The state of reading one file once: open turn, pending tool calls, prompt occurrence counts."""

    def __init__(self, importer: TranscriptImporter, path: Path, report: FileReport, counts: dict[str, int]):
        self.importer = importer
        self.capture = importer.capture
        self.path = path
        self.report = report
        self.counts = counts
        self.turn: _Turn | None = None
        self.pending: dict[str, _Pending] = {}
        self.cwd: str | None = None
        self.labels: dict[str, str] = {}

    def where(self, obj: dict[str, Any]) -> Where:
        session = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None
        session = session or self.path.stem
        if isinstance(obj.get("cwd"), str) and obj["cwd"]:
            self.cwd = obj["cwd"]
        project = self.importer.project or (
            self.importer.project_of(self.cwd) if self.cwd else self.path.parent.name.lstrip("-") or "default"
        )
        agent = "claude-code"
        if obj.get("isSidechain") and isinstance(obj.get("agentId"), str):
            agent = f"claude-code/{obj['agentId']}"
        if session not in self.report.sessions:
            self.report.sessions.append(session)
        return Where(session=session, project=project, agent=agent)

    def consume(self, offset: int) -> int:
        end = offset
        for start, line_end, obj in read_lines(self.path, offset):
            end = line_end
            if obj is None:
                self.report.bad_lines += 1
                continue
            kind = obj.get("type")
            if kind == "user":
                self.user_line(start, obj)
            elif kind == "assistant":
                self.assistant_line(start, obj)
            elif kind in ("summary", "custom-title") and isinstance(
                obj.get("summary") or obj.get("customTitle"), str
            ):
                self.labels[obj.get("sessionId") or self.path.stem] = obj.get("summary") or obj["customTitle"]
        return end

    def user_line(self, start: int, obj: dict[str, Any]) -> None:
        blocks = _blocks(obj.get("message"))
        created = _timestamp(obj)
        prompt = _is_prompt(obj, blocks)
        if prompt is not None:
            prompt = self.capture.canonical_prompt(prompt)
        if prompt:
            self.close_turn(abandon=True)
            where = self.where(obj)
            prefix = prompt_prefix(prompt)
            count_key = f"{where.session}\t{prefix}"
            before = dict(self.counts)
            self.counts[count_key] = self.counts.get(count_key, 0) + 1
            occurrence = self.counts[count_key]
            self.turn = _Turn(start, before, where, prompt, f"{prefix}{occurrence}", created)
            if self.capture.prompt(where, prompt, occurrence=occurrence, created_at=created):
                self.report.prompts += 1
            return
        structured = obj.get("toolUseResult")
        for block in blocks:
            if block.get("type") != "tool_result":
                continue
            pending = self.pending.pop(str(block.get("tool_use_id")), None)
            if pending is None:
                continue  # its tool_use was before the resume point and already imported
            results = [b for b in blocks if b.get("type") == "tool_result"]
            response = (
                structured if isinstance(structured, dict) and len(results) == 1 else block.get("content")
            )
            error = response_text(block.get("content")) if block.get("is_error") is True else None
            call = ToolCall(
                name=pending.name,
                input=pending.input,
                response=response,
                error=(error or "tool failed") if block.get("is_error") is True else None,
                interrupted=bool(error and error.startswith(_INTERRUPTED)),
                cwd=self.cwd,
            )
            self.record_tool(
                pending.where, call, str(block.get("tool_use_id")), created or pending.created_at
            )

    def assistant_line(self, start: int, obj: dict[str, Any]) -> None:
        blocks = _blocks(obj.get("message"))
        where = self.where(obj)
        text = _text_of(blocks).strip()
        if text and self.turn is not None and not obj.get("isSidechain"):
            self.turn.answer = text
        for block in blocks:
            if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                raw_input = block.get("input")
                tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                self.pending[str(block.get("id"))] = _Pending(
                    start, dict(self.counts), where, block["name"], tool_input, _timestamp(obj)
                )

    def record_tool(self, where: Where, call: ToolCall, tool_use_id: str, created: int | None) -> None:
        if self.capture.tool(where, call, tool_use_id=tool_use_id, created_at=created):
            self.report.observations += 1

    def close_turn(self, *, abandon: bool) -> None:
        """A turn ends when the next prompt starts or the file settles: summarise it; tool calls that never
        got a result are recorded from their input alone."""
        if abandon:
            for tool_id, pending in list(self.pending.items()):
                self.record_tool(
                    pending.where,
                    ToolCall(name=pending.name, input=pending.input, cwd=self.cwd),
                    tool_id,
                    pending.created_at,
                )
            self.pending.clear()
        turn, self.turn = self.turn, None
        if (
            turn is not None
            and turn.answer
            and self.capture.turn_summary(
                turn.where, turn.answer, request=turn.prompt, prompt_key=turn.key, created_at=turn.created_at
            )
        ):
            self.report.summaries += 1

    def finish(self, end: int, settled: bool) -> tuple[int, dict[str, int]]:
        """The offset to resume from and the prompt counts at that offset."""
        if self.labels:
            self.capture.rec.label_sessions(self.labels)
        if settled:
            self.close_turn(abandon=True)
            return end, self.counts
        marks = [(p.start, p.counts) for p in self.pending.values()]
        if self.turn is not None:
            marks.append((self.turn.start, self.turn.counts))
        if not marks:
            return end, self.counts
        return min(marks, key=lambda mark: mark[0])


def import_paths(
    capture: Capture,
    paths: list[Path],
    *,
    project: str | None = None,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
) -> list[FileReport]:
    """Import several transcripts; one unreadable file is reported, not fatal to the others."""
    importer = TranscriptImporter(capture, project=project, settle_seconds=settle_seconds)
    reports = []
    for path in paths:
        try:
            reports.append(importer.import_file(path))
        except CmemError as exc:
            reports.append(FileReport(path=str(path), error=exc.message))
    return reports
