"""What every import of an agent's session files shares: the turn in progress, tool calls waiting for their
results, prompt numbering, the turn summary, and the byte offset a file is resumed from.

An agent's file format is read by a subclass of :class:`TurnReader` (Claude Code transcripts in
``transcripts.py``, Codex rollouts in ``codex_rollouts.py``, Gemini CLI chats in ``gemini_chats.py``), which
only says what each line means: a prompt (:meth:`TurnReader.prompt`), the agent's answer
(:meth:`TurnReader.answer`), a tool call and its result (:meth:`TurnReader.call`, :meth:`TurnReader.result`,
or :meth:`TurnReader.record` for a call that arrives with its result). Everything is written through one
:class:`~cmem_cli.capture.hooks.capture.Capture`, so its keys are the hooks' keys and nothing is stored twice.

Incremental: the byte offset reached in each file is kept (``transcript_offsets``) with the prompt counts at
that offset. Only complete lines are consumed, and the offset stops at the start of a turn that may still be
going on (tool calls waiting for results, an answer not written yet); a file untouched for ``settle_seconds``
is finished and its last turn is closed. (Plain classes here: the Stop hook imports the Claude Code reader,
and defining dataclasses costs a short-lived process.)
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from cmem_cli.capture.hooks.capture import Capture, Where
from cmem_cli.capture.hooks.payload import UNSAFE_ESCAPE, valid_texts
from cmem_cli.capture.hooks.state import fingerprint, prompt_prefix
from cmem_cli.capture.hooks.tools import ToolCall
from cmem_cli.core.config import DEFAULT_SETTLE_SECONDS
from cmem_cli.core.errors import CmemError, InvalidInput, NotFound
from cmem_cli.core.jsonin import loads_bounded
from cmem_cli.core.timeutil import now_ms, parse_iso

MAX_WHOLE_BYTES = 64 * 1024 * 1024  # a session file read whole (one JSON document), not line by line
# What a line or a record may fail with that is its own fault, not the store's or the disk's: the line or
# the record is dropped and counted, the rest of the file imported (a busy or unwritable store still stops
# the file, at an offset the next run resumes from).
BAD_INPUT = (InvalidInput, ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError)


def parse_json(text: str | bytes) -> Any:
    """A line or a document from an agent's file: nesting bounded, and texts JSON can carry but no file,
    database or terminal takes (NUL, lone surrogates) replaced by U+FFFD, as a hook's payload is."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    value = loads_bounded(text)
    return valid_texts(value) if "\\u" in text and re.search(UNSAFE_ESCAPE, text) else value


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
                parsed = parse_json(line)
                obj = parsed if isinstance(parsed, dict) else None
            except (ValueError, InvalidInput):
                if not complete:
                    return  # truncated: retried later
        elif not complete:
            return
        if line:
            yield offset + pos, offset + end, obj
        pos = end


def first_line(path: Path) -> dict[str, Any]:
    """A file's first line as a JSON object ({} when it is not one): where a session file names its session,
    read when an import resumes mid-file."""
    with open(path, "rb") as fh:
        line = fh.readline(1 << 20)
    try:
        obj = parse_json(line)
    except (ValueError, InvalidInput):
        return {}
    return obj if isinstance(obj, dict) else {}


def head_of(path: Path) -> str:
    """Identity of a file's beginning: if it changes, the file was replaced and is read from the start."""
    with open(path, "rb") as fh:
        first = fh.readline(4096)
    return fingerprint(first)


def timestamp_of(obj: dict[str, Any], name: str = "timestamp") -> int | None:
    """An ISO time field of a line, in epoch milliseconds (None when absent or unreadable)."""
    value = obj.get(name)
    try:
        return parse_iso(value) if isinstance(value, str) else None
    except InvalidInput:
        return None


