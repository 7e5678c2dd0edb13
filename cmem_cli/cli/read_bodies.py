"""The bodies of the read commands (search, timeline, get), free of typer and click.

``cmem_cli.cli.commands.read`` declares these commands' options for typer and calls the functions here;
``cmem_cli.cli.fast`` calls them directly when the command line is simple, so that `cmem search` from a
hook or a script does not spend 30-40 ms importing typer and click. Both paths pass the same keyword
arguments (tests/test_fast_cli.py checks it), so the functions' parameter names are the typer commands'.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import (
    MACHINE_COLUMN,
    TYPE_ICONS,
    Column,
    dumps,
    emit_rows,
    emit_text,
    escape_control,
    resolve_format,
    with_machine,
    write,
)
from cmem_cli.cli.typed_sessions import typed_session
from cmem_cli.core.marks import title_marks

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.api import Memory


def _date(row: Mapping[str, Any]) -> str:
    return (row.get("created_at") or "")[:10]


def _datetime(row: Mapping[str, Any]) -> str:
    stamp = row.get("created_at") or ""
    return f"{stamp[:10]} {stamp[11:16]}"


def _compact_date(row: Mapping[str, Any]) -> str:
    """A terminal's date: "Nov 23" this year, "2025-11" before, so the title keeps the room."""
    from datetime import date

    stamp = row.get("created_at") or ""
    if len(stamp) < 10:
        return stamp
    day = date.fromisoformat(stamp[:10])
    return day.strftime("%b %d") if day.year == date.today().year else stamp[:7]


def _title(row: Mapping[str, Any]) -> str:
    """The title after its marks: ``[stale]`` when files it cites changed since, ``[replaced by #N]`` when
    a newer memory superseded it (plain text: it survives a pipe and NO_COLOR; docs/truth.md)."""
    title = "" if row.get("title") is None else str(row["title"])
    return title_marks(row) + title


def _type_cell(row: Mapping[str, Any]) -> str:
    return f"{TYPE_ICONS.get(row['type'], '•')} {row['type']}"


def _tokens(row: Mapping[str, Any]) -> str:
    return f"~{row['tokens']}" if row.get("tokens") is not None else ""


# Priorities decide what a narrow terminal keeps: the id (never dropped or cut), the title (cut first),
# type and date, then the rest.
SEARCH_COLUMNS = [
    Column("id", "ID", justify="right", priority=0),
    Column("created_at", "DATE", _date, priority=3),
    Column("type", "TYPE", priority=2),
    Column("title", "TITLE", _title, max_width=72, priority=1, shrink_to=30),
    Column("project", "PROJECT", max_width=20, priority=4),
    Column("tokens", "TOKENS", _tokens, justify="right", priority=5),
]
# On a terminal the type gets its icon and the date is compact; piped output keeps stable values.
TABLE_SEARCH_COLUMNS = [
    SEARCH_COLUMNS[0],
    Column("created_at", "DATE", _compact_date, priority=3),
    Column("type", "TYPE", _type_cell, priority=2),
    *SEARCH_COLUMNS[3:],
]


