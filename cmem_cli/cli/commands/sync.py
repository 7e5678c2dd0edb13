"""`cmem sync` and `cmem sync init URL`: adopt edits made in the export tree, and share it through git.

Without a remote, `cmem sync` adopts local edits (``cmem_cli.api.Memory.adopt_edits``); once `cmem sync init URL`
has connected the tree to a git remote, it also commits, fetches, merges, adopts and pushes
(``cmem_cli.sync.gitsync``).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import escape_control, write
from cmem_cli.core.errors import EXIT_INVALID

sync_app = typer.Typer(invoke_without_command=True)


def _local(memory: Any, as_json: bool) -> None:
    report = memory.adopt_edits()
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


def _print_git_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    for item in report["rejected"]:
        print(f"cmem: {escape_control(item['path'])}: {escape_control(item['reason'])}", file=sys.stderr)
    for item in report["conflicts"]:
        print(f"cmem: conflict in {escape_control(item['path'])}: {item['resolution']}", file=sys.stderr)
    for note in report["notes"]:
        print(f"cmem: {escape_control(note)}", file=sys.stderr)
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
    """Adopt what changed in the export tree (edited files update, new files add, deleted files forget);
    with a git remote (`cmem sync init URL`) also commit, fetch, merge, adopt what arrived and push.

    Safe to repeat and to run from cron. Conflicts need no person: the later edit stays, the other text
    is kept as a linked conflict copy; an edit beats a forget. Exit 4 when a file could not be adopted
    (reported by path, left untouched), 9 when git fails (remote unreachable or refusing the push)."""
    if ctx.invoked_subcommand is not None:
        return
    from cmem_cli.sync.gitsync import is_connected, run_sync

    with open_api(write=True) as memory:
        if not is_connected(memory.export_dir):
            _local(memory, as_json)
            return
        report = run_sync(memory.service)  # git sync works inside the write service's file transaction
    _print_git_report(report, as_json)


@sync_app.command("init")
def sync_init(
    url: Annotated[str, typer.Argument(help="Any URL git accepts, including a local bare repository.")],
    as_json: JsonOpt = False,
) -> None:
    """Connect the export tree to a git remote: bring in its history and adopt it, or push to an empty one."""
    from cmem_cli.sync.gitsync import run_sync

    with open_api(write=True) as memory:
        report = run_sync(memory.service, url)
    _print_git_report(report, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(sync_app, name="sync")
