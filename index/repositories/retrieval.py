"""What a search reads of index.db: the keyword and vector rankings (:mod:`cmem_index.retrieve` drives them),
the query's terms in the full-text index, and the documents and chunks of the hits; and the filters
(:class:`DocFilters`: the one filter set of :mod:`cmem_cli.core.filters` in ``index.db``'s SQL dialect).

``where`` and ``params`` are a filter's SQL over ``documents d`` (:meth:`DocFilters.sql`); ``weights`` are
the BM25 weights of the keyword columns (context, text, camelCase parts), tuned in :mod:`cmem_index.retrieve`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core import bm25
from cmem_cli.core.batches import batches
from cmem_cli.core.filters import FILTER_FIELDS, Filter, FilterFields, SqlDialect
from cmem_index.repositories import IndexHandle, Repository
from cmem_index.store import FTS_TOKENIZER

Weights = tuple[float, float, float]

if TYPE_CHECKING:  # for the type checker only: at run time a document's fields are a plain dict
    from typing import TypedDict

    class DocumentFields(TypedDict):
        """What a hit carries of its document (:data:`DOCUMENT_FIELDS`): a memory's ``kind``, ``uid``,
        ``obs_id``, ``project`` and ``type``; a collection document's none of those."""

        id: int
        collection: str
        path: str
        docid: str | None
        title: str | None
        kind: str | None
        uid: str | None
        obs_id: int | None
        project: str | None
        type: str | None
        created_at: int | None


# The names of a document's fields a hit carries, in the order :meth:`Retrieval.document_fields` reads them
DOCUMENT_FIELDS = ("id", "collection", "path", "docid", "title", "kind", "uid", "obs_id", "project", "type",
                   "created_at")  # fmt: skip


class DocFilters(FilterFields):
    """Metadata filters (the store's ``Filters`` fields, plus collections) as SQL over the index's documents;
    documents lacking a filtered field are excluded, except for the project: a project scopes memories, and a
    collection's documents (no project) belong to none, so a search scoped to the repository it runs in
    still finds the user's notes (`--collection memories` leaves them out). Concepts match
    case-insensitively."""

    def __init__(self, *args: Any, collections: list[str] | None = None, **fields: Any):
        super().__init__(*args, **fields)
        self.collections = list(collections or [])

    @classmethod
    def coerce(cls, value: Any, collections: Sequence[str] | None = None) -> DocFilters:
        """From None, a DocFilters, a mapping, or any object with the store ``Filters`` attributes."""
        if value is None:
            result = cls()
        elif isinstance(value, cls):
            result = cls(**value.fields(), collections=value.collections)
        else:
            get = (
                value.get
                if isinstance(value, dict)
                else lambda name, default=None: getattr(value, name, default)
            )
            given = {name: get(name) for name in FILTER_FIELDS}
            for name in ("types", "concepts", "files"):
                given[name] = _as_list(given[name])
            given["types"] = given["types"] or _as_list(get("type"))
            result = cls(**given, collections=_as_list(get("collections")))
        if collections:
            result.collections = list(collections)
        return result

    def sql(self, alias: str = "d") -> tuple[str, list[Any]]:
        dialect = _IndexSql(alias)
        clauses = self.clauses(dialect)
        if self.collections:
            clauses.append(f"{alias}.collection IN ({','.join(dialect.bind(c) for c in self.collections)})")
        return (" AND ".join(clauses) or "1"), dialect.params

    @property
    def active(self) -> bool:
        return self.sql()[0] != "1"

    def without_machine(self) -> DocFilters:
        """These filters less the machine: for an index built before it kept machines (the search then
        checks the machine on the store's rows)."""
        return DocFilters(**{**self.fields(), "machine": None}, collections=self.collections)