def search(
    all_projects: bool = False,
    all_hits: bool = False,
    as_json: bool = False,
    envelope: bool = False,
    fmt: str | None = None,
    **options: Any,
) -> int:
    """`cmem search`: one compact row per hit; exit status EXIT_NO_MATCH when there is none (like grep).

    ``options`` are :class:`~cmem_cli.core.query.Query`'s fields under the names its table
    (:mod:`cmem_cli.core.query_fields`) gives `cmem search`'s options."""
    from cmem_cli.api import Query
    from cmem_cli.cli.exits import EXIT_NO_MATCH, EXIT_OK
    from cmem_cli.core.query_fields import query_arguments

    if envelope and fmt not in (None, "json"):
        from cmem_cli.core.errors import UsageError

        raise UsageError(f"--envelope prints JSON: drop --format {fmt}")
    output = resolve_format(fmt, as_json or envelope)
    check_count("--limit", options["limit"])
    check_count("--offset", options["offset"])
    fields = query_arguments(options)
    if all_hits:
        fields["limit"] = 0
    with open_api() as memory:
        fields["project"], scope_note = scope(memory, fields["project"], all_projects)
        fields["session"] = typed_session(memory, fields["session"])
        ask = Query(**fields)
        page = memory.search(ask)
        rows = page.to_json()
        _absolute_paths(memory, rows)
        # whose each memory is, when that can differ (JSON rows always say it)
        several = output not in ("json", "ndjson") and not ask.team and memory.several_machines()
    if scope_note:
        print(f"cmem: note: {scope_note}", file=sys.stderr)
    from cmem_cli.core.pages import INDEX_BEHIND

    for note in page.notes:  # in auto mode a missing index or model is expected, not news; a lag is
        if ask.mode != "auto" or ask.explain or note.startswith(INDEX_BEHIND):
            print(f"cmem: note: {note}", file=sys.stderr)
    columns = TABLE_SEARCH_COLUMNS if output == "table" else SEARCH_COLUMNS
    if ask.team:
        columns = [*columns[:-1], TEAM_AGENT_COLUMN, MACHINE_COLUMN, columns[-1]]
    elif several:
        columns = with_machine(columns)
    if ask.explain:
        columns = [*columns, Column("signals", "WHY", _why, priority=2, shrink_to=24)]
    if envelope:  # the rows with what stderr says about them, for readers of stdout alone
        notes = [scope_note, *page.notes] if scope_note else page.notes
        data = {"mode": page.mode, "notes": notes, "total": page.total, "capped": page.capped, "hits": rows}
        write(dumps(data) + "\n")
    else:
        emit_rows(rows, columns, output, empty_message="no matches")
    shown_to = ask.offset + len(rows)
    if rows and (page.capped or page.total > shown_to):
        more = f"{page.total}+" if page.capped else str(page.total)
        print(f"cmem: showing {len(rows)} of {more} (-n 0 or --all for every hit)", file=sys.stderr)
    return EXIT_OK if rows else EXIT_NO_MATCH


def scope(memory: Memory, project: str | None, all_projects: bool) -> tuple[str | None, str | None]:
    """The project a read covers (None: every project) and, when neither the command line nor
    ``$CMEM_PROJECT`` chose one, the note that says which default it took (inside a git repository its
    project, elsewhere every project)."""
    from cmem_cli.cli.input import check_cli_text
    from cmem_cli.core.errors import UsageError

    project = check_cli_text("--project", project)
    if project and all_projects:
        raise UsageError("give --project or --all-projects, not both")
    if project or all_projects:
        return project or None, None
    default, why = memory.default_scope()
    if why is None:  # $CMEM_PROJECT: named by the user, not news
        return default, None
    if default is None:
        return None, f"scope: all projects ({why}); --project NAME for one"
    return default, f"scope: project {escape_control(default)} ({why}); --all-projects for every project"


TEAM_AGENT_COLUMN = Column("agent", "AGENT", max_width=16, priority=6)  # a team search's, with the machine's


def _absolute_paths(memory: Memory, rows: list[dict[str, Any]]) -> None:
    """Give scripts a ``path`` that exists on this machine: memories are relative to the export folder,
    documents are ``collection:relative`` until resolved against their collection's root."""
    roots: dict[str, Any] | None = None
    for row in rows:
        path = row.get("path")
        if not path:
            continue
        if row.get("kind") != "document":
            row["path"] = str(memory.config.export_dir / path)
            continue
        if roots is None:
            roots = memory.index.collection_roots()
        name, _, relpath = path.partition(":")
        if name in roots:
            row["path"] = str(roots[name] / relpath)


def _why(row: Mapping[str, Any]) -> str:
    """Each signal's rank and score, then the row's place after each stage that moved it (``fusion>3
    rerank>1``: third after fusion, first after reranking)."""
    parts = [f"{name}#{s['rank']}:{s['norm']:.2f}" for name, s in (row.get("signals") or {}).items()]
    last = None
    for stage, place in (row.get("stages") or {}).items():
        if place != last:
            parts.append(f"{stage}>{place}")
        last = place
    return " ".join(parts)


TIMELINE_COLUMNS = [
    Column("anchor", "", lambda r: ">>" if r["anchor"] else "", priority=0),
    Column("id", "ID", justify="right", priority=0),
    Column("created_at", "TIME", _datetime, priority=0),
    Column("type", "TYPE", priority=2),
    Column("title", "TITLE", _title, max_width=80, priority=1, shrink_to=20),
    Column("tokens", "TOKENS", lambda r: f"~{r['tokens']}", justify="right", priority=5),
]


MAX_COUNT = 1_000_000  # rows any listing may ask for: far above use, far below SQLite's 64-bit limit


def check_count(option: str, value: int) -> None:
    """A row count or offset from the command line: 0..MAX_COUNT, else a usage error (exit 2)."""
    from cmem_cli.core.errors import UsageError

    if not 0 <= value <= MAX_COUNT:
        raise UsageError(f"{option} must be between 0 and {MAX_COUNT}, got {value}")


