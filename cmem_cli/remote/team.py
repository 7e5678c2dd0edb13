"""A team database behind the :class:`cmem_cli.remote.Remote` face (the work is ``cmem_cli.team``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cmem_cli.core.sync_report import SyncReport
from cmem_cli.remote import Live, Progress, RemoteBase
from cmem_cli.team import teamsync


class TeamRemote(RemoteBase):
    kind = "team"

    def init(
        self, *, projects: Sequence[str] = (), machine: str | None = None, progress: Progress | None = None
    ) -> SyncReport:
        url = self.url or ""
        return self.exchange(
            lambda on_start: teamsync.init(
                self.memory, url, projects=list(projects), machine=machine, on_start=on_start
            )
        )

    def sync(self, *, progress: Progress | None = None) -> SyncReport:
        return self.exchange(lambda on_start: teamsync.sync(self.memory, on_start))

    def pull(self, *, progress: Progress | None = None) -> SyncReport:
        return self.exchange(lambda on_start: teamsync.pull(self.memory, on_start))

    def push(self, *, progress: Progress | None = None) -> SyncReport:
        return self.exchange(lambda on_start: teamsync.push(self.memory, on_start))

    def live(self, *, on_report: Callable[[str], None], on_error: Callable[[str], None]) -> Live | None:
        from cmem_cli.team.live import TeamLive

        return TeamLive(self.memory.config, on_report=on_report, on_error=on_error)