class _IndexSql(SqlDialect):
    """The filters over the index's ``documents``: a document without a project (a collection's) passes a
    project filter; concepts are stored lower-cased; the machine is the one the memory's file states (a
    collection's documents have none). No branch: a file states its anchor's only when the repository has
    a name, so the search checks the branch on the store's rows."""

    def lacks(self, f: Filter) -> bool:
        return not f.indexed

    def project(self, names: tuple[str, ...]) -> str:
        return f"({super().project(names)} OR {self.alias}.project IS NULL)"

    def concept(self, value: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM concepts k WHERE k.doc_id = {self.alias}.id "
            f"AND k.concept = {self.bind(value.strip().lower())})"
        )

    def file(self, path: str) -> str:
        return f"EXISTS (SELECT 1 FROM doc_files f WHERE f.doc_id = {self.alias}.id AND {self.path_match('f.path', path)})"

    def branch(self, name: str) -> str:
        return ""


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


class Retrieval(Repository):
    """The rankings and lookups a search runs; the query's terms are read once per search."""

    def __init__(self, store: IndexHandle) -> None:
        super().__init__(store)
        self._terms: dict[tuple[str, ...], bm25.QueryTerms] = {}  # of the queries since _terms_as_of
        self._terms_as_of: tuple[int, int] | None = None

    def query_terms(self, tokens: Sequence[str]) -> bm25.QueryTerms:
        """The query's terms in the chunks' full-text index, read once for every stage of a search (counting
        a common term's chunks walks its postings) for as long as nothing commits."""
        as_of = (int(self._one("PRAGMA data_version")), self.conn.total_changes())
        if as_of != self._terms_as_of:
            self._terms.clear()
            self._terms_as_of = as_of
        key = tuple(tokens)
        if key not in self._terms:
            self._terms[key] = bm25.query_terms(self.conn, "chunks_fts", FTS_TOKENIZER, tokens)
        return self._terms[key]

    # -- keyword ---------------------------------------------------------------------------------------
    def best_chunks(
        self, weights: Weights, match: str, where: str, params: Sequence[Any], limit: int
    ) -> list[tuple[int, int, float]]:
        """(document id, its best chunk's id, BM25 rank) of the ``limit`` best documents, every match joined
        to its chunk and document."""
        # bm25() cannot run inside an aggregate: rank chunks in a materialised CTE, then keep each doc's best.
        # CROSS JOIN pins the full-text match as the outer loop: with a selective filter the planner would
        # otherwise scan the filtered documents and re-run the whole MATCH once per row.
        return self._all(
            f"""WITH ranked AS MATERIALIZED (
                    SELECT c.doc_id AS doc_id, c.id AS chunk_id, bm25(chunks_fts, ?, ?, ?) AS rank
                    FROM chunks_fts CROSS JOIN chunks c ON c.id = chunks_fts.rowid
                    CROSS JOIN documents d ON d.id = c.doc_id
                    WHERE chunks_fts MATCH ? AND {where})
                SELECT doc_id, chunk_id, min(rank) AS best FROM ranked GROUP BY doc_id ORDER BY best LIMIT ?""",
            [*weights, match, *params, limit],
        )

    def documents_passing(self, where: str, params: Sequence[Any], up_to: int) -> int:
        """How many documents pass the filter, counted no further than ``up_to``."""
        sql = f"SELECT count(*) FROM (SELECT 1 FROM documents d WHERE {where} LIMIT ?)"
        return int(self._one(sql, [*params, up_to]))

    def ranked_chunks(
        self,
        weights: Weights,
        match: str,
        where: str,
        params: Sequence[Any],
        head: bm25.Head | None,
        want: int,
    ) -> bm25.Ranked:
        """(chunk id, BM25 rank) of the ``want`` best chunks, ranked inside the full-text index alone: a
        filter is the set of its documents' chunks, built once and probed per match (``+rowid``: not handed
        to FTS5, which would run the whole match once per chunk of the set); ``head`` narrows the match to
        the chunks that can rank first (:func:`cmem_cli.core.bm25.head`)."""
        within = ""
        if where != "1":
            within = f" AND +rowid IN (SELECT c.id FROM documents d JOIN chunks c ON c.doc_id = d.id WHERE {where})"
        matching, also, more = bm25.narrowed(match, head)
        return self._all(
            f"SELECT rowid, bm25(chunks_fts, ?, ?, ?) AS rank FROM chunks_fts "
            f"WHERE chunks_fts MATCH ?{also}{within} ORDER BY rank LIMIT ?",
            [*weights, matching, *more, *params, want],
        )

    def documents_of_chunks(self, chunk_ids: Sequence[int]) -> dict[int, int]:
        """Chunk id -> its document's id."""
        docs: dict[int, int] = {}
        for ids, marks in batches(list(chunk_ids)):
            docs.update(self._all(f"SELECT id, doc_id FROM chunks WHERE id IN ({marks})", ids))
        return docs

    def chunk_texts(self, chunk_ids: Sequence[int]) -> list[str]:
        """The text of these chunks (any order; ids not found are left out)."""
        marks = ",".join("?" * len(chunk_ids))
        return [
            text for (text,) in self._all(f"SELECT text FROM chunks WHERE id IN ({marks})", list(chunk_ids))
        ]

    def chunk_total(self) -> int:
        """Every chunk of the keyword index (from its own statistics: no scan)."""
        return bm25.table_rows(self.conn, "chunks_fts")

    def chunks_passing(self, where: str, params: Sequence[Any]) -> int:
        sql = f"SELECT count(*) FROM chunks c CROSS JOIN documents d ON d.id = c.doc_id WHERE {where}"
        return int(self._one(sql, params) or 0)

    def chunks_matching(self, match: str, where: str, params: Sequence[Any]) -> int:
        sql = f"""SELECT count(*) FROM chunks_fts CROSS JOIN chunks c ON c.id = chunks_fts.rowid
                  CROSS JOIN documents d ON d.id = c.doc_id WHERE chunks_fts MATCH ? AND {where}"""
        return int(self._one(sql, [match, *params]) or 0)

    # -- vectors ---------------------------------------------------------------------------------------
    def nearest(
        self, query_vector: bytes, k: int, where: str, params: Sequence[Any], *, filtered: bool
    ) -> list[tuple[int, float, int]]:
        """(chunk id, cosine distance, document id) of the ``k`` nearest chunks, every vector compared."""
        if filtered:
            sql = f"""SELECT v.rowid, v.distance, c.doc_id FROM chunk_vectors v JOIN chunks c ON c.id = v.rowid
                      WHERE v.embedding MATCH ? AND k = ? AND v.rowid IN (
                          SELECT c2.id FROM chunks c2 JOIN documents d ON d.id = c2.doc_id WHERE {where})
                      ORDER BY v.distance"""
            return self._all(sql, [query_vector, k, *params])
        sql = """SELECT v.rowid, v.distance, c.doc_id FROM chunk_vectors v JOIN chunks c ON c.id = v.rowid
                 WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance"""
        return self._all(sql, [query_vector, k])

    def query_bits(self, query_vector: bytes) -> bytes:
        """The query's signs less the bits' centre, as ``chunk_bits`` holds each chunk's."""
        bits: bytes = self._one(
            "SELECT vec_quantize_binary(vec_sub(?, ?))", [query_vector, self._store.vectors.bits_center()]
        )
        return bits

    def nearest_bits(
        self, bits: bytes, where: str, params: Sequence[Any], head: int, *, filtered: bool
    ) -> list[int]:
        """The ``head`` chunks nearest to ``bits`` by Hamming distance."""
        within = ""
        if filtered:
            within = f"WHERE rowid IN (SELECT c2.id FROM chunks c2 JOIN documents d ON d.id = c2.doc_id WHERE {where})"
        # a plain scan ranked by Hamming distance: sqlite-vec's own k-nearest search of bits slows with k
        found = self._all(
            f"SELECT rowid FROM chunk_bits {within} "
            "ORDER BY vec_distance_hamming(vec_bit(embedding), vec_bit(?)), rowid LIMIT ?",
            [*params, bits, head],
        )
        return [chunk_id for (chunk_id,) in found]

    def cached_distances(
        self, query_vector: bytes, model: str | None, chunk_ids: Sequence[int]
    ) -> dict[int, tuple[float, int]]:
        """chunk id -> (cosine distance, document id) from the cached copy of each chunk's vector, found by
        the chunk's hash (B-tree lookups); chunks without one are left out."""
        out: dict[int, tuple[float, int]] = {}
        for part, marks in batches(chunk_ids):
            for chunk_id, doc_id, distance in self._all(
                f"""SELECT c.id, c.doc_id, vec_distance_cosine(e.vector, ?) FROM chunks c
                    JOIN embed_cache e ON e.hash = c.hash AND e.model = ? WHERE c.id IN ({marks})""",
                [query_vector, model, *part],
            ):
                out[chunk_id] = (float(distance), doc_id)
        return out

    def stored_distance(self, query_vector: bytes, chunk_id: int) -> tuple[float, int] | None:
        """(cosine distance, document id) of one chunk, from its row in ``chunk_vectors``."""
        out = None
        for doc_id, distance in self._all(
            "SELECT c.doc_id, vec_distance_cosine(v.embedding, ?) FROM chunk_vectors v "
            "JOIN chunks c ON c.id = v.rowid WHERE v.rowid = ?",
            [query_vector, chunk_id],
        ):
            out = (float(distance), doc_id)
        return out

    def cosines(self, query_vector: bytes, chunk_ids: Sequence[int]) -> dict[int, float]:
        """These chunks' cosines to ``query_vector`` (by rowid: one lookup each, as vec0 reads its whole
        table for ``rowid IN``)."""
        out: dict[int, float] = {}
        for chunk_id in dict.fromkeys(chunk_ids):
            for rowid, distance in self._all(
                "SELECT rowid, vec_distance_cosine(embedding, ?) FROM chunk_vectors WHERE rowid = ?",
                [query_vector, chunk_id],
            ):
                out[int(rowid)] = 1.0 - float(distance)
        return out

    def any_embedded(self) -> bool:
        """Whether any chunk has a vector."""
        return bool(self._one("SELECT 1 FROM chunks WHERE embedded_with IS NOT NULL LIMIT 1"))

    # -- the hits --------------------------------------------------------------------------------------
    def documents_of_uids(self, uids: Sequence[str]) -> dict[str, int]:
        """uid -> document id of the observations among ``uids`` that the index holds."""
        found: dict[str, int] = {}
        for part, marks in batches(list(dict.fromkeys(uids))):
            for uid, doc_id in self.conn.execute(
                f"SELECT uid, id FROM documents WHERE uid IN ({marks})", part
            ):
                found[uid] = doc_id
        return found

    def document_fields(self, doc_ids: Sequence[int]) -> dict[int, DocumentFields]:
        """Document id -> its :data:`DOCUMENT_FIELDS` by name."""
        out: dict[int, DocumentFields] = {}
        ids = list(dict.fromkeys(doc_ids))
        for part, marks in batches(ids):
            for row in self._all(
                f"""SELECT id, collection, path, docid, title, kind, uid, obs_id, project, type, created_at
                    FROM documents WHERE id IN ({marks})""",
                part,
            ):
                out[row[0]] = cast("DocumentFields", dict(zip(DOCUMENT_FIELDS, row, strict=True)))
        return out

    def chunk_line_and_text(self, chunk_id: int) -> tuple[int | None, str]:
        """A chunk's first line in its file and its text ((None, "") when it is gone)."""
        chunk = self._all("SELECT start_line, text FROM chunks WHERE id = ?", (chunk_id,))
        return chunk[0] if chunk else (None, "")
