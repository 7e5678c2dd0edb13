"""Read commands: the three retrieval layers (search, timeline, get) and stats.

The retrieval layers' bodies live in ``cmem_cli.cli.read_bodies`` (no typer there, so the fast path in
``cmem_cli.cli.fast`` can run them); this module declares their options.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cmem_cli.cli import read_bodies as read_commands
from cmem_cli.cli.commands.common import AgentOpt, FormatOpt, JsonOpt, ProjectOpt, SessionOpt, open_memory
from cmem_cli.cli.render import write


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
    limit: Annotated[int, typer.Option("--limit", "-n", help="Maximum rows (0: every hit).")] = 20,
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
        float | None,
        typer.Option(
            "--min-score",
            help="Drop hits scoring below this (0..1; default: calibrated, see docs/retrieval.md; 0 keeps all).",
        ),
    ] = None,
    collection: Annotated[
        list[str] | None,
        typer.Option(
            "--collection", "-c", help="Only this collection (repeatable; 'memories' is cmem's own)."
        ),
    ] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show each signal's rank and score.")] = False,
    all_hits: Annotated[
        bool, typer.Option("--all", help="Every hit above the cut-off (same as -n 0).")
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> int:
    """Search memories and documents: one compact row per hit (id, date, type, title, project, token cost).

    Exit status 9 when nothing matches; "showing N of M" on stderr when more hits exist than shown.
    """
    return read_commands.search(
        query=query,
        project=project,
        obs_type=obs_type,
        concept=concept,
        file=file,
        agent=agent,
        session=session,
        since=since,
        until=until,
        limit=limit,
        offset=offset,
        order=order,
        mode=mode,
        rerank=rerank,
        min_score=min_score,
        collection=collection,
        explain=explain,
        all_hits=all_hits,
        as_json=as_json,
        fmt=fmt,
    )


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
    read_commands.timeline(
        ref=ref, query=query, before=before, after=after, project=project, as_json=as_json, fmt=fmt
    )


def get(
    refs: Annotated[
        list[str], typer.Argument(help="Observation ids (S<n> summaries, P<n> prompts).", metavar="ID...")
    ],
    links: Annotated[bool, typer.Option("--links", help="Also show linked observations (one hop).")] = False,
    path_only: Annotated[
        bool, typer.Option("--path", help="Print only each record's file path (absolute), one per line.")
    ] = False,
    as_json: JsonOpt = False,
    fmt: Annotated[
        str | None,
        typer.Option("--format", "-f", help="md (default), json, ndjson or plain.", metavar="FORMAT"),
    ] = None,
) -> None:
    """Full details of observations; counts as a retrieval."""
    read_commands.get(refs=refs, links=links, path_only=path_only, as_json=as_json, fmt=fmt)


def stats(as_json: JsonOpt = False) -> None:
    """Counts of what is stored, by type and project."""
    from cmem_cli.core.timeutil import to_iso

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
    from cmem_cli.cli.render import emit_pairs

    emit_pairs(pairs)


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("timeline")(timeline)
    app.command("get")(get)
    app.command("stats")(stats)
