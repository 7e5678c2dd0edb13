"""Opening cmem's SQLite database through apsw: pragmas, busy handling, transactions, migrations.

apsw is used instead of the stdlib ``sqlite3`` because it bundles a recent SQLite that can load
extensions (sqlite-vec) on every platform, and lets Python register FTS5 tokenizers.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from cmem_cli.core import stopping
from cmem_cli.core.config import env_int
from cmem_cli.core.errors import CmemError, DatabaseBusy, DatabaseCorrupt, InvalidInput, StorageError
from cmem_cli.core.migrations import Migrations

# A write made from the command line waits for the lock rather than fail: every write transaction is kept
# short (bulk work commits in batches), so a minute is a machine far past busy, not a queue of writers.
# Hooks wait less and spool their event instead (``[hooks] busy_timeout_ms``).
BUSY_TIMEOUT_MS = 60_000  # overridable with CMEM_BUSY_TIMEOUT_MS


def busy_timeout_ms() -> int:
    """How long a statement waits for another process's lock (``CMEM_BUSY_TIMEOUT_MS``, default 60 s)."""
    return env_int("CMEM_BUSY_TIMEOUT_MS", BUSY_TIMEOUT_MS, 0, 86_400_000)


def classify_error(exc: apsw.Error, path: Path, label: str, repair_hint: str) -> Exception:
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return DatabaseBusy(f"{label} {path} is locked by another process; try again")
    if isinstance(exc, apsw.InterruptError):  # a read past its deadline (Store.give_up_at)
        return DatabaseBusy(f"{label} {path} did not answer in time")
    if isinstance(exc, apsw.NotADBError | apsw.CorruptError):
        return DatabaseCorrupt(f"{path} is not a usable cmem {label} ({exc}); {repair_hint}")
    if isinstance(exc, apsw.SQLError) and str(exc).startswith(("no such table", "no such column")):
        # cmem's own statements only name its own schema: a missing table is a damaged store, not a bug.
        return DatabaseCorrupt(f"{path} is missing part of cmem's {label} schema ({exc}); {repair_hint}")
    if isinstance(exc, apsw.CantOpenError | apsw.ReadOnlyError | apsw.IOError | apsw.PermissionsError):
        return StorageError(f"cannot open or write {label} {path}: {exc}")
    if isinstance(exc, apsw.FullError):
        return StorageError(f"disk full while writing {label} {path}")
    return exc


def wait_for_locks(conn: apsw.Connection, timeout_ms: int) -> None:
    """Wait up to ``timeout_ms`` for a lock another connection holds (then SQLITE_BUSY: DatabaseBusy).

    SQLite's own busy timeout sleeps in C, where a signal handler cannot run: a process that must stop
    promptly (:mod:`cmem_cli.core.stopping`) waits in short Python sleeps instead and gives up as soon as
    it is asked to stop."""
    if not stopping.interruptible():
        conn.set_busy_timeout(timeout_ms)
        return
    deadline = 0.0

    def busy(count: int) -> bool:
        nonlocal deadline
        now = time.monotonic()
        if count == 0:
            deadline = now + timeout_ms / 1000
        if stopping.asked_to_stop() or now >= deadline:
            return False
        time.sleep(min(0.005 * (count + 1), 0.1, deadline - now))  # a signal's handler runs in here
        return not stopping.asked_to_stop()

    conn.set_busy_handler(busy)


def escaped_error(exc: BaseException) -> CmemError | None:
    """The cmem error for a SQLite error that escaped every store call (rows read lazily from a cursor),
    None when it is no SQLite error or not one a user can act on (then it is a bug)."""
    if not isinstance(exc, apsw.Error):
        return None
    translated = classify_error(exc, Path("the store"), "database", "see `cmem doctor`")
    return translated if isinstance(translated, CmemError) else None


@contextlib.contextmanager
def translate_errors(
    path: Path, *, label: str = "database", repair_hint: str = "see `cmem doctor`"
) -> Iterator[None]:
    """Turn apsw's low-level errors into cmem errors with exit codes (the store's and the index's)."""
    try:
        yield
    except apsw.Error as exc:
        translated = classify_error(exc, path, label, repair_hint)
        if translated is exc:
            raise
        raise translated from None
    except OverflowError:
        # apsw cannot bind an integer past 64 bits: whatever number the user gave is out of range.
        raise InvalidInput("a number is out of range (at most 2^63 - 1)") from None
    except UnicodeEncodeError:
        # text with lone surrogates: bytes that were not UTF-8 on the command line or in a file
        raise InvalidInput("text is not valid UTF-8") from None


