"""`cmem sync` with a team database: adopt hand edits, push the outbox, pull what others pushed.

`cmem sync init postgresql://...` joins: it creates or migrates the server's schema, installs this home's
outbox (tables and triggers), records the URL without its password, queues every memory this home holds,
and syncs. Later syncs need only the stored URL; libpq supplies the password (``PGPASSFILE``,
``~/.pgpass``, ``pg_service.conf``, ``PGPASSWORD``). A server that cannot be reached is SyncError (exit 9):
local writes keep queueing, and the next sync sends them.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

from cmem_cli.core.errors import UsageError
from cmem_cli.core.sync_report import Flow, SyncReport
from cmem_cli.core.synclock import sync_lock
from cmem_cli.services.inbound import remote_state
from cmem_cli.services.read.search_pipeline import Reader
from cmem_cli.services.write.service import WriteService
from cmem_cli.store import team_outbox as outbox
from cmem_cli.team import restore, server
from cmem_cli.team.pull import PULLED, Puller
from cmem_cli.team.push import Pusher
from cmem_cli.team.url import split_password
from cmem_cli.team.vectors import VectorMaker

Started = Callable[[SyncReport], object]  # told the report as soon as it exists (see cmem_cli.remote)

URL = outbox.URL_KEY
MACHINE = "machine"
PROJECTS = "projects"
PASSWORD_NOTE = (
    "the password in the URL was used for this command only and is not stored: later syncs take it from "
    "~/.pgpass (or PGPASSFILE), a pg_service.conf service, or PGPASSWORD"
)


class TeamSettings(TypedDict):
    """The team database this home joined, as its local settings say."""

    url: str  # without its password
    machine: str  # this home's name there
    projects: list[str]  # the projects pulled (empty: all)
    pulled: int  # the server's revision pulled up to
    queued: int  # local writes waiting to be pushed


def remote(memory: Reader) -> TeamSettings | None:
    """This home's team remote (URL without password, machine name, pulled projects), or None."""
    values = memory.store.team_outbox.settings()
    url = values.get(URL)
    if not url:
        return None
    return {
        "url": url,
        "machine": values.get(MACHINE) or "",
        "projects": json.loads(values.get(PROJECTS) or "[]"),
        "pulled": int(values.get(PULLED) or 0),
        "queued": memory.store.team_outbox.pending_count(),
    }


def new_report(settings: TeamSettings) -> SyncReport:
    """An empty report of an exchange with the team database ``settings`` name. ``pushed`` and ``pulled``
    count memories (observations and summaries); ``restored``: the server went back in time and this
    sync pulled it again (:mod:`cmem_cli.team.restore`)."""
    return SyncReport(
        kind="team",
        remote=settings["url"],
        machine=settings["machine"],
        projects=settings["projects"],
        sessions=Flow(pushed=0, pulled=0),
        prompts=Flow(pushed=0, pulled=0),
    )


def init(
    memory: WriteService,
    url_text: str,
    *,
    projects: list[str],
    machine: str | None,
    on_start: Started | None = None,
) -> SyncReport:
    """Join the team database at ``url_text`` (creating its schema if needed) and sync. ``on_start`` is
    handed the report once the sync starts; it is filled as the sync goes (a caller that catches a failure
    prints what was done before it)."""
    given = split_password(url_text)
    for project in projects:
        if not project.strip():
            raise UsageError("--project must not be empty")
    local = memory.store
    current = remote(memory)
    if current is not None and current["url"] != given.url:
        raise UsageError(f"this home already syncs with {current['url']}")
    with sync_lock(memory.config.home):
        conn = server.connect(given.url, given.password)
        try:
            up_to_date(conn, given.url, given.password, [])  # a read-only role joins one made by another
            install(memory)
            wanted = sorted(set(projects))
            with local.transaction():
                first = current is None
                values: dict[str, str | None] = {
                    URL: given.url,
                    MACHINE: machine
                    or (current["machine"] if current else None)
                    or default_machine(memory.config.machine),
                    PROJECTS: json.dumps(wanted),
                }
                if current is not None and _widened(current["projects"], wanted):
                    values[PULLED] = (
                        "0"  # newly included projects: pull from the start (known rows are skipped)
                    )
                local.team_outbox.put(**values)
                local.team_outbox.queue_on(True)
                if first:
                    local.team_outbox.enqueue_all()
            report = _run(memory, conn, given.url, given.password, on_start)
        finally:
            conn.close()
    if given.password:
        report.notes.append(PASSWORD_NOTE)
    return report


def install(memory: WriteService) -> None:
    """This home's team tables and triggers up to date (a home that joined with an older cmem gets the
    newer ones), and the merge bases such a home lacks seeded (:mod:`cmem_cli.team.bases`)."""
    from cmem_cli.team import bases

    memory.store.team_outbox.install()
    bases.seed(memory, memory.store.team_outbox.settings().get(MACHINE) or default_machine())


def _widened(before: list[str], after: list[str]) -> bool:
    """Does the new scope include projects the old one left out? (An empty list is every project.)"""
    if not before:
        return False
    return not after or bool(set(after) - set(before))


def sync(memory: WriteService, on_start: Started | None = None) -> SyncReport:
    """One `cmem sync` with the team database this home joined (``on_start``: as for :func:`init`)."""
    with _connected(memory) as (conn, current):
        return _run(memory, conn, current["url"], None, on_start)


