"""The index database (``index.db``): documents, chunks, FTS5 keywords, sqlite-vec vectors, embedding cache.

It is derived data: deleting the file loses nothing but time. Every write is a short ``BEGIN IMMEDIATE``
transaction in WAL mode, so searches (readers) never wait for the indexer and a crash leaves a consistent
file. Vectors of two models are never mixed (:mod:`cmem_index.repositories.vectors`).

``IndexStore`` is the handle: the schema and its migrations, opening, the connection, transactions. Each
concern's SQL is a repository reached as one of its attributes, made on first use and kept:
``store.settings``, ``store.documents``, ``store.chunks``, ``store.vectors``, ``store.folders`` and
``store.retrieval`` (:mod:`cmem_index.repositories`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import DatabaseCorrupt, StorageError
from cmem_cli.core.migrations import Migrations

if TYPE_CHECKING:
    from cmem_index.repositories.chunks import Chunks
    from cmem_index.repositories.documents import Documents
    from cmem_index.repositories.folders import Folders
    from cmem_index.repositories.retrieval import Retrieval
    from cmem_index.repositories.settings import Settings
    from cmem_index.repositories.vectors import Vectors

WRITE_BUSY_MS = 30_000
READ_BUSY_MS = 250

# chunks_fts's tokenizer; query_idf tokenizes queries with the same one, so the two must stay the same
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents(
    id INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    docid TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    chunked_with TEXT NOT NULL,
    title TEXT NOT NULL,
    context TEXT NOT NULL,
    kind TEXT,
    uid TEXT,
    obs_id INTEGER,
    type TEXT,
    project TEXT,
    session TEXT,
    agent TEXT,
    created_at INTEGER,
    indexed_at INTEGER NOT NULL,
    UNIQUE(collection, path)
);
CREATE INDEX IF NOT EXISTS documents_docid ON documents(docid);
CREATE INDEX IF NOT EXISTS documents_uid ON documents(uid);
CREATE INDEX IF NOT EXISTS documents_project ON documents(project, created_at);
CREATE TABLE IF NOT EXISTS concepts(
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    concept TEXT NOT NULL,
    PRIMARY KEY(doc_id, concept)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS concepts_concept ON concepts(concept);
CREATE TABLE IF NOT EXISTS doc_files(
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    PRIMARY KEY(doc_id, path)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_files_path ON doc_files(path);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    hash TEXT NOT NULL,
    text TEXT NOT NULL,
    embedded_with TEXT
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, seq);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(embedded_with);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(hash);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    context, text, terms, content='', contentless_delete=1, tokenize='{FTS_TOKENIZER}'
);
CREATE TABLE IF NOT EXISTS embed_cache(
    hash TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY(hash, model)
) WITHOUT ROWID;
"""

# The index is derived data, so a later migration may simply drop everything and let `cmem index` rebuild.
INDEX_MIGRATIONS = Migrations("index")


@INDEX_MIGRATIONS
def m001_initial(conn: Any) -> None:
    conn.execute(_SCHEMA)


# Set while documents indexed before m002 have not had their machine read from their files (the next pass
# reads their front matter: no chunk is cut or embedded again).
MACHINES_UNREAD = "machines_unread"


@INDEX_MIGRATIONS
def m002_machine(conn: Any) -> None:
    """Each document's machine (who wrote the memory, as its file states), so a `--machine` search narrows
    retrieval as `--project` does instead of ranking every hit. Not the branch: a file states its anchor's
    only when the repository has a name (a remote), so the index cannot tell the branch of the rest."""
    conn.execute("ALTER TABLE documents ADD COLUMN machine TEXT")
    conn.execute("CREATE INDEX IF NOT EXISTS documents_machine ON documents(machine, created_at)")
    if conn.execute("SELECT 1 FROM documents WHERE kind IS NOT NULL LIMIT 1").fetchone():
        conn.execute("INSERT OR REPLACE INTO settings(key, value) VALUES (?, '1')", (MACHINES_UNREAD,))


# Migrations a reader can do without: an index a pass has not migrated yet is searched as it is (the
# filters it cannot apply are checked on the store's rows), not refused until `cmem index`.
READABLE_WITHOUT = frozenset({"m002_machine"})


def sqlite_vec_path() -> str:
    """Where the sqlite-vec extension lives, found without importing the package (which imports numpy,
    ~90 ms that every `cmem search` would pay)."""
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise StorageError("the sqlite-vec package is not installed (pip install sqlite-vec)")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def _apsw() -> Any:
    import apsw  # lazy: keeps `cmem --help` and `cmem add` fast

    return apsw


def translated(path: Path) -> contextlib.AbstractContextManager[None]:
    """apsw's errors as cmem errors (one line, an exit code) for anything the index does."""
    from cmem_cli.core.db import translate_errors

    return translate_errors(path, label="index", repair_hint="delete it or run `cmem index --full`")


LAYOUT_INFIX = ".new-"  # index.db.new-PID: a new index while its process lays the schema out


def layout_path(path: Path, pid: int) -> Path:
    """Where process ``pid`` lays out a new index for ``path`` (doctor removes one a killed pass left)."""
    return path.with_name(f"{path.name}{LAYOUT_INFIX}{pid}")


