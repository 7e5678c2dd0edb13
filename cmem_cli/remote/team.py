"""A team database behind the :class:`cmem_cli.remote.Remote` face (the work is ``cmem_cli.team``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cmem_cli.core.sync_report import SyncReport
from cmem_cli.remote import Live, Progress, told
from cmem_cli.services.writes import WriteService
from cmem_cli.team import teamsync


class TeamRemote:
    kind = "team"

    def __init__(self, memory: WriteService, url: str | None = None):
        self.memory = memory
        self.url = url

    def init(
        self, *, projects: Sequence[str] = (), machine: str | None = None, progress: Progress | None = None
    ) -> SyncReport:
        url = self.url or ""
        return self._run(
            lambda tally: teamsync.init(
                self.memory, url, projects=list(projects), machine=machine, report=tally
            )
        )

    def sync(self, *, progress: Progress | None = None) -> SyncReport:
        return self._run(lambda tally: teamsync.sync(self.memory, tally))

    def pull(self, *, progress: Progress | None = None) -> SyncReport:
        return self._run(lambda tally: teamsync.pull(self.memory, tally))

    def push(self, *, progress: Progress | None = None) -> SyncReport:
        return self._run(lambda tally: teamsync.push(self.memory, tally))

    def status(self) -> dict[str, Any] | None:
        from cmem_cli.services.remote_state import remote_status

        return remote_status(self.memory)

    def live(self, *, on_report: Callable[[str], None], on_error: Callable[[str], None]) -> Live | None:
        from cmem_cli.team.live import TeamLive

        return TeamLive(self.memory.config, on_report=on_report, on_error=on_error)

    @staticmethod
    def _run(action: Callable[[dict[str, Any]], dict[str, Any]]) -> SyncReport:
        tally: dict[str, Any] = {}
        try:
            action(tally)
        except BaseException as exc:
            told(exc, tally)
            raise
        return SyncReport.from_tally(tally)
