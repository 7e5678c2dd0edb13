"""The SQLite store: the source of truth for sessions, observations, prompts, summaries and links.

Pure data access. It knows nothing about markdown files or the vector index; ``cmem_cli.services.writes`` pairs
every write with its export file. Times are INTEGER epoch milliseconds; list fields are JSON arrays.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core import bm25
from cmem_cli.core.batches import batches
from cmem_cli.core.db import Database, wait_for_locks
from cmem_cli.core.db import busy_timeout_ms as configured_busy_timeout_ms
from cmem_cli.core.errors import InvalidInput, NotFound
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.filters import FilterFields, SqlDialect
from cmem_cli.core.fts import fts_query, query_tokens, search_terms
from cmem_cli.core.ids import UID_TAIL, new_uid
from cmem_cli.core.timeutil import ms_date_words, now_ms
from cmem_cli.store.schema import FTS_TOKENIZER, MIGRATIONS

if TYPE_CHECKING:
    from cmem_cli.store.anchors import AnchorStore
    from cmem_cli.store.capture_log import CaptureLog

LIST_COLUMNS = ("facts", "concepts", "files_read", "files_modified", "tools_used")
OBS_COLUMNS = (
    "uid", "type", "title", "subtitle", "narrative", "facts", "concepts", "files_read", "files_modified",
    "tools_used", "project", "session", "agent", "prompt_number", "key", "confidence", "created_at",
    "updated_at", "tokens", "search_terms",
)  # fmt: skip
AUTHORSHIP = ("machine", "author")  # who wrote it: kept from its first write, never changed by an edit
INSERT_COLUMNS = (*OBS_COLUMNS, "path", *AUTHORSHIP)
MAX_ROWID = 2**63 - 1
WINDOW_IDS = 50_000  # a time window with more rows than this is not turned into a range of ids
# BM25 column weights for observations_fts: title, subtitle, narrative, facts, concepts, search_terms.
OBS_WEIGHTS = (10.0, 4.0, 1.0, 2.0, 3.0, 1.0)
OBS_BM25 = f"bm25(observations_fts, {', '.join(map(str, OBS_WEIGHTS))})"


# A new row's number: past the largest held and the largest retired (schema.V10_RETIRED_IDS), so that
# no number is given to two memories, not even after the newest one was forgotten.
OBSERVATION, SUMMARY = "observation", "summary"
_NEXT_ID = {
    kind: f"(SELECT max(coalesce((SELECT max(id) FROM {table}), 0), "
    f"coalesce((SELECT max(id) FROM retired_ids WHERE kind = '{kind}'), 0)) + 1)"
    for kind, table in ((OBSERVATION, "observations"), (SUMMARY, "session_summaries"))
}


def bm25_to_score(rank: float) -> float:
    """Map FTS5's negative BM25 to 0..1 (monotonic; 0.5 at a BM25 of 1)."""
    strength = max(0.0, -rank)
    return strength / (1.0 + strength)


