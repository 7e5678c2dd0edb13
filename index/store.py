"""The index database (``index.db``): documents, chunks, FTS5 keywords, sqlite-vec vectors, embedding cache.

It is derived data: deleting the file loses nothing but time. Every write is a short ``BEGIN IMMEDIATE``
transaction in WAL mode, so searches (readers) never wait for the indexer and a crash leaves a consistent
file. Vectors of two models are never mixed: ``chunk_vectors`` holds vectors of exactly one model fingerprint
(the ``vectors_model`` setting); switching models empties it, and the embedding cache, keyed by
(chunk hash, model fingerprint), brings vectors back without recomputing when a model returns.
"""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string, in every process that imports this module (every search); here they are plain objects.

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core import bm25
from cmem_cli.core.batches import batches
from cmem_cli.core.errors import DatabaseCorrupt, StorageError
from cmem_cli.core.migrations import Migrations

if TYPE_CHECKING:
    from cmem_index.repositories.chunks import Chunks
    from cmem_index.repositories.documents import Documents
    from cmem_index.repositories.folders import Folders
    from cmem_index.repositories.settings import Settings

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

# A float32 vector as bits: the signs of the vector less the centre (the second parameter)
_QUANTIZED = "vec_quantize_binary(vec_sub(?, ?))"

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
    """One connection to an index database, with the queries the indexer, search and status need."""

    def __init__(self, conn: Any, path: Path):
        self.conn = conn
        self.path = path
        self._bits: bytes | None = None  # bits_center, read once per connection (b"": no chunk_bits)
        self._terms: dict[tuple[str, ...], bm25.QueryTerms] = {}  # of the queries since _terms_as_of
        self._terms_as_of: tuple[int, int] | None = None
        self._machines: bool | None = None

    # -- opening -----------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, *, readonly: bool = False, busy_ms: int | None = None) -> "IndexStore":
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
    def settings(self) -> "Settings":
        """Small facts about the index as a whole (:mod:`cmem_index.repositories.settings`)."""
        from cmem_index.repositories.settings import Settings

        return Settings(self)

    @cached_property
    def documents(self) -> "Documents":
        """One row a file of a collection, with the fields a search filters on
        (:mod:`cmem_index.repositories.documents`)."""
        from cmem_index.repositories.documents import Documents

        return Documents(self)

    @cached_property
    def folders(self) -> "Folders":
        """Folders of cmem's own tree as a pass last listed them (:mod:`cmem_index.repositories.folders`)."""
        from cmem_index.repositories.folders import Folders

        return Folders(self)

    @cached_property
    def chunks(self) -> "Chunks":
        """Each document's pieces, their keyword index and who embedded them
        (:mod:`cmem_index.repositories.chunks`)."""
        from cmem_index.repositories.chunks import Chunks

        return Chunks(self)

    def _migrate(self) -> None:
        if INDEX_MIGRATIONS.pending(self.conn):
            with self.transaction():
                INDEX_MIGRATIONS.apply(self.conn)

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator["IndexStore"]:
        """A short write transaction that takes the write lock up front."""
        from cmem_cli.core.db import immediate_transaction

        with translated(self.path), immediate_transaction(self.conn):
            yield self

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        with translated(self.path):
            return list(self.conn.execute(sql, params).fetchall())

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        with translated(self.path):
            row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None

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

    # -- vectors -----------------------------------------------------------------------------------
    def has_vectors_table(self) -> bool:
        return bool(
            self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunk_vectors'"
            ).fetchone()
        )

    def vectors_model(self) -> tuple[str, int] | None:
        """(fingerprint, dimension) of the vectors in ``chunk_vectors``, or None when there are none."""
        model, dim = self.settings.get("vectors_model"), self.settings.get("vectors_dim")
        if not model or not dim or not self.has_vectors_table():
            return None
        return model, int(dim)

    def use_model(self, fingerprint: str, dim: int) -> bool:
        """Make ``chunk_vectors`` hold this model's vectors; True when the previous ones were discarded.

        Never mixes models: on a change the table is recreated empty and every chunk is pending again.
        """
        if self.vectors_model() == (fingerprint, dim):
            return False
        with self.transaction():
            self.conn.execute("DROP TABLE IF EXISTS chunk_vectors")
            self.conn.execute("DROP TABLE IF EXISTS chunk_bits")
            self.conn.execute("DELETE FROM settings WHERE key IN ('bits_center', 'vector_count')")
            self.conn.execute(
                f"CREATE VIRTUAL TABLE chunk_vectors USING vec0(embedding float[{int(dim)}] distance_metric=cosine)"
            )
            self.conn.execute("UPDATE chunks SET embedded_with = NULL WHERE embedded_with IS NOT NULL")
            self.settings.set("vectors_model", fingerprint)
            self.settings.set("vectors_dim", str(int(dim)))
        self._bits = None
        return True

    def cached_vectors(self, hashes: Sequence[str], fingerprint: str) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(hashes))
        for part, marks in batches(unique):
            for h, blob in self.conn.execute(
                f"SELECT hash, vector FROM embed_cache WHERE model = ? AND hash IN ({marks})",
                (fingerprint, *part),
            ):
                found[h] = blob
        return found

    def store_vectors(
        self, items: Sequence[tuple[int, str, bytes]], fingerprint: str, *, cache: bool
    ) -> None:
        """Write (chunk id, chunk hash, float32 vector) rows; call inside a transaction."""
        chunk_ids = [(i,) for i, _, _ in items]
        self.conn.executemany("DELETE FROM chunk_vectors WHERE rowid = ?", chunk_ids)
        self.conn.executemany(
            "INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)", [(i, blob) for i, _, blob in items]
        )
        center = self.bits_center()
        if center is not None:
            self.conn.executemany("DELETE FROM chunk_bits WHERE rowid = ?", chunk_ids)
            self.conn.executemany(
                f"INSERT INTO chunk_bits(rowid, embedding) VALUES (?, {_QUANTIZED})",
                [(i, blob, center) for i, _, blob in items],
            )
        self.conn.executemany(
            "UPDATE chunks SET embedded_with = ? WHERE id = ?", [(fingerprint, i) for i, _, _ in items]
        )
        if cache:
            self.conn.executemany(
                "INSERT OR IGNORE INTO embed_cache(hash, model, vector) VALUES (?, ?, ?)",
                [(h, fingerprint, blob) for _, h, blob in items],
            )

    # -- compact vectors ---------------------------------------------------------------------------
    # Above COMPACT_ABOVE vectors a search first ranks one bit per dimension (the sign of the vector less
    # the mean of the model's vectors: 48 bytes for 384 dimensions, against 1,536 for float32), then
    # re-ranks the head exactly with the float32 vectors (cmem_index.retrieve.vector). Below it, and in
    # every index that never grew past it, ``chunk_bits`` does not exist and search is exact.
    def bits_center(self) -> bytes | None:
        """The vector subtracted before taking signs, when ``chunk_bits`` exists (None: it does not)."""
        if self._bits is None:
            value = self.settings.get("bits_center") if self._plain_bits() else None
            self._bits = bytes.fromhex(value) if value else b""
        return self._bits or None

    def _plain_bits(self) -> bool:
        """Whether ``chunk_bits`` exists as a plain table. Before, it was a sqlite-vec ``bit[]`` table, whose
        search costs grow with the head it is asked for (400 of 220,000: 0.11 s, against 0.03 s for a plain
        scan ranked by ``vec_distance_hamming``); such an index is searched exactly until the next
        `cmem index` builds the bits again."""
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunk_bits'").fetchone()
        return row is not None and not str(row[0]).upper().startswith("CREATE VIRTUAL")

    def vector_count(self) -> int:
        """How many vectors the last update pass left (a setting: counting a million rows per search would
        cost more than the search)."""
        return int(self.settings.get("vector_count") or 0)

    def count_vectors(self, fingerprint: str) -> int:
        return int(self.scalar("SELECT count(*) FROM chunks WHERE embedded_with = ?", (fingerprint,)) or 0)

    def build_bits(self, fingerprint: str, sample: int = 20_000) -> None:
        """Create ``chunk_bits`` from every stored vector, centred on the mean of up to ``sample`` of them
        (from the cache: a scan of ``chunk_vectors`` by rowid would read all of it)."""
        from array import array

        dim = int(self.settings.get("vectors_dim") or 0)
        if dim <= 0 or dim % 8:
            return  # bits come in bytes: such a model is always searched exactly
        total = array("d", bytes(8 * dim))
        count = 0
        for (blob,) in self.conn.execute(
            "SELECT vector FROM embed_cache WHERE model = ? LIMIT ?", (fingerprint, sample)
        ):
            vector = array("f", blob)
            for i in range(dim):
                total[i] += vector[i]
            count += 1
        center = array("f", (x / max(count, 1) for x in total)).tobytes()
        with self.transaction():
            self.conn.execute("DROP TABLE IF EXISTS chunk_bits")
            self.conn.execute("CREATE TABLE chunk_bits(id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
            self.conn.execute(
                f"INSERT INTO chunk_bits(rowid, embedding) SELECT rowid, {_QUANTIZED.replace('?', 'embedding', 1)} "
                "FROM chunk_vectors",
                (center,),
            )
            self.settings.set("bits_center", center.hex())
        self._bits = center

    def query_terms(self, tokens: Sequence[str]) -> bm25.QueryTerms:
        """The query's terms in the chunks' full-text index, read once for every stage of a search (counting
        a common term's chunks walks its postings) for as long as nothing commits."""
        as_of = (int(self.scalar("PRAGMA data_version")), self.conn.total_changes())
        if as_of != self._terms_as_of:
            self._terms.clear()
            self._terms_as_of = as_of
        key = tuple(tokens)
        if key not in self._terms:
            self._terms[key] = bm25.query_terms(self.conn, "chunks_fts", FTS_TOKENIZER, tokens)
        return self._terms[key]

    def prune_cache(self, hashes: Iterable[str] | None = None) -> int:
        """Forget cached vectors of chunks that no longer exist (any model): of these chunk hashes (those an
        update pass deleted: work in proportion to the change), or of all (a full rebuild)."""
        with self.transaction():
            if hashes is None:
                self.conn.execute("DELETE FROM embed_cache WHERE hash NOT IN (SELECT hash FROM chunks)")
                return int(self.conn.changes())
            before = int(self.conn.total_changes())
            self.conn.executemany(
                "DELETE FROM embed_cache WHERE hash = ?1 AND NOT EXISTS (SELECT 1 FROM chunks WHERE hash = ?1)",
                [(h,) for h in hashes],
            )
            return int(self.conn.total_changes() - before)

    # -- status ------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """What `cmem index status` shows of the file: counts, the vectors' model, the last pass."""
        per_collection = self.documents.per_collection()
        model = self.vectors_model()
        vectors = self.chunks.count_embedded()
        return {
            "documents": self.documents.count(),
            "chunks": self.chunks.count(),
            "vectors": vectors,
            "vectors_model": model[0] if model else None,
            "vectors_dim": model[1] if model else None,
            "cached_vectors": int(self.scalar("SELECT count(*) FROM embed_cache") or 0),
            "chunker": self.settings.get("chunker"),
            "stale_documents": self.documents.count_stale(self.settings.get("chunker")),
            "collections": per_collection,
            "machines_indexed": self.keeps_machines,
            "last_run": self.settings.get_json("last_run"),
        }