def _lay_out(path: Path) -> None:
    """Make a new index at ``path`` with its schema in place: built in a file of this process's own and
    linked in whole, so no reader ever opens one a pass is still laying out (another process that made
    one meanwhile wins; this one's is dropped)."""
    from cmem_cli.core.db import immediate_transaction

    apsw = _apsw()
    temp = layout_path(path, os.getpid())
    try:
        conn = apsw.Connection(str(temp), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            with immediate_transaction(conn):
                INDEX_MIGRATIONS.apply(conn)
        finally:
            conn.close()
        os.chmod(temp, 0o600)
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(temp, path)
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{temp}{suffix}")


class IndexStore:
    """A handle on one index database: the connection, transactions, lifecycle, one repository per concern."""

    def __init__(self, conn: Any, path: Path):
        self.conn = conn
        self.path = path
        self._machines: bool | None = None

    # -- opening -----------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, *, readonly: bool = False, busy_ms: int | None = None) -> IndexStore:
        """Open (creating and migrating unless ``readonly``); a missing file with ``readonly`` is NotFound."""
        apsw = _apsw()
        if readonly and not path.exists():
            from cmem_cli.core.errors import NotFound

            raise NotFound(f"no index at {path}; run `cmem index`")
        with translated(path):
            if not readonly:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                if not path.exists():
                    _lay_out(path)
            new_file = not path.exists()
            flags = apsw.SQLITE_OPEN_READWRITE | (0 if readonly else apsw.SQLITE_OPEN_CREATE)
            conn = apsw.Connection(str(path), flags=flags)
            if new_file:
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o600)
            from cmem_cli.core.db import wait_for_locks

            wait_for_locks(
                conn, busy_ms if busy_ms is not None else (READ_BUSY_MS if readonly else WRITE_BUSY_MS)
            )
            conn.enable_load_extension(True)
            conn.load_extension(sqlite_vec_path())
            conn.enable_load_extension(False)
            store = cls(conn, path)
            if not readonly:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA foreign_keys=ON")
                store._migrate()
            elif pending := INDEX_MIGRATIONS.pending(conn):
                if not INDEX_MIGRATIONS.applied(conn):  # made a moment ago: its first pass is laying it out
                    from cmem_cli.core.errors import NotFound

                    raise NotFound(f"the index at {path} is not built yet; run `cmem index`")
                if not set(pending) <= READABLE_WITHOUT:
                    raise DatabaseCorrupt(f"index {path} has an older schema; run `cmem index`")
                store._machines = False
        return store

    # -- the repositories, each made (and its module loaded) when first asked for, then kept --------------
    @cached_property
    def settings(self) -> Settings:
        """Small facts about the index as a whole (:mod:`cmem_index.repositories.settings`)."""
        from cmem_index.repositories.settings import Settings

        return Settings(self)

    @cached_property
    def documents(self) -> Documents:
        """One row a file of a collection, with the fields a search filters on
        (:mod:`cmem_index.repositories.documents`)."""
        from cmem_index.repositories.documents import Documents

        return Documents(self)

    @cached_property
    def folders(self) -> Folders:
        """Folders of cmem's own tree as a pass last listed them (:mod:`cmem_index.repositories.folders`)."""
        from cmem_index.repositories.folders import Folders

        return Folders(self)

    @cached_property
    def vectors(self) -> Vectors:
        """One model's vectors, their bits and the embedding cache (:mod:`cmem_index.repositories.vectors`)."""
        from cmem_index.repositories.vectors import Vectors

        return Vectors(self)

    @cached_property
    def chunks(self) -> Chunks:
        """Each document's pieces, their keyword index and who embedded them
        (:mod:`cmem_index.repositories.chunks`)."""
        from cmem_index.repositories.chunks import Chunks

        return Chunks(self)

    @cached_property
    def retrieval(self) -> Retrieval:
        """What a search reads: the rankings, the query's terms, the hits' documents and chunks
        (:mod:`cmem_index.repositories.retrieval`)."""
        from cmem_index.repositories.retrieval import Retrieval

        return Retrieval(self)

    def _migrate(self) -> None:
        if INDEX_MIGRATIONS.pending(self.conn):
            with self.transaction():
                INDEX_MIGRATIONS.apply(self.conn)

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[IndexStore]:
        """A short write transaction that takes the write lock up front."""
        from cmem_cli.core.db import immediate_transaction

        with translated(self.path), immediate_transaction(self.conn):
            yield self

    def checkpoint(self) -> None:
        """Write the whole WAL into the database file and empty it (a rebuilt index before it is copied)."""
        with translated(self.path):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def replace_with(self, other: IndexStore) -> None:
        """Copy ``other`` over this database in one SQLite transaction: a reader sees the old index or the
        new one, never a mix."""
        with self.conn.backup("main", other.conn, "main") as backup:
            while not backup.done:
                backup.step(-1)

    @property
    def keeps_machines(self) -> bool:
        """Whether every document's machine is in the index (False: an index built before it kept them,
        until a pass reads them from the files), so a machine filter can be applied here."""
        if self._machines is None:
            self._machines = self.settings.get(MACHINES_UNREAD) is None
        return self._machines

    def machines_read(self) -> None:
        """Every document's machine is in the index now."""
        with self.transaction():
            self.settings.delete(MACHINES_UNREAD)
        self._machines = True

    # -- status ------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """What `cmem index status` shows of the file: counts, the vectors' model, the last pass."""
        per_collection = self.documents.per_collection()
        model = self.vectors.model()
        vectors = self.chunks.count_embedded()
        return {
            "documents": self.documents.count(),
            "chunks": self.chunks.count(),
            "vectors": vectors,
            "vectors_model": model[0] if model else None,
            "vectors_dim": model[1] if model else None,
            "cached_vectors": self.vectors.cached_count(),
            "chunker": self.settings.get("chunker"),
            "stale_documents": self.documents.count_stale(self.settings.get("chunker")),
            "collections": per_collection,
            "machines_indexed": self.keeps_machines,
            "last_run": self.settings.get_json("last_run"),
        }
