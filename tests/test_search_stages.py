"""Search as named stages (issue 25): scope words, candidates, code share, fusion, cut-off and rerank, each
on its own, and the trace `--explain` reads. In-process over a small index with hashing vectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmem_cli.core.config import load_config
from cmem_index import hybrid as index_search
from cmem_index.collections import add_collection
from cmem_index.fusion import DEFAULT_PARAMS, KEYWORD, VECTOR, Signal, fuse
from cmem_index.hybrid import (
    Candidates,
    IndexHit,
    candidates,
    code_share,
    cut_off,
    fusion,
    hybrid,
    reranked,
    scope_words,
)
from cmem_index.retrieve import DocFilters
from cmem_index.store import IndexStore
from cmem_index.trace import Trace
from tests.index_helpers import CountingEmbedder, index_for_search, write

USABLE_EMBEDDER = index_search._usable_embedder  # the fixture below stands in for it
CODE = "def file_exists(path):\n    if not path:\n        return False\n    return os.path.exists(path)\n"


@pytest.fixture
def indexed(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """24 chat notes, half of them naming Melanie (a word that splits them), and two functions as code."""
    config = load_config()
    config.ensure_home()
    chat = tmp_path / "chat"
    for i in range(24):
        who = "Melanie" if i % 2 else "Caroline"
        write(chat, f"n{i:02}.md", f"# note {i}\n\n{who} talked about painting number {i} at the lake.\n")
    add_collection(config, str(chat), name="chat")
    code = tmp_path / "code"
    write(code, "exists.md", "# file_exists\n\n```python\n" + CODE + "```\n")
    write(code, "size.md", "# file_size\n\n```python\ndef file_size(path):\n    info = os.stat(path)\n"
          "    return info.st_size if info else 0\n```\n")  # fmt: skip
    add_collection(config, str(code), name="code")
    embedder = CountingEmbedder()
    index_for_search(config, embedder, monkeypatch)
    store = IndexStore.open(config.index_path, readonly=True)
    yield config, store, embedder
    store.close()


def test_scope_words_leaves_a_word_that_splits_the_searched_notes_out_of_what_is_embedded(indexed):
    _, store, _ = indexed
    trace = Trace()
    embedded = scope_words(store, "what did Melanie paint", DocFilters(collections=["chat"]), [], trace)
    assert "melanie" not in embedded.lower() and "paint" in embedded
    assert trace.stages == [{"stage": "scope words", "left_out": ["melanie"]}]
    # in a scope where it is rare (the code) the name is kept
    assert scope_words(store, "what did Melanie paint", DocFilters(collections=["code"]), []) == (
        "what did Melanie paint"
    )


def test_candidates_are_the_store_list_then_each_retriever_to_its_depth(indexed):
    _, store, embedder = indexed
    trace = Trace()
    store_list = {"store": [("obs:U1", 0.8)]}
    found = candidates(store, "painting lake", "painting lake", embedder, "hybrid", DocFilters(), 3, store_list,
                       [], trace)  # fmt: skip
    assert list(found.lists) == ["store", "keyword", "vector"]
    assert len(found.lists[KEYWORD]) == 3 and found.capped  # 24 notes match; the list stops at its depth
    assert len(found.lists[VECTOR]) == 3 and found.vector_tail == found.lists[VECTOR][-1][0]
    assert found.signals["store"].scaled and found.signals[KEYWORD].idf_sum
    assert found.words_matched and found.vectors_asked and found.mode == "hybrid"
    assert trace.stages == [{"stage": "candidates", "depth": 3, "store": 1, "keyword": 3, "vector": 3}]
    vector_only = candidates(
        store, "painting", "painting", embedder, "vector", DocFilters(), 3, store_list, []
    )
    assert list(vector_only.lists) == [VECTOR] and vector_only.mode == "vector"
    assert vector_only.words_matched  # the store's list matched a word, though vector search leaves it out
    keyword_only = candidates(store, "painting", "painting", None, "keyword", DocFilters(), 3, None, [])
    assert list(keyword_only.lists) == [KEYWORD] and keyword_only.mode == "keyword"


def test_code_share_is_the_share_of_code_among_the_keyword_hits_for_a_question_in_words(indexed):
    _, store, embedder = indexed

    def share(query: str) -> tuple[float, float]:
        found = candidates(store, query, query, embedder, "hybrid", DocFilters(), 10, None, [])
        return code_share(store, query, found), found.signals[KEYWORD].code_share

    assert share("is the path there") == (1.0, 1.0)  # both functions hold "path", both are code
    assert share("painting at the lake") == (0.0, 0.0)
    assert share("file_exists path") == (0.0, 0.0)  # an identifier matched exactly is full evidence


def test_fusion_orders_both_kinds_relative_to_their_crowds_and_places_every_hit():
    found = Candidates()
    found.lists = {
        KEYWORD: [(f"k{i}", 5.0 - 0.05 * i) for i in range(12)],  # flat: common words everywhere
        VECTOR: [("v1", 0.9)] + [(f"x{i}", 0.35 - 0.01 * i) for i in range(12)],  # one clear neighbour
    }
    found.signals = {KEYWORD: Signal(KEYWORD, idf_sum=5.0), VECTOR: Signal(VECTOR)}
    trace = Trace()
    fused = fusion(found, trace)
    assert fused[0].key == "v1"
    assert [h.key for h in fused] == [h.key for h in fuse(found.lists, found.signals)]
    assert trace.stages == [{"stage": "fusion", "hits": 25, "order": "relative"}]
    assert trace.places["v1"] == {"fusion": 1} and len(trace.places) == 25
    assert trace.lists == found.lists and trace.signals == found.signals  # what the benchmarks replay
    found.lists[VECTOR] = []
    assert fusion(found, trace)[0].key == "k0"
    assert trace.stages[-1]["order"] == "evidence"


def _found(mode: str, vector: list[tuple[str, float]], *, words_matched: bool) -> Candidates:
    found = Candidates()
    found.lists, found.mode, found.words_matched = {VECTOR: vector}, mode, words_matched
    found.signals = {VECTOR: Signal(VECTOR)}
    return found


NEIGHBOURS = [("near", 0.62)] + [(f"n{i}", 0.14 - 0.001 * i) for i in range(40)]


def test_cut_off_keeps_hits_with_evidence_at_the_calibrated_or_given_bar():
    found = _found("hybrid", NEIGHBOURS, words_matched=True)
    fused = fuse(found.lists, found.signals)
    kept, bar = cut_off(fused, found, "a question", None, len)
    assert bar == DEFAULT_PARAMS.cutoff and kept and all(h.score >= bar for h in kept)
    assert len(kept) < len(fused)  # neighbours at a cosine of 0.14 say nothing
    trace = Trace()
    kept, bar = cut_off(fused, found, "a question", 0.0, len, trace)
    assert bar == 0.0 and len(kept) == len(fused)
    assert trace.stages == [{"stage": "cut-off", "min_score": 0.0, "rule": "given", "kept": 41, "dropped": 0}]


def test_cut_off_with_no_word_of_the_query_in_the_documents_keeps_only_a_neighbour_that_stands_out():
    found = _found("hybrid", NEIGHBOURS, words_matched=False)
    fused = fuse(found.lists, found.signals)
    kept, _ = cut_off(fused, found, "where is it", None, lambda word: 1)  # words the model knows
    assert [h.key for h in kept] == ["near"]
    unknown, _ = cut_off(fused, found, "zzqqxv", None, lambda word: 6)  # spelled out piece by piece
    assert unknown == []


def test_reranked_blends_and_reorders_only_the_head(monkeypatch, home):
    class Backwards:  # prefers the last of what it is shown
        def score(self, query: str, docs: list[str]) -> list[float]:
            return [i / len(docs) for i in range(len(docs))]

    monkeypatch.setattr("cmem_index.loading.load_reranker", lambda config: (Backwards(), None))
    monkeypatch.setattr(index_search, "RERANK_CANDIDATES", 3)
    hits = [IndexHit(key=f"k{i}", kind="document", uid=None, collection=None, path=None, docid=None,
                     title=f"t{i}", score=0.9 - 0.1 * i) for i in range(5)]  # fmt: skip
    trace = Trace()
    out = reranked(load_config(), "q", hits, {}, [], trace)
    assert [h.key for h in out] == ["k2", "k1", "k0", "k3", "k4"]
    assert out[0].score == pytest.approx(0.5 * 0.7 + 0.5 * 2 / 3)
    assert [h.signals["rerank"].rank for h in out[:3]] == [1, 2, 3] and "rerank" not in out[3].signals
    assert trace.places["k2"] == {"rerank": 1} and trace.stages == [{"stage": "rerank", "reranked": 3}]


def test_a_search_traces_every_stage_in_the_order_they_ran(indexed):
    config, _, _ = indexed
    trace = Trace()
    results = hybrid(config, "what did Melanie paint at the lake", mode="hybrid", collections=["chat"],
                     trace=trace)  # fmt: skip
    assert [s["stage"] for s in trace.stages] == [
        "scope words", "candidates", "code share", "fusion", "cut-off", "rerank",
    ]  # fmt: skip
    assert trace.stages[-1] == {"stage": "rerank", "reranked": 0, "why": "no reranker configured"}
    assert [trace.places[h.key]["fusion"] for h in results] == sorted(
        trace.places[h.key]["fusion"] for h in results
    )
    untraced = hybrid(config, "what did Melanie paint at the lake", mode="hybrid", collections=["chat"])
    assert [(h.key, h.score) for h in untraced] == [(h.key, h.score) for h in results]


def test_the_keyword_list_is_ranked_while_the_model_loads(indexed, monkeypatch):
    """hybrid() loads the embedder on another thread: the load below returns the model only once the
    keyword list has been ranked meanwhile (else, after 10 s, no model: the search would be keyword-only)."""
    import threading

    from cmem_index import retrieve

    config, _, embedder = indexed
    ranked = threading.Event()
    real_keyword = retrieve.keyword

    def keyword(*args, **kwargs):
        found = real_keyword(*args, **kwargs)
        ranked.set()
        return found

    def load(config):
        return (embedder, None) if ranked.wait(10) else (None, "the keyword list waited for the model")

    monkeypatch.setattr(retrieve, "keyword", keyword)
    monkeypatch.setattr("cmem_index.loading.load_embedder", load)
    monkeypatch.setattr("cmem_index.hybrid._usable_embedder", USABLE_EMBEDDER)
    results = hybrid(config, "painting lake", mode="hybrid", collections=["chat"])
    assert results.mode == "hybrid"
