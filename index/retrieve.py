"""The two retrievers over index.db, each returning one row per document (its best chunk).

Keyword: FTS5 BM25 over chunk text plus the chunk's context (title and, for observations, type, project and
concepts) and camelCase parts, as an OR of quoted terms so no user input can break the query. Vector:
sqlite-vec nearest neighbours over chunk embeddings. Filters are pushed into SQL (for vectors through
``rowid IN (...)``, which sqlite-vec applies before ranking), so a narrow filter never starves the result.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from cmem_cli.core import bm25
from cmem_cli.core.batches import batches
from cmem_cli.core.filters import FILTER_FIELDS, Filter, FilterFields, SqlDialect
from cmem_cli.core.fts import fts_query, query_tokens
from cmem_index.store import IndexStore

# BM25 column weights: context (title, type, project, concepts), text, camelCase parts.
CONTEXT_WEIGHT = 1.0
TEXT_WEIGHT = 1.0
TERMS_WEIGHT = 0.5
MAX_K = 4096  # sqlite-vec's largest k
# Exact vector search up to this many vectors; more, and a search ranks bits first (docs/benchmarks.md)
COMPACT_ABOVE = 100_000
RANK_ALONE = 5_000  # a keyword search for at most this many documents ranks in the full-text index alone
FEW_DOCUMENTS = 50_000  # ... when its filter leaves at most this many documents (else it joins each match)
COMPACT_HEAD = 400  # chunks the bits pick for the exact re-ranking, at least


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


class DocHit:
    """A document's best chunk for one retriever; ``score`` is higher-is-better (BM25 or cosine)."""

    __slots__ = ("doc_id", "chunk_id", "score")

    def __init__(self, doc_id: int, chunk_id: int, score: float):
        self.doc_id, self.chunk_id, self.score = doc_id, chunk_id, score

    def __repr__(self) -> str:
        return f"DocHit(doc_id={self.doc_id}, chunk_id={self.chunk_id}, score={self.score!r})"


def keyword(store: IndexStore, query: str, filters: DocFilters, limit: int) -> list[DocHit]:
    match = fts_query(query)
    if match is None or limit <= 0:
        return []
    where, params = filters.sql("d")
    if limit <= RANK_ALONE and (where == "1" or _few_documents(store, where, params)):
        found = _best_of_ranked_chunks(store, query, match, limit, where, params)
        if found is not None:
            return found
    # bm25() cannot run inside an aggregate: rank chunks in a materialised CTE, then keep each doc's best.
    # CROSS JOIN pins the full-text match as the outer loop: with a selective filter the planner would
    # otherwise scan the filtered documents and re-run the whole MATCH once per row.
    rows = store.rows(
        f"""WITH ranked AS MATERIALIZED (
                SELECT c.doc_id AS doc_id, c.id AS chunk_id, bm25(chunks_fts, ?, ?, ?) AS rank
                FROM chunks_fts CROSS JOIN chunks c ON c.id = chunks_fts.rowid
                CROSS JOIN documents d ON d.id = c.doc_id
                WHERE chunks_fts MATCH ? AND {where})
            SELECT doc_id, chunk_id, min(rank) AS best FROM ranked GROUP BY doc_id ORDER BY best LIMIT ?""",
        [CONTEXT_WEIGHT, TEXT_WEIGHT, TERMS_WEIGHT, match, *params, limit],
    )
    return [DocHit(doc_id, chunk_id, -rank) for doc_id, chunk_id, rank in rows]


