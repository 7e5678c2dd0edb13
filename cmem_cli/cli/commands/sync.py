"""`cmem sync` and `cmem sync init URL`: adopt edits made in the export tree, and share it through git
or a team database.

Without a remote, `cmem sync` adopts local edits (``cmem_cli.api.Memory.adopt_edits``); once `cmem sync init URL`
has connected the tree to a git remote, it also commits, fetches, merges, adopts and pushes
(``cmem_cli.sync.gitsync``). A ``postgresql://`` (or ``postgres://``) URL joins a team database instead
(``cmem_cli.team``): the URL's scheme picks the kind of remote.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.exits import EXIT_INVALID
from cmem_cli.cli.guard import failure, unsecret
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import dumps, escape_control, write

if TYPE_CHECKING:
    from cmem_cli.api import Memory

sync_app = typer.Typer(invoke_without_command=True)


def _local(memory: Memory, as_json: bool) -> None:
    report = memory.adopt_edits()
    if as_json:
        write(dumps(report.to_json()) + "\n")
    else:
        for name in ("adopted", "created", "forgotten", "rolled_back"):
            for path in getattr(report, name):
                write(f"{name}\t{escape_control(path)}\n")
    for path, reason in report.invalid + report.conflicts:
        print(f"cmem: {escape_control(path)}: {escape_control(reason)}", file=sys.stderr)
    if report.invalid or report.conflicts:
        raise typer.Exit(EXIT_INVALID)


def _write_result(report: dict[str, Any], code: int, error: str | None) -> None:
    """A sync's `--json` result object, done or failed: what it did, whether it succeeded and why not."""
    write(dumps({**report, "ok": code == 0, "exit_code": code, "error": error}) + "\n")


def _say_rejected_and_conflicts(report: dict[str, Any]) -> None:
    """The files not adopted and the conflicts (both uids) on stderr, as git and team sync both tell them."""
    for item in report["rejected"]:
        print(f"cmem: {escape_control(item['path'])}: {escape_control(item['reason'])}", file=sys.stderr)
    for item in report["conflicts"]:
        print(f"cmem: {conflict_line(item)}", file=sys.stderr)


def _print_git_report(report: dict[str, Any], as_json: bool) -> None:
    code = EXIT_INVALID if report["rejected"] else 0
    if as_json:
        _write_result(report, code, None)
    _say_rejected_and_conflicts(report)
    for note in report["notes"]:
        print(f"cmem: {escape_control(note)}", file=sys.stderr)
    if not as_json:
        print(
            f"committed {report['committed']}, adopted {report['adopted']}, forgotten {report['forgotten']}, "
            f"conflicts {len(report['conflicts'])}, rejected {len(report['rejected'])}"
            + (", pushed" if report["pushed"] else ""),
            file=sys.stderr,
        )
    if code:
        raise typer.Exit(code)


def _run_git_sync(memory: Memory, url: str | None, as_json: bool) -> None:
    """Run the git sync; with ``--json`` a failure still prints a result object (what was done before it,
    the error and the exit code) before the one-line error on stderr."""
    from cmem_cli.cli.progress import ProgressBar
    from cmem_cli.sync.gitsync import run_sync

    report: dict[str, Any] = {}
    try:
        with ProgressBar() as progress:  # works inside the write service's transaction
            report = run_sync(memory.service, url, report=report, progress=progress)
    except Exception as exc:
        if as_json:
            message, code = failure(exc)
            _write_result(report, code, message)
        raise
    _print_git_report(report, as_json)


