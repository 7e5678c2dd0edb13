"""Maintenance commands: export --rebuild and doctor."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from cmem_cli.commands.common import JsonOpt, open_memory
from cmem_cli.render import write


def export_cmd(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Regenerate every file from the database.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show where the markdown export lives, or rebuild it from the database (idempotent)."""
    with open_memory() as memory:
        if not rebuild:
            print(memory.config.export_dir)
            return
        result = memory.rebuild_export()
    if as_json:
        write(json.dumps(result) + "\n")
    else:
        print(
            f"written {result['written']}, unchanged {result['unchanged']}, removed {result['removed']}",
            file=sys.stderr,
        )


def doctor(
    fix: Annotated[
        bool, typer.Option("--fix", help="Rewrite missing or changed files, remove orphans.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check database integrity and the export tree (missing, changed, orphaned files). Exit 1 on problems."""
    from cmem_cli.context import current_config
    from cmem_cli.doctor import diagnose

    report = diagnose(current_config(), fix=fix)
    if as_json:
        write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    else:
        for check in report["checks"]:
            write(f"{check['status']}\t{check['name']}\t{check['detail']}\n")
    if not report["ok"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
    app.command("doctor")(doctor)