def _few_documents(store: IndexStore, where: str, params: list[Any]) -> bool:
    """Whether at most ``FEW_DOCUMENTS`` documents pass the filter (counted no further than that)."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM documents d WHERE {where} LIMIT ?)"
    return int(store.scalar(sql, [*params, FEW_DOCUMENTS + 1])) <= FEW_DOCUMENTS


def _best_of_ranked_chunks(
    store: IndexStore, query: str, match: str, limit: int, where: str = "1", params: Sequence[Any] = ()
) -> list[DocHit] | None:
    """The ``limit`` documents with the best chunks, ranked inside the full-text index alone.

    Joining every match to its chunk and document before ranking cost 0.12 s CPU at 200,000 observations
    for a query of common words; ranking (rowid, bm25) pairs and reading the documents of the head costs
    0.025 s. A filter is the set of its documents' chunks, built once and probed per match (``+rowid``:
    not handed to FTS5, which would run the whole match once per chunk of the set): 1-20 ms where the join
    took 30-80. Chunks are taken best first and each document keeps its first (best) chunk, so once
    ``limit`` documents are found no other can rank above them; a collection of long documents (many
    chunks each) may need a deeper head, asked for again four times as deep (None past ``RANK_ALONE`` * 16
    chunks: the caller ranks by document instead)."""
    within = ""
    if where != "1":
        within = (
            f" AND +rowid IN (SELECT c.id FROM documents d JOIN chunks c ON c.doc_id = d.id WHERE {where})"
        )
    narrow = bm25.head("chunks_fts", store.query_terms(query_tokens(query)))

    def page(want: int, head: bm25.Head | None) -> bm25.Ranked:
        also, more = (f" AND {head.where}", head.params) if head else ("", [])
        return store.rows(
            f"SELECT rowid, bm25(chunks_fts, ?, ?, ?) AS rank FROM chunks_fts "
            f"WHERE chunks_fts MATCH ?{also}{within} ORDER BY rank LIMIT ?",
            [CONTEXT_WEIGHT, TEXT_WEIGHT, TERMS_WEIGHT, match, *more, *params, want],
        )

    want = limit * 4
    while True:
        ranked = bm25.ranked_head(functools.partial(page, want), want, narrow)
        docs: dict[int, int] = {}
        for ids, marks in batches([chunk_id for chunk_id, _ in ranked]):
            docs.update(store.rows(f"SELECT id, doc_id FROM chunks WHERE id IN ({marks})", ids))
        best: dict[int, DocHit] = {}
        for chunk_id, rank in ranked:
            doc_id = docs.get(chunk_id)
            if doc_id is not None and doc_id not in best:
                best[doc_id] = DocHit(doc_id, chunk_id, -rank)
                if len(best) == limit:
                    return list(best.values())
        if len(ranked) < want:  # every match seen
            return list(best.values())
        want *= 4
        if want > RANK_ALONE * 16:
            return None


def chunk_texts(store: IndexStore, chunk_ids: Sequence[int]) -> list[str]:
    """The text of these chunks (any order; ids not found are left out)."""
    if not chunk_ids:
        return []
    marks = ",".join("?" * len(chunk_ids))
    return [text for (text,) in store.rows(f"SELECT text FROM chunks WHERE id IN ({marks})", list(chunk_ids))]


def query_idf(store: IndexStore, query: str) -> float:
    """Sum of the BM25 IDFs of the query's terms in this index: the scale of a perfect keyword match.

    Dividing a document's BM25 by it gives an absolute "how much of the query matched" that means the same
    for a two-word and a fifty-word query, which raw BM25 does not.
    """
    return store.query_terms(query_tokens(query)).idf_sum()


def scope_chunks(store: IndexStore, filters: DocFilters, token: str | None = None) -> int:
    """How many chunks the filters let through (holding ``token``, when given)."""
    where, params = filters.sql("d")
    if token is None:
        if not filters.active:
            return bm25.table_rows(store.conn, "chunks_fts")
        sql = f"SELECT count(*) FROM chunks c CROSS JOIN documents d ON d.id = c.doc_id WHERE {where}"
        return int(store.scalar(sql, params) or 0)
    match = fts_query(token)
    if match is None:
        return 0
    sql = f"""SELECT count(*) FROM chunks_fts CROSS JOIN chunks c ON c.id = chunks_fts.rowid
              CROSS JOIN documents d ON d.id = c.doc_id WHERE chunks_fts MATCH ? AND {where}"""
    return int(store.scalar(sql, [match, *params]) or 0)


def vector(store: IndexStore, query_vector: bytes, filters: DocFilters, limit: int) -> list[DocHit]:
    """Nearest chunks, collapsed to documents. Over-fetches chunks so ``limit`` documents usually survive.

    Exact (every float32 vector compared) until the index holds more than ``COMPACT_ABOVE`` vectors; past
    that, the nearest by one bit per dimension, re-ranked exactly (see :func:`compact_nearest`)."""
    if limit <= 0 or not store.vectors.has_table():
        return []
    k = min(MAX_K, max(limit * 4, 50))
    if uses_compact_vectors(store):
        rows = compact_nearest(store, query_vector, filters, k)
    else:
        rows = exact_nearest(store, query_vector, filters, k)
    best: dict[int, DocHit] = {}
    for chunk_id, distance, doc_id in rows:
        if doc_id not in best:
            best[doc_id] = DocHit(doc_id, chunk_id, 1.0 - float(distance))
    return list(best.values())[:limit]


def uses_compact_vectors(store: IndexStore) -> bool:
    return store.vectors.count() > COMPACT_ABOVE and store.vectors.bits_center() is not None


def exact_nearest(
    store: IndexStore, query_vector: bytes, filters: DocFilters, k: int
) -> list[tuple[int, float, int]]:
    """(chunk id, cosine distance, document id) of the ``k`` nearest chunks, every vector compared."""
    where, params = filters.sql("d")
    if filters.active:
        sql = f"""SELECT v.rowid, v.distance, c.doc_id FROM chunk_vectors v JOIN chunks c ON c.id = v.rowid
                  WHERE v.embedding MATCH ? AND k = ? AND v.rowid IN (
                      SELECT c2.id FROM chunks c2 JOIN documents d ON d.id = c2.doc_id WHERE {where})
                  ORDER BY v.distance"""
        return store.rows(sql, [query_vector, k, *params])
    sql = """SELECT v.rowid, v.distance, c.doc_id FROM chunk_vectors v JOIN chunks c ON c.id = v.rowid
             WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance"""
    return store.rows(sql, [query_vector, k])


def compact_nearest(
    store: IndexStore, query_vector: bytes, filters: DocFilters, k: int
) -> list[tuple[int, float, int]]:
    """:func:`exact_nearest` over bits: the ``max(k, COMPACT_HEAD)`` nearest by Hamming distance between the
    signs, then those re-ranked by their exact cosine (float32, as the exact search computes it)."""
    head = max(k, COMPACT_HEAD)
    where, params = filters.sql("d")
    bits = store.scalar(
        "SELECT vec_quantize_binary(vec_sub(?, ?))", [query_vector, store.vectors.bits_center()]
    )
    within = ""
    if filters.active:
        within = (
            f"WHERE rowid IN (SELECT c2.id FROM chunks c2 JOIN documents d ON d.id = c2.doc_id WHERE {where})"
        )
    # a plain scan ranked by Hamming distance: sqlite-vec's own k-nearest search of bits slows with k
    found = store.rows(
        f"SELECT rowid FROM chunk_bits {within} "
        "ORDER BY vec_distance_hamming(vec_bit(embedding), vec_bit(?)), rowid LIMIT ?",
        [*params, bits, head],
    )
    distances = exact_distances(store, query_vector, [chunk_id for (chunk_id,) in found])
    ranked = sorted(distances.items(), key=lambda item: (item[1][0], item[0]))[:k]
    return [(chunk_id, distance, doc_id) for chunk_id, (distance, doc_id) in ranked]


def exact_distances(
    store: IndexStore, query_vector: bytes, chunk_ids: Sequence[int]
) -> dict[int, tuple[float, int]]:
    """chunk id -> (cosine distance to ``query_vector``, document id), from the float32 vectors: the cached
    copy found by the chunk's hash (B-tree lookups), else the chunk's own row in ``chunk_vectors``."""
    model = store.settings.get("vectors_model")
    out: dict[int, tuple[float, int]] = {}
    for part, marks in batches(chunk_ids):
        for chunk_id, doc_id, distance in store.rows(
            f"""SELECT c.id, c.doc_id, vec_distance_cosine(e.vector, ?) FROM chunks c
                JOIN embed_cache e ON e.hash = c.hash AND e.model = ? WHERE c.id IN ({marks})""",
            [query_vector, model, *part],
        ):
            out[chunk_id] = (float(distance), doc_id)
    for chunk_id in chunk_ids:
        if chunk_id not in out:
            for doc_id, distance in store.rows(
                "SELECT c.doc_id, vec_distance_cosine(v.embedding, ?) FROM chunk_vectors v "
                "JOIN chunks c ON c.id = v.rowid WHERE v.rowid = ?",
                [query_vector, chunk_id],
            ):
                out[chunk_id] = (float(distance), doc_id)
    return out


def cosines(store: IndexStore, query_vector: bytes, chunk_ids: Sequence[int]) -> dict[int, float]:
    """These chunks' cosines to ``query_vector`` (as sqlite-vec computes them for a search, by rowid: one
    lookup each, as vec0 reads its whole table for ``rowid IN``)."""
    if not chunk_ids or not store.vectors.has_table():
        return {}
    out: dict[int, float] = {}
    for chunk_id in dict.fromkeys(chunk_ids):
        for rowid, distance in store.rows(
            "SELECT rowid, vec_distance_cosine(embedding, ?) FROM chunk_vectors WHERE rowid = ?",
            [query_vector, chunk_id],
        ):
            out[int(rowid)] = 1.0 - float(distance)
    return out


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]
