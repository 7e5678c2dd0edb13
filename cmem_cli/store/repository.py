"""The SQLite store: the source of truth for sessions, observations, prompts, summaries and links.

Pure data access. It knows nothing about markdown files or the vector index; ``cmem_cli.services.write.service`` pairs
every write with its export file. Times are INTEGER epoch milliseconds; list fields are JSON arrays.

``Store`` is the handle: the connection, transactions, the schema and who this home writes as. Each concern's
SQL is a repository reached as one of its attributes, each in its own module:

- ``store.observations``  the records themselves (:mod:`cmem_cli.store.observations`)
- ``store.sessions``      sessions and their prompt numbering (:mod:`cmem_cli.store.sessions`)
- ``store.prompts``       user prompts (:mod:`cmem_cli.store.prompts`)
- ``store.summaries``     session summaries (:mod:`cmem_cli.store.summaries`)
- ``store.links``         links and pending links (:mod:`cmem_cli.store.links`)
- ``store.export_files``  what cmem wrote to the export tree (:mod:`cmem_cli.store.export_files`)
- ``store.search``        keyword search (:mod:`cmem_cli.store.keyword`)
- ``store.listing``       listing, timeline, replies (:mod:`cmem_cli.store.listing`)
- ``store.state``         small facts that are no record (:mod:`cmem_cli.store.state`)
- ``store.stats``         counts over the whole store (:mod:`cmem_cli.store.stats`)
- ``store.anchors``       anchors to git files (:mod:`cmem_cli.store.anchors`)
- ``store.supersession``  who replaced whom (:mod:`cmem_cli.store.supersession`)
- ``store.projects``      project names and their repositories (:mod:`cmem_cli.store.projects`)
- ``store.briefing``      what the session briefing reads (:mod:`cmem_cli.store.briefing`)
- ``store.window``        the rows of a time window, for `cmem view` (:mod:`cmem_cli.store.window`)
- ``store.health``        doctor's checks of the file (:mod:`cmem_cli.store.health`)
- ``store.team_outbox``   a team database's settings, outbox and revisions (:mod:`cmem_cli.store.team_outbox`)
- ``store.capture_log``   what agent capture recorded (:mod:`cmem_cli.store.capture_log`)

Every repository is made when first asked for, and its module loads then: a hook, an ``add`` or a search
imports only the concerns it reaches (``health`` imports apsw itself, ``projects`` the repository identity).
The ten any command may reach (``observations`` to ``stats``, declared with :class:`Made`) are kept on the
handle once made; the others are made anew at each read, as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from cmem_cli.core.db import Database, wait_for_locks
from cmem_cli.core.db import busy_timeout_ms as configured_busy_timeout_ms
from cmem_cli.store.schema import MIGRATIONS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.store.anchors import AnchorStore
    from cmem_cli.store.briefing import BriefingRows
    from cmem_cli.store.capture_log import CaptureLog
    from cmem_cli.store.export_files import ExportFiles
    from cmem_cli.store.health import Health
    from cmem_cli.store.keyword import KeywordSearch
    from cmem_cli.store.links import LinkRepository
    from cmem_cli.store.listing import Listing
    from cmem_cli.store.observations import ObservationRepository
    from cmem_cli.store.projects import Projects
    from cmem_cli.store.prompts import PromptRepository
    from cmem_cli.store.recall import RecallRows
    from cmem_cli.store.row_types import Authorship
    from cmem_cli.store.sessions import SessionRepository
    from cmem_cli.store.state import StateRepository
    from cmem_cli.store.stats import Statistics
    from cmem_cli.store.summaries import SummaryRepository
    from cmem_cli.store.supersession import Supersession
    from cmem_cli.store.team_outbox import TeamOutbox
    from cmem_cli.store.window import Window


R = TypeVar("R")


class Made(Generic[R]):
    """A repository of the handle, made from its module (``cmem_cli.store.<module>``) the first time it is
    read, and then kept on the handle: a command loads the modules of the concerns it reaches, no others."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name, self.attribute = f"cmem_cli.store.{module}", name, ""

    def __set_name__(self, owner: type[Store], attribute: str) -> None:
        self.attribute = attribute

    @overload
    def __get__(self, store: None, owner: type[Store]) -> Made[R]: ...

    @overload
    def __get__(self, store: Store, owner: type[Store]) -> R: ...

    def __get__(self, store: Store | None, owner: type[Store]) -> Made[R] | R:
        if store is None:
            return self
        module = __import__(
            self.module, fromlist=(self.name,)
        )  # as an import statement: -X importtime sees it
        made: R = getattr(module, self.name)(store)
        store.__dict__[self.attribute] = made  # kept: the next read finds it before this descriptor
        return made