def _decode(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else _decoded(row)


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A row read from the observations table, its list columns decoded."""
    for column in LIST_COLUMNS:
        if column in row and isinstance(row[column], str):
            row[column] = json.loads(row[column])
    row.pop("search_terms", None)
    return row


def _missing_or_empty(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return True


class Filters(FilterFields):
    """Filters shared by search, listing and the hybrid path, as SQL over the store's tables."""

    def sql(self, alias: str = "o", *, observations: bool = True) -> tuple[str, list[Any]]:
        dialect = StoreSql(alias)
        return (" AND ".join(self.clauses(dialect, observations=observations)) or "1"), dialect.params


class StoreSql(SqlDialect):
    """The filters over ``cmem.db``: concepts, files and the branch in their own tables, by observation."""

    def concept(self, value: str) -> str:
        return (
            "EXISTS (SELECT 1 FROM observation_concepts c "
            f"WHERE c.observation_id = {self.alias}.id AND c.concept = {self.bind(value)} COLLATE NOCASE)"
        )

    def file(self, path: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM observation_files f WHERE f.observation_id = {self.alias}.id "
            f"AND {self.path_match('f.path', path)})"
        )

    def branch(self, name: str) -> str:
        return (
            "EXISTS (SELECT 1 FROM observation_anchors a "
            f"WHERE a.observation_id = {self.alias}.id AND a.branch = {self.bind(name)})"
        )


class Store:
    """Data access over one cmem database."""

    def __init__(self, db: Database):
        self.db = db
        self._writer: tuple[str, str | None] | None = None

    def writer(self) -> tuple[str, str | None]:
        """(machine, person) this home writes as (:mod:`cmem_cli.core.authorship`), read once."""
        if self._writer is None:
            from cmem_cli.core.authorship import machine_name, person
            from cmem_cli.store import team_outbox

            self._writer = (machine_name(team_outbox.settings(self).get("machine")), person())
        return self._writer

    def authorship(self, record: dict[str, Any]) -> dict[str, Any]:
        """``machine`` and ``author`` for a new row: the record's own when it has a ``machine`` key (a
        memory arriving from elsewhere says whose it is; None: it does not say, and it stays unknown rather
        than become this machine's), else this home's."""
        if "machine" in record:
            return {"machine": record["machine"] or None, "author": record.get("author") or None}
        machine, author = self.writer()
        return {"machine": machine, "author": record.get("author") or author}

    def several_machines(self) -> bool:
        """Does this store hold memories written on more than one machine? (Two index lookups.)"""
        return bool(
            self.db.scalar(
                "SELECT (SELECT min(machine) FROM observations) <> (SELECT max(machine) FROM observations)"
            )
        )

    @classmethod
    def open(cls, path: Path, export_dir: Path | None = None) -> Store:
        """Open (creating on first use) the store; with ``export_dir``, refuse to create a new empty store
        where one was lost while its export survives (see :mod:`cmem_cli.store.presence`)."""
        if export_dir is not None and _missing_or_empty(path):
            from cmem_cli.store.presence import check_store_presence

            check_store_presence(path, export_dir)
        db = Database(path)
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

    @property
    def anchors(self) -> AnchorStore:
        """The anchors of observations to the git files they cite (:mod:`cmem_cli.store.anchors`)."""
        from cmem_cli.store.anchors import AnchorStore

        return AnchorStore(self.db)

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

    # -- observations ------------------------------------------------------------------------------
    def insert_observation(
        self,
        record: dict[str, Any],
        *,
        path: str | None = None,
        restore: dict[str, Any] | None = None,
        updated_at: int | None = None,
    ) -> dict[str, Any]:
        """Insert a normalised record (see records.normalize_observation) inside the caller's transaction.

        ``record`` may carry ``uid`` and ``created_at``; missing ones are generated. ``restore`` (an
        observation read back from its file) may carry the ``id`` and ``updated_at`` it had, kept when the
        id is free. Returns the stored row (built from the inserted values rather than read back: bulk
        imports insert thousands at once).
        """
        now = now_ms()
        row = self._row_values(record, tokens=0, created_at=record.get("created_at") or now)
        row["uid"] = record.get("uid") or new_uid(row["created_at"])
        row["updated_at"] = updated_at or max(now, row["created_at"])
        row["path"] = path
        row.update(self.authorship(record))
        row["id"] = None
        if restore:
            row["updated_at"] = restore.get("updated_at") or row["updated_at"]
            wanted = restore.get("id")
            if isinstance(wanted, int) and 0 < wanted < MAX_ROWID and self._id_free(OBSERVATION, wanted):
                row["id"] = wanted
        columns = ", ".join(("id", *INSERT_COLUMNS))
        placeholders = ", ".join(f":{c}" for c in INSERT_COLUMNS)
        self.db.execute(
            f"INSERT INTO observations ({columns}) VALUES (coalesce(:id, {_NEXT_ID[OBSERVATION]}), {placeholders})",
            row,
        )
        row.pop("id")
        obs_id = self.db.conn.last_insert_rowid()
        self._write_side_tables(obs_id, record)
        row.pop("search_terms")
        row.update(id=obs_id, retrieval_count=0, last_retrieved_at=None)
        for column in LIST_COLUMNS:
            row[column] = list(record.get(column) or [])
        return row

    def _id_free(self, kind: str, wanted: int) -> bool:
        """Whether a file's number may be given back to its record: neither held nor retired."""
        table = "observations" if kind == OBSERVATION else "session_summaries"
        return (
            self.db.query_one(
                f"SELECT 1 FROM {table} WHERE id = :id UNION ALL "
                "SELECT 1 FROM retired_ids WHERE kind = :kind AND id = :id",
                {"id": wanted, "kind": kind},
            )
            is None
        )

    def insert_new_observations(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Insert new observations in the caller's transaction, one statement per table (a bulk import's
        batch). Each record is normalised and carries its ``uid``, ``created_at``, ``updated_at``, ``path``
        and ``tokens``. Ids follow the largest one given so far, in order, as :meth:`insert_observation` gives them.
        Returns the stored rows, as :meth:`insert_observation` does."""
        first = int(self.db.scalar(f"SELECT {_NEXT_ID[OBSERVATION]}"))
        rows = []
        for offset, record in enumerate(records):
            row = self._row_values(record, tokens=record["tokens"], created_at=record["created_at"])
            row.update(
                id=first + offset, uid=record["uid"], updated_at=record["updated_at"], path=record["path"]
            )
            row.update(self.authorship(record))
            rows.append(row)
        columns = ("id", *INSERT_COLUMNS)
        self.db.conn.executemany(
            f"INSERT INTO observations ({', '.join(columns)}) VALUES ({', '.join(f':{c}' for c in columns)})",
            rows,
        )
        self._write_side_tables_many([(row["id"], record) for row, record in zip(rows, records, strict=True)])
        for row, record in zip(rows, records, strict=True):
            row.pop("search_terms")
            row.update(retrieval_count=0, last_retrieved_at=None)
            for column in LIST_COLUMNS:
                row[column] = list(record.get(column) or [])
        return rows

    def update_observation(
        self, obs_id: int, record: dict[str, Any], *, tokens: int = 0, updated_at: int | None = None
    ) -> dict[str, Any]:
        """Replace the content fields of an observation, keeping id, uid and creation time.

        ``updated_at`` keeps the time another machine gave the edit (git sync); by default it is now."""
        existing = self.get_observation(obs_id)
        row = self._row_values(
            record, tokens=tokens, created_at=record.get("created_at") or existing["created_at"]
        )
        row["uid"] = existing["uid"]
        row["updated_at"] = updated_at or max(now_ms(), existing["updated_at"] + 1)
        assignments = ", ".join(f"{c} = :{c}" for c in OBS_COLUMNS)
        self.db.execute(f"UPDATE observations SET {assignments} WHERE id = :id", {**row, "id": obs_id})
        self.db.execute("DELETE FROM observation_files WHERE observation_id = ?", (obs_id,))
        self.db.execute("DELETE FROM observation_concepts WHERE observation_id = ?", (obs_id,))
        self._write_side_tables(obs_id, record)
        return self.get_observation(obs_id)

    def set_export(self, obs_id: int, relpath: str, tokens: int) -> None:
        """Record where the observation's file is and what its details cost in tokens."""
        self.db.execute(
            "UPDATE observations SET path = ?, tokens = ? WHERE id = ?", (relpath, tokens, obs_id)
        )

    # -- export file hashes ------------------------------------------------------------------------------
    def record_file(self, relpath: str, digest: str, stat: tuple[int, int] | None = None) -> None:
        """Remember what cmem wrote to ``relpath``: its hash and (size, mtime_ns), in the caller's transaction."""
        size, mtime_ns = stat or (None, None)
        self.db.execute(
            "INSERT INTO export_files (path, hash, size, mtime_ns) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns",
            (relpath, digest, size, mtime_ns),
        )

    def record_files(self, files: list[tuple[str, str, tuple[int, int] | None]]) -> None:
        """:meth:`record_file` for many (relpath, hash, stat) at once."""
        self.db.conn.executemany(
            "INSERT INTO export_files (path, hash, size, mtime_ns) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns",
            [(relpath, digest, *(stat or (None, None))) for relpath, digest, stat in files],
        )

    def forget_file(self, relpath: str) -> None:
        self.db.execute("DELETE FROM export_files WHERE path = ?", (relpath,))

    def file_hash(self, relpath: str) -> str | None:
        found = self.db.scalar("SELECT hash FROM export_files WHERE path = ?", (relpath,))
        return None if found is None else str(found)

    def file_hashes(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self.db.execute("SELECT path, hash FROM export_files")}

    def file_records(self) -> dict[str, tuple[str, tuple[int, int] | None]]:
        """relpath -> (hash, (size, mtime_ns) or None) of every file cmem wrote, in one query."""
        return {
            r[0]: (r[1], (r[2], r[3]) if r[2] is not None else None)
            for r in self.db.execute("SELECT path, hash, size, mtime_ns FROM export_files")
        }

    def file_stats(self) -> dict[str, tuple[int, int]]:
        """relpath -> (size, mtime_ns) of each file as cmem last wrote it."""
        return {
            r[0]: (r[1], r[2])
            for r in self.db.execute("SELECT path, size, mtime_ns FROM export_files WHERE size IS NOT NULL")
        }

    def record_paths(self) -> dict[str, tuple[str, int]]:
        """Every export path a row points at: relpath -> (kind, id)."""
        paths = {
            r[0]: ("observation", r[1])
            for r in self.db.execute("SELECT path, id FROM observations WHERE path IS NOT NULL")
        }
        for r in self.db.execute("SELECT path, id FROM session_summaries WHERE path IS NOT NULL"):
            paths[r[0]] = ("summary", r[1])
        return paths

    @staticmethod
    def _row_values(record: dict[str, Any], *, tokens: int, created_at: int) -> dict[str, Any]:
        row = {c: record.get(c) for c in OBS_COLUMNS}
        for column in LIST_COLUMNS:
            row[column] = json.dumps(record.get(column) or [], ensure_ascii=False)
        row["tokens"] = tokens
        row["created_at"] = created_at
        row["search_terms"] = (
            search_terms(
                [
                    record.get("title"),
                    record.get("subtitle"),
                    record.get("narrative"),
                    *(record.get("facts") or []),
                    *(record.get("concepts") or []),
                    *(record.get("files_read") or []),
                    *(record.get("files_modified") or []),
                ]
            )
            + " "
            + " ".join([*(record.get("files_read") or []), *(record.get("files_modified") or [])])
            + " "
            + ms_date_words(created_at)
        )
        return row

    def _write_side_tables(self, obs_id: int, record: dict[str, Any]) -> None:
        self._write_side_tables_many([(obs_id, record)])

    def _write_side_tables_many(self, items: list[tuple[int, dict[str, Any]]]) -> None:
        files = [
            (obs_id, kind, path)
            for obs_id, record in items
            for kind, column in (("read", "files_read"), ("modified", "files_modified"))
            for path in record.get(column) or []
        ]
        if files:
            self.db.conn.executemany(
                "INSERT OR IGNORE INTO observation_files (observation_id, kind, path) VALUES (?, ?, ?)", files
            )
        concepts = [(obs_id, c) for obs_id, record in items for c in record.get("concepts") or []]
        if concepts:
            self.db.conn.executemany(
                "INSERT OR IGNORE INTO observation_concepts (observation_id, concept) VALUES (?, ?)", concepts
            )

    def get_observation(self, obs_id: int) -> dict[str, Any]:
        row = _decode(self.db.query_one("SELECT * FROM observations WHERE id = ?", (obs_id,)))
        if row is None:
            raise NotFound(f"no observation with id {obs_id}")
        return row

    def find_observation(self, obs_id: int) -> dict[str, Any] | None:
        return _decode(self.db.query_one("SELECT * FROM observations WHERE id = ?", (obs_id,)))

    def observation_by_uid(self, uid: str) -> dict[str, Any] | None:
        return _decode(self.db.query_one("SELECT * FROM observations WHERE uid = ?", (uid,)))

    def uid_matches(self, text: str, limit: int = 4) -> list[tuple[str, int, str]]:
        """(kind, id, uid) of the observations and session summaries whose uid is ``text`` or starts with
        it (uids are upper case) or, for ``text`` of :data:`UID_TAIL` characters, ends with it: the tail a
        file name shows (``...-7zk3qw9m.md``), since a uid's head is its time and every uid of one minute
        shares it. Uid order, at most ``limit`` of each. A prefix is a range scan of the uid index, a tail a
        lookup in the index of tails (store migration ``m009_uid_tails``)."""
        found: dict[tuple[str, int], str] = {}
        for kind, table in (("observation", "observations"), ("summary", "session_summaries")):
            wanted: list[tuple[str, tuple[str, ...]]] = [
                ("uid >= ? AND uid < ?", (text, text + "\U0010ffff"))
            ]
            if len(text) == UID_TAIL:
                wanted.append((f"substr(uid, -{UID_TAIL}) = ?", (text,)))
            for where, params in wanted:
                rows = self.db.query(f"SELECT id, uid FROM {table} WHERE {where} LIMIT ?", (*params, limit))
                found.update({(kind, int(r["id"])): str(r["uid"]) for r in rows})
        return sorted(((kind, i, uid) for (kind, i), uid in found.items()), key=lambda c: (c[2], c[0]))

    def observations_by_uids(self, uids: list[str]) -> dict[str, dict[str, Any]]:
        if not uids:
            return {}
        marks = ", ".join("?" * len(uids))
        rows = self.db.query(f"SELECT * FROM observations WHERE uid IN ({marks})", uids)
        return {row["uid"]: _decoded(row) for row in rows}

    def replies(self, obs_ids: list[int], filters: Filters) -> dict[int, int]:
        """For each of these observations that is a bare question (its title asks, nothing more is written)
        and belongs to a session: the id of the next observation of that session matching ``filters``."""
        if not obs_ids:
            return {}
        where, params = filters.sql("o")
        marks = ", ".join("?" * len(obs_ids))
        rows = self.db.query(
            f"""SELECT q.id AS question, (
                    SELECT o.id FROM observations o WHERE o.session = q.session
                    AND (o.created_at > q.created_at OR (o.created_at = q.created_at AND o.id > q.id)) AND {where}
                    ORDER BY o.created_at, o.id LIMIT 1) AS reply
                FROM observations q WHERE q.id IN ({marks}) AND q.session IS NOT NULL
                AND instr(q.title, '?') > 0 AND coalesce(q.narrative, '') = '' AND q.facts = '[]'""",
            (*params, *obs_ids),
        )
        return {row["question"]: row["reply"] for row in rows if row["reply"] is not None}

    def holding_phrase(self, phrase: str, obs_ids: list[int]) -> set[int]:
        """Which of ``obs_ids`` hold ``phrase`` (an FTS5 phrase, :func:`cmem_cli.core.fts.exact_phrase`),
        its words in order, in any field."""
        found: set[int] = set()
        for batch, marks in batches(obs_ids):
            sql = f"SELECT rowid FROM observations_fts WHERE observations_fts MATCH ? AND rowid IN ({marks})"
            found.update(row[0] for row in self.db.rows(sql, (phrase, *batch)))
        return found

    def observation_by_key(self, project: str, key: str) -> dict[str, Any] | None:
        return _decode(
            self.db.query_one("SELECT * FROM observations WHERE project = ? AND key = ?", (project, key))
        )

    def key_holder(self, project: str, key: str | None, *, besides: int | None) -> dict[str, Any] | None:
        """The observation of ``project`` other than ``besides`` that holds ``key`` (None: nobody else)."""
        if not key:
            return None
        holder = self.observation_by_key(project, key)
        return None if holder is None or holder["id"] == besides else holder

    def delete_observation(self, obs_id: int) -> None:
        """Delete the row, remembering its uid as forgotten (see :meth:`forgotten_at`)."""
        self.db.execute(
            "INSERT OR REPLACE INTO forgotten (uid, forgotten_at) SELECT uid, ? FROM observations WHERE id = ?",
            (now_ms(), obs_id),
        )
        self.db.execute("DELETE FROM observations WHERE id = ?", (obs_id,))

    def forgotten_at(self, uid: str) -> int | None:
        """When the memory with this uid was forgotten on this machine (epoch ms), None if it never was."""
        value = self.db.scalar("SELECT forgotten_at FROM forgotten WHERE uid = ?", (uid,))
        return int(value) if value is not None else None

    def iter_observations(self, page: int = 2_000) -> Iterator[dict[str, Any]]:
        """Every observation, decoded, in id order, a page at a time (whole-store passes: doctor, rebuild);
        each page is read completely, so the caller may write between pages."""
        after = 0
        while True:
            rows = self.db.query("SELECT * FROM observations WHERE id > ? ORDER BY id LIMIT ?", (after, page))
            for row in rows:
                decoded = _decode(row)
                if decoded is not None:
                    yield decoded
            if len(rows) < page:
                return
            after = rows[-1]["id"]

    def all_links_from(self) -> dict[int, list[dict[str, Any]]]:
        """:meth:`links_from` of every observation that has links, in one query."""
        found: dict[int, list[dict[str, Any]]] = {}
        for row in self.db.query(
            "SELECT l.from_id, l.type, o.id, o.uid, o.title, o.path FROM observation_links l "
            "JOIN observations o ON o.id = l.to_id ORDER BY l.from_id, l.created_at, o.id"
        ):
            found.setdefault(row.pop("from_id"), []).append(row)
        return found

    def observation_ids_without_path(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM observations WHERE path IS NULL ORDER BY id")]

    def all_observation_ids(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM observations ORDER BY id")]

    def record_retrieval(self, obs_ids: list[int]) -> None:
        if not obs_ids:
            return
        with self.db.transaction():
            self.db.conn.executemany(
                "UPDATE observations SET retrieval_count = retrieval_count + 1, last_retrieved_at = ? "
                "WHERE id = ?",
                [(now_ms(), i) for i in obs_ids],
            )

    # -- links ---------------------------------------------------------------------------------------
    def add_link(self, from_id: int, to_id: int, link_type: str) -> bool:
        """Add a link; False when it was already there."""
        if from_id == to_id:
            raise InvalidInput("an observation cannot link to itself")
        self.get_observation(to_id)
        self.db.execute(
            "INSERT OR IGNORE INTO observation_links (from_id, to_id, type, created_at) VALUES (?, ?, ?, ?)",
            (from_id, to_id, link_type, now_ms()),
        )
        return self.db.conn.changes() > 0

    def remove_link(self, from_id: int, to_id: int, link_type: str | None = None) -> int:
        sql = "DELETE FROM observation_links WHERE from_id = ? AND to_id = ?"
        params: list[Any] = [from_id, to_id]
        if link_type:
            sql += " AND type = ?"
            params.append(link_type)
        self.db.execute(sql, params)
        return self.db.conn.changes()

    def links_from(self, obs_id: int) -> list[dict[str, Any]]:
        """Outgoing links with the target's id, uid, title and export path (for files and `get --links`)."""
        return self.db.query(
            "SELECT l.type, o.id, o.uid, o.title, o.path FROM observation_links l "
            "JOIN observations o ON o.id = l.to_id WHERE l.from_id = ? ORDER BY l.created_at, o.id",
            (obs_id,),
        )

    def links_to(self, obs_id: int) -> list[dict[str, Any]]:
        return self.db.query(
            "SELECT l.type, o.id, o.uid, o.title, o.path FROM observation_links l "
            "JOIN observations o ON o.id = l.from_id WHERE l.to_id = ? ORDER BY l.created_at, o.id",
            (obs_id,),
        )

    def add_pending_link(
        self, from_id: int, uid: str, link_type: str, title: str | None, href: str | None
    ) -> None:
        """A link to a uid this store does not hold yet, kept (with the title and href its file showed)."""
        self.db.execute(
            "INSERT INTO pending_links (from_id, to_uid, type, title, href) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (from_id, to_uid, type) DO UPDATE SET title = excluded.title, href = excluded.href",
            (from_id, uid, link_type, title, href),
        )

    def pending_links_from(self, obs_id: int) -> list[dict[str, Any]]:
        return self.db.query(
            "SELECT type, to_uid AS uid, title, href FROM pending_links WHERE from_id = ? ORDER BY rowid",
            (obs_id,),
        )

    def all_pending_links(self) -> dict[int, list[dict[str, Any]]]:
        """:meth:`pending_links_from` of every observation at once (a whole-store pass)."""
        found: dict[int, list[dict[str, Any]]] = {}
        for row in self.db.query(
            "SELECT from_id, type, to_uid AS uid, title, href FROM pending_links ORDER BY rowid"
        ):
            found.setdefault(row.pop("from_id"), []).append(row)
        return found

    def clear_pending_links_from(self, obs_id: int) -> None:
        self.db.execute("DELETE FROM pending_links WHERE from_id = ?", (obs_id,))

    def take_pending_links_to(self, uid: str) -> list[tuple[int, str]]:
        """(from id, type) of every link waiting for ``uid``, removed from the waiting list."""
        rows = [
            (r[0], r[1])
            for r in self.db.execute("SELECT from_id, type FROM pending_links WHERE to_uid = ?", (uid,))
        ]
        if rows:
            self.db.execute("DELETE FROM pending_links WHERE to_uid = ?", (uid,))
        return rows

    # -- state: small facts that are no record -------------------------------------------------------------
    def get_state(self, key: str) -> str | None:
        value = self.db.scalar("SELECT value FROM state WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set_state(self, key: str, value: str | None) -> None:
        """Set (or with None remove) one value, in the caller's transaction."""
        if value is None:
            self.db.execute("DELETE FROM state WHERE key = ?", (key,))
        else:
            self.db.execute(
                "INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- sessions --------------------------------------------------------------------------------------
    def ensure_session(
        self,
        session_id: str,
        *,
        agent: str,
        project: str,
        label: str | None = None,
        goal: str | None = None,
        at: int | None = None,
    ) -> dict[str, Any]:
        """Create the session if new, else mark activity; inside the caller's transaction."""
        when = at or now_ms()
        self.db.execute(
            "INSERT INTO sessions (session_id, agent, project, label, goal, started_at, last_activity_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
            "last_activity_at = max(last_activity_at, excluded.last_activity_at), "
            "label = coalesce(excluded.label, label), goal = coalesce(excluded.goal, goal)",
            (session_id, agent, project, label, goal, when, when),
        )
        return self.get_session(session_id)

    def reopen_session(self, session_id: str) -> None:
        """Mark an ended session active again (`cmem session start ID` on it); inside the caller's
        transaction. A session that does not exist or is active is left alone."""
        self.db.execute(
            "UPDATE sessions SET status = 'active', completed_at = NULL WHERE session_id = ? AND status != 'active'",
            (session_id,),
        )

    def label_session(self, session_id: str, label: str | None) -> None:
        """Set a session's label if it has none; neither creates the session nor bumps its last activity."""
        self.db.execute(
            "UPDATE sessions SET label = ? WHERE session_id = ? AND label IS NULL", (label, session_id)
        )

    def end_session(
        self, session_id: str, *, status: str, outcome: str | None, next_steps: str | None
    ) -> dict[str, Any]:
        self.get_session(session_id)  # NotFound for an unknown id
        now = now_ms()
        self.db.execute(
            "UPDATE sessions SET status = ?, completed_at = ?, last_activity_at = ?, "
            "outcome = coalesce(?, outcome), next_steps = coalesce(?, next_steps) WHERE session_id = ?",
            (status, now, now, outcome, next_steps, session_id),
        )
        return self.get_session(session_id)

    def get_session(self, session_id: str) -> dict[str, Any]:
        """The session with exactly this id (a person's prefix goes through :meth:`resolve_session` first)."""
        row = self.db.query_one("SELECT * FROM sessions WHERE session_id = ?", (session_id,))
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        return row

    def resolve_session(self, text: str) -> str | None:
        """The full id of the one session whose id is ``text`` or starts with it; None when none does.

        An exact id always wins, so a session named like another's prefix stays reachable; a prefix shared
        by several sessions is an error that lists a few of them."""
        if self.db.scalar("SELECT 1 FROM sessions WHERE session_id = ?", (text,)):
            return text
        matches = [
            r["session_id"]
            for r in self.db.query(
                "SELECT session_id FROM sessions WHERE session_id >= ? AND session_id < ? "
                "ORDER BY session_id LIMIT 4",
                (text, text + "\U0010ffff"),
            )
        ]
        if len(matches) > 1:
            shown = ", ".join(matches[:3]) + (", ..." if len(matches) > 3 else "")
            raise InvalidInput(f"session prefix {text!r} is ambiguous: {shown}")
        return matches[0] if matches else None

    def session_row(self, session_id: str) -> dict[str, Any] | None:
        return self.db.query_one("SELECT * FROM sessions WHERE session_id = ?", (session_id,))

    def sessions_by_ids(self, session_ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for chunk, marks in batches(session_ids):
            for row in self.db.query(f"SELECT * FROM sessions WHERE session_id IN ({marks})", chunk):
                found[row["session_id"]] = row
        return found

    def put_session(self, values: dict[str, Any]) -> None:
        """Write a whole session row (one that arrived from another machine, merged with this one's)."""
        columns = (
            "session_id", "agent", "project", "label", "status", "prompt_counter", "started_at",
            "completed_at", "last_activity_at", "goal", "outcome", "next_steps",
        )  # fmt: skip
        names = ", ".join(columns)
        marks = ", ".join(f":{c}" for c in columns)
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "session_id")
        self.db.execute(
            f"INSERT INTO sessions ({names}) VALUES ({marks}) ON CONFLICT (session_id) DO UPDATE SET {sets}",
            {c: values.get(c) for c in columns},
        )

    def session_ids(self) -> list[str]:
        return [r["session_id"] for r in self.db.query("SELECT session_id FROM sessions")]

    def list_sessions(
        self, *, project: str | None = None, status: str | None = None, limit: int = 20
    ) -> list[dict[str, Any]]:
        clauses, params = [], []
        if project:
            clauses.append("project = ?")
            params.append(project)
        if status:
            clauses.append("status = ?")
            params.append(status)
        where = " AND ".join(clauses) or "1"
        return self.db.query(
            "SELECT s.*, (SELECT count(*) FROM observations o WHERE o.session = s.session_id) AS observations "
            f"FROM sessions s WHERE {where} ORDER BY last_activity_at DESC LIMIT ?",
            [*params, limit],
        )

    def next_prompt_number(self, session_id: str) -> int:
        self.db.execute(
            "UPDATE sessions SET prompt_counter = prompt_counter + 1, last_activity_at = ? WHERE session_id = ?",
            (now_ms(), session_id),
        )
        return int(self.db.scalar("SELECT prompt_counter FROM sessions WHERE session_id = ?", (session_id,)))

    def raise_prompt_counter(self, session_id: str, number: int) -> None:
        """A prompt numbered ``number`` arrived: the session's next prompt here is numbered after it."""
        self.db.execute(
            "UPDATE sessions SET prompt_counter = max(prompt_counter, ?) WHERE session_id = ?",
            (number, session_id),
        )

    def session_observation_count(self, session_id: str) -> int:
        """How many observations session ``session_id`` (exactly) holds."""
        return int(self.db.scalar("SELECT count(*) FROM observations WHERE session = ?", (session_id,)) or 0)

    # -- prompts and summaries ---------------------------------------------------------------------------
    def session_prompts(self, session_id: str) -> list[dict[str, Any]]:
        """The prompts of session ``session_id`` (exactly), in their order."""
        return self.db.query(
            "SELECT * FROM user_prompts WHERE session = ? ORDER BY prompt_number", (session_id,)
        )

    def latest_prompt_text(self, session_id: str) -> str | None:
        """The text of the latest prompt of session ``session_id``, None if it has none."""
        text = self.db.scalar(
            "SELECT text FROM user_prompts WHERE session = ? ORDER BY prompt_number DESC LIMIT 1",
            (session_id,),
        )
        return str(text) if text else None

    def insert_prompt(
        self,
        *,
        session: str,
        number: int,
        text: str,
        project: str,
        agent: str,
        created_at: int | None = None,
        uid: str | None = None,
        machine: str | None = None,
        author: str | None = None,
    ) -> dict[str, Any]:
        """A prompt; ``machine`` and ``author``: whose it is when it arrives from elsewhere (else this home's)."""
        when = created_at or now_ms()
        who = self.authorship({} if machine is None else {"machine": machine, "author": author})
        self.db.execute(
            "INSERT INTO user_prompts (uid, session, prompt_number, text, project, agent, created_at, machine, "
            "author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                uid or new_uid(when),
                session,
                number,
                text,
                project,
                agent,
                when,
                who["machine"],
                who["author"],
            ),
        )
        return self.get_prompt(self.db.conn.last_insert_rowid())

    def prompts_by_uids(self, uids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for chunk, marks in batches(uids):
            for row in self.db.query(f"SELECT * FROM user_prompts WHERE uid IN ({marks})", chunk):
                found[row["uid"]] = row
        return found

    def free_prompt_number(self, session_id: str, number: int) -> int:
        """``number`` if no prompt of the session has it here, else the one after the session's last."""
        if not self.db.scalar(
            "SELECT 1 FROM user_prompts WHERE session = ? AND prompt_number = ?", (session_id, number)
        ):
            return number
        last = self.db.scalar(
            "SELECT max(coalesce((SELECT max(prompt_number) FROM user_prompts WHERE session = :s), 0), "
            "coalesce((SELECT prompt_counter FROM sessions WHERE session_id = :s), 0))",
            {"s": session_id},
        )
        return int(last or 0) + 1

    def get_prompt(self, prompt_id: int) -> dict[str, Any]:
        row = self.db.query_one("SELECT * FROM user_prompts WHERE id = ?", (prompt_id,))
        if row is None:
            raise NotFound(f"no prompt P{prompt_id}")
        return row

    def insert_summary(self, record: dict[str, Any], *, summary_id: int | None = None) -> dict[str, Any]:
        """Insert a summary; ``summary_id`` (one read back from its file) is kept when it is free."""
        when = record.get("created_at") or now_ms()
        values = {f: record.get(f) for f in SUMMARY_FIELDS}
        if not (
            isinstance(summary_id, int) and 0 < summary_id < MAX_ROWID and self._id_free(SUMMARY, summary_id)
        ):
            summary_id = None
        self.db.execute(
            "INSERT INTO session_summaries (id, uid, session, project, agent, request, investigated, learned, "
            f"completed, next_steps, notes, created_at, updated_at, machine, author) VALUES (coalesce(:id, "
            f"{_NEXT_ID[SUMMARY]}), :uid, :session, :project, :agent, :request, :investigated, :learned, :completed, "
            ":next_steps, :notes, :created_at, :updated_at, :machine, :author)",
            {
                **values,
                **self.authorship(record),
                "id": summary_id,
                "uid": record.get("uid") or new_uid(when),
                "session": record["session"],
                "project": record["project"],
                "agent": record["agent"],
                "created_at": when,
                "updated_at": record.get("updated_at") or when,
            },
        )
        return self.get_summary(self.db.conn.last_insert_rowid())

    def update_summary(self, summary_id: int, values: dict[str, Any]) -> dict[str, Any]:
        """Replace a summary's text fields (and project/agent when given), keeping id, uid and creation; its
        ``updated_at`` is ``values``' (the time of the edit, when known) or now."""
        current = self.get_summary(summary_id)
        fields = {f: values.get(f) for f in SUMMARY_FIELDS}
        fields["project"] = values.get("project") or current["project"]
        fields["agent"] = values.get("agent") or current["agent"]
        fields["updated_at"] = values.get("updated_at") or now_ms()
        assignments = ", ".join(f"{c} = :{c}" for c in fields)
        self.db.execute(
            f"UPDATE session_summaries SET {assignments} WHERE id = :id", {**fields, "id": summary_id}
        )
        # summaries_fts has no update trigger (summaries were write-once): refresh its row by hand
        self.db.execute("DELETE FROM summaries_fts WHERE rowid = ?", (summary_id,))
        self.db.execute(
            "INSERT INTO summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (summary_id, *(fields[f] for f in SUMMARY_FIELDS)),
        )
        return self.get_summary(summary_id)

    def summary_by_uid(self, uid: str) -> dict[str, Any] | None:
        return self.db.query_one("SELECT * FROM session_summaries WHERE uid = ?", (uid,))

    def summary_by_path(self, relpath: str) -> dict[str, Any] | None:
        """The summary whose export file is ``relpath`` (what the index found), or None."""
        return self.db.query_one("SELECT * FROM session_summaries WHERE path = ?", (relpath,))

    def uids_at_paths(self, relpaths: list[str]) -> dict[str, tuple[str, str]]:
        """Export path -> (kind, uid) for the observations and summaries whose files are at ``relpaths``."""
        found: dict[str, tuple[str, str]] = {}
        for chunk, marks in batches(relpaths):
            for table, kind in (("observations", "observation"), ("session_summaries", "summary")):
                for row in self.db.query(f"SELECT uid, path FROM {table} WHERE path IN ({marks})", chunk):
                    found[row["path"]] = (kind, row["uid"])
        return found

    def set_summary_path(self, summary_id: int, relpath: str) -> None:
        self.db.execute("UPDATE session_summaries SET path = ? WHERE id = ?", (relpath, summary_id))

    def get_summary(self, summary_id: int) -> dict[str, Any]:
        row = self.db.query_one("SELECT * FROM session_summaries WHERE id = ?", (summary_id,))
        if row is None:
            raise NotFound(f"no summary S{summary_id}")
        return row

    def summaries(
        self, *, session: str | None = None, project: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        clauses, params = [], []
        if session:
            clauses.append("session = ?")
            params.append(session)
        if project:
            clauses.append("project = ?")
            params.append(project)
        where = " AND ".join(clauses) or "1"
        return self.db.query(
            f"SELECT * FROM session_summaries WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit],
        )

    def all_summary_ids(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM session_summaries ORDER BY id")]

    def delete_summary(self, summary_id: int) -> None:
        self.db.execute("DELETE FROM session_summaries WHERE id = ?", (summary_id,))

    # -- reading: search, listing, timeline ----------------------------------------------------------------
    def search_observations(
        self, query: str, filters: Filters, *, limit: int, offset: int = 0, order: str = "relevance"
    ) -> list[dict[str, Any]]:
        """Keyword search over observations; each row gets ``score`` (0..1) and ``kind``.

        Two steps: the page's ids and ranks, then their rows. Ranking carries only (id, rank) through the
        sort, not every matching row's text, and without a filter it never leaves the full-text index
        (a common word matches a fifth of a million-row store). CROSS JOIN keeps the full-text match as the
        outer loop: with a selective filter SQLite's planner would otherwise walk the filtered rows and
        re-run the whole MATCH for each one (seconds at 100k).
        """
        match = fts_query(query)
        if match is None:
            return []
        where, params = filters.sql("o")
        plain = order == "relevance" and where == "1"
        low, high = (0, MAX_ROWID) if plain else self._window_ids(filters)
        if not plain:
            where += f" AND observations_fts.rowid BETWEEN {low} AND {high}"
        order_sql = {
            "relevance": "rank",
            "newest": "o.created_at DESC, o.id DESC",
            "oldest": "o.created_at, o.id",
        }

        def page(narrow: bm25.Head | None) -> bm25.Ranked:
            also, more = (f" AND {narrow.where}", narrow.params) if narrow else ("", [])
            if plain:
                sql = (
                    f"SELECT rowid, {OBS_BM25} AS rank FROM observations_fts "
                    f"WHERE observations_fts MATCH ?{also} ORDER BY rank LIMIT ? OFFSET ?"
                )
            else:
                sql = (
                    f"SELECT o.id, {OBS_BM25} AS rank FROM observations_fts CROSS JOIN observations o "
                    f"ON o.id = observations_fts.rowid WHERE observations_fts MATCH ?{also} AND {where} "
                    f"ORDER BY {order_sql[order]} LIMIT ? OFFSET ?"
                )
            return list(self.db.execute(sql, [match, *more, *params, limit, offset]))

        terms = None
        if order == "relevance" and (low, high) == (0, MAX_ROWID):  # a time window's range is narrow already
            terms = self._query_terms(query, "observations_fts")
            ranked = bm25.ranked_head(page, limit, bm25.head("observations_fts", terms))
        else:
            ranked = page(None)
        found = self._observations_by_id([obs_id for obs_id, _ in ranked])
        if ranked and terms is None:
            terms = self._query_terms(query, "observations_fts")
        scale = terms.idf_sum() * max(OBS_WEIGHTS) if terms is not None else 0.0
        rows = []
        for obs_id, rank in ranked:
            row = found.get(obs_id)
            if row is None:
                continue
            row["kind"] = "observation"
            row["bm25"] = -rank  # FTS5 ranks lower-is-better; keep the positive strength
            row["score"] = bm25_to_score(rank)
            row["strength"] = row["bm25"] / scale if scale else 0.0
            rows.append(row)
        return rows

    def _window_ids(self, filters: Filters) -> tuple[int, int]:
        """The range of ids the observations of a narrow time window (``--since 7d``) lie in, so that the
        full-text match skips the rest of the store: ids need not follow time (an import of old records),
        so it is the least and greatest id of the window's rows, read from the time index when the window
        holds at most ``WINDOW_IDS`` rows (else no bound: reading them would cost more than it saves)."""
        low, high, most = 0, MAX_ROWID, WINDOW_IDS
        if filters.since is None and filters.until is None:
            return low, high
        clauses, params = [], []
        if filters.since is not None:
            clauses.append("created_at >= ?")
            params.append(int(filters.since))
        if filters.until is not None:
            clauses.append("created_at <= ?")
            params.append(int(filters.until))
        where = " AND ".join(clauses)
        in_window = self.db.scalar(
            f"SELECT count(*) FROM (SELECT 1 FROM observations WHERE {where} LIMIT ?)", [*params, most + 1]
        )
        if in_window > most:
            return low, high
        bounds = self.db.query_one(
            f"SELECT min(id) AS low, max(id) AS high FROM observations WHERE {where}", params
        )
        if not bounds or bounds["low"] is None:
            return 1, 0  # nothing in the window
        return int(bounds["low"]), int(bounds["high"])

    def _query_terms(self, query: str, fts: str) -> bm25.QueryTerms:
        """The query's terms in ``fts``, whose IDF sum scales a hit's BM25 into its *strength*: a hit
        matching every term once, in its heaviest column, scores the sum times that column's weight
        (:mod:`cmem_cli.core.bm25`). Strengths compare between the observations, the summaries and the
        prompts whatever their tables' sizes (one prompt in a table of one scored 0.000002 for its own
        words)."""
        return bm25.query_terms(self.db.conn, fts, FTS_TOKENIZER, query_tokens(query))

    def observations_oldest_first(self, ids: Iterable[int]) -> list[dict[str, Any]]:
        """The stored observations among ``ids``, oldest first (ids that do not exist are left out)."""
        found = self._observations_by_id(list(dict.fromkeys(ids)))
        return sorted(found.values(), key=lambda row: (row["created_at"], row["id"]))

    def _observations_by_id(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        found: dict[int, dict[str, Any]] = {}
        for chunk, marks in batches(ids):
            for row in self.db.query(f"SELECT * FROM observations WHERE id IN ({marks})", chunk):
                decoded = _decode(row)
                if decoded is not None:
                    found[decoded["id"]] = decoded
        return found

    def search_summaries(self, query: str, filters: Filters, *, limit: int) -> list[dict[str, Any]]:
        return self._search_side_table(query, filters, limit, "summary", "summaries_fts", "session_summaries")

    def search_prompts(self, query: str, filters: Filters, *, limit: int) -> list[dict[str, Any]]:
        return self._search_side_table(query, filters, limit, "prompt", "prompts_fts", "user_prompts")

    def _search_side_table(
        self, query: str, filters: Filters, limit: int, kind: str, fts: str, table: str
    ) -> list[dict[str, Any]]:
        """Keyword hits among summaries or prompts (their filters have no observation-only fields)."""
        match = fts_query(query)
        if match is None or filters.observation_only:
            return []
        where, params = filters.sql("t", observations=False)
        rows = self.db.query(
            f"SELECT t.*, bm25({fts}) AS rank FROM {fts} CROSS JOIN {table} t "
            f"ON t.id = {fts}.rowid WHERE {fts} MATCH ? AND {where} ORDER BY rank LIMIT ?",
            [match, *params, limit],
        )
        scale = self._query_terms(query, fts).idf_sum() if rows else 0.0
        for row in rows:
            row["kind"] = kind
            row["bm25"] = -row.pop("rank")  # FTS5 ranks lower-is-better; keep the positive strength
            row["score"] = bm25_to_score(-row["bm25"])
            row["strength"] = row["bm25"] / scale if scale else 0.0
        return rows

    def list_observations(
        self, filters: Filters, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> list[dict[str, Any]]:
        where, params = filters.sql("o")
        order_sql = "o.created_at, o.id" if order == "oldest" else "o.created_at DESC, o.id DESC"
        rows = self.db.query(
            f"SELECT o.* FROM observations o WHERE {where} ORDER BY {order_sql} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        for row in rows:
            _decode(row)
            row["kind"] = "observation"
            row["score"] = None
        return rows

    def timeline_around(
        self, project: str, anchor_time: int, anchor_key: tuple[str, int], *, before: int, after: int
    ) -> list[dict[str, Any]]:
        """Observations, prompts and summaries of ``project`` around ``anchor_time``, oldest first."""
        union = (
            "SELECT 'observation' AS kind, id, created_at, type, title, session, agent, tokens, uid, machine "
            "FROM observations WHERE project = :p "
            "UNION ALL SELECT 'prompt', id, created_at, NULL, text, session, agent, "
            "(length(text) + 3) / 4, uid, machine FROM user_prompts WHERE project = :p "
            "UNION ALL SELECT 'summary', id, created_at, NULL, "
            "coalesce(request, completed, learned, investigated, next_steps, notes), "
            "session, agent, (length(coalesce(request,'') || coalesce(investigated,'') || coalesce(learned,'') "
            "|| coalesce(completed,'') || coalesce(next_steps,'') || coalesce(notes,'')) + 3) / 4, uid, machine "
            "FROM session_summaries WHERE project = :p"
        )
        kind_order = "CASE kind WHEN 'prompt' THEN 0 WHEN 'observation' THEN 1 ELSE 2 END"
        kind, ident = anchor_key
        anchor_rank = "CASE :k WHEN 'prompt' THEN 0 WHEN 'observation' THEN 1 ELSE 2 END"
        params = {"p": project, "t": anchor_time, "k": kind, "i": ident}
        earlier = self.db.query(
            f"SELECT * FROM ({union}) WHERE (created_at, {kind_order}, id) < (:t, {anchor_rank}, :i) "
            f"ORDER BY created_at DESC, {kind_order} DESC, id DESC LIMIT :n",
            {**params, "n": before},
        )
        later = self.db.query(
            f"SELECT * FROM ({union}) WHERE (created_at, {kind_order}, id) >= (:t, {anchor_rank}, :i) "
            f"ORDER BY created_at, {kind_order}, id LIMIT :n",
            {**params, "n": after + 1},
        )
        return list(reversed(earlier)) + later

    # -- statistics ---------------------------------------------------------------------------------------
    def projects(self) -> list[dict[str, Any]]:
        """Each project with observations: its name, how many, and the time of the latest; most recent first."""
        return self.db.query(
            "SELECT project, count(*) AS observations, max(created_at) AS last FROM observations "
            "GROUP BY project ORDER BY last DESC, project"
        )

    def stats(self) -> dict[str, Any]:
        counts = {
            table: int(self.db.scalar(f"SELECT count(*) FROM {table}"))
            for table in (
                "observations",
                "sessions",
                "user_prompts",
                "session_summaries",
                "observation_links",
            )
        }
        by_type = {
            r["type"]: r["n"]
            for r in self.db.query(
                "SELECT type, count(*) AS n FROM observations GROUP BY type ORDER BY n DESC, type"
            )
        }
        by_project = {
            r["project"]: r["n"]
            for r in self.db.query(
                "SELECT project, count(*) AS n FROM observations GROUP BY project ORDER BY n DESC, project"
            )
        }
        span = self.db.query_one("SELECT min(created_at) AS first, max(created_at) AS last FROM observations")
        return {"counts": counts, "by_type": by_type, "by_project": by_project, **(span or {})}
