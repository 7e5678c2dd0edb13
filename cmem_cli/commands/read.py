"""Read commands: the three retrieval layers (search, timeline, get) and stats."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from cmem_cli.commands.common import AgentOpt, FormatOpt, JsonOpt, ProjectOpt, SessionOpt, open_memory
from cmem_cli.render import TYPE_ICONS, Column, emit_rows, emit_text, resolve_format, write
from cmem_cli.store import Filters
from cmem_cli.timeutil import parse_time


def _date(row: dict[str, Any]) -> str:
    return (row.get("created_at") or "")[:10]


def _datetime(row: dict[str, Any]) -> str:
    stamp = row.get("created_at") or ""
    return f"{stamp[:10]} {stamp[11:16]}"


def _type_cell(row: dict[str, Any]) -> str:
    return f"{TYPE_ICONS.get(row['type'], '•')} {row['type']}"


def _tokens(row: dict[str, Any]) -> str:
    return f"~{row['tokens']}" if row.get("tokens") is not None else ""


SEARCH_COLUMNS = [
    Column("id", "ID", justify="right"),
    Column("created_at", "DATE", _date),
    Column("type", "TYPE"),
    Column("title", "TITLE", max_width=72),
    Column("project", "PROJECT", max_width=20),
    Column("tokens", "TOKENS", _tokens, justify="right"),
]
# On a terminal the type gets its icon; piped output keeps the bare, stable word.
TABLE_SEARCH_COLUMNS = [
    SEARCH_COLUMNS[0],
    SEARCH_COLUMNS[1],
    Column("type", "TYPE", _type_cell),
    *SEARCH_COLUMNS[3:],
]


def build_filters(
    project: str | None,
    types: list[str] | None,
    concepts: list[str] | None,
    files: list[str] | None,
    agent: str | None,
    session: str | None,
    since: str | None,
    until: str | None,
) -> Filters:
    from cmem_cli.errors import InvalidInput
    from cmem_cli.schema import OBSERVATION_TYPES

    for obs_type in types or []:
        if obs_type not in OBSERVATION_TYPES:
            raise InvalidInput(f"unknown type {obs_type!r} (expected one of: {', '.join(OBSERVATION_TYPES)})")
    until_ms = parse_time(until) if until else None
    if until and len(until.strip()) == 10 and until_ms is not None:
        until_ms += 86_400_000 - 1  # a bare date includes that whole day
    return Filters(
        project=project,
        types=types or [],
        concepts=concepts or [],
        files=files or [],
        agent=agent,
        session=session,
        since=parse_time(since) if since else None,
        until=until_ms,
    )


def search(
    query: Annotated[str | None, typer.Argument(help="Words to search for; omit to list by filters.")] = None,
    project: ProjectOpt = None,
    obs_type: Annotated[list[str] | None, typer.Option("--type", help="Only this type (repeatable).")] = None,
    concept: Annotated[
        list[str] | None, typer.Option("--concept", help="Only with this concept (repeatable).")
    ] = None,
    file: Annotated[
        list[str] | None,
        typer.Option(
            "--file", help="Only touching this file path, suffix or directory (repeatable).", metavar="PATH"
        ),
    ] = None,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO date/time or age (7d, 2w, 12h).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="ISO date/time or age.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Maximum rows.")] = 20,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many rows.")] = 0,
    order: Annotated[str, typer.Option("--order", help="relevance, newest or oldest.")] = "relevance",
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="auto (hybrid when the index has vectors, else keyword), keyword, vector or hybrid.",
        ),
    ] = "auto",
    rerank: Annotated[
        bool | None,
        typer.Option(
            "--rerank/--no-rerank",
            help="Rerank the top 20 with the reranker model (default: when one is configured).",
        ),
    ] = None,
    min_score: Annotated[
        float, typer.Option("--min-score", help="Drop hits scoring below this (0..1).")
    ] = 0.0,
    collection: Annotated[
        list[str] | None,
        typer.Option(
            "--collection", "-c", help="Only this collection (repeatable; 'memories' is cmem's own)."
        ),
    ] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show each signal's rank and score.")] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Search memories and documents: one compact row per hit (id, date, type, title, project, token cost)."""
    import sys

    from cmem_cli.retrieval import search as run_search

    output = resolve_format(fmt, as_json)
    filters = build_filters(project, obs_type, concept, file, agent, session, since, until)
    with open_memory() as memory:
        rows, _, notes = run_search(
            memory,
            query,
            filters,
            limit=limit,
            offset=offset,
            order=order,
            mode=mode,
            rerank=rerank,
            min_score=min_score,
            collections=collection,
            explain=explain,
        )
    if mode != "auto" or explain:  # in auto mode a missing index or model is expected, not news
        for note in notes:
            print(f"cmem: note: {note}", file=sys.stderr)
    columns = TABLE_SEARCH_COLUMNS if output == "table" else SEARCH_COLUMNS
    if explain:
        columns = [*columns, Column("signals", "WHY", _why)]
    emit_rows(rows, columns, output, empty_message="no matches")


