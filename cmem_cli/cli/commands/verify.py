"""`cmem verify`: say that memories still hold for the code as it is now, or list those that may not."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from cmem_cli.cli.commands.common import FormatOpt, JsonOpt, ProjectOpt
from cmem_cli.cli.exits import EXIT_NOT_FOUND
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import Column, emit_rows, escape_control, resolve_format, write
from cmem_cli.core.errors import UsageError

STALE_COLUMNS = [
    Column("id", "ID", justify="right", priority=0),
    Column("created_at", "DATE", lambda r: (r.get("created_at") or "")[:10], priority=3),
    Column("type", "TYPE", priority=2),
    Column("title", "TITLE", max_width=60, priority=1, shrink_to=20),
    Column("stale", "STALE FILES", lambda r: ", ".join(r.get("stale") or []), priority=1, shrink_to=20),
]


def verify(
    obs_ids: Annotated[
        list[str] | None,
        typer.Argument(help="Observations to re-anchor (ids, uids or unique uid prefixes).", metavar="ID..."),
    ] = None,
    stale: Annotated[
        bool, typer.Option("--stale", help="List memories whose cited files changed or vanished instead.")
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Re-anchor memories to their cited files as they are now (they still hold), or list stale ones.

    Exit status 3 when an id does not exist (nothing is changed) or a memory could not be anchored."""
    if stale == bool(obs_ids):
        raise UsageError("give observation ids to verify, or --stale to list stale memories")
    if stale:
        with open_api() as memory:
            rows = memory.stale(project=project)
        emit_rows(rows, STALE_COLUMNS, resolve_format(fmt, as_json))
        return
    if project is not None or fmt is not None:
        raise UsageError("--project and --format go with --stale")
    with open_api(write=True) as memory:
        results = memory.verify(*(obs_ids or []))
    if as_json:
        write(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
    else:
        for result in results:
            if result["verified"]:
                files = len(result["files"])
                write(f"{result['id']}\tverified\t{files} file{'s' if files != 1 else ''}\n")
            else:
                write(f"{result['id']}\tnot verified\t{escape_control(result['reason'])}\n")
    failed = [r for r in results if not r["verified"]]
    for result in failed:
        print(f"cmem: {result['id']} not verified: {result['reason']}", file=sys.stderr)
    if failed:
        raise typer.Exit(EXIT_NOT_FOUND)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)
