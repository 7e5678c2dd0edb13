"""A git remote behind the :class:`cmem_cli.remote.Remote` face (the work is ``cmem_cli.sync.gitsync``).

git exchanges in one step: a pull merges on top of this machine's committed work, and a push goes only on
top of what it fetched. So ``pull`` and ``push`` run the whole sync, as ``sync`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cmem_cli.core.errors import UsageError
from cmem_cli.core.sync_report import SyncReport
from cmem_cli.remote import Live, Progress, RemoteBase


class GitRemote(RemoteBase):
    kind = "git"

    def init(
        self, *, projects: Sequence[str] = (), machine: str | None = None, progress: Progress | None = None
    ) -> SyncReport:
        if projects or machine:
            raise UsageError("--project and --machine are for a team database (postgresql://...)")
        from cmem_cli.team import teamsync

        if teamsync.remote(self.memory) is not None:
            raise UsageError("this home already syncs with a team database; a home has one remote")
        if self.url is None:
            raise UsageError("`cmem sync init` needs the remote's URL")
        return self._run(self.url, progress)

    def sync(self, *, progress: Progress | None = None) -> SyncReport:
        return self._run(None, progress)

    pull = sync
    push = sync

    def live(self, *, on_report: Callable[[str], None], on_error: Callable[[str], None]) -> Live | None:
        return None  # `cmem watch` adopts hand edits; git exchanges on `cmem sync`

    def _run(self, url: str | None, progress: Progress | None) -> SyncReport:
        from cmem_cli.sync.gitsync import run_sync

        return self.exchange(
            lambda on_start: run_sync(self.memory, url, on_start=on_start, progress=progress)
        )
