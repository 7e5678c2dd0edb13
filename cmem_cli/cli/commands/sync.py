"""`cmem sync` and `cmem sync init URL`: adopt edits made in the export tree, and share it through git
or a team database.

Without a remote, `cmem sync` adopts local edits (``cmem_cli.api.Memory.adopt_edits``); once `cmem sync init URL`
has connected the home to a remote, it exchanges with it through the API's one face for remotes
(``Memory.remote``, ``Memory.remote_at(url)``): a git remote commits, fetches, merges, adopts and pushes; a
``postgresql://`` (or ``postgres://``) URL joins a team database instead. Every exchange returns one typed
report, which :func:`print_report` prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from cmem_cli.cli.commands.common import JsonOpt
from cmem_cli.cli.exits import EXIT_INVALID
from cmem_cli.cli.guard import failure, unsecret
from cmem_cli.cli.invocation import open_api
from cmem_cli.cli.render import dumps, escape_control, write

if TYPE_CHECKING:
    from cmem_cli.api import Memory, SyncReport
    from cmem_cli.core.sync_report import ConflictItem, Skipped

Progress = Callable[[str, int, int], None]

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


def _write_result(report: SyncReport | None, code: int, error: str | None) -> None:
    """A sync's `--json` result object, done or failed: what it did, whether it succeeded and why not."""
    done = report.to_json() if report is not None else {}
    write(dumps({**done, "ok": code == 0, "exit_code": code, "error": error}) + "\n")


def print_report(report: SyncReport, as_json: bool, *, failed: bool = False) -> None:
    """The one printer of a remote's report: the result object (``--json``) on stdout; the files not
    adopted, the conflicts (both uids), the rows skipped and the notes on stderr, then a summary line."""
    code = EXIT_INVALID if report.failed_files else 0
    if as_json:
        _write_result(report, code, None)
    for rejected in report.rejected:
        print(
            f"cmem: {escape_control(rejected['path'])}: {escape_control(rejected['reason'])}", file=sys.stderr
        )
    for conflict in report.conflicts:
        print(f"cmem: {conflict_line(conflict)}", file=sys.stderr)
    for skipped in report.skipped:
        print(f"cmem: {escape_control(skipped_line(skipped))}", file=sys.stderr)
    for note in report.notes:
        print(f"cmem: {escape_control(unsecret(note))}", file=sys.stderr)
    if not as_json:
        print(escape_control(report.summary()), file=sys.stderr)
    if code and not failed:
        raise typer.Exit(code)


def _exchange(action: Callable[[Progress], SyncReport], as_json: bool) -> None:
    """Run one exchange with the remote; a failure still prints what was done before it (with
    ``--json`` a result object with the error and the exit code) before the one-line error on stderr."""
    from cmem_cli.cli.progress import ProgressBar

    try:
        with ProgressBar() as progress:  # works inside the write service's transaction
            report = action(progress)
    except (
        KeyboardInterrupt
    ) as exc:  # typer would end it silently with 130: the one line, as the guard says it
        if as_json:
            _write_result(getattr(exc, "sync_report", None), 130, "interrupted")
        print("cmem: interrupted", file=sys.stderr)
        raise typer.Exit(130) from None
    except Exception as exc:
        done: SyncReport | None = getattr(exc, "sync_report", None)
        if as_json:
            message, code = failure(exc)
            _write_result(done, code, message)
        elif done is not None and done.told_on_failure:  # a team sync's pull was done, its push refused
            print_report(done, as_json, failed=True)
        raise
    print_report(report, as_json)


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
    with open_api(write=True) as memory:
        remote = memory.remote
        if remote is None:
            _local(memory, as_json)
            return
        _exchange(lambda progress: remote.sync(progress=progress), as_json)


def conflict_line(item: ConflictItem) -> str:
    """One conflict a sync settled, as stderr says it: the memory kept, its copy (or the other memory of
    a key clash), and how; the same words for a git remote and a team database."""
    named = item.get("uid") or item.get("path") or "?"
    if item.get("copy_uid"):
        named += f" (copy {item['copy_uid']})"
    if item.get("other_uid"):
        named += f" (and {item['other_uid']})"
    where = f" in {item['path']}" if item.get("path") and item.get("uid") else ""
    return escape_control(f"conflict on {named}{where}: {item['resolution']}")


def skipped_line(item: Skipped) -> str:
    """One row of the team database that was not taken, as stderr says it."""
    return (
        f"skipped {item['kind']} {item['uid']} from the team database (written by {item['machine']}): "
        f"{item['reason']}"
    )


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
    with open_api(write=True) as memory:
        remote = memory.remote_at(url)
        _exchange(
            lambda progress: remote.init(projects=project or [], machine=machine, progress=progress), as_json
        )


def register(app: typer.Typer) -> None:
    app.add_typer(sync_app, name="sync")