def timeline(
    ref: str | None = None,
    query: str | None = None,
    before: int = 5,
    after: int = 5,
    all_projects: bool = False,
    as_json: bool = False,
    fmt: str | None = None,
    **filters: Any,
) -> None:
    """`cmem timeline`: what happened around one observation, in time order; ``--query`` searches the
    default scope as `cmem search` does. ``filters``: every filter (:data:`cmem_cli.core.filters.FILTERS`)
    under its option's name."""
    from cmem_cli.cli.input import check_cli_text
    from cmem_cli.core.errors import InvalidInput
    from cmem_cli.core.filters import filter_arguments

    if (ref is None) == (query is None):
        raise InvalidInput("give an anchor ID or --query, not both")
    check_count("--before", before)
    check_count("--after", after)
    fields = filter_arguments(filters)
    fields["machine"] = check_cli_text("--machine", fields["machine"])
    output = resolve_format(fmt, as_json)
    scope_note = None
    with open_api() as memory:
        if query is not None:
            fields["project"], scope_note = scope(memory, fields["project"], all_projects)
        fields["session"] = typed_session(memory, fields["session"])
        result = memory.timeline(ref, query=query, before=before, after=after, **fields).to_json()
        several = output not in ("json", "ndjson") and memory.several_machines()
    if scope_note:
        print(f"cmem: note: {scope_note}", file=sys.stderr)
        result["notes"] = [scope_note]
    items = result["items"]
    if output == "json":
        write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    elif output in ("table", "md"):
        _timeline_by_day(items, output, several)
    else:
        emit_rows(items, with_machine(TIMELINE_COLUMNS) if several else TIMELINE_COLUMNS, output)


def _timeline_by_day(items: list[dict[str, Any]], output: str, several: bool) -> None:
    day = None
    group: list[dict[str, Any]] = []
    columns = [
        TIMELINE_COLUMNS[0],
        TIMELINE_COLUMNS[1],
        Column("created_at", "TIME", lambda r: r["created_at"][11:16], priority=0),
        Column("type", "TYPE", _type_cell, priority=2),
        *TIMELINE_COLUMNS[4:],
    ]
    if several:
        columns = with_machine(columns)
    for item in [*items, None]:
        item_day = item["created_at"][:10] if item else None
        if item_day != day and group:
            write(f"\n## {day}\n\n" if output == "md" else f"{day}\n")
            emit_rows(group, columns, output)
            group = []
        day = item_day
        if item:
            group.append(item)


GET_FORMATS = ("md", "json", "ndjson", "plain")


def get(
    refs: list[str],
    links: bool = False,
    path_only: bool = False,
    as_json: bool = False,
    fmt: str | None = None,
) -> None:
    """`cmem get`: full details of observations; counts as a retrieval."""
    from cmem_cli.api import markdown

    output = "json" if as_json else (fmt or "md")
    if output not in GET_FORMATS:
        from cmem_cli.core.errors import UsageError

        raise UsageError(f"unknown format {output!r} for get (expected one of: {', '.join(GET_FORMATS)})")
    with open_api() as memory:
        records = memory.get(*refs, links=links, absolute_paths=True).to_json()
    if path_only:
        from cmem_cli.core.errors import NotFound

        missing = next((r["id"] for r in records if not r.get("path")), None)
        if missing is not None:
            raise NotFound(f"{missing} has no file (prompts live only in the database)")
        write("".join(f"{escape_control(r['path'])}\n" for r in records))
    elif output == "json":
        write(json.dumps(records, ensure_ascii=False, indent=2) + "\n")
    elif output == "ndjson":
        write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    else:
        emit_text("\n\n".join(markdown(r) for r in records))


def context(
    project: str | None = None, all_projects: bool = False, budget: int = 1500, as_json: bool = False
) -> None:
    """`cmem context`: the session-start briefing (a hook's SessionStart prints the same text) for the
    default scope unless ``--project`` or ``--all-projects`` says otherwise."""
    from cmem_cli.core.errors import UsageError

    if budget < 1:
        raise UsageError(f"--budget must be at least 1 (got {budget})")
    with open_api() as memory:
        project, scope_note = scope(memory, project, all_projects)
        result = memory.context(project, all_projects=project is None, budget=budget)
    if scope_note:
        print(f"cmem: note: {scope_note}", file=sys.stderr)
    if as_json:
        from cmem_cli.api import as_dict

        data = as_dict(result)
        if scope_note:
            data["notes"] = [scope_note]
        write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        write(result.text + "\n")
