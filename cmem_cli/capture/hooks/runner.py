"""``cmem hook [--agent AGENT] EVENT``: one agent hook call, start to finish, in a plain process (no daemon,
no port). Claude Code's payload is the runner's own; another agent's adapter
(:mod:`cmem_cli.capture.hooks.adapters`) maps its payload into that shape first and the runner's answer back
into the agent's, so every agent goes through this one runner and one capture path.

A hook must never break or slow the agent: it always exits 0, writes its own problems to
``<home>/logs/hooks.log`` instead of the agent's screen, and imports only what the event needs (typer is
never loaded: ``cmem_cli.__main__`` routes ``hook`` here directly).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cmem_cli.core.errors import CmemError, DatabaseBusy, DatabaseCorrupt, InvalidInput
from cmem_cli.core.logfile import append_line

if TYPE_CHECKING:
    from cmem_cli.api import Memory
    from cmem_cli.capture.hooks.adapters import AgentAdapter
    from cmem_cli.capture.hooks.payload import HookPayload
    from cmem_cli.capture.hooks.rules import HookRules
    from cmem_cli.core.config import Config

LOG_NAME = "hooks.log"
SLOW_MS = 1_000
SPOOL_SESSION = ""  # agent_captures rows ("", "<spool file name>") mark replayed events
REPLAY_LIMIT = 50  # spooled events replayed per hook call, so one call never takes long
# How long the marks of replayed spool files are kept: far longer than any claim is held (a claim of a
# dead process is taken over at the next hook, at most STALE_CLAIM_SECONDS later when its pid was reused).
SPOOL_MARKS_KEPT_MS = 7 * 24 * 3600 * 1000
# Events that only need bookkeeping we do not keep: answered without opening the database.
# The end of a turn or a session: what it wrote is indexed now, by a pass the hook starts and never waits for.
TURN_ENDS = frozenset({"Stop", "SessionEnd"})
PASSIVE_EVENTS = frozenset({"PreToolUse", "PreCompact", "Notification", "PermissionRequest", "SubagentStart"})
# Tools after which file recall may answer (capture/hooks/recall.py maps each to its path argument).
RECALL_TOOLS = frozenset({"Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "NotebookRead"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})  # and before these (PreToolUse)
STARTED: list[float | None] = [None]  # when this hook call began: recall injects nothing past its budget
# Events whose answer comes from the store: the agent waits for them. Every other event answers "go on"
# and is recorded after the hook's process has exited (see :func:`_detach`).
ANSWERING_EVENTS = frozenset({"SessionStart"})
# Events whose detached child builds the next SessionStart's briefing after recording (core.briefing_cache)
BRIEFED_AFTER = frozenset({"SessionStart", "Stop", "SessionEnd"})
DETACH_SWITCH = "CMEM_HOOK_DETACH"
TEST_DIE = "CMEM_HOOK_TEST_DIE"  # tests only: a detached child kills itself at this point


def log_line(log_dir: Path, message: str) -> None:
    """Append one line to hooks.log (rotated at ~1 MB); never raises."""
    append_line(log_dir, LOG_NAME, message)


def _read_stdin(stdin: IO[bytes]) -> bytes:
    try:
        if stdin.isatty():
            return b""  # run by hand without a payload: do not wait for a terminal
    except (AttributeError, ValueError):
        pass
    return stdin.read()


def _parse_args(args: list[str]) -> tuple[str | None, str | None, str | None]:
    """``[--home DIR] [--agent NAME] [EVENT]`` in any order; unknown options are ignored (hooks must not fail
    on them). Returns (event, home, agent)."""
    found: dict[str, str | None] = {"--home": None, "--agent": None}
    event = None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name, equals, value = arg.partition("=")
        if name in found and equals:
            found[name] = value
        elif arg in found and rest:
            found[arg] = rest.pop(0)
        elif not arg.startswith("-") and event is None:
            event = arg
    return event, found["--home"], found["--agent"]


def run(
    args: list[str],
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    config: Config | None = None,
    detach: bool = False,
) -> int:
    """Handle one hook call; the exit status is always 0. ``config`` is given when typer already loaded it;
    ``detach``: the call is a process of its own, which may record the event after it exits."""
    started = time.perf_counter()
    STARTED[0] = started
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    event_arg, home, agent = _parse_args(args)
    log_dir: Path | None = None
    event, session = event_arg or "?", None
    try:
        raw = _read_stdin(stdin)
        from cmem_cli.core.config import load_config, resolve_home

        log_dir = config.log_dir if config is not None else resolve_home(home) / "logs"
        config = config if config is not None else load_config(home)
        log_dir = config.log_dir
        adapter: AgentAdapter | None = None
        if agent is not None and agent != "claude-code":
            from cmem_cli.capture.hooks.adapters import adapter_for
            from cmem_cli.capture.hooks.payload import decode, payload_from

            adapter = adapter_for(agent)
            payload = payload_from(adapter.to_claude(decode(raw), event_arg))
        else:
            from cmem_cli.capture.hooks.payload import parse_payload

            payload = parse_payload(raw, event_arg)
        event, session = payload.event, _shown(payload.session_id)
        output: dict[str, Any] | None = None
        if detach and _detaching(config) and _answers_first(payload, config):
            # Answered at once (a briefing, recall or "go on", read from the store alone), recorded after
            # the hook's process has exited by a child the agent does not wait for (see _answer_then_record).
            _answer_then_record(payload, config, adapter, stdout, log_dir)
            adapter = None
            return 0
        try:
            payload = _scrubbed(payload, config)
            output = _dispatch(payload, config)
        except DatabaseBusy:
            # Not an error: waiting longer would slow the agent, and the event is kept, not lost.
            _spool(config, payload)
            _log(
                log_dir,
                home,
                f"spooled {event} session={session or '-'}: the database stayed locked past busy_timeout_ms;"
                " the next hook replays the event",
            )
        except DatabaseCorrupt as exc:
            # a lost or damaged store: keep the event until `cmem doctor` has been followed
            _spool(config, payload)
            raise DatabaseCorrupt(f"{exc.message} (event spooled until the store is usable)") from None
        else:
            _answer(stdout, adapter.reply(payload.event, output) if adapter is not None else output)
            _replay_spooled(config, log_dir)
            if event in TURN_ENDS:
                from cmem_cli.api.index import Index

                Index(config).refresh()  # detached: the hook never waits for the index
            adapter = None  # answered
        finally:
            if adapter is not None:  # an agent that waits for an answer gets one even when the event was kept
                _answer(stdout, adapter.reply(payload.event, None))
    except CmemError as exc:
        _log(log_dir, home, f"error {event} session={session or '-'}: {exc.message}")
    except BrokenPipeError:
        pass
    except Exception as exc:  # a bug: keep the traceback in the log, not on the agent's screen
        import traceback

        detail = "".join(traceback.format_exception(exc)).rstrip().replace("\n", "\n    ")
        _log(
            log_dir, home, f"bug {event} session={session or '-'}: {type(exc).__name__}: {exc}\n    {detail}"
        )
    elapsed_ms = (time.perf_counter() - started) * 1000
    if elapsed_ms > SLOW_MS:
        _log(log_dir, home, f"slow {event} session={session or '-'}: {elapsed_ms:.0f} ms")
    return 0


def _scrubbed(payload: HookPayload, config: Config) -> HookPayload:
    """The event as a replay of its spooled copy sees it: every string scrubbed, its session id too (a
    ``<private>`` span or a secret there would otherwise name the session's rows and export folder)."""
    if payload.event in PASSIVE_EVENTS:
        return payload  # nothing is recorded
    from cmem_cli.capture.hooks.payload import payload_from
    from cmem_cli.capture.hooks.spool import scrubbed

    return payload_from(scrubbed(payload.raw, config), payload.event)


def _recalls(payload: HookPayload, config: Config) -> bool:
    """Whether recall may answer this event (a prompt, a file read or edited): the agent then waits for the
    answer, so the event is recorded before it, not by a detached child (docs/recall.md)."""
    if payload.event == "UserPromptSubmit" and payload.prompt:
        point = "prompt"
    elif payload.tool_name in (RECALL_TOOLS if payload.event == "PostToolUse" else EDIT_TOOLS) and (
        payload.event in ("PostToolUse", "PreToolUse")
    ):
        point = "file"
    else:
        return False
    from cmem_cli.core.recall_settings import recall_settings

    return recall_settings(config.section("recall"), payload.agent).enabled(point)


def _detaching(config: Config) -> bool:
    """Whether write-only events are recorded after the hook returns: yes unless ``CMEM_HOOK_DETACH=off``
    or ``[hooks] detach = false`` (then the agent waits for the write, as a test may want)."""
    import os

    value = os.environ.get(DETACH_SWITCH)
    if value is not None:
        return value.strip().lower() not in ("off", "0", "false", "no")
    setting = config.section("hooks").get("detach", True)
    return setting is not False and str(setting).lower() not in ("off", "0", "false", "no")


def _detach(stdout: IO[str]) -> None:
    """Fork: the hook's own process exits now (the agent stops waiting: it waits for the process, not for
    the write), the child goes on in a session of its own with its output nowhere. Where fork fails the
    caller simply goes on in the foreground."""
    import os

    stdout.flush()
    try:
        pid = os.fork()
    except (OSError, AttributeError):
        return
    if pid:  # the hook the agent started: done, without the interpreter's teardown
        if sys.dont_write_bytecode:
            from cmem_cli import compile_if_missing

            compile_if_missing()
        os._exit(0)
    os.setsid()  # no signal to the hook's process group (a timeout's kill) reaches the write
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _test_point(name: str) -> None:
    """Die (SIGKILL) at a named point of a detached child when ``CMEM_HOOK_TEST_DIE`` names it: how the
    tests show that a kill at any point loses nothing."""
    import os

    if os.environ.get(TEST_DIE) == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _shown(session: str | None) -> str | None:
    """A session id as the log names it: one the store would refuse may be megabytes long."""
    return session if session is None or len(session) <= 100 else session[:100] + "..."


def _answer(stdout: IO[str], output: dict[str, Any] | None) -> None:
    if output is not None:
        stdout.write(json.dumps(output, ensure_ascii=False))
        stdout.write("\n")
        stdout.flush()


def _log(log_dir: Path | None, home: str | None, message: str) -> None:
    if log_dir is None:
        try:
            from cmem_cli.core.config import resolve_home

            log_dir = resolve_home(home) / "logs"
        except Exception:
            return
    log_line(log_dir, message.replace("\r", " "))


def _spool(config: Config, payload: HookPayload) -> None:
    from cmem_cli.capture.hooks import spool
    from cmem_cli.core.timeutil import now_ms

    spool.keep(config, payload, now_ms())


def _answers_first(payload: HookPayload, config: Config) -> bool:
    """Whether the event is answered before it is recorded: every event of a session but the passive ones
    (nothing to record), and a PreToolUse before an edit that file recall may answer (what it gives is
    recorded after); an event without a session is refused in the foreground, where it is logged."""
    if not payload.session_id:
        return False
    return payload.event not in PASSIVE_EVENTS or (
        payload.event == "PreToolUse" and _recalls(payload, config)
    )


def _answer_then_record(
    payload: HookPayload, config: Config, adapter: AgentAdapter | None, stdout: IO[str], log_dir: Path
) -> None:
    """Answer first, record after. The event is spooled (scrubbed, fsynced) before the answer goes out;
    then the hook's process exits and a detached child replays that file (:func:`_replay_spooled`), so a
    kill at any point loses nothing and records nothing twice: a dead child's event is the next hook's.

    What the agent waits for is read from the store alone, with no write transaction and no wait for the
    write lock: SessionStart's briefing, and recall's memories for a prompt or a file (whose marks, what
    the session was given, are spooled with the event and recorded by its replay)."""
    from cmem_cli.capture.hooks import spool
    from cmem_cli.core.timeutil import now_ms

    at = now_ms()  # the event's time: the order of a session's events is kept whoever records it
    output: dict[str, Any] | None = None
    marks: tuple[str, ...] = ()
    if payload.event == "SessionStart":
        try:
            output = _briefing_first(payload, config)
        except (
            CmemError
        ) as exc:  # no briefing (a busy or damaged store): the session is recorded all the same
            log_line(log_dir, f"error SessionStart session={_shown(payload.session_id)}: {exc.message}")
    elif _recalls(payload, config):
        output, marks = _recall_first(payload, config)
    if payload.event in PASSIVE_EVENTS and not marks:  # nothing to record: a PreToolUse that gave nothing
        _answer(stdout, adapter.reply(payload.event, output) if adapter is not None else output)
        return
    kept: Path | None = None
    failed: OSError | None = None
    try:
        kept = spool.keep(config, payload, at, marks)
    except OSError as exc:  # a full disk or a read-only home: record it in the child all the same
        failed = exc
    _answer(stdout, adapter.reply(payload.event, output) if adapter is not None else output)
    if kept is None and failed is None:
        return  # an excluded project: nothing is kept
    _detach(stdout)
    if failed is not None:
        log_line(log_dir, f"error {payload.event}: cannot spool the event ({failed}); recording it now")
        _record_now(payload, config, at, marks)
    else:
        assert kept is not None
        try:
            _replay_spooled(config, log_dir, own=kept)
        except DatabaseCorrupt as exc:  # a lost or damaged store: the event waits in the spool
            raise DatabaseCorrupt(f"{exc.message} (event spooled until the store is usable)") from None
        if payload.event in BRIEFED_AFTER:
            _keep_briefing(payload, config)
    if payload.event in TURN_ENDS:
        from cmem_cli.api.index import Index

        Index(config).refresh()  # detached: the hook never waits for the index


def _recall_first(payload: HookPayload, config: Config) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """Recall's answer for a prompt or a file, read from the store alone (a busy, damaged or slow store:
    none), and the capture-log keys of what it gave, for the event's replay to record. What the session was
    given by events not recorded yet is read from the spool first (:func:`spool.marks_in_flight`)."""
    from cmem_cli.capture.hooks import spool
    from cmem_cli.capture.hooks.recall import answer_first

    if not payload.session_id:
        return None, ()
    given = spool.marks_in_flight(config.home, payload.session_id)
    marks: list[str] = []
    try:
        output = answer_first(payload, config, STARTED[0], given=given, marks=marks)
    except (DatabaseBusy, DatabaseCorrupt):
        return None, ()  # the event is recorded (or kept) by the child all the same
    return output, tuple(marks)


def _record_now(payload: HookPayload, config: Config, at: int, marks: tuple[str, ...]) -> None:
    """Record an event that could not be spooled, with its marks, in one transaction."""
    from cmem_cli.api import Memory
    from cmem_cli.capture.hooks.rules import rules_from_config

    with Memory(config=config) as mem:
        _tune_connection(mem, rules_from_config(config.section("hooks")))
        with mem.recorder.transaction():
            _dispatch(payload, config, at=at, mem=mem, answered=True, live=True)
            _keep_marks(mem, payload, marks)


def _keep_marks(mem: Memory, payload: HookPayload, marks: Sequence[str]) -> None:
    """Record in the session's capture log what recall gave it (inside the caller's transaction)."""
    if marks and payload.session_id:
        state = mem.recorder.capture_log
        for key in marks:
            state.mark(payload.session_id, key)


def _replay_spooled(
    config: Config, log_dir: Path, limit: int = REPLAY_LIMIT, own: Path | None = None
) -> None:
    """Replay spooled events, oldest first: ``own``, this detached child's event, first; then those a dead
    child or a hook that found the store locked left.

    Each replay and the mark that it happened commit in one transaction, so an event is recorded exactly
    once even when a hook is killed mid-replay: its claim is taken over by the next hook (see
    :func:`spool.abandoned_claims`), which finds the mark if the first replay had committed."""
    from cmem_cli.capture.hooks import spool

    work = [(own, own, False)] if own is not None else []
    work += [(claimed, original, True) for claimed, original in spool.abandoned_claims(config.home)]
    work += [(path, path, False) for path in spool.pending(config.home) if path != own]
    if not work:
        return
    from cmem_cli.api import Memory
    from cmem_cli.capture.hooks.payload import parse_payload
    from cmem_cli.capture.hooks.rules import rules_from_config
    from cmem_cli.core.timeutil import now_ms

    with Memory(config=config) as mem:
        _tune_connection(mem, rules_from_config(config.section("hooks")))
        if any(abandoned for _, _, abandoned in work):
            # a child died replaying: the export file it wrote before its commit is undone first
            with contextlib.suppress(DatabaseBusy):
                mem.recorder.roll_back_interrupted()
        state = mem.recorder.capture_log
        for source, original, abandoned in work[: limit + (own is not None)]:
            mine = own is not None and source == own
            if mine:
                _test_point("before-claim")
            claimed = spool.reclaim(source, original) if abandoned else spool.claim(source)
            if claimed is None:
                continue  # another hook is replaying it
            data = spool.load(claimed)
            try:
                with mem.recorder.transaction():
                    if data is not None and not state.seen(SPOOL_SESSION, original.name):
                        event = parse_payload(json.dumps(data["payload"]), data["event"])
                        _dispatch(event, config, at=data.get("at"), mem=mem, answered=True, live=mine)
                        _keep_marks(mem, event, [m for m in data.get("marks") or [] if isinstance(m, str)])
                        state.mark(SPOOL_SESSION, original.name)
                        if event.event in TURN_ENDS:
                            state.forget_older(SPOOL_SESSION, now_ms() - SPOOL_MARKS_KEPT_MS)
                        if mine:
                            _test_point("in-transaction")
            except DatabaseBusy:
                spool.release(claimed, original)
                if mine:
                    log_line(
                        log_dir,
                        f"spooled {data['event'] if data else '?'}: the database stayed locked past"
                        " busy_timeout_ms; the next hook replays the event",
                    )
                return
            except CmemError as exc:
                label = f"{data['event'] if data else '?'}" if mine else f"replaying {original.name}"
                log_line(log_dir, f"error {label}: {exc.message}")
            claimed.unlink(missing_ok=True)


def _dispatch(
    payload: HookPayload,
    config: Config,
    at: int | None = None,
    mem: Memory | None = None,
    answered: bool = False,
    live: bool | None = None,
) -> dict[str, Any] | None:
    """Record one event; returns the JSON answer for Claude Code, if the event has one.

    ``at`` is the original time of a replayed event (or of a detached one); ``mem`` an open write service to
    use (a replay's, inside its transaction) instead of opening one; ``answered``: SessionStart's briefing
    was answered already (:func:`_briefing_first`), only the session is to be recorded; ``live``: the event
    is this hook call's own (a FileChanged re-checks its notes), by default when ``mem`` is not given."""
    from cmem_cli.api import excluded_project
    from cmem_cli.core.config import default_project

    if payload.event in PASSIVE_EVENTS:
        if payload.event == "PreToolUse" and mem is None and at is None and _recalls(payload, config):
            from cmem_cli.capture.hooks.recall import before_edit

            return before_edit(payload, config, STARTED[0])  # nothing is recorded: PostToolUse does that
        return None
    live = mem is None if live is None else live  # else a spooled event of an earlier call, replayed
    # The repository's short name, before the store is opened: an excluded project opens nothing.
    project = default_project(payload.cwd)
    if excluded_project(project, config):
        return None
    from cmem_cli.capture.hooks.rules import rules_from_config

    rules = rules_from_config(config.section("hooks"))
    if payload.event == "SessionStart" and at is None:  # live, not a replay: the agent's shell is starting
        _hand_session_to_shell(payload, config)
    if payload.event == "SessionStart" and not payload.session_id:
        return _session_start(None, project, payload, config, rules)
    if not payload.session_id:
        raise InvalidInput("hook payload has no session_id")

    from cmem_cli.api import Memory
    from cmem_cli.capture.hooks.capture import Capture, Where

    with contextlib.nullcontext(mem) if mem is not None else Memory(config=config) as mem:
        if not mem.recorder.in_transaction:
            _tune_connection(mem, rules)
        keyed = mem.project_here(payload.cwd, claim=True)  # the name the store keeps for the repository
        if keyed != project and excluded_project(keyed, config):
            return None
        project = keyed
        where = Where(session=payload.session_id, project=project, agent=payload.agent)
        capture = Capture(mem, rules)
        if payload.event == "FileChanged":  # a file the session watches changed: nothing to record
            if live:
                from cmem_cli.capture.hooks.recall import file_changed

                file_changed(mem, payload, project, config)
            return None
        if payload.event == "SessionStart":
            capture.start_session(where)
            capture.start_session(where)
            if answered:  # the briefing went out before the session was recorded (_briefing_first)
                return None
            answer = _session_start(mem, project, payload, config, rules)
            if at is None:
                from cmem_cli.capture.hooks.recall import with_watch_paths

                answer = with_watch_paths(mem, payload, project, config, answer)
            return answer
        if payload.event == "UserPromptSubmit":
            if payload.prompt:
                capture.prompt(where, payload.prompt, created_at=at)
                if at is None:  # live, not a replay: the agent is waiting for its prompt to go out
                    return _recall(mem, payload, project, config)
            else:
                capture.start_session(where)
        elif payload.event in ("PostToolUse", "PostToolUseFailure"):
            from cmem_cli.capture.hooks.tools import ToolCall

            if not payload.tool_name:
                raise InvalidInput(f"{payload.event} payload has no tool_name")
            call = ToolCall(
                name=payload.tool_name,
                input=payload.tool_input,
                response=payload.tool_response,
                error=payload.error or ("tool failed" if payload.event == "PostToolUseFailure" else None),
                interrupted=payload.interrupted,
                cwd=payload.cwd,
            )
            capture.tool(where, call, tool_use_id=payload.tool_use_id, created_at=at)
            if at is None and payload.event == "PostToolUse":
                return _recall(mem, payload, project, config)
        elif payload.event == "Stop":
            text = payload.last_assistant_message
            if not text and payload.transcript_path and rules.summary_on_stop:
                from cmem_cli.capture.transcripts import last_assistant_text

                text = last_assistant_text(Path(payload.transcript_path))
            if capture.turn_summary(where, text, created_at=at) is None:
                capture.start_session(where)
            if payload.raw.get("cmem_session_ends") is True:  # an adapter knows the turn is the last
                capture.end_session(where)
        elif payload.event == "SessionEnd":
            if payload.agent == "claude-code" and payload.transcript_path and rules.summary_on_stop:
                # Claude Code's Stop hook runs in the background, and `claude -p` kills it when it exits
                # right after the turn: the last answer is read from the transcript (once a prompt, so
                # a Stop that did run leaves nothing to add; none when a prompt came after the answer)
                from cmem_cli.capture.transcripts import last_assistant_text

                capture.turn_summary(where, last_assistant_text(Path(payload.transcript_path)), created_at=at)
            capture.end_session(where)
        else:  # SubagentStop and events added to Claude Code later: the session is alive
            capture.start_session(where)
    return None


def _recall(mem: Memory, payload: HookPayload, project: str, config: Config) -> dict[str, Any] | None:
    """The memories recall puts in front of the agent for this prompt or file (docs/recall.md)."""
    if payload.event == "PostToolUse" and payload.tool_name not in RECALL_TOOLS:
        return None
    from cmem_cli.capture.hooks.recall import answer

    return answer(mem, payload, project, config, STARTED[0])


def _briefing_first(payload: HookPayload, config: Config) -> dict[str, Any] | None:
    """SessionStart's answer before anything is written: the session handed to the agent's shell and the
    briefing read from the store alone (no write service, no exporter); the caller records the session
    after the agent stopped waiting. None where the project is excluded, or with neither a briefing nor
    files to watch."""
    from cmem_cli.capture.hooks.rules import rules_from_config
    from cmem_cli.core.config import default_project
    from cmem_cli.services.write.privacy import is_excluded_project  # the API only past a kept briefing

    project = default_project(payload.cwd)
    if is_excluded_project(project, config.section("privacy")):
        return None
    rules = rules_from_config(config.section("hooks"))
    _hand_session_to_shell(payload, config)
    ready = _kept_briefing_answer(payload, config, rules)
    if ready is not None:
        return ready
    from cmem_cli.api import Memory, excluded_project

    with Memory(config=config) as mem:
        _tune_reads(mem)
        keyed = mem.project_here(payload.cwd)
        if keyed != project and excluded_project(keyed, config):
            return None
        answer = _session_start(mem, keyed, payload, config, rules)
        from cmem_cli.capture.hooks.recall import with_watch_paths

        return with_watch_paths(mem, payload, keyed, config, answer)


def _briefing_key(payload: HookPayload, config: Config, rules: HookRules) -> list[Any] | None:
    """What a kept briefing is for: the work tree, the current folder (where its branch marks are read),
    and the settings that shape it (budget, watched files, excluded projects, the project's name)."""
    import os

    from cmem_cli.core.recall_settings import recall_settings

    if not rules.context_on_start or not payload.cwd:
        return None
    try:
        here = os.getcwd()
    except OSError:
        return None
    watch = (
        payload.agent.startswith("claude-code")
        and recall_settings(config.section("recall"), payload.agent).file
    )
    privacy = str(config.section("privacy"))
    return [payload.cwd, here, rules.context_budget, watch, privacy, os.environ.get("CMEM_PROJECT")]


def _kept_briefing_answer(payload: HookPayload, config: Config, rules: HookRules) -> dict[str, Any] | None:
    """SessionStart's answer from the briefing the last writing hook's child kept, when nothing it was
    built from has changed (:mod:`cmem_cli.core.briefing_cache`); None: build it now."""
    import os

    from cmem_cli.core import briefing_cache
    from cmem_cli.core.timeutil import now_ms

    key = _briefing_key(payload, config, rules)
    entry = briefing_cache.load(config.home, key, config.db_path, now_ms()) if key is not None else None
    if entry is None or not isinstance(entry.get("text"), str):
        return None
    current = payload.session_id if payload.source in (None, "startup", "clear") else None
    if current is not None and current == entry.get("pivot"):
        return None  # the kept briefing leads with this session's own summary: build it without
    specific: dict[str, Any] = {"hookEventName": "SessionStart", "additionalContext": entry["text"]}
    watched = [p for p in entry.get("watch") or () if isinstance(p, str) and os.path.isfile(p)]
    if watched:
        specific["watchPaths"] = watched
    return {"hookSpecificOutput": specific}


def _keep_briefing(payload: HookPayload, config: Config) -> None:
    """In a detached child, after its event was recorded: build the next SessionStart's briefing for this
    work tree and keep it (:mod:`cmem_cli.core.briefing_cache`). Any failure just leaves none kept."""
    from cmem_cli.api import Memory, excluded_project
    from cmem_cli.capture.hooks.rules import rules_from_config
    from cmem_cli.core import briefing_cache
    from cmem_cli.core.config import default_project
    from cmem_cli.core.timeutil import now_ms

    rules = rules_from_config(config.section("hooks"))
    key = _briefing_key(payload, config, rules)
    if key is None or excluded_project(default_project(payload.cwd), config):
        return
    built_at = now_ms()
    try:
        with Memory(config=config) as mem:
            _tune_reads(mem)
            keyed = mem.project_here(payload.cwd)
            if excluded_project(keyed, config):
                return
            entry = mem.recorder.kept_briefing(
                keyed, budget=rules.context_budget, top=payload.cwd if key[3] else None
            )
        if entry is not None:
            briefing_cache.save(config.home, key, entry.pop("store"), entry, built_at)
    except (CmemError, OSError) as exc:
        log_line(config.log_dir, f"error keeping the briefing: {getattr(exc, 'message', exc)}")


def _hand_session_to_shell(payload: HookPayload, config: Config) -> None:
    """Export the session and agent to the agent's shell commands (``CLAUDE_ENV_FILE``, Codex's
    ``CODEX_ENV_FILE``, else a file named after the agent's process), so the notes it records with `cmem add` join this session; a failure is logged,
    never the hook's."""
    from cmem_cli.capture.hooks.shell_env import env_file, hand_to_shell

    session, agent = payload.session_id, payload.agent
    if session:  # scrubbed like the session and agent the store keeps: no private text or secret on disk
        from cmem_cli.services.write.privacy import scrub  # alone: the API costs a kept briefing ~5 ms

        session, agent = scrub(session, config=config).strip(), scrub(agent, config=config).strip()
    try:
        hand_to_shell(session, agent, home=config.home)
    except OSError as exc:
        name = (env_file(agent=payload.agent) or ("the env file",))[0]
        log_line(config.log_dir, f"error SessionStart: cannot write {name}: {exc.strerror or exc}")


def _tune_reads(mem: Memory) -> None:
    """The store a hook reads before it answers: a lock (a migration, a WAL being reset) is waited for at
    most 200 ms, and closing it never runs a full checkpoint, which the agent would wait for."""
    mem.recorder.tune(busy_timeout_ms=200, checkpoint_on_close=False, reads=True)


def _tune_connection(mem: Memory, rules: HookRules) -> None:
    """Wait for a locked database at most ``busy_timeout_ms`` (then the event is spooled), and leave the WAL
    checkpoint to SQLite's automatic one instead of paying for a full checkpoint every time the last
    connection closes (about 5-10 ms of every hook call)."""
    mem.recorder.tune(busy_timeout_ms=rules.busy_timeout_ms, checkpoint_on_close=False)


def _session_start(
    mem: Memory | None, project: str, payload: HookPayload, config: Config, rules: HookRules
) -> dict[str, Any] | None:
    if not rules.context_on_start:
        return None
    if mem is None:
        from cmem_cli.api import Memory

        with Memory(config=config) as opened:
            project = opened.project_here(payload.cwd)
            context = opened.recorder.briefing_text(project, budget=rules.context_budget)
    else:
        # A new session wants the previous one's summary; a resumed or compacted one may want its own.
        current = payload.session_id if payload.source in (None, "startup", "clear") else None
        context = mem.recorder.briefing_text(project, budget=rules.context_budget, exclude_session=current)
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}


def main(args: list[str], *, detach: bool = False) -> int:
    """``detach``: this is the hook's own process (not a caller's function call), so it may fork."""
    return run(args, detach=detach)