@sync_app.callback()
def sync(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Adopt what changed in the export tree (edited files update, new files add, deleted files forget);
    with a remote (`cmem sync init URL`) also exchange with it: a git remote commits, fetches, merges,
    adopts what arrived and pushes; a team database pushes what is queued here and pulls what others
    pushed.

    Safe to repeat and to run from cron. Conflicts need no person: concurrent edits of different fields
    merge; where both machines changed one field the later edit stays and the other text is kept as a
    linked conflict copy; an edit beats a forget. Exit 4 when a file could not be adopted (reported by
    path, left untouched, on every sync until fixed), 9 when the remote fails (unreachable, refusing the
    login or the push; a read-only team role pulls first and keeps its writes queued); `--json` prints a
    result object on failure too."""
    if ctx.invoked_subcommand is not None:
        return
    from cmem_cli.sync.gitsync import is_connected
    from cmem_cli.team import teamsync

    with open_api(write=True) as memory:
        if teamsync.remote(memory.service) is not None:
            _run_team_sync(lambda report: teamsync.sync(memory.service, report), as_json)
            return
        if not is_connected(memory.service.config.home, memory.export_dir):
            _local(memory, as_json)
            return
        _run_git_sync(memory, None, as_json)


def _run_team_sync(action: Callable[[dict[str, Any]], dict[str, Any]], as_json: bool) -> None:
    """Run a team sync; a failure still prints what was done before it (with ``--json`` a result object
    with the error and the exit code, as git sync's) before the one-line error on stderr."""
    report: dict[str, Any] = {}
    try:
        report = action(report)
    except KeyboardInterrupt:  # typer would end it silently with 130: the one line, as the guard says it
        if as_json:
            _write_result(report, 130, "interrupted")
        print("cmem: interrupted", file=sys.stderr)
        raise typer.Exit(130) from None
    except Exception as exc:
        if as_json:
            message, code = failure(exc)
            _write_result(report, code, message)
        elif report.get("remote"):  # the sync got as far as its report (a push refused, the pull done)
            _print_team_report(report, as_json, failed=True)
        raise
    _print_team_report(report, as_json)


def conflict_line(item: dict[str, Any]) -> str:
    """One conflict a sync settled, as stderr says it: the memory kept, its copy (or the other memory of
    a key clash), and how; the same words for a git remote and a team database."""
    named = item.get("uid") or item.get("path") or "?"
    if item.get("copy_uid"):
        named += f" (copy {item['copy_uid']})"
    if item.get("other_uid"):
        named += f" (and {item['other_uid']})"
    where = f" in {item['path']}" if item.get("path") and item.get("uid") else ""
    return escape_control(f"conflict on {named}{where}: {item['resolution']}")


def skipped_line(item: dict[str, Any]) -> str:
    """One row of the team database that was not taken, as stderr says it."""
    return (
        f"skipped {item['kind']} {item['uid']} from the team database (written by {item['machine']}): "
        f"{item['reason']}"
    )


def _print_team_report(report: dict[str, Any], as_json: bool, *, failed: bool = False) -> None:
    code = EXIT_INVALID if report["rejected"] else 0
    if as_json:
        _write_result(report, code, None)
    _say_rejected_and_conflicts(report)
    for item in report["skipped"]:
        print(f"cmem: {escape_control(skipped_line(item))}", file=sys.stderr)
    for note in report["notes"]:
        print(f"cmem: {escape_control(unsecret(note))}", file=sys.stderr)
    if not as_json:
        print(
            f"{escape_control(report['remote'])}: adopted {report['adopted']}, pushed {report['pushed']}, "
            f"pulled {report['pulled']}, forgotten {report['forgotten'] + report['forgotten_there']}, "
            f"conflicts {len(report['conflicts'])}, rejected {len(report['rejected'])}, "
            f"skipped {len(report['skipped'])}, queued {report['queued']}",
            file=sys.stderr,
        )
    if code and not failed:
        raise typer.Exit(code)


@sync_app.command("init")
def sync_init(
    url: Annotated[
        str,
        typer.Argument(
            help="A team database (postgresql://...) or any URL git accepts, including a local bare repository."
        ),
    ],
    project: Annotated[
        list[str] | None,
        typer.Option(
            "--project",
            "-p",
            help="Team database: pull only this project (repeatable; default: all).",
            metavar="NAME",
        ),
    ] = None,
    machine: Annotated[
        str | None,
        typer.Option(
            "--machine",
            help="Team database: this home's name on the server (default: host name).",
            metavar="NAME",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Connect to a remote: a PostgreSQL team database (its schema made if needed, every memory pushed,
    the others' pulled) or a git remote (its history started from and adopted, or pushed to when empty)."""
    from cmem_cli.core.errors import UsageError
    from cmem_cli.sync.gitsync import is_connected
    from cmem_cli.team import teamsync
    from cmem_cli.team.url import is_team_url

    with open_api(write=True) as memory:
        if is_team_url(url):
            if is_connected(memory.service.config.home, memory.export_dir):
                raise UsageError("this home already syncs through git; a home has one remote")
            _run_team_sync(
                lambda report: teamsync.init(
                    memory.service, url, projects=project or [], machine=machine, report=report
                ),
                as_json,
            )
            return
        if project or machine:
            raise UsageError("--project and --machine are for a team database (postgresql://...)")
        if teamsync.remote(memory.service) is not None:
            raise UsageError("this home already syncs with a team database; a home has one remote")
        _run_git_sync(memory, url, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(sync_app, name="sync")
