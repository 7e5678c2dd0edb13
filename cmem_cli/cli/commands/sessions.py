"""Session bookkeeping commands: session start|end|list|show, prompt add, summary add."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cmem_cli.cli.commands.common import (
    AgentOpt,
    FormatOpt,
    JsonOpt,
    ProjectOpt,
    RanOnOpt,
    check_cli_text,
)
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import Column, emit_rows, resolve_format, with_machine, write
from cmem_cli.cli.short_ids import unique_prefixes
from cmem_cli.cli.typed_sessions import refuse_ended_session, typed_session
from cmem_cli.core.config import default_agent, default_session
from cmem_cli.core.errors import InvalidInput

if TYPE_CHECKING:
    from cmem_cli.api import Memory

session_app = typer.Typer(help="Start, end and list agent sessions.", no_args_is_help=True)
prompt_app = typer.Typer(help="Record user prompts.", no_args_is_help=True)
summary_app = typer.Typer(help="Record session summaries.", no_args_is_help=True)

SessionArg = Annotated[
    str | None,
    typer.Argument(help="Session id or a unique prefix (default: $CMEM_SESSION).", metavar="SESSION"),
]


def _session_id(memory: Memory, value: str | None) -> str:
    """The full id of the session given as an argument or in $CMEM_SESSION (a unique prefix will do)."""
    session = typed_session(memory, check_cli_text("session id", value) or default_session())
    if not session:
        raise InvalidInput("no session id given (pass SESSION or set CMEM_SESSION)")
    return session


@session_app.command("start")
def session_start(
    session: Annotated[
        str | None,
        typer.Argument(
            help="A session to start or resume, by id or unique prefix (default: a new id).",
            metavar="SESSION",
        ),
    ] = None,
    project: ProjectOpt = None,
    agent: AgentOpt = None,
    label: Annotated[str | None, typer.Option("--label", help="Short label.")] = None,
    goal: Annotated[str | None, typer.Option("--goal", help="What the session is for.")] = None,
) -> None:
    """Start (or resume) a session; prints its id. Use it as CMEM_SESSION for later commands."""
    from cmem_cli.core.ids import new_uid

    with open_api(write=True) as memory:
        session_id = typed_session(memory, check_cli_text("session id", session)) or new_uid().lower()
        started = memory.start_session(
            session_id,
            agent=agent or default_agent(),
            project=project or memory.project_here(claim=True),
            label=check_cli_text("--label", label),
            goal=check_cli_text("--goal", goal),
            resume=True,
        )
    print(started.session_id)


@session_app.command("end")
def session_end(
    session: SessionArg = None,
    status: Annotated[str, typer.Option("--status", help="completed, failed or abandoned.")] = "completed",
    outcome: Annotated[str | None, typer.Option("--outcome", help="What came of it.")] = None,
    next_steps: Annotated[str | None, typer.Option("--next-steps", help="What to do next.")] = None,
) -> None:
    """Close a session."""
    with open_api(write=True) as memory:
        memory.end_session(
            _session_id(memory, session),
            status=status,
            outcome=check_cli_text("--outcome", outcome),
            next_steps=check_cli_text("--next-steps", next_steps),
        )


SESSION_COLUMNS = [
    Column("session_id", "SESSION", priority=0),
    Column("status", "STATUS", priority=2),
    Column("started_at", "STARTED", lambda r: (r["started_at"] or "")[:16].replace("T", " "), priority=2),
    Column("project", "PROJECT", max_width=20, priority=3),
    Column("agent", "AGENT", max_width=16, priority=4),
    Column("prompt_counter", "PROMPTS", justify="right", priority=5),
    Column("observations", "OBS", justify="right", priority=3),
    Column("label", "LABEL", max_width=40, priority=1, shrink_to=12),
]
# A terminal shows the shortest unique prefix of each id: short enough to read, whole enough to paste.
TABLE_SESSION_COLUMNS = [
    Column("short_id", "SESSION", priority=0),
    *SESSION_COLUMNS[1:],
]


@session_app.command("list")
def session_list(
    project: ProjectOpt = None,
    status: Annotated[str | None, typer.Option("--status", help="Only sessions with this status.")] = None,
    machine: RanOnOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Maximum rows.")] = 20,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Recent sessions, most recently active first, and where each ran once this home holds more than
    one machine's memories."""
    output = resolve_format(fmt, as_json)
    from cmem_cli.cli.read_bodies import check_count

    check_count("--limit", limit)
    check_cli_text("--project", project)
    check_cli_text("--status", status)
    check_cli_text("--machine", machine)
    with open_api() as memory:
        rows = memory.sessions(project=project, status=status, machine=machine, limit=limit).to_json()
        short = unique_prefixes(memory.session_ids()) if output == "table" else {}
        machines = {row["machine"] for row in rows if row.get("machine")}
        several = output not in ("json", "ndjson") and (len(machines) > 1 or memory.several_machines())
    for row in rows:
        if short:
            row["short_id"] = short[row["session_id"]]
    columns = TABLE_SESSION_COLUMNS if output == "table" else SESSION_COLUMNS
    if several:
        columns = with_machine(columns)
    emit_rows(rows, columns, output, id_key="session_id", empty_message="no sessions")


