"""The observations table and its side tables (files, concepts): a memory's own row, by id, uid or key."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.errors import NotFound
from cmem_cli.core.fts import search_terms
from cmem_cli.core.ids import UID_TAIL, new_uid
from cmem_cli.core.timeutil import ms_date_words, now_ms
from cmem_cli.store.rows import (
    EDITOR,
    INSERT_COLUMNS,
    LIST_COLUMNS,
    MAX_ROWID,
    NEXT_ID,
    OBS_COLUMNS,
    OBSERVATION,
    Repository,
    decoded,
    id_free,
    observation,
    observations_by_id,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cmem_cli.store.row_types import ObservationInput, ObservationRow


class ObservationRepository(Repository):
    """Observations: the records themselves (insert, update, read by id/uid/key, forget)."""

    def insert(
        self,
        record: ObservationInput,
        *,
        path: str | None = None,
        restore: Mapping[str, Any] | None = None,
        updated_at: int | None = None,
    ) -> ObservationRow:
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
        row.update(self._store.authorship(record))
        row.update({name: record.get(name) for name in EDITOR})  # stated by a memory that arrives
        row["id"] = None
        if restore:
            row["updated_at"] = restore.get("updated_at") or row["updated_at"]
            wanted = restore.get("id")
            if isinstance(wanted, int) and 0 < wanted < MAX_ROWID and id_free(self.db, OBSERVATION, wanted):
                row["id"] = wanted
        columns = ", ".join(("id", *INSERT_COLUMNS))
        placeholders = ", ".join(f":{c}" for c in INSERT_COLUMNS)
        self.db.execute(
            f"INSERT INTO observations ({columns}) VALUES (coalesce(:id, {NEXT_ID[OBSERVATION]}), {placeholders})",
            row,
        )
        row.pop("id")
        obs_id = self.db.conn.last_insert_rowid()
        self._write_side_tables(obs_id, record)
        row.pop("search_terms")
        row.update(id=obs_id, retrieval_count=0, last_retrieved_at=None)
        row.update(_lists(record))
        return cast("ObservationRow", row)  # its columns' values, as a read would give them

    def insert_new(
        self, records: Sequence[ObservationInput], values: list[dict[str, Any]] | None = None
    ) -> list[ObservationRow]:
        """Insert new observations in the caller's transaction, one statement per table (a bulk import's
        batch). Each record is normalised and carries its ``uid``, ``created_at``, ``updated_at``, ``path``
        and ``tokens``. ``values``: their :meth:`new_values`, computed before the write lock was taken.
        Ids follow the largest one given so far, in order, as :meth:`insert` gives them. Returns the stored
        rows, as :meth:`insert` does."""
        rows = self.new_values(records) if values is None else values
        first = int(self.db.scalar(f"SELECT {NEXT_ID[OBSERVATION]}"))
        for offset, row in enumerate(rows):
            row["id"] = first + offset
        columns = ("id", *INSERT_COLUMNS)
        self.db.conn.executemany(
            f"INSERT INTO observations ({', '.join(columns)}) VALUES ({', '.join(f':{c}' for c in columns)})",
            rows,
        )
        self._write_side_tables_many([(row["id"], record) for row, record in zip(rows, records, strict=True)])
        for row, record in zip(rows, records, strict=True):
            row.pop("search_terms")
            row.update(retrieval_count=0, last_retrieved_at=None)
            row.update(_lists(record))
        return cast("list[ObservationRow]", rows)  # their columns' values, as a read would give them

    def new_values(self, records: Sequence[ObservationInput]) -> list[dict[str, Any]]:
        """The column values of new observations (:meth:`insert_new`'s records), ids not yet given: pure
        computing (the keyword terms are most of it), done by a bulk import before it takes the lock."""
        rows = []
        for record in records:
            created = record["created_at"]
            assert created is not None  # staged (bulk_stage): every record has its time
            row = self._row_values(record, tokens=record["tokens"], created_at=created)
            row.update(uid=record["uid"], updated_at=record["updated_at"], path=record["path"])
            row.update(self._store.authorship(record))
            row.update({name: record.get(name) for name in EDITOR})
            rows.append(row)
        return rows

    def update(
        self,
        obs_id: int,
        record: ObservationInput | ObservationRow,
        *,
        tokens: int = 0,
        updated_at: int | None = None,
        edited: tuple[str | None, str | None] | None = None,
    ) -> ObservationRow:
        """Replace the content fields of an observation, keeping id, uid, creation time and who wrote it.

        ``updated_at`` keeps the time another machine gave the edit (git sync); by default it is now.
        ``edited``: who made this edit (machine, person), None to keep who made the last one."""
        existing = self.get(obs_id)
        if edited is not None:
            self.db.execute(
                "UPDATE observations SET edited_on = ?, edited_by = ? WHERE id = ?", (*edited, obs_id)
            )
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
        return self.get(obs_id)

    def mark_edited(self, obs_id: int) -> None:
        """This home changed the memory (a link added or removed): it is the last editor."""
        self.db.execute(
            "UPDATE observations SET edited_on = ?, edited_by = ? WHERE id = ?",
            (*self._store.writer(), obs_id),
        )

    def set_export(self, obs_id: int, relpath: str, tokens: int) -> None:
        """Record where the observation's file is and what its details cost in tokens."""
        self.db.execute(
            "UPDATE observations SET path = ?, tokens = ? WHERE id = ?", (relpath, tokens, obs_id)
        )

    def get(self, obs_id: int) -> ObservationRow:
        row = observation(self.db.query_one("SELECT * FROM observations WHERE id = ?", (obs_id,)))
        if row is None:
            raise NotFound(f"no observation with id {obs_id}")
        return row

    def find(self, obs_id: int) -> ObservationRow | None:
        return observation(self.db.query_one("SELECT * FROM observations WHERE id = ?", (obs_id,)))

    def by_uid(self, uid: str) -> ObservationRow | None:
        return observation(self.db.query_one("SELECT * FROM observations WHERE uid = ?", (uid,)))

    def by_uids(self, uids: list[str]) -> dict[str, ObservationRow]:
        if not uids:
            return {}
        marks = ", ".join("?" * len(uids))
        rows = self.db.query(f"SELECT * FROM observations WHERE uid IN ({marks})", uids)
        return {row["uid"]: cast("ObservationRow", decoded(row)) for row in rows}

    def by_key(self, project: str, key: str) -> ObservationRow | None:
        return observation(
            self.db.query_one("SELECT * FROM observations WHERE project = ? AND key = ?", (project, key))
        )

    def key_holder(self, project: str, key: str | None, *, besides: int | None) -> ObservationRow | None:
        """The observation of ``project`` other than ``besides`` that holds ``key`` (None: nobody else)."""
        if not key:
            return None
        holder = self.by_key(project, key)
        return None if holder is None or holder["id"] == besides else holder

    def delete(self, obs_id: int) -> None:
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

    def iter_all(self, page: int = 2_000, *, after: int = 0) -> Iterator[ObservationRow]:
        """Every observation (with an id above ``after``), decoded, in id order, a page at a time (whole-store
        passes: doctor, rebuild); each page is read completely, so the caller may write between pages."""
        while True:
            rows = self.db.query("SELECT * FROM observations WHERE id > ? ORDER BY id LIMIT ?", (after, page))
            for row in rows:
                decoded = observation(row)
                if decoded is not None:
                    yield decoded
            if len(rows) < page:
                return
            after = rows[-1]["id"]

    def ids_without_path(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM observations WHERE path IS NULL ORDER BY id")]

    def all_ids(self) -> list[int]:
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

    def oldest_first(self, ids: Iterable[int]) -> list[ObservationRow]:
        """The stored observations among ``ids``, oldest first (ids that do not exist are left out)."""
        found = observations_by_id(self.db, list(dict.fromkeys(ids)))
        return sorted(found.values(), key=lambda row: (row["created_at"], row["id"]))

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

    def count_in_session(self, session_id: str) -> int:
        """How many observations session ``session_id`` (exactly) holds."""
        return int(self.db.scalar("SELECT count(*) FROM observations WHERE session = ?", (session_id,)) or 0)

    @staticmethod
    def _row_values(record: Mapping[str, Any], *, tokens: int, created_at: int) -> dict[str, Any]:
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

    def _write_side_tables(self, obs_id: int, record: ObservationInput | ObservationRow) -> None:
        self._write_side_tables_many([(obs_id, record)])

    def _write_side_tables_many(self, items: Sequence[tuple[int, ObservationInput | ObservationRow]]) -> None:
        files = [
            (obs_id, kind, path)
            for obs_id, record in items
            for kind, paths in (("read", record["files_read"]), ("modified", record["files_modified"]))
            for path in paths or []
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


def _lists(record: ObservationInput | ObservationRow) -> dict[str, list[str]]:
    """The record's list fields, each a list of its own (a row hands them out as lists)."""
    return {
        "facts": list(record["facts"] or []),
        "concepts": list(record["concepts"] or []),
        "files_read": list(record["files_read"] or []),
        "files_modified": list(record["files_modified"] or []),
        "tools_used": list(record["tools_used"] or []),
    }