@contextlib.contextmanager
def immediate_transaction(conn: apsw.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (shared by the store and the index).

    Inside an open transaction it is a savepoint instead, so that a caller can make several writes (a
    replayed hook event and the mark that it was replayed) commit together or not at all."""
    if not conn.getautocommit():
        conn.execute("SAVEPOINT nested")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK TO nested")
            conn.execute("RELEASE nested")
            raise
        conn.execute("RELEASE nested")
        return
    log = os.environ.get("CMEM_LOCK_LOG")
    conn.execute("BEGIN IMMEDIATE")
    started = (time.monotonic(), time.process_time()) if log else (0.0, 0.0)
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        if log:
            _log_hold(conn, log, started, "rolled back")
        raise
    conn.execute("COMMIT")
    if log:
        _log_hold(conn, log, started, "committed")


def _log_hold(conn: apsw.Connection, log: str, started: tuple[float, float], how: str) -> None:
    """Note how long a write transaction held the store's write lock (``CMEM_LOCK_LOG``: a file, for the
    load benchmark and for finding who holds the lock for long): the hold in ms, the process's command, the
    cmem functions it ran in, and the CPU ms the process spent meanwhile (the work, which a loaded machine
    does not stretch), for every hold of at least ``CMEM_LOCK_LOG_MS`` (default 50) ms."""
    held = (time.monotonic() - started[0]) * 1000
    cpu = (time.process_time() - started[1]) * 1000
    if held < env_int("CMEM_LOCK_LOG_MS", 50, 0, 86_400_000):
        return
    import sys
    import traceback

    frames = [
        f"{Path(f.filename).stem}.{f.name}"
        for f in traceback.extract_stack()[:-3]
        if "cmem_" in f.filename and "contextlib" not in f.filename
    ]
    fields = (f"{held:.0f}", Path(conn.filename).name, how, str(os.getpid()), " ".join(sys.argv[1:3]))
    line = "\t".join((*fields, " > ".join(frames[-6:]), f"cpu {cpu:.0f}")) + "\n"
    with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as fh:
        fh.write(line)


class Database:
    """A connection with cmem's pragmas and small helpers; one per process is enough."""

    def __init__(self, path: Path, *, readonly: bool = False, wait_ms: int | None = None):
        """``wait_ms``: how long a statement waits for another process's lock, from the first one on
        (default :func:`busy_timeout_ms`)."""
        self.path = path
        flags = (
            apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        )
        with translate_errors(path):
            new_file = not path.exists()
            self.conn = apsw.Connection(str(path), flags=flags)
            if new_file and not readonly:
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o600)
            wait_for_locks(self.conn, busy_timeout_ms() if wait_ms is None else wait_ms)
            # A corrupt or foreign file fails here, with a clear message, not deep inside a command.
            self.conn.execute("PRAGMA foreign_keys=ON")
            if not readonly:
                self._refuse_foreign()
                mode = self.conn.execute("PRAGMA journal_mode").fetchall()[0][0]
                if mode != "wal":
                    self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")

    def _refuse_foreign(self) -> None:
        """A file with tables but no schema version is another program's database: touching it (even
        switching it to WAL) would change someone else's file. One statement, so one consistent snapshot
        even while another process creates and migrates a new store."""
        version, objects = self.conn.execute(
            "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)"
        ).fetchall()[0]
        if version == 0 and objects:
            self.conn.close()
            raise DatabaseCorrupt(
                f"{self.path} is a SQLite database but not cmem's (it holds tables cmem did not create);"
                " see `cmem doctor`"
            )

    def close(self) -> None:
        self.conn.close()

    # -- queries ---------------------------------------------------------------------------------
    def execute(self, sql: str, params: Any = ()) -> apsw.Cursor:
        with translate_errors(self.path):
            return self.conn.execute(sql, params)

    def query(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        """Rows as dicts (column name -> value)."""
        with translate_errors(self.path):
            cursor = self.conn.execute(sql, params)
            try:
                names = [d[0] for d in cursor.getdescription()]
            except apsw.ExecutionCompleteError:
                return []
            return [dict(zip(names, row, strict=True)) for row in cursor]

    def rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """Rows as tuples, all read inside the error translation (a busy read fails as DatabaseBusy)."""
        with translate_errors(self.path):
            return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Any = ()) -> dict[str, Any] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = ()) -> Any:
        with translate_errors(self.path):
            row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        """A write transaction that takes the write lock up front (BEGIN IMMEDIATE).

        Taking the lock at the start means concurrent writers queue on the busy timeout instead
        of failing with SQLITE_BUSY when a read transaction tries to upgrade.
        """
        with translate_errors(self.path), immediate_transaction(self.conn):
            yield self

    # -- schema ----------------------------------------------------------------------------------
    def migrate(self, migrations: Migrations) -> list[str]:
        """Apply the pending named migrations; back up the file first unless it is new."""
        with translate_errors(self.path):
            pending = migrations.pending(self.conn)
            if not pending:
                return []
            applied = len(migrations.applied(self.conn))
        if applied:
            self._backup(applied)
        with self.transaction():
            # Under the write lock: another process may have migrated meanwhile (apply re-reads).
            return migrations.apply(self.conn)

    def _backup(self, version: int) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup = self.path.with_name(f"{self.path.name}.v{version}-{stamp}.bak")
        with translate_errors(self.path):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            import shutil  # only for a migration backup: not on every command's start-up path

            shutil.copy2(self.path, backup)
            os.chmod(backup, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot back up {self.path} before migrating: {exc.strerror}") from None
