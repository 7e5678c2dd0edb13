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
import os
import shlex
from pathlib import Path
from typing import Any, NamedTuple

from cmem_cli.capture.hooks.adapters.codex import shell_output
from cmem_cli.capture.hooks.capture import Capture, Where
from cmem_cli.capture.hooks.state import prompt_prefix
from cmem_cli.capture.hooks.tools import ToolCall
from cmem_cli.capture.transcripts import DEFAULT_SETTLE_SECONDS, FileReport, _head, read_lines
from cmem_cli.core.errors import CmemError, InvalidInput, NotFound
from cmem_cli.core.timeutil import now_ms, parse_iso

AGENT = "codex"
SHELL_TOOLS = frozenset({"shell", "exec_command", "shell_command", "local_shell", "container.exec"})


def sessions_root() -> Path:
    """``$CODEX_HOME/sessions``, else ``~/.codex/sessions``."""
    base = os.environ.get("CODEX_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".codex") / "sessions"


def discover(root: Path) -> list[Path]:
    """Every rollout under ``root``, oldest first."""
    if not root.is_dir():
        raise NotFound(f"no Codex session directory {root}")
    files = [p for p in root.rglob("*.jsonl") if p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


class _Call(NamedTuple):
    start: int
    counts: dict[str, int]
    where: Where
    name: str
    input: dict[str, Any]
    created_at: int | None


def _time(obj: dict[str, Any]) -> int | None:
    value = obj.get("timestamp")
    try:
        return parse_iso(value) if isinstance(value, str) else None
    except InvalidInput:
        return None


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


class _Run:
    """Reading one rollout once: the session, the open turn, calls waiting for their output."""

    def __init__(
        self, capture: Capture, path: Path, report: FileReport, counts: dict[str, int], project: str | None
    ):
        self.capture = capture
        self.path = path
        self.report = report
        self.counts = counts
        self.project = project
        self.session = path.stem
        self.cwd: str | None = None
        self.pending: dict[str, _Call] = {}
        self.turn: tuple[int, dict[str, int], Where, str, str, int | None] | None = None
        self.answer: str | None = None

    def where(self) -> Where:
        project = self.project or (self.capture.rec.project_of(self.cwd) if self.cwd else "default")
        if self.session not in self.report.sessions:
            self.report.sessions.append(self.session)
        return Where(session=self.session, project=project, agent=AGENT)

    def consume(self, offset: int) -> int:
        end = offset
        for start, line_end, obj in read_lines(self.path, offset):
            end = line_end
            if obj is None:
                self.report.bad_lines += 1
                continue
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                continue
            kind, item = obj.get("type"), payload.get("type")
            if kind == "session_meta":
                self.session = str(payload.get("id") or self.session)
                self.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else self.cwd
                self.capture.start_session(self.where())
            elif kind == "turn_context" and isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]
            elif kind == "event_msg" and item == "user_message" and isinstance(payload.get("message"), str):
                self.prompt(start, payload["message"], _time(obj))
            elif kind == "event_msg" and item in ("agent_message", "task_complete"):
                text = payload.get("message", payload.get("last_agent_message"))
                if isinstance(text, str) and text.strip():
                    self.answer = text
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
                self.pending[call_id] = _Call(start, dict(self.counts), self.where(), name, args, _time(obj))
            elif kind == "response_item" and item in ("function_call_output", "custom_tool_call_output"):
                call = self.pending.pop(str(payload.get("call_id") or ""), None)
                if call is not None:
                    self.record(call, str(payload.get("call_id")), tool_output(payload.get("output")))
        return end

    def prompt(self, start: int, text: str, created: int | None) -> None:
        prompt = self.capture.canonical_prompt(text)
        if not prompt:
            return
        self.close(abandon=True)
        where = self.where()
        prefix = prompt_prefix(prompt)
        key = f"{where.session}\t{prefix}"
        before = dict(self.counts)
        self.counts[key] = self.counts.get(key, 0) + 1
        occurrence = self.counts[key]
        self.turn = (start, before, where, prompt, f"{prefix}{occurrence}", created)
        self.answer = None
        if self.capture.prompt(where, prompt, occurrence=occurrence, created_at=created):
            self.report.prompts += 1

    def record(self, call: _Call, call_id: str, response: Any) -> None:
        tool = ToolCall(name=call.name, input=call.input, response=response, cwd=self.cwd)
        if self.capture.tool(call.where, tool, tool_use_id=call_id, created_at=call.created_at):
            self.report.observations += 1

    def close(self, *, abandon: bool) -> None:
        if abandon:
            for call_id, call in list(self.pending.items()):
                self.record(call, call_id, None)
            self.pending.clear()
        turn, self.turn = self.turn, None
        if turn is None or not self.answer:
            return
        _, _, where, prompt, key, created = turn
        if self.capture.turn_summary(where, self.answer, request=prompt, prompt_key=key, created_at=created):
            self.report.summaries += 1
        self.answer = None

    def finish(self, end: int, settled: bool) -> tuple[int, dict[str, int]]:
        if settled:
            self.close(abandon=True)
            return end, self.counts
        marks = [(call.start, call.counts) for call in self.pending.values()]
        if self.turn is not None:
            marks.append((self.turn[0], self.turn[1]))
        return min(marks, key=lambda mark: mark[0]) if marks else (end, self.counts)


def import_rollouts(
    capture: Capture,
    paths: list[Path],
    *,
    project: str | None = None,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
) -> list[FileReport]:
    """Import rollouts; an unreadable file is reported, not fatal to the others."""
    reports = []
    for path in paths:
        try:
            reports.append(_import_file(capture, path, project, settle_seconds))
        except CmemError as exc:
            reports.append(FileReport(path=str(path), error=exc.message))
    return reports


def _import_file(capture: Capture, path: Path, project: str | None, settle_seconds: float) -> FileReport:
    path = path.expanduser().resolve()
    report = FileReport(path=str(path))
    try:
        stat = path.stat()
    except OSError as exc:
        raise NotFound(f"cannot read rollout {path}: {exc.strerror}") from None
    if not path.is_file():
        raise InvalidInput(f"{path} is not a rollout file")
    state = capture.state
    head = _head(path) if stat.st_size else ""
    saved = state.offset(str(path))
    offset, counts = 0, {}
    if saved and saved["head"] == head and saved["offset"] <= stat.st_size:
        offset, counts = saved["offset"], dict(saved["counts"])
    settled = settle_seconds <= 0 or (now_ms() / 1000 - stat.st_mtime) >= settle_seconds
    run = _Run(capture, path, report, counts, project)
    if offset:  # resuming mid-file: the session's id and folder are on its first line
        meta = _first_line(path)
        payload = meta.get("payload") if meta.get("type") == "session_meta" else None
        if isinstance(payload, dict):
            run.session = str(payload.get("id") or run.session)
            run.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    end = run.consume(offset)
    safe, safe_counts = run.finish(end, settled)
    report.offset = safe
    report.complete = safe >= stat.st_size
    state.set_offset(str(path), safe, head, safe_counts, report.sessions[0] if report.sessions else None)
    return report


def _first_line(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        line = fh.readline(1 << 20)
    try:
        obj = json.loads(line)
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}
