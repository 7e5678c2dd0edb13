"""The hooks' side of recall at the moment of need: on a prompt (UserPromptSubmit, Gemini's BeforeAgent) and
after a file is read or edited (PostToolUse on Read, Edit, MultiEdit, Write, NotebookEdit and the agents'
equivalents their adapters map onto them), and before a file is edited (PreToolUse on Edit, MultiEdit,
Write, NotebookEdit), the memories that clear the bar go back to the agent as ``additionalContext``, and the
session's capture log remembers them so none is given twice (a file's notes once a session, read or edit).

Loaded only by an event that may inject. A hook that has already spent ``[recall] budget_ms`` injects
nothing (the agent must not wait for a memory); a busy database is skipped the same way, and a hook that
answers before it records gives up the read itself at that budget (:func:`answer_first`). Each injection is
counted in hooks.log (``recall prompt|file session=… injected=N tokens=T ms=M``).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import DatabaseBusy

if TYPE_CHECKING:
    from cmem_cli.api import Memory
    from cmem_cli.capture.hooks.payload import HookPayload
    from cmem_cli.core.config import Config
    from cmem_cli.core.recall_settings import RecallSettings
    from cmem_cli.services.read.recall import Recall

# Claude Code's tools (and what the adapters rename others' to) that read or change one file.
FILE_TOOLS = {"Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
              "NotebookEdit": "notebook_path", "NotebookRead": "notebook_path"}  # fmt: skip


def answer(
    mem: Memory,
    payload: HookPayload,
    project: str,
    config: Config,
    started: float | None,
    *,
    given: Collection[str] = (),
    marks: list[str] | None = None,
) -> dict[str, Any] | None:
    """The hook's answer carrying what recall injects for this event, or None (nothing clears the bar,
    recall is off for this agent or point, the hook is over its budget, the database is busy).

    ``given``: capture-log keys the session was given by events not recorded yet (the spool's). With
    ``marks`` the store is only read: the keys of what was given are added to it for the caller to record
    with the event; without, they are recorded here before the answer."""
    asked = _asked(payload, config, started)
    if asked is None:
        return None
    point, subject, settings, begun = asked
    try:
        recall = mem.recorder.recall(
            point,
            subject,
            project=project,
            session=payload.session_id or "",
            cwd=payload.cwd,
            settings=settings,
            lines=_lines_read(payload) if point == "file" else None,
            given=given,
            record=marks is None,
        )
    except DatabaseBusy:
        return None
    return _answered(payload, config, recall, begun, marks)


def answer_first(
    payload: HookPayload, config: Config, started: float | None, *, given: Collection[str], marks: list[str]
) -> dict[str, Any] | None:
    """:func:`answer` for a hook that answers before it records: the store is opened for this read alone
    (:mod:`cmem_cli.services.read.recall_read`: no API, no write service), and what it does not finish by
    the hook's ``budget_ms`` it gives up (nothing is injected, the event is recorded all the same)."""
    asked = _asked(payload, config, started)
    if asked is None:
        return None
    point, subject, settings, begun = asked
    from cmem_cli.services.read.recall_read import read_recall

    try:
        recall = read_recall(
            config,
            point,
            subject,
            cwd=payload.cwd,
            session=payload.session_id or "",
            settings=settings,
            lines=_lines_read(payload) if point == "file" else None,
            given=given,
            deadline=(started if started is not None else begun) + settings.budget_ms / 1000,
        )
    except DatabaseBusy as exc:
        _log(config, f"recall {point} session={_short(payload.session_id or '')}: skipped, {exc.message}")
        return None
    return _answered(payload, config, recall, begun, marks)


def _asked(
    payload: HookPayload, config: Config, started: float | None
) -> tuple[str, str, RecallSettings, float] | None:
    """What this event asks recall (the point, the prompt or the file, the settings) and when recall began;
    None when nothing is to be asked: no subject or session, recall off, or the hook over its budget."""
    point = "prompt" if payload.event == "UserPromptSubmit" else "file"
    subject = payload.prompt if point == "prompt" else _file_of(payload)
    if not subject or not subject.strip() or not payload.session_id:
        return None
    from cmem_cli.core.recall_settings import recall_settings

    settings = recall_settings(config.section("recall"), payload.agent)
    if not settings.enabled(point) or settings.max_items == 0:
        return None
    begun = time.perf_counter()
    if started is not None and (begun - started) * 1000 > settings.budget_ms:
        _log(config, f"recall {point} session={_short(payload.session_id)}: skipped, the hook is over budget")
        return None
    return point, subject, settings, begun


def _answered(
    payload: HookPayload, config: Config, recall: Recall | None, begun: float, marks: list[str] | None
) -> dict[str, Any] | None:
    """The hook's answer for what recall found (logged in hooks.log), its given keys added to ``marks``."""
    if marks is not None and recall is not None:
        marks.extend(recall.given_keys)
    if recall is None or not recall.text:
        return None
    ms = (time.perf_counter() - begun) * 1000
    _log(
        config,
        f"recall {recall.point} session={_short(payload.session_id or '')} injected={len(recall.injected)} "
        f"tokens={recall.tokens} ms={ms:.0f}",
    )
    return {"hookSpecificOutput": {"hookEventName": payload.event, "additionalContext": recall.text}}


def before_edit(payload: HookPayload, config: Config, started: float | None) -> dict[str, Any] | None:
    """PreToolUse before an edit: the notes on the file, before the change is made (Claude Code adds
    ``additionalContext`` to what the model reads next). Nothing of the event is recorded (its PostToolUse
    is); the file is marked offered, so the read or edit that follows in the session repeats nothing."""
    from cmem_cli.api import Memory, excluded_project
    from cmem_cli.core.config import default_project

    if not payload.session_id or excluded_project(default_project(payload.cwd), config):
        return None
    try:
        with Memory(config=config) as mem:
            project = mem.project_here(payload.cwd)  # read only: the edit's PostToolUse records the rest
            if excluded_project(project, config):
                return None
            return answer(mem, payload, project, config, started)
    except DatabaseBusy:  # the agent must not wait for a memory
        return None


def _file_of(payload: HookPayload) -> str | None:
    field = FILE_TOOLS.get(payload.tool_name or "")
    value = payload.tool_input.get(field) if field else None
    if not isinstance(value, str) or not value.strip():
        return None
    from cmem_cli.capture.hooks.tools import relative_path

    return relative_path(value.strip(), payload.cwd)


def _lines_read(payload: HookPayload) -> tuple[int, int] | None:
    """The lines a Read took when it took part of the file (``offset`` counts from 1, ``limit`` lines)."""
    if payload.tool_name != "Read":
        return None
    offset, limit = payload.tool_input.get("offset"), payload.tool_input.get("limit")
    numbers = [v for v in (offset, limit) if isinstance(v, int) and not isinstance(v, bool)]
    if len(numbers) != 2 - (offset is None) - (limit is None) or not numbers:
        return None  # the whole file, or arguments this shape does not know
    start = max(1, offset) if isinstance(offset, int) else 1
    return (start, start + limit - 1) if isinstance(limit, int) and limit > 0 else (start, 10**9)


def _short(session: str) -> str:
    return session if len(session) <= 100 else session[:100] + "..."


def _log(config: Config, message: str) -> None:
    from cmem_cli.core.logfile import append_line

    append_line(config.log_dir, "hooks.log", message)


def with_watch_paths(
    mem: Memory, payload: HookPayload, project: str, config: Config, answer: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Claude Code's SessionStart answer with ``watchPaths``: the files this project's newest notes cite,
    so that a ``FileChanged`` hook re-checks those notes when one changes (file recall on, Claude Code
    only: other agents have no such watcher)."""
    if not payload.agent.startswith("claude-code") or not payload.cwd:
        return answer
    from cmem_cli.core.recall_settings import recall_settings

    if not recall_settings(config.section("recall"), payload.agent).file:
        return answer
    paths = mem.recorder.watch_paths(project, payload.cwd)
    if not paths:
        return answer
    specific = dict((answer or {}).get("hookSpecificOutput") or {"hookEventName": "SessionStart"})
    specific["watchPaths"] = paths
    return {**(answer or {}), "hookSpecificOutput": specific}


def file_changed(mem: Memory, payload: HookPayload, project: str, config: Config) -> None:
    """A watched file changed: the notes citing it are checked now, and those it left stale are told at
    the session's next prompt."""
    path = payload.raw.get("file_path")
    if not isinstance(path, str) or not path.strip() or not payload.session_id:
        return
    from cmem_cli.capture.hooks.tools import relative_path

    rel = relative_path(path.strip(), payload.cwd)
    try:
        changed = mem.recorder.recheck_file(rel, project=project, session=payload.session_id, cwd=payload.cwd)
    except DatabaseBusy:
        return
    if changed:
        _log(
            config, f"recall changed session={_short(payload.session_id)} file={rel} memories={len(changed)}"
        )
