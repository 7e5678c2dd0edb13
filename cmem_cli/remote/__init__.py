"""One face for a home's remote: a git repository or a team database, driven the same way.

:class:`Remote` is what `cmem sync` (through :attr:`cmem_cli.api.Memory.remote`) and `cmem watch` call:
``init``, ``pull``, ``push``, ``sync`` and ``status``, each exchange returning one
:class:`cmem_cli.core.sync_report.SyncReport`. :func:`of_home` finds the home's remote, :func:`at_url` the
one a URL names (the scheme picks: ``postgresql://`` a team database, anything else git). A home has one
remote; asking for the other kind is a UsageError. An exchange that fails carries what it did before the
failure as ``exc.sync_report`` (None when it did nothing), so a front end can still tell it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from cmem_cli.core.errors import UsageError

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import RemoteStatus, SyncReport
    from cmem_cli.services.write.service import WriteService

Progress = Callable[[str, int, int], None]  # (phase, done, total or 0 when unknown)


class Live(Protocol):
    """A remote kept in step beside `cmem watch` until :meth:`stop`."""

    def start(self) -> None: ...
    def stop(self) -> None: ...


class Remote(Protocol):
    kind: str  # "git" or "team"

    def init(
        self, *, projects: Sequence[str] = (), machine: str | None = None, progress: Progress | None = None
    ) -> SyncReport:
        """Connect this home to the remote (its URL given to :func:`at_url`) and sync."""
        ...

    def sync(self, *, progress: Progress | None = None) -> SyncReport:
        """Adopt hand edits, send what is new here, take what is new there."""
        ...

    def pull(self, *, progress: Progress | None = None) -> SyncReport:
        """Take what is new there."""
        ...

    def push(self, *, progress: Progress | None = None) -> SyncReport:
        """Send what is new here."""
        ...

    def status(self) -> RemoteStatus | None:
        """What `cmem status` shows of the remote; reads local state, never the remote."""
        ...

    def live(self, *, on_report: Callable[[str], None], on_error: Callable[[str], None]) -> Live | None:
        """A thread that keeps the remote in step while `cmem watch` runs (None: this kind has none)."""
        ...


def of_home(memory: WriteService) -> Remote | None:
    """The remote this home syncs with, or None (hand edits are then adopted locally only)."""
    from cmem_cli.services.inbound.sync_repo import connected_git_dir
    from cmem_cli.team import teamsync

    if teamsync.remote(memory) is not None:
        from cmem_cli.remote.team import TeamRemote

        return TeamRemote(memory)
    if connected_git_dir(memory.config.home, memory.export_root) is not None:
        from cmem_cli.remote.git import GitRemote

        return GitRemote(memory)
    return None


def at_url(memory: WriteService, url: str) -> Remote:
    """The remote ``url`` names, for `cmem sync init URL`: refused when this home has the other kind."""
    from cmem_cli.services.inbound.sync_repo import connected_git_dir
    from cmem_cli.team.url import is_team_url

    if is_team_url(url):
        if connected_git_dir(memory.config.home, memory.export_root) is not None:
            raise UsageError("this home already syncs through git; a home has one remote")
        from cmem_cli.remote.team import TeamRemote

        return TeamRemote(memory, url)
    from cmem_cli.remote.git import GitRemote

    return GitRemote(memory, url)


class RemoteBase:
    """What the git and team remotes share: the home's write service, the URL (for ``init``), the local
    status, and how an exchange's report reaches the caller even when the exchange fails."""

    kind = ""

    def __init__(self, memory: WriteService, url: str | None = None):
        self.memory = memory
        self.url = url

    def status(self) -> RemoteStatus | None:
        from cmem_cli.services.inbound.remote_state import remote_status

        return remote_status(self.memory)

    @staticmethod
    def exchange(action: Callable[[Callable[[SyncReport], object]], SyncReport]) -> SyncReport:
        """Run ``action``, which hands its report to the callback it is given as soon as the report exists;
        a failure carries that report (None: the exchange had not started) as ``sync_report``."""
        started: list[SyncReport] = []
        try:
            return action(started.append)
        except BaseException as exc:
            exc.sync_report = started[-1] if started else None  # type: ignore[attr-defined]
            raise
