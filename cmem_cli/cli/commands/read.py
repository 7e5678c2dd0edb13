"""Read commands: the three retrieval layers (search, timeline, get), stats and projects.

The retrieval layers' options are declared in ``cmem_cli.cli.options`` and their bodies live in
``cmem_cli.cli.read_bodies`` (no typer there, so the fast path in ``cmem_cli.cli.fast`` can run them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import typer

from cmem_cli.cli import build, options
from cmem_cli.cli.commands.common import FormatOpt, JsonOpt
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import Column, emit_rows, resolve_format, write


def stats(as_json: JsonOpt = False) -> None:
    """Counts of what is stored, by type and project."""
    with open_api() as memory:
        data = memory.stats()
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


PROJECT_COLUMNS = [
    Column("project", "PROJECT", max_width=30, priority=0),
    Column("observations", "OBSERVATIONS", justify="right", priority=1),
    Column("last", "LAST", lambda r: (r.get("last") or "")[:10], priority=2),
    Column("repository", "REPOSITORY", lambda r: r.get("repository") or "-", max_width=60, priority=3),
    Column("mapped", "MAPPED", lambda r: _mapped(r), max_width=30, priority=4),
]


def _mapped(row: Mapping[str, object]) -> str:
    if row.get("same_as"):
        return f"older name of {row['same_as']}"
    return str(row.get("mapped") or "-")


def projects(as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """The projects memory holds and the git repository each stands for (its origin, else its folder):
    every worktree and clone of a repository files under one project."""
    with open_api() as memory:
        rows = memory.projects()
    emit_rows(
        rows, PROJECT_COLUMNS, resolve_format(fmt, as_json), id_key="project", empty_message="no projects yet"
    )


def register(app: typer.Typer) -> None:
    build.register(app, options.search_command(), options.timeline_command(), options.GET)
    app.command("stats")(stats)
    app.command("projects")(projects)