@contextlib.contextmanager
def _connected(memory: WriteService) -> Iterator[tuple[Any, TeamSettings]]:
    """The joined team database's connection and settings, under the sync lock, this home's tables
    up to date."""
    current = remote(memory)
    if current is None:
        raise UsageError("this home has no team database; run `cmem sync init postgresql://...` first")
    with sync_lock(memory.config.home):
        install(memory)
        conn = server.connect(current["url"])
        try:
            yield conn, current
        finally:
            conn.close()


def _run(
    memory: WriteService, conn: Any, url: str, password: str | None, on_start: Started | None
) -> SyncReport:
    """Adopt, push, pull. A push the server refuses (a read-only role) leaves the queue as it is and the
    pull goes on; the refusal is raised once the pull is done, with the report filled."""
    settings = remote(memory)
    assert settings is not None
    report = _started(new_report(settings), on_start)
    _adopt_local(memory, report)
    refused: server.ReadOnly | None = None
    up_to_date(conn, url, password, report.notes)  # a newer cmem joined with more migrations
    with server.translated(url, password, conn):
        vectors = VectorMaker(memory.config, report.notes)
        restore.check(memory, conn, report)
    try:
        with server.translated(url, password, conn):
            Pusher(memory, conn, settings["machine"], report, vectors).run()
    except server.ReadOnly as exc:
        refused = exc
    with server.translated(url, password, conn):
        Puller(memory, conn, settings["projects"], report).run()
        if report.restored and refused is None and memory.store.team_outbox.pending_count():
            Pusher(memory, conn, settings["machine"], report, vectors).run()  # forgets the re-pull found
    report.queued = memory.store.team_outbox.pending_count()
    if refused is not None:
        remote_state.pulled(memory.store)
        remote_state.refused(memory.store, refused.message, read_only=refused.read_only)
        raise refused
    remote_state.synced(memory.store)
    return report


OLD_SCHEMA_NOTE = (
    "the team database's schema is older than this cmem's, and this role may not bring it up to date: "
    "the next sync of the member who joined first will"
)


def up_to_date(conn: Any, url: str, password: str | None, notes: list[str]) -> None:
    """Create or migrate the server's schema. A role that may not (a reader, joining or syncing before a
    writer with a newer cmem did) goes on with the schema there is, when it can read it."""
    try:
        with server.translated(url, password, conn):
            if not server.is_migrated(conn):
                server.migrate(conn)
    except server.ReadOnly as refused:
        if not server.readable(conn):  # the refusal stands: its message says which grant is missing
            raise refused from None
        notes.append(OLD_SCHEMA_NOTE)


def _started(report: SyncReport, on_start: Started | None) -> SyncReport:
    if on_start is not None:
        on_start(report)
    return report


def _adopt_local(memory: WriteService, report: SyncReport) -> None:
    """Hand edits of the export tree first: adopting them writes the store, which queues them."""
    from cmem_cli.services.inbound.sync_local import sync_local

    result = sync_local(memory)
    # a deleted file is adopted as a forget, which the push then counts (forgotten_there): counting it
    # here too said "forgotten 3" for two forgets
    report.adopted += len(result.adopted) + len(result.created) + len(result.forgotten)
    for relpath, why in result.invalid + result.conflicts:
        report.rejected.append({"path": relpath, "reason": why})


def default_machine(configured: str | None = None) -> str:
    """The name a home joins its team database under: CMEM_MACHINE, the config file's ``machine``, the host."""
    return os.environ.get("CMEM_MACHINE") or configured or socket.gethostname() or "unknown"


def push_only(
    memory: WriteService,
    conn: Any,
    settings: TeamSettings,
    report: SyncReport,
    vectors: VectorMaker,
) -> None:
    """Push what is queued (`cmem watch` does this within seconds of a local write), once the server is
    known not to have gone back in time."""
    try:
        with server.translated(settings["url"], None, conn):
            restore.check(memory, conn, report)
            Pusher(memory, conn, settings["machine"], report, vectors).run()
    except server.ReadOnly as exc:
        remote_state.refused(memory.store, exc.message, read_only=exc.read_only)
        raise
    remote_state.pushed(memory.store)


def pull_only(memory: WriteService, conn: Any, settings: TeamSettings, report: SyncReport) -> None:
    with server.translated(settings["url"], None, conn):
        Puller(memory, conn, settings["projects"], report).run()
    remote_state.pulled(memory.store)


def push(memory: WriteService, on_start: Started | None = None) -> SyncReport:
    """Push what is queued here, pulling nothing (``on_start``: as for :func:`init`)."""
    return _one_way(memory, on_start, pulling=False)


def pull(memory: WriteService, on_start: Started | None = None) -> SyncReport:
    """Pull what others pushed, pushing nothing (``on_start``: as for :func:`init`)."""
    return _one_way(memory, on_start, pulling=True)


def _one_way(memory: WriteService, on_start: Started | None, *, pulling: bool) -> SyncReport:
    with _connected(memory) as (conn, current):
        report = _started(new_report(current), on_start)
        up_to_date(conn, current["url"], None, report.notes)
        if pulling:
            pull_only(memory, conn, current, report)
        else:
            push_only(memory, conn, current, report, VectorMaker(memory.config, report.notes))
        report.queued = memory.store.team_outbox.pending_count()
        return report
