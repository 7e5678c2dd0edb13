"""index.db's documents: one row a file of a collection, with the memory's fields a search filters on, its
concepts and the files it cites."""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string, in every process that imports this module; here they are plain objects.

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_index.repositories import Repository

if TYPE_CHECKING:
    from cmem_index.repositories.chunks import NewChunk

DOCUMENT_FIELDS = (
    "kind",
    "uid",
    "obs_id",
    "type",
    "project",
    "session",
    "agent",
    "machine",
    "created_at",
)


class StoredDocument(NamedTuple):
    """What change detection needs to know about a file already in the index."""

    id: int
    size: int
    mtime_ns: int
    hash: str
    chunked_with: str


class Documents(Repository):
    """The ``documents`` table with each document's ``concepts`` and ``doc_files``; deleting or replacing a
    document deletes its chunks (``store.chunks``)."""

    def in_collection(self, collection: str) -> dict[str, StoredDocument]:
        rows = self._all(
            "SELECT path, id, size, mtime_ns, hash, chunked_with FROM documents WHERE collection = ?",
            (collection,),
        )
        return {r[0]: StoredDocument(r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def iterate(self, collection: str, page: int = 5_000) -> Iterator[tuple[str, StoredDocument]]:
        """(path, entry) of a collection's documents in path order, a page at a time: a million-file
        collection is compared with the disk without holding either side in memory."""
        after = ""
        while True:
            rows = self._all(
                "SELECT path, id, size, mtime_ns, hash, chunked_with FROM documents "
                "WHERE collection = ? AND path > ? ORDER BY path LIMIT ?",
                (collection, after, page),
            )
            for r in rows:
                yield r[0], StoredDocument(r[1], r[2], r[3], r[4], r[5])
            if len(rows) < page:
                return
            after = rows[-1][0]

    def collections(self) -> list[str]:
        """Collection names, one index seek each (DISTINCT would read the whole (collection, path) index)."""
        names: list[str] = []
        while True:
            name = self._one(
                "SELECT min(collection) FROM documents WHERE collection > ?", (names[-1] if names else "",)
            )
            if name is None:
                return names
            names.append(name)

    def touch(self, doc_id: int, size: int, mtime_ns: int) -> None:
        self.conn.execute(
            "UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, doc_id)
        )

    def delete(self, doc_id: int) -> None:
        self._store.chunks.delete_of(doc_id)
        self.conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def upsert(
        self,
        *,
        collection: str,
        path: str,
        docid: str,
        size: int,
        mtime_ns: int,
        content_hash: str,
        chunked_with: str,
        title: str,
        context: str,
        keyword_context: str,
        fields: dict[str, Any],
        concepts: Iterable[str],
        files: Iterable[str],
        chunks: Sequence["NewChunk"],
        now_ms: int,
    ) -> int:
        """Insert or replace one document and all its chunks (call inside a transaction).

        ``context`` is the title the embedder sees (kept for re-embedding), ``keyword_context`` the text of
        every chunk's weighted keyword column."""
        row = self.conn.execute(
            "SELECT id FROM documents WHERE collection = ? AND path = ?", (collection, path)
        ).fetchone()
        values = {
            "collection": collection,
            "path": path,
            "docid": docid,
            "size": size,
            "mtime_ns": mtime_ns,
            "hash": content_hash,
            "chunked_with": chunked_with,
            "title": title,
            "context": context,
            "indexed_at": now_ms,
            **{name: fields.get(name) for name in DOCUMENT_FIELDS},
        }
        if row:
            doc_id = int(row[0])
            self._store.chunks.delete_of(doc_id)
            self.conn.execute("DELETE FROM concepts WHERE doc_id = ?", (doc_id,))
            self.conn.execute("DELETE FROM doc_files WHERE doc_id = ?", (doc_id,))
            assignments = ", ".join(f"{name} = :{name}" for name in values)
            self.conn.execute(f"UPDATE documents SET {assignments} WHERE id = :id", {**values, "id": doc_id})
        else:
            names = ", ".join(values)
            marks = ", ".join(f":{name}" for name in values)
            self.conn.execute(f"INSERT INTO documents({names}) VALUES ({marks})", values)
            doc_id = self.conn.last_insert_rowid()
        self.conn.executemany(
            "INSERT OR IGNORE INTO concepts(doc_id, concept) VALUES (?, ?)",
            [(doc_id, c) for c in {str(c).strip().lower() for c in concepts} if c],
        )
        self.conn.executemany(
            "INSERT OR IGNORE INTO doc_files(doc_id, path) VALUES (?, ?)",
            [(doc_id, f) for f in {str(f).strip() for f in files} if f],
        )
        self._store.chunks.insert(doc_id, chunks, keyword_context)
        return doc_id

    def location(self, docid: str) -> tuple[str, str] | None:
        """The collection and relative path of the document whose short id is ``docid``, or None."""
        rows = self._all("SELECT collection, path FROM documents WHERE docid = ?", (docid.lower(),))
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def cmem_documents(self, collection: str) -> list[tuple[int, str]]:
        """(id, path) of the collection's cmem documents (indexed before their machine was kept)."""
        return [
            (int(doc_id), str(path))
            for doc_id, path in self._all(
                "SELECT id, path FROM documents WHERE collection = ? AND kind IS NOT NULL", (collection,)
            )
        ]

    def collections_with_cmem_documents(self) -> list[str]:
        rows = self._all("SELECT DISTINCT collection FROM documents WHERE kind IS NOT NULL")
        return [str(name) for (name,) in rows]

    def set_machines(self, items: Sequence[tuple[str | None, int]]) -> None:
        """Write (machine, document id) rows; call inside a transaction."""
        self.conn.executemany("UPDATE documents SET machine = ? WHERE id = ?", items)

    # -- counts for `cmem index status` ------------------------------------------------------------------
    def count(self) -> int:
        return int(self._one("SELECT count(*) FROM documents") or 0)

    def per_collection(self) -> dict[str, dict[str, int]]:
        """Collection -> its documents and chunks."""
        return {
            name: {"documents": docs, "chunks": chunks or 0}
            for name, docs, chunks in self._all(
                """SELECT d.collection, count(DISTINCT d.id), count(c.id)
                   FROM documents d LEFT JOIN chunks c ON c.doc_id = d.id GROUP BY d.collection ORDER BY 1"""
            )
        }

    def count_stale(self, chunker: str | None) -> int:
        """Documents cut by another chunker than ``chunker`` (None: none are)."""
        return int(
            self._one(
                "SELECT count(*) FROM documents WHERE chunked_with != coalesce(?, chunked_with)",
                (chunker,),
            )
            or 0
        )