@session_app.command("show")
def session_show(session: SessionArg = None, as_json: JsonOpt = False) -> None:
    """A session with its prompts, summaries and observation count."""
    with open_api() as memory:
        row = memory.session(_session_id(memory, session)).to_json()
    if as_json:
        write(json.dumps(row, ensure_ascii=False, indent=2) + "\n")
        return
    from cmem_cli.cli.render import emit_pairs

    pairs: list[tuple[str, object]] = []
    for key, value in row.items():
        if key == "prompts":
            pairs += [(f"prompt {prompt['number']}", prompt["text"]) for prompt in value]
        else:
            pairs.append((key, value))
    emit_pairs(pairs)


@prompt_app.command("add")
def prompt_add(
    text: Annotated[str, typer.Argument(help="The prompt text ('-' reads stdin).")],
    session: Annotated[
        str | None, typer.Option("--session", help="Session id or a unique prefix (default: $CMEM_SESSION).")
    ] = None,
    project: ProjectOpt = None,
    agent: AgentOpt = None,
) -> None:
    """Record a user prompt; prints its P<id> and running number."""
    if text == "-":
        text = sys.stdin.read()
    with open_api(write=True) as memory:
        full = _session_id(memory, session)
        refuse_ended_session(memory, full)
        prompt = memory.add_prompt(
            check_cli_text("prompt", text) or "",
            session=full,
            project=project or memory.project_here(claim=True),
            agent=agent or default_agent(),
        )
    print(f"{prompt.id}\t{prompt.prompt_number}")


@summary_app.command("add")
def summary_add(
    session: Annotated[
        str | None, typer.Option("--session", help="Session id or a unique prefix (default: $CMEM_SESSION).")
    ] = None,
    request: Annotated[str | None, typer.Option("--request", help="What was asked.")] = None,
    investigated: Annotated[str | None, typer.Option("--investigated", help="What was looked into.")] = None,
    learned: Annotated[str | None, typer.Option("--learned", help="What was learned.")] = None,
    completed: Annotated[str | None, typer.Option("--completed", help="What got done.")] = None,
    next_steps: Annotated[str | None, typer.Option("--next-steps", help="What to do next.")] = None,
    notes: Annotated[str | None, typer.Option("--notes", help="Anything else.")] = None,
    project: ProjectOpt = None,
    agent: AgentOpt = None,
    json_source: Annotated[
        str | None,
        typer.Option(
            "--json", help="Read the fields from a JSON object in FILE ('-' for stdin).", metavar="FILE"
        ),
    ] = None,
) -> None:
    """Record a session summary (several per session are fine); prints its S<id>."""
    fields: dict[str, Any] = {
        "request": request,
        "investigated": investigated,
        "learned": learned,
        "completed": completed,
        "next_steps": next_steps,
        "notes": notes,
    }
    if json_source is not None:
        from cmem_cli.cli.commands.common import parse_json_records, read_json_input

        records = parse_json_records(read_json_input(json_source), json_source)
        if len(records) != 1 or not isinstance(records[0][1], dict):
            raise InvalidInput("--json takes one JSON object with summary fields")
        loaded = dict(records[0][1])
        session = session or loaded.pop("session", None)
        project = project or loaded.pop("project", None)
        agent = agent or loaded.pop("agent", None)
        fields = {**{k: v for k, v in fields.items() if v is not None}, **loaded}
    for key, value in fields.items():
        if isinstance(value, str):
            check_cli_text(f"--{key}", value)
    with open_api(write=True) as memory:
        summary = memory.add_summary(_session_id(memory, session), fields, project=project, agent=agent)
    print(summary.id)


def register(app: typer.Typer) -> None:
    app.add_typer(session_app, name="session")
    app.add_typer(prompt_app, name="prompt")
    app.add_typer(summary_app, name="summary")
