"""`cmem sync`: adopt edits made in the markdown export tree (the body is ``cmem_cli.sync.sync_local``)."""

from __future__ import annotations

import json
import sys

import typer

from cmem_cli.commands.common import JsonOpt, open_memory
from cmem_cli.errors import EXIT_INVALID
from cmem_cli.render import escape_control, write


def sync_cmd(as_json: JsonOpt = False) -> None:
    """Adopt what changed in the export tree: edited files update, new files add, deleted files forget.

    Exit 4 when a file could not be adopted (each is reported with its reason and left untouched).
    """
    from cmem_cli.sync import sync_local

    with open_memory() as memory:
        report = sync_local(memory)
    if as_json:
        write(json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        for name in ("adopted", "created", "forgotten", "rolled_back"):
            for path in getattr(report, name):
                write(f"{name}\t{escape_control(path)}\n")
    for path, reason in report.invalid + report.conflicts:
        print(f"cmem: {escape_control(path)}: {escape_control(reason)}", file=sys.stderr)
    if report.invalid or report.conflicts:
        raise typer.Exit(EXIT_INVALID)


def register(app: typer.Typer) -> None:
    app.command("sync")(sync_cmd)
