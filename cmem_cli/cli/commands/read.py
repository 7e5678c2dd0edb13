"""Read commands: the three retrieval layers (search, timeline, get) and stats.

The retrieval layers' options are declared in ``cmem_cli.cli.options`` and their bodies live in
``cmem_cli.cli.read_bodies`` (no typer there, so the fast path in ``cmem_cli.cli.fast`` can run them).
"""

from __future__ import annotations

import json

import typer

from cmem_cli.cli import build, options
from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import write


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


def register(app: typer.Typer) -> None:
    build.register(app, options.SEARCH, options.TIMELINE, options.GET)
    app.command("stats")(stats)
