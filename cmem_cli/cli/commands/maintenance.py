"""Maintenance commands: export --rebuild and doctor."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.exits import EXIT_INVALID
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import write

if TYPE_CHECKING:
    from cmem_cli.api import DoctorReport


def export_cmd(
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="Adopt hand edits and new files, then regenerate every file from the database.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show where the markdown export lives, or rebuild it from the database (idempotent; never deletes)."""
    with open_api() as memory:
        if not rebuild:
            print(memory.export_dir)
            return
        result = memory.rebuild_export()
    if as_json:
        write(json.dumps(result) + "\n")
    else:
        print(
            f"written {result['written']}, unchanged {result['unchanged']}, "
            f"adopted {result['adopted']}, created {result['created']}",
            file=sys.stderr,
        )
        for item in result["invalid"]:
            print(f"cmem: {item['path']}: {item['reason']} (not adopted)", file=sys.stderr)


_NOT_ADOPTED = (
    "files not adopted"  # doctor's check of files adoption refuses (services.upkeep.doctor.NOT_ADOPTED)
)


def doctor(
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Roll back interrupted writes, adopt hand-edited and new files, rewrite missing ones.",
        ),
    ] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Render every memory and compare it with its file, not only the files whose size or time "
            "changed since cmem wrote them (minutes at a million memories; --fix always does).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check database integrity and the export tree (missing, changed, orphaned files). Exit 1 on problems,
    4 when the only problem is files that cannot be adopted (each listed with its reason)."""
    from cmem_cli.cli.invocation import open_api

    with open_api() as memory:
        report = memory.doctor(fix=fix, full=full)
    _agent_checks(report)
    if as_json:
        write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    else:
        from cmem_cli.cli.render import Column, emit_rows, resolve_format

        columns = [
            Column("status", "STATUS", priority=0),
            Column("name", "CHECK", priority=0),
            Column("detail", "DETAIL", priority=1, shrink_to=20),
        ]
        emit_rows(report["checks"], columns, resolve_format(None, False))
        if not report.get("full", True):
            print("cmem: note: quick check: files unchanged since cmem wrote them were not compared; "
                  "`cmem doctor --full` compares every file", file=sys.stderr)  # fmt: skip
    if not report["ok"]:
        failed = {c["name"] for c in report["checks"] if c["status"] == "fail"}
        raise typer.Exit(EXIT_INVALID if failed == {_NOT_ADOPTED} else 1)


def _agent_checks(report: DoctorReport) -> None:
    """One check per agent and scope cmem is installed for: a hook entry whose cmem cannot be run, or that
    misses an event cmem needs, fails (`cmem install AGENT` puts it right)."""
    from cmem_cli.capture.agent_status import agent_status

    for row in agent_status():
        if not row["hooks"] and not row["mcp"]:
            continue
        name = f"agent {row['agent']} ({row['scope']})"
        if row["problems"]:
            fix = f"`cmem install {row['agent']}{' --scope project' if row['scope'] == 'project' else ''}`"
            detail = f"{'; '.join(row['problems'])} in {row['hooks_file']}; run {fix}"
            report["checks"].append({"name": name, "status": "fail", "detail": detail})
            report["ok"] = False
        else:
            events = len(row["hooks"])
            detail = f"{events} hook event{'s' if events != 1 else ''}" + (
                ", MCP server" if row["mcp"] else ""
            )
            report["checks"].append({"name": name, "status": "ok", "detail": detail})


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
    app.command("doctor")(doctor)