def _why(row: dict[str, Any]) -> str:
    parts = [f"{name}#{s['rank']}:{s['norm']:.2f}" for name, s in (row.get("signals") or {}).items()]
    return " ".join(parts)


TIMELINE_COLUMNS = [
    Column("anchor", "", lambda r: ">>" if r["anchor"] else ""),
    Column("id", "ID", justify="right"),
    Column("created_at", "TIME", _datetime),
    Column("type", "TYPE"),
    Column("title", "TITLE", max_width=80),
    Column("tokens", "TOKENS", lambda r: f"~{r['tokens']}", justify="right"),
]


def timeline(
    ref: Annotated[
        str | None, typer.Argument(help="Anchor: observation id, S<n> summary or P<n> prompt.", metavar="ID")
    ] = None,
    query: Annotated[
        str | None, typer.Option("--query", "-q", help="Use the best search hit as anchor.")
    ] = None,
    before: Annotated[int, typer.Option("--before", "-b", help="Items before the anchor.")] = 5,
    after: Annotated[int, typer.Option("--after", "-a", help="Items after the anchor.")] = 5,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """What happened around one observation: prompts, observations and summaries in time order."""
    from cmem_cli.errors import InvalidInput
    from cmem_cli.retrieval import resolve_query_anchor
    from cmem_cli.retrieval import timeline as build_timeline

    if (ref is None) == (query is None):
        raise InvalidInput("give an anchor ID or --query, not both")
    output = resolve_format(fmt, as_json)
    with open_memory() as memory:
        if query is not None:
            ref = resolve_query_anchor(memory.store, query, Filters(project=project))
        result = build_timeline(memory.store, ref, before=before, after=after)
    items = result["items"]
    if output == "json":
        write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    elif output in ("table", "md"):
        _timeline_by_day(items, output)
    else:
        emit_rows(items, TIMELINE_COLUMNS, output)


def _timeline_by_day(items: list[dict[str, Any]], output: str) -> None:
    day = None
    group: list[dict[str, Any]] = []
    columns = [
        TIMELINE_COLUMNS[0],
        TIMELINE_COLUMNS[1],
        Column("created_at", "TIME", lambda r: r["created_at"][11:16]),
        Column("type", "TYPE", _type_cell),
        *TIMELINE_COLUMNS[4:],
    ]
    for item in [*items, None]:
        item_day = item["created_at"][:10] if item else None
        if item_day != day and group:
            write(f"\n## {day}\n\n" if output == "md" else f"{day}\n")
            emit_rows(group, columns, output)
            group = []
        day = item_day
        if item:
            group.append(item)


def get(
    refs: Annotated[
        list[str], typer.Argument(help="Observation ids (S<n> summaries, P<n> prompts).", metavar="ID...")
    ],
    links: Annotated[bool, typer.Option("--links", help="Also show linked observations (one hop).")] = False,
    as_json: JsonOpt = False,
    fmt: Annotated[
        str | None, typer.Option("--format", "-f", help="md (default), json or ndjson.", metavar="FORMAT")
    ] = None,
) -> None:
    """Full details of observations; counts as a retrieval."""
    from cmem_cli.details import fetch_details, render_details

    output = "json" if as_json else (fmt or "md")
    if output not in ("md", "json", "ndjson", "plain"):
        from cmem_cli.errors import UsageError

        raise UsageError(f"unknown format {output!r} for get (expected md, json or ndjson)")
    with open_memory() as memory:
        records = fetch_details(memory, refs, follow_links=links)
    if output == "json":
        write(json.dumps(records, ensure_ascii=False, indent=2) + "\n")
    elif output == "ndjson":
        write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    else:
        emit_text("\n\n".join(render_details(r) for r in records))


def stats(as_json: JsonOpt = False) -> None:
    """Counts of what is stored, by type and project."""
    from cmem_cli.timeutil import to_iso

    with open_memory() as memory:
        data = memory.store.stats()
        data["database"] = str(memory.config.db_path)
        data["export_dir"] = str(memory.config.export_dir)
        data["database_bytes"] = memory.config.db_path.stat().st_size
    data["first"], data["last"] = to_iso(data.get("first")), to_iso(data.get("last"))
    if as_json:
        write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return
    pairs: list[tuple[str, object]] = list(data["counts"].items())
    pairs += [(f"type:{name}", count) for name, count in data["by_type"].items()]
    pairs += [(f"project:{name}", count) for name, count in data["by_project"].items()]
    pairs += [
        ("first", data["first"] or ""),
        ("last", data["last"] or ""),
        ("database", data["database"]),
        ("database_bytes", data["database_bytes"]),
        ("export_dir", data["export_dir"]),
    ]
    from cmem_cli.render import escape_control

    write("".join(f"{escape_control(str(k))}\t{escape_control(str(v))}\n" for k, v in pairs))


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("timeline")(timeline)
    app.command("get")(get)
    app.command("stats")(stats)
