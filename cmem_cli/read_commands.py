"""The bodies of the read commands (search, timeline, get), free of typer and click.

``cmem_cli.commands.read`` declares these commands' options for typer and calls the functions here;
``cmem_cli.fast_cli`` calls them directly when the command line is simple, so that `cmem search` from a
hook or a script does not spend 30-40 ms importing typer and click. Both paths pass the same keyword
arguments (tests/test_fast_cli.py checks it), so the functions' parameter names are the typer commands'.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from cmem_cli.context import open_reader
from cmem_cli.render import TYPE_ICONS, Column, emit_rows, emit_text, resolve_format, write
from cmem_cli.store import Filters


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


def search(
    query: str | None = None,
    project: str | None = None,
    obs_type: list[str] | None = None,
    concept: list[str] | None = None,
    file: list[str] | None = None,
    agent: str | None = None,
    session: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = 20,
    offset: int = 0,
    order: str = "relevance",
    mode: str = "auto",
    rerank: bool | None = None,
    min_score: float | None = None,
    collection: list[str] | None = None,
    explain: bool = False,
    all_hits: bool = False,
    as_json: bool = False,
    fmt: str | None = None,
) -> int:
    """`cmem search`: one compact row per hit; exit status EXIT_NO_MATCH when there is none (like grep)."""
    from cmem_cli.errors import EXIT_NO_MATCH, EXIT_OK
    from cmem_cli.retrieval import build_filters
    from cmem_cli.retrieval import search as run_search

    output = resolve_format(fmt, as_json)
    filters = build_filters(project, obs_type, concept, file, agent, session, since, until)
    with open_reader() as reader:
        rows, _, notes, total, capped = run_search(
            reader,
            query,
            filters,
            limit=0 if all_hits else limit,
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
    shown_to = offset + len(rows)
    if rows and (capped or total > shown_to):
        more = f"{total}+" if capped else str(total)
        print(f"cmem: showing {len(rows)} of {more} (-n 0 or --all for every hit)", file=sys.stderr)
    return EXIT_OK if rows else EXIT_NO_MATCH


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
    ref: str | None = None,
    query: str | None = None,
    before: int = 5,
    after: int = 5,
    project: str | None = None,
    as_json: bool = False,
    fmt: str | None = None,
) -> None:
    """`cmem timeline`: what happened around one observation, in time order."""
    from cmem_cli.errors import InvalidInput
    from cmem_cli.retrieval import resolve_query_anchor
    from cmem_cli.retrieval import timeline as build_timeline

    if (ref is None) == (query is None):
        raise InvalidInput("give an anchor ID or --query, not both")
    output = resolve_format(fmt, as_json)
    with open_reader() as reader:
        if query is not None:
            ref = resolve_query_anchor(reader.store, query, Filters(project=project))
        result = build_timeline(reader.store, ref, before=before, after=after)
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
    refs: list[str],
    links: bool = False,
    as_json: bool = False,
    fmt: str | None = None,
) -> None:
    """`cmem get`: full details of observations; counts as a retrieval."""
    from cmem_cli.details import fetch_details, render_details

    output = "json" if as_json else (fmt or "md")
    if output not in ("md", "json", "ndjson", "plain"):
        from cmem_cli.errors import UsageError

        raise UsageError(f"unknown format {output!r} for get (expected md, json or ndjson)")
    with open_reader() as reader:
        records = fetch_details(reader, refs, follow_links=links)
    if output == "json":
        write(json.dumps(records, ensure_ascii=False, indent=2) + "\n")
    elif output == "ndjson":
        write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    else:
        emit_text("\n\n".join(render_details(r) for r in records))
