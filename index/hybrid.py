"""Search over the index: keyword, vector and hybrid, one row per observation or document.

The entry point is :func:`hybrid`; ``cmem search`` calls it. Search never waits for the indexer (WAL readers,
a short busy timeout) and never fails because of the index: a missing, locked or damaged ``index.db``, a
missing model or vectors made by another model all degrade to keyword results from whatever lists remain,
with a note saying why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cmem_cli.core.background import Background
from cmem_cli.core.config import Config
from cmem_cli.core.errors import CmemError, ModelError, UsageError
from cmem_cli.core.fields import MODES
from cmem_cli.core.pages import INDEX_BEHIND
from cmem_index import loading, retrieve
from cmem_index.fusion import (
    DEFAULT_PARAMS,
    KEYWORD,
    VECTOR,
    FusedHit,
    FusionParams,
    Signal,
    SignalScore,
    default_cutoff,
    fuse,
    stands_out,
)
from cmem_index.retrieve import DocFilters, DocHit
from cmem_index.store import IndexStore
from cmem_index.trace import Trace
from cmem_index.unindexed import FreshList

if TYPE_CHECKING:
    from cmem_index.repositories.retrieval import DocumentFields

ExtraLists = Mapping[str, Sequence[tuple[str, float]]]
RERANK_CANDIDATES = 20
CANDIDATES = 100  # per retriever, before fusion
CODE_HEAD = 10  # the keyword hits whose text says whether the list ranks code (cmem_index.codelike)
ALL_CANDIDATES = 1_000_000  # per retriever when every hit is asked for (the vector side stops at MAX_K)
SNIPPET_CHARS = 240


class IndexHit:
    """One fused result.

    ``key`` is ``obs:<uid>`` for a cmem observation, else ``doc:<collection>:<path>`` (summaries and user
    documents). ``kind`` is ``observation``, ``summary`` or ``document``. ``score`` is calibrated 0..1;
    ``signals`` maps each signal (``keyword``, ``vector``, any extra list, ``rerank``) to its rank, raw and
    normalised score. ``line`` is the 1-based file line where the best chunk starts. Hits that only an extra
    list found carry just ``key``, ``kind``, ``uid``, ``score`` and ``signals``.
    """

    __slots__ = (
        "key",
        "kind",
        "uid",
        "collection",
        "path",
        "docid",
        "title",
        "score",
        "signals",
        "line",
        "snippet",
        "obs_id",
        "project",
        "type",
        "created_at",
    )

    def __init__(
        self,
        *,
        key: str,
        kind: str,
        uid: str | None,
        collection: str | None,
        path: str | None,
        docid: str | None,
        title: str | None,
        score: float,
        signals: dict[str, SignalScore] | None = None,
        line: int | None = None,
        snippet: str | None = None,
        obs_id: int | None = None,
        project: str | None = None,
        type: str | None = None,
        created_at: int | None = None,
    ):
        self.key, self.kind, self.uid, self.score = key, kind, uid, score
        self.collection, self.path, self.docid, self.title = collection, path, docid, title
        self.signals = signals if signals is not None else {}
        self.line, self.snippet, self.obs_id = line, snippet, obs_id
        self.project, self.type, self.created_at = project, type, created_at

    def __repr__(self) -> str:
        return f"IndexHit(key={self.key!r}, score={self.score!r})"


class SearchResults(list[IndexHit]):
    """The hits, plus the mode actually used and notes on anything that degraded (for stderr)."""

    def __init__(
        self,
        hits: Sequence[IndexHit] = (),
        *,
        mode: str = "keyword",
        notes: Sequence[str] = (),
        total: int | None = None,
        capped: bool = False,
        behind: int = 0,
    ):
        super().__init__(hits)
        self.mode = mode
        self.notes = list(notes)
        self.behind = behind  # memories among the candidates the index does not hold, or holds unembedded
        self.total = len(hits) if total is None else total  # hits above the cut-off before the limit
        self.capped = capped  # a candidate list was cut at its depth: there may be more than ``total``


def hybrid(
    config: Config,
    query: str,
    *,
    mode: str = "auto",
    limit: int | None = 10,
    filters: Any = None,
    collections: Sequence[str] | None = None,
    rerank: bool | None = None,
    extra_lists: ExtraLists | Callable[[], ExtraLists] | None = None,
    min_score: float | None = None,
    trace: Trace | None = None,
    fresh: Callable[[bool], FreshList] | None = None,
) -> SearchResults:
    """Search the index and fuse with ``extra_lists``; returns at most ``limit`` hits (None: all), best first.

    - ``mode``: ``keyword`` (BM25 only), ``vector`` (nearest neighbours only; ModelError without a usable
      model), ``hybrid`` (both, fused), ``auto`` (hybrid when the index has vectors for the configured model,
      else keyword, without loading a model).
    - ``filters``: the store's ``Filters`` (or a dict with its field names: project, types, concepts, files,
      agent, session, machine, branch, since, until — epoch ms, inclusive). Documents without a filtered
      field are excluded. The branch is not filtered here, and an index built before it kept machines
      returns every hit under a machine filter, unfiltered by it: the caller checks those on its rows.
    - ``collections``: restrict to these collection names (``memories`` is cmem's export tree).
    - ``rerank``: None = rerank when a reranker is configured; True/False force it (at most 20 candidates).
    - ``extra_lists``: more keyword-like ranked lists ``{signal: [(key, strength), ...]}``, best first, or
      a function that returns them (called once the index's own lists are in: a caller ranking its own
      meanwhile),
      each score a BM25 over the query's IDF sum in its own table (the store's observations, summaries and
      prompts; :mod:`cmem_cli.core.bm25`), keyed ``obs:<uid>`` and the like. A key found there and in the
      index is one hit.
    - ``min_score``: drop hits whose calibrated score is lower. None: the mode's calibrated cut-off
      (``cmem_index.fusion.default_cutoff``: vectors always have a nearest neighbour, evidence or not; every
      keyword hit matched a term, so keyword search has none).
    - ``trace``: filled with what each stage did (``--explain``; :mod:`cmem_index.trace`).
    - ``fresh``: the store's memories the index may not hold yet, ``[(key, export path), ...]`` best
      first (its keyword hits, and its newest when asked with True): a search embeds a few of those the
      index lacks or holds without a vector and leaves the rest unjudged by the lists that cannot see
      them (:mod:`cmem_index.unindexed`).

    The stages, each a function below: :func:`scope_words` (what the embedder sees), :func:`candidates`
    (the keyword and vector lists), :func:`code_share` (how far a keyword list of code counts),
    :func:`fusion`, :func:`cut_off` and :func:`reranked`. The results' ``total`` counts the hits above the
    cut-off before ``limit``; ``capped`` says a retriever's candidate list was full, so there may be more.
    """
    if mode not in MODES:
        raise UsageError(f"unknown search mode {mode!r} (expected one of: {', '.join(MODES)})")
    doc_filters = DocFilters.coerce(filters, collections)
    notes: list[str] = []
    store = _open(config, notes)
    if store is not None and doc_filters.machine is not None and not store.keeps_machines:
        # an index built before it kept machines: every hit, for the caller to check the machine of its rows
        doc_filters, limit = doc_filters.without_machine(), None
    depth = ALL_CANDIDATES if limit is None else max(CANDIDATES, limit * 2)
    try:
        want_vectors = mode in ("vector", "hybrid") or (
            mode == "auto" and store is not None and _has_vectors(store)
        )
        # llama.cpp loads the model without holding Python: the index ranks the keyword list meanwhile
        loaded = Background(lambda: loading.load_embedder(config)) if want_vectors else None
        keyword_hits = keyword_list(store, query, doc_filters, depth, notes) if mode != "vector" else None
        embedder = (
            _usable_embedder(config, store, notes, required=mode == "vector", loaded=loaded.result())
            if loaded is not None
            else None
        )
        embedded = scope_words(store, query, doc_filters, notes, trace) if embedder is not None else query
        found = candidates(
            store,
            query,
            embedded,
            embedder,
            mode,
            doc_filters,
            depth,
            extra_lists,
            notes,
            trace,
            keyword_hits,
        )
        behind = unindexed(config, store, found, embedder, fresh, notes, trace) if fresh is not None else 0
        if found.vectors_asked and store is not None and KEYWORD in found.signals:
            code_share(store, query, found, trace)
        fused = fusion(found, trace)
        if min_score is None and mode == "vector" and store is not None and not found.words_matched:
            # one cheap lookup for the cut-off: does any word of the query occur in these documents?
            hit = _guard(lambda: retrieve.keyword(store, query, doc_filters, 1), notes, "keyword check")
            found.words_matched = bool(hit)
        count_pieces = embedder.count_tokens if embedder is not None else None
        kept, bar = cut_off(fused, found, query, min_score, count_pieces, trace)
        # A vector list always has more neighbours past its depth; they may be hits only while its last one
        # still had the evidence to pass (else "showing 2 of 2+" under --all, with nothing more to show).
        capped = found.capped or (
            found.vector_tail is not None and any(f.key == found.vector_tail for f in kept)
        )
        top = kept if limit is None else kept[: max(limit, RERANK_CANDIDATES)]
        texts: dict[str, str] = {}
        hits_out = [_to_hit(store, f, found.rows, texts) for f in top]
        if _should_rerank(config, rerank, notes, trace) and hits_out:
            hits_out = reranked(config, query, hits_out, texts, notes, trace)
    finally:
        if store is not None:
            store.close()
    hits_out = [h for h in hits_out if h.score >= bar][:limit]
    return SearchResults(
        hits_out, mode=found.mode, notes=notes, total=len(kept), capped=capped, behind=behind
    )


# -- the stages -----------------------------------------------------------------------------------------
class Candidates:
    """What the retrievers found for one query.

    ``lists``: the ranked lists fusion reads, ``{name: [(key, raw score), ...]}`` best first (the extra
    lists, then ``keyword`` and ``vector``), and ``signals`` how to read each; ``rows``: each key's best chunk
    and document row (the first list that found it); ``keyword_hits``: the index's keyword hits (the
    code-share stage reads their text); ``capped``: a list was cut at its depth; ``vector_tail``: the last
    neighbour of a vector list cut at its depth; ``words_matched``: a keyword list found something;
    ``vectors_asked``: the query was embedded; ``mode``: the mode the search ran in."""

    __slots__ = (
        "lists",
        "signals",
        "rows",
        "keyword_hits",
        "capped",
        "vector_tail",
        "words_matched",
        "vectors_asked",
        "mode",
        "query_vectors",
        "unseen",
    )

    def __init__(self) -> None:
        self.lists: dict[str, list[tuple[str, float]]] = {}
        self.signals: dict[str, Signal] = {}
        self.rows: dict[str, tuple[DocHit, DocumentFields]] = {}
        self.keyword_hits: list[DocHit] = []
        self.capped = False
        self.vector_tail: str | None = None
        self.words_matched = False
        self.vectors_asked = False
        self.mode = "keyword"
        self.query_vectors: list[bytes] = []  # the search vector, and the whole query's when it differs
        self.unseen: dict[str, set[str]] = {}  # list name -> keys it could not judge (fusion's ``unseen``)

    def put_first(self, extra_lists: ExtraLists | None) -> None:
        """The extra lists (scaled keyword lists: the store's) before the retrievers' own."""
        extra = {name: list(items) for name, items in (extra_lists or {}).items()}
        self.lists = {**extra, **self.lists}
        self.signals = {**{name: Signal(KEYWORD, scaled=True) for name in extra}, **self.signals}


def scope_words(
    store: IndexStore | None, query: str, filters: DocFilters, notes: list[str], trace: Trace | None = None
) -> str:
    """Stage: the query as the embedder sees it, without the words that split the memories searched (a
    speaker's name in half of a conversation's turns; :mod:`cmem_index.scope_words`). Keyword search still
    matches them and the evidence still reads the whole query's cosines."""
    if store is None:
        return query
    from cmem_index import scope_words as scope  # only a search with a model asks: not loaded otherwise

    try:
        left_out = scope.splitting_words(store, query, filters)
    except CmemError as exc:
        notes.append(f"query words not weighed: {exc.message}")
        return query
    embedded = scope.without_words(query, left_out)
    if trace is not None:
        trace.record("scope words", left_out=sorted(left_out) if embedded != query else [])
    return embedded


def candidates(
    store: IndexStore | None,
    query: str,
    embedded: str,
    embedder: Any,
    mode: str,
    filters: DocFilters,
    depth: int,
    extra_lists: ExtraLists | Callable[[], ExtraLists] | None,
    notes: list[str],
    trace: Trace | None = None,
    keyword_hits: list[DocHit] | None = None,
) -> Candidates:
    """Stage: the keyword list (the index's BM25 over chunks, unless ``mode`` is vector: ``keyword_hits``
    when it is ranked already) and the vector list (the nearest chunks to ``embedded``, when there is an
    ``embedder``), each ``depth`` deep, one entry per document, beside the ``extra_lists`` (the store's). A
    retriever that fails leaves its list empty and a note."""
    found = Candidates()
    query_vector = whole_vector = None
    if embedder is not None:
        if embedded == query:
            query_vector = embed_search_query(embedder, query)
        else:  # the evidence still reads the whole query's cosines (fusion.Signal)
            query_vector, whole_vector = embed_search_queries(embedder, [embedded, query])
        found.vectors_asked = True
        found.query_vectors = [query_vector] + ([whole_vector] if whole_vector is not None else [])
    if store is not None and mode != "vector":
        hits = keyword_hits if keyword_hits is not None else keyword_list(store, query, filters, depth, notes)
        found.capped = found.capped or len(hits) >= depth
        found.lists[KEYWORD] = _keyed(store, hits, found.rows)
        found.keyword_hits = hits
        idf = _idf(store, query, notes) if hits else 0.0
        found.signals[KEYWORD] = Signal(KEYWORD, idf or None)
    if store is not None and query_vector is not None:
        hits = _guard(lambda: retrieve.vector(store, query_vector, filters, depth), notes, "vector search")
        full = len(hits) >= depth or len(hits) >= retrieve.MAX_K // 4
        scale = query_vector_scale(query_vector)
        for hit in hits:  # sqlite-vec's cosine normalises the query: back to the mean of the cosines
            hit.score *= scale
        found.lists[VECTOR] = _keyed(store, hits, found.rows)
        found.vector_tail = found.lists[VECTOR][-1][0] if full and found.lists[VECTOR] else None
        cosines = _whole_query_cosines(store, whole_vector, hits, found.rows)
        found.signals[VECTOR] = Signal(VECTOR, evidence=cosines)
        found.mode = "vector" if mode == "vector" else "hybrid"
    found.put_first(
        extra_lists() if callable(extra_lists) else extra_lists
    )  # a caller's may still be ranking
    found.words_matched = any(
        items for name, items in found.lists.items() if found.signals[name].kind == KEYWORD
    )
    if mode == "vector":
        found.lists = {VECTOR: found.lists.get(VECTOR, [])}
    if trace is not None:
        trace.record("candidates", depth=depth, **{name: len(items) for name, items in found.lists.items()})
    return found


def unindexed(
    config: Config,
    store: IndexStore | None,
    found: Candidates,
    embedder: Any,
    fresh: Callable[[bool], FreshList],
    notes: list[str],
    trace: Trace | None = None,
) -> int:
    """Stage: the memories the store holds and the index does not yet (or holds without a vector): up to
    ``EMBED_AT_SEARCH`` chunks of them embedded here and placed in the vector list by their cosine, the
    rest unjudged by the lists that cannot see them (:mod:`cmem_index.unindexed`), and one note when
    there are any. Returns how many there were."""
    if store is None:
        return 0
    from cmem_index import unindexed as lag

    vectors_on = VECTOR in found.lists
    keys = [key for items in found.lists.values() for key, _ in items]
    doc_ids = {key: info["id"] for key, (_, info) in found.rows.items()}
    try:
        judged = lag.judge(
            store,
            config.export_dir,
            keys,
            doc_ids,
            fresh(vectors_on),
            embedder=embedder if vectors_on else None,
            fingerprint=embedder.fingerprint if vectors_on else None,
            vectors=found.query_vectors,
            keyword_list=KEYWORD,
            vector_list=VECTOR,
        )
    except CmemError as exc:
        notes.append(f"memories the index lacks not weighed: {exc.message}")
        return 0
    if vectors_on and judged.vectors:
        items = found.lists[VECTOR]
        listed = {key for key, _ in items}
        floor = items[-1][1] if found.vector_tail is not None and items else -math.inf
        items.extend(
            (key, score) for key, score in judged.vectors.items() if key not in listed and score >= floor
        )
        items.sort(key=lambda item: -item[1])
        evidence = found.signals[VECTOR].evidence
        if evidence is not None:
            found.signals[VECTOR] = found.signals[VECTOR]._replace(evidence={**evidence, **judged.whole})
    found.unseen = {name: keys for name, keys in judged.blind.items() if keys}
    behind = judged.behind
    if behind:
        unembedded = len(found.unseen.get(VECTOR, ()))
        parts = [f"{judged.embedded} embedded for this search"] if judged.embedded else []
        if unembedded:
            parts.append(f"{unembedded} ranked without a vector")
        detail = f" ({', '.join(parts)})" if parts else ""
        notes.append(
            f"{INDEX_BEHIND}: {behind} of the memories found {'is' if behind == 1 else 'are'}"
            f" not indexed yet{detail}; `cmem index` brings it up to date"
        )
    if trace is not None:
        trace.record("unindexed", behind=behind, embedded=judged.embedded)
    return behind


def keyword_list(
    store: IndexStore | None, query: str, filters: DocFilters, depth: int, notes: list[str]
) -> list[DocHit]:
    """The index's keyword hits (BM25 over chunks, one per document), or none and a note when it fails."""
    if store is None:
        return []
    return _guard(lambda: retrieve.keyword(store, query, filters, depth), notes, "keyword search")


def code_share(store: IndexStore, query: str, found: Candidates, trace: Trace | None = None) -> float:
    """Stage: the share of the keyword list's first hits that are source code, for a question in words (0
    when the query names an identifier): how far fusion discounts the keyword list
    (:mod:`cmem_index.codelike`). Only a search that has vectors to weigh it against asks."""
    from cmem_index import codelike  # only a search with a model asks: not loaded otherwise

    hits = found.keyword_hits
    share = 0.0
    if hits and not codelike.names_identifier(query):
        share = codelike.code_share(retrieve.chunk_texts(store, [hit.chunk_id for hit in hits[:CODE_HEAD]]))
    found.signals[KEYWORD] = found.signals[KEYWORD]._replace(code_share=share)
    if trace is not None:
        trace.record("code share", share=share)
    return share


def fusion(found: Candidates, trace: Trace | None = None) -> list[FusedHit]:
    """Stage: the lists fused into one ranking with a calibrated 0..1 evidence score
    (:func:`cmem_index.fusion.fuse`): ordered by each list's standardised scores when both kinds found
    something, else by the evidence."""
    fused = fuse(found.lists, found.signals, unseen=found.unseen)
    if trace is not None:
        trace.fusion_input(found.lists, {name: found.signals[name] for name in found.lists})
        kinds = {found.signals[name].kind for name, items in found.lists.items() if items}
        trace.record("fusion", hits=len(fused), order="relative" if len(kinds) > 1 else "evidence")
        trace.place("fusion", (f.key for f in fused))
    return fused


def cut_off(
    fused: list[FusedHit],
    found: Candidates,
    query: str,
    min_score: float | None,
    count_pieces: Callable[[str], int] | None,
    trace: Trace | None = None,
) -> tuple[list[FusedHit], float]:
    """Stage: the hits with evidence, and the bar they cleared (``min_score``, or the mode's calibrated
    cut-off when None).

    With the calibrated cut-off, a search no word of which occurs in the searched documents has only its
    vectors for evidence: a hit must then stand out of the query's neighbourhood
    (:func:`cmem_index.fusion.stands_out`), and a query of words the model does not know
    (:func:`model_reads`) has none."""
    rule = "given"
    vectors = found.lists.get(VECTOR)
    if min_score is None:
        min_score = default_cutoff(found.mode)
        rule = "calibrated"
        if not found.words_matched and vectors and count_pieces is not None:
            if model_reads(count_pieces, query):
                bar = stands_out([raw for _, raw in vectors])
                fused = [f for f in fused if VECTOR in f.signals and f.signals[VECTOR].raw >= bar]
                rule = f"no word occurs: a cosine of {bar:.4f} stands out"
            else:
                fused = []
                rule = "no word occurs and the model does not know them"
    kept = [f for f in fused if f.score >= min_score]
    if trace is not None:
        trace.record(
            "cut-off", min_score=min_score, rule=rule, kept=len(kept), dropped=len(fused) - len(kept)
        )
    return kept, min_score


# -- pieces ---------------------------------------------------------------------------------------------
def _open(config: Config, notes: list[str]) -> IndexStore | None:
    if not config.index_path.exists():
        notes.append("no index yet: run `cmem index` (or `cmem watch`) for document and semantic search")
        return None
    try:
        return IndexStore.open(config.index_path, readonly=True)
    except CmemError as exc:
        notes.append(f"index unavailable ({exc.message}); keyword results from the store only")
        return None


def _guard(run: Callable[[], list[DocHit]], notes: list[str], what: str) -> list[DocHit]:
    try:
        return run()
    except CmemError as exc:
        notes.append(f"{what} skipped: {exc.message}")
        return []


def _idf(store: IndexStore, query: str, notes: list[str]) -> float:
    try:
        return retrieve.query_idf(store, query)
    except CmemError as exc:
        notes.append(f"keyword scores uncalibrated: {exc.message}")
        return 0.0


def _whole_query_cosines(
    store: IndexStore,
    whole_vector: bytes | None,
    hits: Sequence[DocHit],
    rows: Mapping[str, tuple[DocHit, DocumentFields]],
) -> dict[str, float] | None:
    """Each vector hit's cosine to the whole query (its best chunk's), when the search embedded less of it;
    keyed as in the lists (``rows``: the documents :func:`_keyed` already looked up)."""
    if whole_vector is None or not hits:
        return None
    scale = query_vector_scale(whole_vector)
    found = retrieve.cosines(store, whole_vector, [hit.chunk_id for hit in hits])
    key_of = {info["id"]: key for key, (_, info) in rows.items()}
    return {
        key_of[hit.doc_id]: found[hit.chunk_id] * scale
        for hit in hits
        if hit.chunk_id in found and hit.doc_id in key_of
    }


def _has_vectors(store: IndexStore) -> bool:
    try:
        return store.vectors.model() is not None and store.retrieval.any_embedded()
    except CmemError:
        return False


def _usable_embedder(
    config: Config,
    store: IndexStore | None,
    notes: list[str],
    *,
    required: bool,
    loaded: tuple[Any, str | None] | None = None,
) -> Any:
    """The configured embedder (``loaded``: what ``load_embedder`` returned) when the index has its
    vectors; else None and a note (ModelError if ``required``)."""
    embedder, why = loaded if loaded is not None else loading.load_embedder(config)
    if embedder is None:
        if required:
            raise ModelError(why or "no embedding model")
        notes.append(f"keyword only: {why}")
        return None
    stored = store.vectors.model() if store is not None else None
    if stored is None or stored[0] != embedder.fingerprint:
        message = "the index has no vectors for the configured model yet; run `cmem index`"
        if required:
            raise ModelError(message)
        notes.append(f"keyword only: {message}")
        return None
    return embedder


def model_reads(
    count_pieces: Callable[[str], int], query: str, params: FusionParams = DEFAULT_PARAMS
) -> bool:
    """Whether the embedding model knows the query's words, for a query no word of which occurs in the
    searched documents (then the vectors are all the evidence there is).

    A word the model knows is one or two pieces of its vocabulary; one it has never seen (``zzzqqqxx``,
    ``qwxzv``, ``1234567890``) is spelled out in four to six, and its vector means nothing. Such a query's
    nearest neighbours are noise that can still stand out of the crowd (against code, ``zzzqqqxx`` clears
    its neighbours' median by as much as a real question does). Measured over words of Latin letters and
    digits only: a script written without spaces makes one long "word" of a whole phrase.
    """
    words = _LATIN_WORD.findall(query)
    if not words:
        return True
    return sum(count_pieces(word) for word in words) / len(words) <= params.unknown_pieces


_LATIN_WORD = re.compile(r"[A-Za-z0-9]+")


def query_parts(query: str) -> list[str]:
    """The texts a query is embedded as: itself, and for a query of several lines also its last line.

    A long multi-line query (a dialogue so far, a pasted log or thread) is mostly context; its last line is
    usually what is being asked now. One small embedding of the whole blurs that question into the rest, an
    embedding of the last line alone loses the context; the mean of their cosines keeps both. (On MADial,
    whole dialogues as queries, vector nDCG@10 0.599 whole, 0.542 last turn alone, 0.660 the mean.)
    """
    lines = [line for line in query.splitlines() if line.strip()]
    return [query, lines[-1]] if len(lines) > 1 else [query]


def embed_search_query(embedder: Any, query: str) -> bytes:
    """The search vector as float32 bytes for sqlite-vec: the mean of the parts' unit vectors, so its dot
    product with a document vector is the mean of their cosines (not normalised: see
    :func:`query_vector_scale`). Plain Python: numpy would cost a search more than the forward pass."""
    return embed_search_queries(embedder, [query])[0]


def embed_search_queries(embedder: Any, queries: Sequence[str]) -> list[bytes]:
    """:func:`embed_search_query` for a few queries, all their parts embedded in one forward pass (a
    multi-line query's two parts cost one pass, not two)."""
    parts = [query_parts(query) for query in queries]
    vectors = iter(embedder.query_vectors([part for each in parts for part in each]))
    return [_mean_bytes([next(vectors) for _ in each]) for each in parts]


def _mean_bytes(vectors: Sequence[Sequence[float]]) -> bytes:
    """The mean of unit vectors as float32 bytes for sqlite-vec (plain Python: no numpy on the search path)."""
    from array import array

    mean = [math.fsum(column) / len(vectors) for column in zip(*vectors, strict=True)]
    return array("f", mean).tobytes()


def query_vector_scale(vector: bytes) -> float:
    """The length of a search vector: sqlite-vec's cosine divides by it, multiplying the score restores
    the mean cosine (1.0 for a one-part query)."""
    from array import array

    return math.sqrt(math.fsum(x * x for x in array("f", vector)))


def _keyed(
    store: IndexStore, hits: list[DocHit], rows: dict[str, tuple[DocHit, DocumentFields]]
) -> list[tuple[str, float]]:
    """(key, score) pairs for fusion; remembers each key's best chunk and document row (first list wins)."""
    if not hits:
        return []
    meta = _doc_meta(store, [h.doc_id for h in hits])
    out: list[tuple[str, float]] = []
    for hit in hits:
        info = meta.get(hit.doc_id)
        if info is None:
            continue
        key = doc_key(info)
        out.append((key, hit.score))
        if key not in rows:
            rows[key] = (hit, info)
    return out


def doc_key(info: Mapping[str, Any]) -> str:
    if info["kind"] == "observation" and info["uid"]:
        return f"obs:{info['uid']}"
    return f"doc:{info['collection']}:{info['path']}"


def _doc_meta(store: IndexStore, doc_ids: Sequence[int]) -> dict[int, DocumentFields]:
    return store.retrieval.document_fields(doc_ids)


def _to_hit(
    store: IndexStore | None,
    fused: FusedHit,
    rows: dict[str, tuple[DocHit, DocumentFields]],
    texts: dict[str, str],
) -> IndexHit:
    found = rows.get(fused.key)
    if store is None or found is None:
        kind, _, rest = fused.key.partition(":")
        return IndexHit(
            key=fused.key,
            kind="observation" if kind == "obs" else "document",
            uid=rest if kind == "obs" else None,
            collection=None,
            path=None,
            docid=None,
            title=None,
            score=fused.score,
            signals=fused.signals,
        )
    doc_hit, info = found
    line, text = store.retrieval.chunk_line_and_text(doc_hit.chunk_id)
    texts[fused.key] = f"{info['title']}\n{text.strip()}"
    return IndexHit(
        key=fused.key,
        kind=info["kind"] or "document",
        uid=info["uid"],
        collection=info["collection"],
        path=info["path"],
        docid=info["docid"],
        title=info["title"],
        score=fused.score,
        signals=fused.signals,
        line=line,
        snippet=snippet(text),
        obs_id=info["obs_id"],
        project=info["project"],
        type=info["type"],
        created_at=info["created_at"],
    )


_SPACE = re.compile(r"\s+")


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The chunk's first characters on one line (headings' ``#`` marks dropped)."""
    flat = _SPACE.sub(" ", re.sub(r"(?m)^#{1,6}\s+", "", text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# -- reranking ------------------------------------------------------------------------------------------
def _should_rerank(config: Config, rerank: bool | None, notes: list[str], trace: Trace | None = None) -> bool:
    if rerank is False or not config.rerank_model:
        if rerank:
            notes.append("no reranker configured (set CMEM_RERANK_MODEL); results are not reranked")
        if trace is not None:
            trace.record(
                "rerank", reranked=0, why="turned off" if rerank is False else "no reranker configured"
            )
        return False
    return True


def reranked(
    config: Config,
    query: str,
    hits: list[IndexHit],
    texts: Mapping[str, str],
    notes: list[str],
    trace: Trace | None = None,
) -> list[IndexHit]:
    """Stage: the first ``RERANK_CANDIDATES`` hits rescored by the configured reranker on their best chunk,
    each score the mean of the first stage's and the reranker's (a reranker that has never seen this
    domain should not erase a confident first-stage match), and reordered; the rest keep their place."""
    from cmem_index.loading import load_reranker

    reranker, why = load_reranker(config)
    if reranker is None:
        notes.append(f"not reranked: {why}")
        return hits
    head = hits[:RERANK_CANDIDATES]
    docs = [texts.get(h.key) or h.title or h.key for h in head]
    scores = reranker.score(query, docs)
    for rank_score, hit in zip(scores, head, strict=True):
        hit.signals["rerank"] = SignalScore(0, float(rank_score), float(rank_score))
        hit.score = 0.5 * hit.score + 0.5 * float(rank_score)
    ordered = sorted(head, key=lambda h: -h.score)
    for rank, hit in enumerate(ordered, 1):
        hit.signals["rerank"].rank = rank
    out = ordered + hits[RERANK_CANDIDATES:]
    if trace is not None:
        trace.record("rerank", reranked=len(head))
        trace.place("rerank", (h.key for h in out))
    return out