def _missing_or_empty(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return True


class Store:
    """A handle on one cmem database: the connection, transactions, lifecycle, and one repository per concern."""

    def __init__(self, db: Database):
        self.db = db
        self._writer: tuple[str, str | None] | None = None
        # (machine, person) the config file names, below CMEM_MACHINE and CMEM_AUTHOR (set by the write service)
        self.configured_writer: tuple[str | None, str | None] = (None, None)

    # The repositories every command may reach, each made on first use and kept on the handle.
    observations: Made[ObservationRepository] = Made("observations", "ObservationRepository")
    sessions: Made[SessionRepository] = Made("sessions", "SessionRepository")
    prompts: Made[PromptRepository] = Made("prompts", "PromptRepository")
    summaries: Made[SummaryRepository] = Made("summaries", "SummaryRepository")
    links: Made[LinkRepository] = Made("links", "LinkRepository")
    export_files: Made[ExportFiles] = Made("export_files", "ExportFiles")
    search: Made[KeywordSearch] = Made("keyword", "KeywordSearch")
    listing: Made[Listing] = Made("listing", "Listing")
    state: Made[StateRepository] = Made("state", "StateRepository")
    stats: Made[Statistics] = Made("stats", "Statistics")

    def writer(self) -> tuple[str, str | None]:
        """(machine, person) this home writes as (:mod:`cmem_cli.core.authorship`), read once."""
        if self._writer is None:
            from cmem_cli.core.authorship import machine_name, person

            machine, author = self.configured_writer
            self._writer = (machine_name(self.team_outbox.settings().get("machine"), machine), person(author))
        return self._writer

    def authorship(self, record: Mapping[str, Any]) -> Authorship:
        """``machine`` and ``author`` for a new row: the record's own when it has a ``machine`` key (a
        memory arriving from elsewhere says whose it is; None: it does not say, and it stays unknown rather
        than become this machine's), else this home's."""
        if "machine" in record:
            return {"machine": record["machine"] or None, "author": record.get("author") or None}
        machine, author = self.writer()
        return {"machine": machine, "author": record.get("author") or author}

    @classmethod
    def open(cls, path: Path, export_dir: Path | None = None, *, wait_ms: int | None = None) -> Store:
        """Open (creating on first use) the store; with ``export_dir``, refuse to create a new empty store
        where one was lost while its export survives (see :mod:`cmem_cli.store.presence`). ``wait_ms``: how
        long a statement waits for a lock, opening included (default ``CMEM_BUSY_TIMEOUT_MS``)."""
        if export_dir is not None and _missing_or_empty(path):
            from cmem_cli.store.presence import check_store_presence

            check_store_presence(path, export_dir)
        db = Database(path, wait_ms=wait_ms)
        db.migrate(MIGRATIONS)
        return cls(db)

    def close(self) -> None:
        self.db.close()

    def prepare_bulk_write(self, cache_kib: int) -> None:
        """Settings for one large write on this connection (a bulk import): a page cache of ``cache_kib``
        and statement journals in memory (otherwise about 15 temp-file writes a row)."""
        self.db.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
        self.db.execute("PRAGMA temp_store = MEMORY")

    @property
    def capture_log(self) -> CaptureLog:
        """What agent capture already recorded (:mod:`cmem_cli.store.capture_log`); its tables are created
        here when missing (not kept: made inside a transaction that rolls back, they would be gone)."""
        from cmem_cli.store.capture_log import CaptureLog

        return CaptureLog(self.db)

    @property
    def in_transaction(self) -> bool:
        """True inside a transaction on this connection."""
        return bool(self.db.conn.in_transaction)

    def tune(self, *, busy_timeout_ms: int, checkpoint_on_close: bool = True) -> None:
        """Wait for a locked database at most ``busy_timeout_ms``; with ``checkpoint_on_close`` False, leave
        the WAL checkpoint to SQLite's automatic one instead of a full checkpoint whenever the last
        connection closes (5-10 ms of every hook call). Settings an older SQLite lacks are skipped."""
        import apsw

        conn = self.db.conn
        if not checkpoint_on_close:
            with contextlib.suppress(AttributeError, apsw.Error):
                conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        with contextlib.suppress(AttributeError, apsw.Error):
            conn.set_busy_timeout(busy_timeout_ms)

    def give_up_at(self, deadline: float) -> None:
        """Abandon any statement still running at ``deadline`` (``time.perf_counter()``'s clock): it fails as
        :class:`DatabaseBusy`. For a read the agent waits for (a hook's recall), which must end in time
        with nothing rather than late with something."""
        import time

        def late() -> bool:
            return time.perf_counter() > deadline

        self.db.conn.set_progress_handler(late, 1000)

    @property
    def anchors(self) -> AnchorStore:
        """The anchors of observations to the git files they cite (:mod:`cmem_cli.store.anchors`)."""
        from cmem_cli.store.anchors import AnchorStore

        return AnchorStore(self.db)

    @property
    def supersession(self) -> Supersession:
        """The ``supersedes`` links read as who replaced whom (:mod:`cmem_cli.store.supersession`)."""
        from cmem_cli.store.supersession import Supersession

        return Supersession(self)

    @property
    def projects(self) -> Projects:
        """Project names and the repositories they stand for (:mod:`cmem_cli.store.projects`)."""
        from cmem_cli.store.projects import Projects

        return Projects(self)

    @property
    def briefing(self) -> BriefingRows:
        """What the session briefing reads (:mod:`cmem_cli.store.briefing`)."""
        from cmem_cli.store.briefing import BriefingRows

        return BriefingRows(self)

    @property
    def recall(self) -> RecallRows:
        """What recall at the moment of need reads (:mod:`cmem_cli.store.recall`)."""
        from cmem_cli.store.recall import RecallRows

        return RecallRows(self)

    @property
    def window(self) -> Window:
        """The rows of a time window, for `cmem view` (:mod:`cmem_cli.store.window`)."""
        from cmem_cli.store.window import Window

        return Window(self)

    @property
    def team_outbox(self) -> TeamOutbox:
        """This home's side of a team database: settings, the outbox, base revisions
        (:mod:`cmem_cli.store.team_outbox`)."""
        from cmem_cli.store.team_outbox import TeamOutbox

        return TeamOutbox(self)

    @property
    def health(self) -> Health:
        """The checks `cmem doctor` runs on the file (:mod:`cmem_cli.store.health`)."""
        from cmem_cli.store.health import Health

        return Health(self)

    def write_if_free(self, write: Callable[[], None]) -> None:
        """Run ``write`` in a transaction if the database takes a write right now, else skip it, quietly:
        for what a read learnt on the way (a cache), which must never make the read fail or wait. Inside
        the caller's open transaction it just runs."""
        conn = self.db.conn
        if not conn.getautocommit():
            write()
            return
        with contextlib.suppress(Exception):
            conn.set_busy_timeout(0)
            try:
                with self.db.transaction():
                    write()
            finally:
                wait_for_locks(conn, configured_busy_timeout_ms())

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction that takes the write lock up front (a savepoint inside an open one): the
        store's writes made in it are kept together or not at all."""
        with self.db.transaction():
            yield
