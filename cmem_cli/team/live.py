"""`cmem watch` with a team database: push within seconds of a local write, pull as soon as others push.

A thread beside the watcher: every second it looks at the outbox (one cheap SQLite count) and pushes
when something is queued; between looks it waits on the server's ``NOTIFY cmem_team`` (every push sends
one), and pulls when one arrives, or every :data:`POLL_SECONDS` in any case (a notification missed while
disconnected is caught up by the next poll). A server that goes away is reported once, retried with a
growing pause, and nothing is lost meanwhile: writes keep queueing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cmem_cli.core.config import Config
from cmem_cli.core.errors import CmemError, DatabaseBusy
from cmem_cli.core.synclock import sync_lock

if TYPE_CHECKING:
    from cmem_cli.team.teamsync import TeamSettings

CHECK_SECONDS = 1.0
POLL_SECONDS = 30.0
MAX_BACKOFF = 60.0


class TeamLive:
    """Keeps one home and its team database in step until :meth:`stop`."""

    def __init__(self, config: Config, *, on_report: Callable[[str], None], on_error: Callable[[str], None]):
        self.config = config
        self.on_report = on_report
        self.on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._refused: str | None = None  # the server's refusal of this role's push, said once

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cmem-team", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- the loop -------------------------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = 1.0
        failing = False
        while not self._stop.is_set():
            try:
                self._session()
                return
            except CmemError as exc:
                if not failing:
                    self.on_error(exc.message)
                failing = True
            except Exception as exc:  # a bug must not end the watcher: say it and retry
                self.on_error(f"team sync failed: {type(exc).__name__}: {exc}")
                failing = True
            self._stop.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    def _session(self) -> None:
        """One connection's life: catch up, then push and pull as things happen."""
        from cmem_cli.services.write.service import WriteService
        from cmem_cli.team import repository, server, teamsync
        from cmem_cli.team.vectors import VectorMaker

        with WriteService.open(self.config) as memory:
            settings = teamsync.remote(memory)
            if settings is None:
                raise CmemError("this home has no team database any more")
            with sync_lock(memory.config.home, timeout=30):
                teamsync.install(memory)  # joined with an older cmem: its newer triggers, its bases
            conn = server.connect(settings["url"])
            try:
                with server.translated(settings["url"]):
                    repository.listen(conn, server.CHANNEL)
                notes: list[str] = []
                vectors = VectorMaker(memory.config, notes)
                self.on_report(f"team: connected to {settings['url']}")
                self._cycle(memory, conn, settings, vectors, pull=True)
                last_pull = time.monotonic()
                while not self._stop.is_set():
                    pull = self._wait(conn, settings["url"]) or time.monotonic() - last_pull >= POLL_SECONDS
                    if memory.store.team_outbox.pending_count() or pull:
                        self._cycle(memory, conn, settings, vectors, pull=pull)
                        if pull:
                            last_pull = time.monotonic()
            finally:
                conn.close()

    def _wait(self, conn: Any, url: str) -> bool:
        """Wait up to CHECK_SECONDS for a push from another home; True when one came."""
        from cmem_cli.team import server

        with server.translated(url):
            return any(True for _ in conn.notifies(timeout=CHECK_SECONDS, stop_after=1))

    def _cycle(self, memory: Any, conn: Any, settings: TeamSettings, vectors: Any, *, pull: bool) -> None:
        """Push what is queued, then pull when asked. A push the server refuses (a read-only role) is said
        once, leaves the queue as it is and is tried again only with the next pull; the pull goes on."""
        from cmem_cli.team import server, teamsync

        report = teamsync.new_report(settings)
        try:
            with sync_lock(memory.config.home):
                if pull or self._refused is None:
                    try:
                        teamsync.push_only(memory, conn, settings, report, vectors)
                        self._refused = None
                    except server.ReadOnly as exc:
                        if self._refused != exc.message:
                            self.on_error(exc.message)
                        self._refused = exc.message
                if pull or report.restored:  # a server that went back in time is pulled at once
                    teamsync.pull_only(memory, conn, settings, report)
        except DatabaseBusy:
            return  # a `cmem sync` is running: it does the same work
        for item in report.conflicts:
            self.on_error(f"conflict on {item['uid']}: {item['resolution']}")
        for skipped in report.skipped:
            self.on_error(
                f"skipped {skipped['kind']} {skipped['uid']} from the team database "
                f"(written by {skipped['machine']}): {skipped['reason']}"
            )
        for note in report.notes:
            self.on_error(note)
        if report.pushed or report.pulled or report.forgotten or report.forgotten_there:
            self.on_report(
                f"team: pushed {report.pushed}, pulled {report.pulled}, "
                f"forgotten {report.forgotten + report.forgotten_there}"
            )
