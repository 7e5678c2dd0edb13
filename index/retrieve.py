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
from cmem_cli.core.fts import fts_query, query_tokens
from cmem_index.repositories.retrieval import DocFilters as DocFilters
from cmem_index.store import IndexStore

# BM25 column weights: context (title, type, project, concepts), text, camelCase parts.
CONTEXT_WEIGHT = 1.0
TEXT_WEIGHT = 1.0
TERMS_WEIGHT = 0.5
WEIGHTS = (CONTEXT_WEIGHT, TEXT_WEIGHT, TERMS_WEIGHT)
MAX_K = 4096  # sqlite-vec's largest k
# Exact vector search up to this many vectors; more, and a search ranks bits first (docs/benchmarks.md)
COMPACT_ABOVE = 100_000
RANK_ALONE = 5_000  # a keyword search for at most this many documents ranks in the full-text index alone
FEW_DOCUMENTS = 50_000  # ... when its filter leaves at most this many documents (else it joins each match)
COMPACT_HEAD = 400  # chunks the bits pick for the exact re-ranking, at least


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
    rows = store.retrieval.best_chunks(WEIGHTS, match, where, params, limit)
    return [DocHit(doc_id, chunk_id, -rank) for doc_id, chunk_id, rank in rows]


def _few_documents(store: IndexStore, where: str, params: list[Any]) -> bool:
    """Whether at most ``FEW_DOCUMENTS`` documents pass the filter (counted no further than that)."""
    return store.retrieval.documents_passing(where, params, FEW_DOCUMENTS + 1) <= FEW_DOCUMENTS


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
    retrieval = store.retrieval
    narrow = bm25.head("chunks_fts", retrieval.query_terms(query_tokens(query)))

    def page(want: int, head: bm25.Head | None) -> bm25.Ranked:
        return retrieval.ranked_chunks(WEIGHTS, match, where, params, head, want)

    def documents(ranked: bm25.Ranked) -> dict[int, int]:
        return retrieval.documents_of_chunks([chunk_id for chunk_id, _ in ranked])

    def enough(ranked: bm25.Ranked) -> bool:  # the head's proven chunks hold the page's documents
        return len(set(documents(ranked).values())) >= limit

    want = limit * 4
    while True:
        ranked = bm25.ranked_head(functools.partial(page, want), want, narrow, enough)
        docs = documents(ranked)
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
    return store.retrieval.chunk_texts(chunk_ids)


def query_idf(store: IndexStore, query: str) -> float:
    """Sum of the BM25 IDFs of the query's terms in this index: the scale of a perfect keyword match.

    Dividing a document's BM25 by it gives an absolute "how much of the query matched" that means the same
    for a two-word and a fifty-word query, which raw BM25 does not.
    """
    return store.retrieval.query_terms(query_tokens(query)).idf_sum()


def scope_chunks(store: IndexStore, filters: DocFilters, token: str | None = None) -> int:
    """How many chunks the filters let through (holding ``token``, when given)."""
    where, params = filters.sql("d")
    if token is None:
        if not filters.active:
            return store.retrieval.chunk_total()
        return store.retrieval.chunks_passing(where, params)
    match = fts_query(token)
    if match is None:
        return 0
    return store.retrieval.chunks_matching(match, where, params)


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
    return store.retrieval.nearest(query_vector, k, where, params, filtered=filters.active)


def compact_nearest(
    store: IndexStore, query_vector: bytes, filters: DocFilters, k: int
) -> list[tuple[int, float, int]]:
    """:func:`exact_nearest` over bits: the ``max(k, COMPACT_HEAD)`` nearest by Hamming distance between the
    signs, then those re-ranked by their exact cosine (float32, as the exact search computes it)."""
    head = max(k, COMPACT_HEAD)
    where, params = filters.sql("d")
    bits = store.retrieval.query_bits(query_vector)
    found = store.retrieval.nearest_bits(bits, where, params, head, filtered=filters.active)
    distances = exact_distances(store, query_vector, found)
    ranked = sorted(distances.items(), key=lambda item: (item[1][0], item[0]))[:k]
    return [(chunk_id, distance, doc_id) for chunk_id, (distance, doc_id) in ranked]


def exact_distances(
    store: IndexStore, query_vector: bytes, chunk_ids: Sequence[int]
) -> dict[int, tuple[float, int]]:
    """chunk id -> (cosine distance to ``query_vector``, document id), from the float32 vectors: the cached
    copy found by the chunk's hash (B-tree lookups), else the chunk's own row in ``chunk_vectors``."""
    model = store.settings.get("vectors_model")
    out = store.retrieval.cached_distances(query_vector, model, chunk_ids)
    for chunk_id in chunk_ids:
        if chunk_id not in out:
            found = store.retrieval.stored_distance(query_vector, chunk_id)
            if found is not None:
                out[chunk_id] = found
    return out


def cosines(store: IndexStore, query_vector: bytes, chunk_ids: Sequence[int]) -> dict[int, float]:
    """These chunks' cosines to ``query_vector`` (as sqlite-vec computes them for a search, by rowid: one
    lookup each, as vec0 reads its whole table for ``rowid IN``)."""
    if not chunk_ids or not store.vectors.has_table():
        return {}
    return store.retrieval.cosines(query_vector, chunk_ids)
