"""index.db's chunks: each document's pieces, their keyword index (FTS5) and which model embedded them."""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string, in every process that imports this module; here they are plain objects.

from collections.abc import Sequence
from typing import NamedTuple

from cmem_cli.core.batches import batches
from cmem_cli.core.fts import search_terms
from cmem_index.repositories import IndexHandle, Repository

# A chunk without a vector of model ?1, in terms the chunks_pending index answers (`!=` would read every chunk)
_PENDING = "c.embedded_with IS NULL OR c.embedded_with < ?1 OR c.embedded_with > ?1"


class NewChunk(NamedTuple):
    seq: int
    start_line: int
    hash: str
    text: str


class PendingChunk(NamedTuple):
    """A chunk whose vector is missing for the current model: what to embed and under which cache key."""

    id: int
    hash: str
    context: str
    text: str
    title: str = ""


class Chunks(Repository):
    """The ``chunks`` table with its keyword index ``chunks_fts``; a chunk's vector rows go with it."""

    def __init__(self, store: IndexHandle) -> None:
        super().__init__(store)
        self.dropped_hashes: set[str] = set()  # of chunks deleted through this connection (cache pruning)

    def insert(self, doc_id: int, chunks: Sequence[NewChunk], keyword_context: str) -> None:
        """Write a document's chunks and their keyword rows (call inside a transaction); ``keyword_context``
        is the text of every chunk's weighted keyword column."""
        context_terms = search_terms([keyword_context])
        for chunk in chunks:
            self.conn.execute(
                "INSERT INTO chunks(doc_id, seq, start_line, hash, text) VALUES (?, ?, ?, ?, ?)",
                (doc_id, chunk.seq, chunk.start_line, chunk.hash, chunk.text),
            )
            chunk_id = self.conn.last_insert_rowid()
            terms = f"{context_terms} {search_terms([chunk.text])}".strip()
            self.conn.execute(
                "INSERT INTO chunks_fts(rowid, context, text, terms) VALUES (?, ?, ?, ?)",
                (chunk_id, keyword_context, chunk.text, terms),
            )

    def delete_of(self, doc_id: int) -> None:
        """Delete a document's chunks with their keyword rows and vectors (call inside a transaction)."""
        rows = self.conn.execute("SELECT id, hash FROM chunks WHERE doc_id = ?", (doc_id,)).fetchall()
        if not rows:
            return
        ids = [r[0] for r in rows]
        self.dropped_hashes.update(r[1] for r in rows)
        marks = ",".join("?" * len(ids))
        self.conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", ids)
        if self._store.vectors.has_table():  # one rowid at a time: vec0 reads its whole table for `rowid IN`
            self.conn.executemany("DELETE FROM chunk_vectors WHERE rowid = ?", [(i,) for i in ids])
        if self._store.vectors.bits_center() is not None:
            self.conn.executemany("DELETE FROM chunk_bits WHERE rowid = ?", [(i,) for i in ids])
        self.conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))

    def pending(self, fingerprint: str, after_id: int = 0, limit: int = 1024) -> list[PendingChunk]:
        rows = self._all(
            f"""SELECT c.id, c.hash, d.context, c.text, d.title FROM chunks c JOIN documents d ON d.id = c.doc_id
               WHERE ({_PENDING}) AND c.id > ?2 ORDER BY c.id LIMIT ?3""",
            (fingerprint, after_id, limit),
        )
        return [PendingChunk(*r) for r in rows]

    def pending_of(self, doc_ids: Sequence[int], fingerprint: str) -> dict[int, list[PendingChunk]]:
        """Document id -> its chunks without a vector of model ``fingerprint``, for these documents only
        (a search embeds the few it ranks itself)."""
        found: dict[int, list[PendingChunk]] = {}
        for part, marks in batches(list(dict.fromkeys(doc_ids))):
            for row in self.conn.execute(
                f"""SELECT c.doc_id, c.id, c.hash, d.context, c.text, d.title
                    FROM chunks c JOIN documents d ON d.id = c.doc_id
                    WHERE c.doc_id IN ({marks}) AND NOT coalesce(c.embedded_with = ?, 0)
                    ORDER BY c.doc_id, c.seq""",
                (*part, fingerprint),
            ):
                found.setdefault(row[0], []).append(PendingChunk(*row[1:]))
        return found

    def count_pending(self, fingerprint: str) -> int:
        return int(self._one(f"SELECT count(*) FROM chunks c WHERE {_PENDING}", (fingerprint,)))

    def count(self) -> int:
        return int(self._one("SELECT count(*) FROM chunks") or 0)

    def count_embedded(self) -> int:
        """Chunks with a vector of any model."""
        return int(self._one("SELECT count(*) FROM chunks WHERE embedded_with IS NOT NULL") or 0)

    def merge_keywords(self) -> None:
        """Merge the full-text index into one segment, dropping what deleted chunks left in it."""
        with self._store.transaction():
            self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