def files_oldest_first(root: Path, pattern: str, what: str) -> list[Path]:
    """Every file under ``root`` matching ``pattern``, oldest first; NotFound (one line) without ``root``."""
    if not root.is_dir():
        raise NotFound(f"no {what} directory {root}")
    files = [p for p in root.rglob(pattern) if p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


class FileReport:
    """What importing one file did (``--json`` prints it)."""

    def __init__(self, path: str, error: str | None = None):
        self.path = path
        self.sessions: list[str] = []
        self.prompts = 0
        self.observations = 0
        self.summaries = 0
        self.bad_lines = 0
        self.dropped = 0  # records (a prompt, a tool call, a summary) that could not be stored: skipped
        self.offset = 0
        self.complete = False  # the whole file was consumed (nothing left open)
        self.error = error

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Pending(NamedTuple):
    """A tool call waiting for its result."""

    start: int
    counts: dict[str, int]
    where: Where
    name: str
    input: dict[str, Any]
    created_at: int | None


class Turn:
    """The turn in progress: its prompt and the agent's latest answer."""

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


class TurnReader:
    """Reading one file once: the open turn, the calls waiting for their results, the prompt counts.

    A subclass reads its agent's lines in :meth:`consume` and may read what resuming mid-file needs in
    :meth:`resume` (the session's id on the first line)."""

    noun = "transcript"  # how the errors name a file

    def __init__(self, importer: SessionImporter, path: Path, report: FileReport, counts: dict[str, int]):
        self.importer = importer
        self.capture = importer.capture
        self.path = path
        self.report = report
        self.counts = counts
        self.turn: Turn | None = None
        self.pending: dict[str, Pending] = {}
        self.cwd: str | None = None
        self.end = 0  # the end of the last line :meth:`lines` read

    # -- what a subclass provides ------------------------------------------------------------------------
    def consume(self, offset: int) -> int:
        """Read every complete line from ``offset``; the end offset reached."""
        raise NotImplementedError

    def resume(self, offset: int) -> None:
        """Called before :meth:`consume` when the file is read from ``offset`` > 0."""

    def read_whole(self, offset: int) -> tuple[int, dict[str, Any] | None]:
        """The file as one JSON object, for a format written whole rather than appended to: ``(size, None)``
        when it has not changed since ``offset`` (its size then) or is not an object. It is read from the
        start, so the prompt counts start again (the capture keys say what is stored already)."""
        size = self.path.stat().st_size
        if offset == size:
            return size, None
        self.counts.clear()
        obj: Any = None
        if size <= MAX_WHOLE_BYTES:
            try:
                obj = parse_json(self.path.read_bytes())
            except (ValueError, InvalidInput):
                obj = None
        if not isinstance(obj, dict):
            self.report.bad_lines += 1
            return size, None
        return size, obj

    # -- shared --------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def dropping(self, what: str = "dropped") -> Iterator[None]:
        """Read one line, or store one record, that may be bad: its failure is counted (``what``: the
        report's counter) and the import goes on past it, so one bad line never holds a file back for
        ever."""
        try:
            yield
        except BAD_INPUT:
            setattr(self.report, what, getattr(self.report, what) + 1)

    def lines(self, offset: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(start, object)`` of each readable line from ``offset`` (an unreadable one is counted);
        :attr:`end` follows the lines read. The caller handles each inside :meth:`dropping`."""
        self.end = offset
        for start, line_end, obj in read_lines(self.path, offset):
            self.end = line_end
            if obj is None:
                self.report.bad_lines += 1
                continue
            yield start, obj

    def where(self, session: str, agent: str) -> Where:
        """Who and where, for ``session``: the project is ``--project``, else the repository of the folder
        the session ran in."""
        project = self.importer.project or (self.importer.project_of(self.cwd) if self.cwd else None)
        if session not in self.report.sessions:
            self.report.sessions.append(session)
        return Where(session=session, project=project or self.fallback_project(), agent=agent)

    def fallback_project(self) -> str:
        """The project of a session whose folder is not known."""
        return "default"

    def prompt(self, start: int, where: Where, text: str, created_at: int | None) -> bool:
        """A real user prompt at byte ``start``: the previous turn ends, this one opens, the prompt is stored
        with its occurrence in the session (the hooks' key). False when nothing was left of the text."""
        prompt = self.capture.canonical_prompt(text)
        if not prompt:
            return False
        self.close(abandon=True)
        prefix = prompt_prefix(prompt)
        count_key = f"{where.session}\t{prefix}"
        before = dict(self.counts)
        self.counts[count_key] = self.counts.get(count_key, 0) + 1
        occurrence = self.counts[count_key]
        self.turn = Turn(start, before, where, prompt, f"{prefix}{occurrence}", created_at)
        with self.dropping():
            if self.capture.prompt(where, prompt, occurrence=occurrence, created_at=created_at):
                self.report.prompts += 1
        return True

    def answer(self, text: Any) -> None:
        """The agent's latest answer in the open turn (the turn summary's ``completed``)."""
        if isinstance(text, str) and text.strip() and self.turn is not None:
            self.turn.answer = text.strip()

    def call(
        self,
        call_id: str,
        start: int,
        where: Where,
        name: str,
        tool_input: dict[str, Any],
        created: int | None,
    ) -> None:
        """A tool call whose result comes on a later line."""
        self.pending[call_id] = Pending(start, dict(self.counts), where, name, tool_input, created)

    def result(self, call_id: str) -> Pending | None:
        """The call a result line answers (None: its call was before the resume point, already imported)."""
        return self.pending.pop(call_id, None)

    def record(self, where: Where, call: ToolCall, call_id: str | None, created_at: int | None) -> None:
        """Store one tool call's observation (keyed by ``call_id``, else by its arguments' occurrence)."""
        with self.dropping():
            if self.capture.tool(where, call, tool_use_id=call_id, created_at=created_at, counts=self.counts):
                self.report.observations += 1

    def close(self, *, abandon: bool) -> None:
        """A turn ends at the next prompt, at the agent's end-of-turn line, or when the file settles: it is
        summarised; with ``abandon``, calls that never got a result are recorded from their input alone."""
        if abandon:
            for call_id, pending in list(self.pending.items()):
                call = ToolCall(name=pending.name, input=pending.input, cwd=self.cwd)
                self.record(pending.where, call, call_id, pending.created_at)
            self.pending.clear()
        turn, self.turn = self.turn, None
        if turn is None or not turn.answer:
            return
        with self.dropping():
            if self.capture.turn_summary(
                turn.where, turn.answer, request=turn.prompt, prompt_key=turn.key, created_at=turn.created_at
            ):
                self.report.summaries += 1

    def finish(self, end: int, settled: bool) -> tuple[int, dict[str, int]]:
        """The offset to resume from and the prompt counts at that offset."""
        if settled:
            self.close(abandon=True)
            return end, self.counts
        marks = [(p.start, p.counts) for p in self.pending.values()]
        if self.turn is not None:
            marks.append((self.turn.start, self.turn.counts))
        if not marks:
            return end, self.counts
        return min(marks, key=lambda mark: mark[0])


class SessionImporter:
    """Imports an agent's session files through one :class:`Capture`, each file with its :attr:`reader`."""

    reader: type[TurnReader] = TurnReader

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
        noun = self.reader.noun
        try:
            stat = path.stat()
        except OSError as exc:
            raise NotFound(f"cannot read {noun} {path}: {exc.strerror}") from None
        if not path.is_file():
            raise InvalidInput(f"{path} is not a {noun} file")
        state = self.capture.state
        head = head_of(path) if stat.st_size else ""
        saved = state.offset(str(path))
        offset, counts = 0, {}
        if saved and saved["head"] == head and saved["offset"] <= stat.st_size:
            offset, counts = saved["offset"], dict(saved["counts"])
        # A zero settle time means "treat the file as finished": comparing against a just-written file's
        # mtime could otherwise come out negative by a clock tick and leave the last turn open.
        settled = (
            self.settle_seconds <= 0 or ((self.now or now_ms() / 1000) - stat.st_mtime) >= self.settle_seconds
        )
        run = self.reader(self, path, report, counts)
        if offset:
            run.resume(offset)
        end = run.consume(offset)
        safe, safe_counts = run.finish(end, settled)
        report.offset = safe
        report.complete = safe >= stat.st_size
        state.set_offset(str(path), safe, head, safe_counts, report.sessions[0] if report.sessions else None)
        return report

    def import_paths(self, paths: list[Path]) -> list[FileReport]:
        """Import several files; one unreadable file is reported, not fatal to the others."""
        reports = []
        for path in paths:
            try:
                reports.append(self.import_file(path))
            except CmemError as exc:
                reports.append(FileReport(path=str(path), error=exc.message))
            except OSError as exc:  # unreadable mid-way (a vanished file, a loop of links, an I/O error)
                reports.append(FileReport(path=str(path), error=f"cannot read it: {exc.strerror or exc}"))
            except (RuntimeError, *BAD_INPUT) as exc:  # Path.resolve's loop of links; input no reader foresaw
                reports.append(FileReport(path=str(path), error=f"cannot import it: {exc}"[:300]))
        return reports
