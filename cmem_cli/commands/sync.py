"""`cmem sync` and `cmem sync init URL`: team memory through a git remote."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from cmem_cli.commands.common import JsonOpt, open_memory
from cmem_cli.errors import EXIT_INVALID
from cmem_cli.render import write

sync_app = typer.Typer(invoke_without_command=True)


def _print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    for item in report["rejected"]:
        print(f"cmem: {item['path']}: {item['reason']} (not adopted)", file=sys.stderr)
    for item in report["conflicts"]:
        print(f"cmem: conflict in {item['path']}: {item['resolution']}", file=sys.stderr)
    for note in report["notes"]:
        print(f"cmem: {note}", file=sys.stderr)
    if not as_json:
        print(
            f"committed {report['committed']}, adopted {report['adopted']}, forgotten {report['forgotten']}, "
            f"conflicts {len(report['conflicts'])}, rejected {len(report['rejected'])}"
            + (", pushed" if report["pushed"] else ""),
            file=sys.stderr,
        )
    if report["rejected"]:
        raise typer.Exit(EXIT_INVALID)


@sync_app.callback()
def sync(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Share memory through a git remote: commit, fetch, merge, adopt what arrived, push. Safe to repeat
    and to run from cron (after `cmem sync init URL`).

    Conflicts are resolved without a person: the later edit stays, the other text is kept as a linked
    conflict copy; an edit beats a forget. Exit 4 when a file could not be adopted (reported by path),
    9 when git fails (remote unreachable or refusing the push)."""
    if ctx.invoked_subcommand is not None:
        return
    from cmem_cli.gitsync import run_sync

    with open_memory() as memory:
        report = run_sync(memory)
    _print_report(report, as_json)


@sync_app.command("init")
def sync_init(
    url: Annotated[str, typer.Argument(help="Any URL git accepts, including a local bare repository.")],
    as_json: JsonOpt = False,
) -> None:
    """Connect the export tree to a git remote: bring in its history and adopt it, or push to an empty one."""
    from cmem_cli.gitsync import run_sync

    with open_memory() as memory:
        report = run_sync(memory, url)
    _print_report(report, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(sync_app, name="sync")
