"""Searching the index: safe keyword queries, filters, one row per document, keys, degradation, fusion."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmem_cli.core.config import load_config
from cmem_index.collections import add_collection, load_collections
from cmem_index.fusion import (
    DEFAULT_PARAMS,
    KEYWORD,
    VECTOR,
    FusionParams,
    Signal,
    default_cutoff,
    fuse,
    keyword_norm,
    vector_norm,
)
from cmem_index.hybrid import hybrid
from cmem_index.indexer import Indexer
from cmem_index.store import IndexStore
from tests.index_helpers import CountingEmbedder, index_value, observation_file, write


@pytest.fixture
def config(home: Path):
    cfg = load_config()
    cfg.ensure_home()
    return cfg


def index_all(config, embedder=None) -> None:
    store = IndexStore.open(config.index_path)
    try:
        Indexer(store, load_collections(config), embedder).run()
    finally:
        store.close()


@pytest.fixture
def corpus(config, tmp_path):
    root = config.export_dir
    observation_file(
        root,
        "webapp/s1/jwt.md",
        uid="UJWT",
        obs_id=1,
        title="Fix JWT expiry check",
        body="Tokens expired one hour early because exp is seconds.",
        type="bugfix",
        concepts=["auth", "jwt"],
        created_at="2026-01-10T00:00:00.000Z",
        session="s1",
    )
    observation_file(
        root,
        "webapp/s2/pool.md",
        uid="UPOOL",
        obs_id=2,
        title="Tune the database pool",
        body="Raised the connection pool size to 20 for the API workers.",
        type="change",
        concepts=["db"],
        created_at="2026-02-10T00:00:00.000Z",
        agent="claude",
        session="s2",
    )
    observation_file(
        root,
        "cli/s3/parse.md",
        uid="UPARSE",
        obs_id=3,
        title="Parser handles getObservationsByIds",
        body="The parser now splits camelCase names.",
        type="feature",
        project="cli",
        concepts=["parser"],
        created_at="2026-03-10T00:00:00.000Z",
    )
    notes = tmp_path / "notes"
    write(notes, "guide/deploy.md", "# Deploy guide\n\nHow to deploy the API: build, migrate the database, "
          "restart the workers.\n\n" + "More deployment text. " * 300 + "\n\n## Rollback\n\nRoll back the "
          "database pool change if the workers fail.\n")  # fmt: skip
    add_collection(config, str(notes), name="notes")
    index_all(config, CountingEmbedder())
    return config


def keys(results) -> list[str]:
    return [h.key for h in results]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.text(max_size=60),
        st.sampled_from(['"', '""', "(", ")", "*", "-", ":", "NEAR", "NEAR(a b)", "a AND", "OR", "^", "col:x",
                         "jwt*", '"unterminated', "-jwt", "NOT jwt", "{a b}", "a + b", "\x00", "é ü 日本"]),
    )
)  # fmt: skip
def test_no_query_text_can_make_keyword_search_fail(corpus, query):
    results = hybrid(corpus, query, mode="keyword", limit=5)
    assert isinstance(list(results), list)


def test_keyword_hits_are_one_row_per_document_with_keys_lines_and_snippets(corpus):
    results = hybrid(corpus, "database pool workers", mode="keyword", limit=10)
    assert len(keys(results)) == len(set(keys(results)))
    by_key = {h.key: h for h in results}
    assert "obs:UPOOL" in by_key and "doc:notes:guide/deploy.md" in by_key
    obs = by_key["obs:UPOOL"]
    assert (obs.kind, obs.uid, obs.obs_id, obs.collection) == ("observation", "UPOOL", 2, "memories")
    doc = by_key["doc:notes:guide/deploy.md"]
    assert doc.kind == "document" and len(doc.docid) == 6 and doc.line >= 1
    assert all(0.0 <= h.score <= 1.0 for h in results)
    assert "keyword" in obs.signals and obs.signals["keyword"].rank >= 1


def test_metadata_filters_are_pushed_down_and_exclude_documents_without_the_field(corpus):
    def found(**filters):
        return sorted(h.uid or h.key for h in hybrid(corpus, "pool database jwt parser deploy", mode="hybrid",
                                                     filters=filters, limit=20))  # fmt: skip

    everything = found()
    assert "doc:notes:guide/deploy.md" in everything and len(everything) == 4
    # a project scopes memories; a user's collection has no project and stays in (docs/retrieval.md)
    assert found(project="webapp") == ["UJWT", "UPOOL", "doc:notes:guide/deploy.md"]
    assert found(types=["bugfix", "feature"]) == ["UJWT", "UPARSE"]
    assert found(agent="claude") == ["UPOOL"]
    assert found(session="s1") == ["UJWT"]
    assert found(concepts=["JWT"]) == ["UJWT"]
    assert found(concepts=["jwt", "db"]) == []
    assert found(since=1_770_000_000_000) == ["UPARSE", "UPOOL"]  # 2026-02-02
    assert found(until=1_770_000_000_000) == ["UJWT"]
    assert found(collections=["notes"]) == ["doc:notes:guide/deploy.md"]
    assert hybrid(corpus, "pool", mode="hybrid", collections=["memories"], limit=20)[0].uid == "UPOOL"


def test_camel_case_parts_of_identifiers_are_searchable(corpus):
    assert keys(hybrid(corpus, "observations", mode="keyword"))[:1] == ["obs:UPARSE"]


def test_a_question_naming_a_month_finds_the_memory_of_that_month(config):
    # Two memories in the same words (a tie would put UEARLY first); "June 2023" is only in ULATE's date.
    for n, (uid, when) in enumerate(
        [("UEARLY", "2023-05-20T10:00:00.000Z"), ("ULATE", "2023-06-27T10:00:00.000Z")]
    ):
        observation_file(
            config.export_dir, f"p/{uid}.md", uid=uid, obs_id=n + 1, title="Went camping with the kids",
            body="We camped by the lake.", created_at=when,
        )  # fmt: skip
    index_all(config)
    assert keys(hybrid(config, "When did we go camping in June 2023?", mode="keyword")) == [
        "obs:ULATE",
        "obs:UEARLY",
    ]


def test_a_missing_index_degrades_to_the_extra_lists_with_a_note(config):
    results = hybrid(config, "anything", mode="auto", extra_lists={"store": [("obs:U9", 7.5)]})
    assert keys(results) == ["obs:U9"]
    assert results[0].uid == "U9" and results[0].kind == "observation"
    assert any("cmem index" in note for note in results.notes)


def test_search_does_not_wait_for_a_writer_holding_the_index(corpus):
    writer = apsw.Connection(str(corpus.index_path))
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM settings")
    try:
        results = hybrid(corpus, "jwt expiry", mode="keyword")
        assert keys(results)[0] == "obs:UJWT"
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_damaged_index_degrades_instead_of_failing(config):
    config.index_path.write_bytes(b"this is not a database" * 100)
    results = hybrid(config, "jwt", mode="hybrid", extra_lists={"store": [("obs:U1", 3.0)]})
    assert keys(results) == ["obs:U1"]
    assert results.notes


def test_extra_lists_merge_with_index_hits_by_key(corpus):
    results = hybrid(corpus, "jwt expiry", mode="keyword", extra_lists={"store": [("obs:UJWT", 12.0)]})
    top = results[0]
    assert top.key == "obs:UJWT" and set(top.signals) == {"keyword", "store"}
    assert top.path == "webapp/s1/jwt.md"


def test_auto_mode_uses_vectors_only_when_the_index_has_them(config):
    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha", body="alpha")
    index_all(config)  # no model: keyword-only index
    results = hybrid(config, "alpha", mode="auto")
    assert results.mode == "keyword" and keys(results) == ["obs:U1"]


def test_explicit_vector_mode_without_a_model_is_a_clear_error(config):
    from cmem_cli.core.errors import ModelError

    observation_file(config.export_dir, "p/a.md", uid="U1", title="Alpha", body="alpha")
    index_all(config)
    with pytest.raises(ModelError):
        hybrid(config, "alpha", mode="vector")


# -- fusion ---------------------------------------------------------------------------------------------
def test_fusion_scores_are_calibrated_0_to_1_and_agreement_ranks_first():
    fused = fuse(
        {"keyword": [("a", 20.0), ("b", 5.0)], "vector": [("b", 0.8), ("a", 0.7), ("c", 0.6)]},
    )
    assert [h.key for h in fused][:2] in (["a", "b"], ["b", "a"])
    assert all(0.0 <= h.score <= 1.0 for h in fused)
    assert fused[-1].key == "c"
    assert fused[0].signals["keyword"].rank in (1, 2)


def test_a_confident_keyword_match_is_not_dragged_down_by_a_weak_vector_signal():
    # BM25 finds "exact" matching nearly all of the query's information; the small model's vectors miss it
    # and weakly prefer "v1", which BM25 also ranks, far behind. Rank fusion promotes "v1" for being in both.
    lists = {"keyword": [("exact", 9.0), ("v1", 1.0), ("x2", 0.8)], "vector": [("v1", 0.41), ("v2", 0.40)]}
    signals = {"keyword": Signal(KEYWORD, idf_sum=10.0), "vector": Signal(VECTOR)}
    assert fuse(lists, signals)[0].key == "exact"
    assert _reciprocal_rank_fusion(lists)[0] != "exact"


def _reciprocal_rank_fusion(lists: dict[str, list[tuple[str, float]]], k: float = 60.0) -> list[str]:
    """Plain RRF, the baseline (bench/retrieval.py's ``rrf`` mode): ranks only, scores thrown away."""
    total: dict[str, float] = {}
    for items in lists.values():
        for rank, (key, _) in enumerate(items, 1):
            total[key] = total.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(total, key=lambda key: (-total[key], key))


def test_keyword_scores_are_absolute_so_a_partial_match_of_a_long_query_scores_low():
    # the same raw BM25: all of a short query's information, or a sliver of a long dialogue's
    short = fuse({"keyword": [("a", 8.0)]}, {"keyword": Signal(KEYWORD, idf_sum=8.0)})[0]
    long = fuse({"keyword": [("a", 8.0)]}, {"keyword": Signal(KEYWORD, idf_sum=120.0)})[0]
    assert short.score > 0.6
    assert long.score < 0.1


def test_same_kind_lists_count_once_and_an_extra_list_is_anchored_to_the_index_scale():
    params = FusionParams()
    signals = {"keyword": Signal(KEYWORD, idf_sum=20.0)}
    both = fuse({"keyword": [("a", 6.0)], "store": [("a", 60.0), ("c", 30.0)], "vector": [("b", 0.9)]},
                signals, params=params)  # fmt: skip
    one = fuse({"keyword": [("a", 6.0)], "vector": [("b", 0.9)]}, signals, params=params)
    score = {h.key: h.score for h in both}
    assert score["a"] == pytest.approx({h.key: h.score for h in one}["a"])
    # The store's raw BM25 scale does not matter: its best hit takes the index's strength (raw 6 at an IDF
    # sum of 20), and "c", at half the store's best, scores as a raw 3 would in the index.
    expected = params.keyword_weight * (1 - math.exp(-3.0 / (params.keyword_scale * 20.0)))
    assert score["c"] == pytest.approx(expected)


# -- the relative order (issue 10): each list's standardised scores, weighted by its decisiveness ----------
FLAT_KEYWORD = [(f"k{i}", 5.0 - 0.05 * i) for i in range(12)]  # common words matched everywhere alike
SHARP_VECTOR = [("v1", 0.9)] + [(f"x{i}", 0.35 - 0.01 * i) for i in range(12)]  # one clear neighbour


def _two_kinds(keyword: list[tuple[str, float]], vector: list[tuple[str, float]], **kw: object) -> list:
    signals = {"keyword": Signal(KEYWORD, idf_sum=5.0), "vector": Signal(VECTOR)}
    return fuse({"keyword": keyword, "vector": vector}, signals, **kw)  # type: ignore[arg-type]


def test_a_decisive_vector_list_outranks_a_flat_keyword_list():
    # On absolute scales BM25's flat list wins (a question against code matching "python", "how", "list");
    # relative to each list's crowd only the vectors single a hit out.
    assert max(_two_kinds(FLAT_KEYWORD, SHARP_VECTOR), key=lambda h: h.score).key == "k0"
    assert _two_kinds(FLAT_KEYWORD, SHARP_VECTOR)[0].key == "v1"


def test_a_decisive_keyword_list_outranks_flat_vectors():
    # Raw chat turns: a name BM25 finds in one turn, cosines all alike.
    sharp_keyword = [("name", 9.0)] + [(f"k{i}", 2.0 - 0.05 * i) for i in range(12)]
    flat_vector = [(f"v{i}", 0.62 - 0.002 * i) for i in range(12)] + [("name", 0.3)]
    assert _two_kinds(sharp_keyword, flat_vector)[0].key == "name"


def test_decisiveness_looks_past_a_flat_head_to_the_rest_of_the_list():
    # Ten turns name the person asked about (BM25 alike among them, far above the forty that share a common
    # word); the cosines decline evenly. Measured against the tenth hit the keyword list looks flat and the
    # vectors decide; against the fiftieth, the keyword list's head stands out and it decides.
    named = [(f"n{i}", 9.0 - 0.01 * i) for i in range(10)] + [(f"k{i}", 1.0) for i in range(40)]
    even = [(f"v{i}", 0.62 - 0.001 * i) for i in range(50)]
    assert DEFAULT_PARAMS.decisive_at == 50
    assert _two_kinds(named, even)[0].key == "n0"
    assert _two_kinds(named, even, params=DEFAULT_PARAMS._replace(decisive_at=10))[0].key == "v0"


def test_the_relative_order_keeps_the_calibrated_scores_so_the_cut_off_means_the_same():
    relative = {h.key: h.score for h in _two_kinds(FLAT_KEYWORD, SHARP_VECTOR)}
    keyword = {key: keyword_norm(raw, 5.0) for key, raw in FLAT_KEYWORD}
    vector = {key: vector_norm(raw) for key, raw in SHARP_VECTOR}
    p = DEFAULT_PARAMS
    evidence = {key: p.keyword_weight * keyword.get(key, 0.0) + p.vector_weight * vector.get(key, 0.0)
                for key in relative}  # fmt: skip
    assert relative == pytest.approx(evidence)
    assert [h.key for h in _two_kinds(FLAT_KEYWORD, SHARP_VECTOR)][0] != max(
        evidence, key=evidence.__getitem__
    )


def test_one_kind_of_list_keeps_the_evidence_order():
    lists = {"keyword": [("a", 3.0), ("b", 2.0)], "store": [("b", 40.0), ("c", 1.0)], "vector": []}
    signals = {"keyword": Signal(KEYWORD, idf_sum=6.0), "vector": Signal(VECTOR)}
    hits = fuse(lists, signals)
    assert [h.key for h in hits] == [h.key for h in sorted(hits, key=lambda h: (-h.score, h.key))]


def test_hits_past_the_first_hundred_do_not_change_the_head():
    # `--all` asks every retriever for every hit; the head must stay what the default page shows.
    keyword = [(f"k{i}", 10.0 / (1 + i)) for i in range(100)]
    vector = [(f"v{i}", 0.8 - 0.004 * i) for i in range(100)]
    tail_keyword = keyword + [(f"t{i}", 0.01) for i in range(400)]
    tail_vector = vector + [(f"u{i}", 0.05) for i in range(400)]
    head = [h.key for h in _two_kinds(keyword, vector)[:10]]
    assert [h.key for h in _two_kinds(tail_keyword, tail_vector)[:10]] == head


def test_the_store_list_is_a_second_view_of_the_words_averaged_with_the_index_list():
    # The store's BM25 over the same observations: a keyword hit both views put far above their crowd
    # outranks one only the index's flat list prefers.
    signals = {"keyword": Signal(KEYWORD, idf_sum=5.0), "vector": Signal(VECTOR)}
    flat_vector = [(f"v{i}", 0.5 - 0.001 * i) for i in range(12)]
    store = [("k5", 60.0)] + [(f"s{i}", 5.0) for i in range(12)]
    alone = [h.key for h in fuse({"keyword": FLAT_KEYWORD, "vector": flat_vector}, signals)]
    both = [h.key for h in fuse({"keyword": FLAT_KEYWORD, "store": store, "vector": flat_vector}, signals)]
    assert alone[0] == "k0"
    assert both[0] == "k5"


class _FakeReranker:
    """Prefers documents mentioning 'rollback'; records how many candidates it was given."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def score(self, query: str, docs: list[str]) -> list[float]:
        self.calls.append(len(docs))
        return [0.99 if "Roll back" in doc or "rollback" in doc.lower() else 0.01 for doc in docs]


def test_reranking_reorders_only_the_top_candidates_when_a_reranker_is_configured(corpus, monkeypatch):
    fake = _FakeReranker()
    monkeypatch.setattr("cmem_index.loading.load_reranker", lambda cfg: (fake, None))
    corpus.rerank_model = "fake.gguf"
    plain = hybrid(corpus, "database pool workers", mode="keyword", rerank=False)
    assert "rerank" not in plain[0].signals and fake.calls == []
    reranked = hybrid(corpus, "database pool workers", mode="keyword")
    assert fake.calls and max(fake.calls) <= 20
    assert reranked[0].key == "doc:notes:guide/deploy.md" and "rerank" in reranked[0].signals
    corpus.rerank_model = None
    assert "rerank" not in hybrid(corpus, "database pool workers", mode="keyword")[0].signals


def test_a_query_no_keyword_list_matches_gets_no_keyword_credit():
    # A nonsense query: BM25 finds nothing, the vectors still return their nearest neighbours. The hybrid
    # score must not rescale the vector part up to 1 (that let fillers pass the evidence cut-off).
    lists = {"keyword": [], "vector": [("n1", 0.25)]}
    signals = {"keyword": Signal(KEYWORD, idf_sum=None), "vector": Signal(VECTOR)}
    hybrid_score = fuse(lists, signals)[0].score
    vector_only = fuse({"vector": [("n1", 0.25)]})[0].score
    assert hybrid_score == pytest.approx(DEFAULT_PARAMS.vector_weight * vector_only)
    assert hybrid_score < default_cutoff("hybrid")
    assert vector_only < default_cutoff("vector")
    assert default_cutoff("keyword") == 0.0


def test_a_query_scores_the_same_in_every_process(corpus):
    """The query's IDF sum scales every keyword score; summed in set order, it differed in the last bit
    from one process to the next (string hashing is salted), and two tied hits swapped places."""
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from cmem_index.retrieve import query_idf\n"
        "from cmem_index.store import IndexStore\n"
        "store = IndexStore.open(Path(sys.argv[1]), readonly=True)\n"
        "print(repr(query_idf(store, sys.argv[2])))\n"
    )
    query = (
        "jwt expiry tokens seconds database pool workers parser camelCase deploy rollback migrate api zebra"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", script, str(corpus.index_path), query],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(6)
    }
    assert len(seen) == 1, seen


def test_keyword_search_ranked_in_the_full_text_index_alone_finds_what_ranking_by_document_finds(
    config, tmp_path, monkeypatch
):
    from cmem_index import retrieve
    from cmem_index.retrieve import DocFilters

    notes = tmp_path / "notes"
    # a long document whose sections all say "pool" (its chunks fill the first head: the search asks deeper)
    parts = [
        f"## Part {i}\n\n" + ("pool " * (i + 2) + "worker queue drains slowly. ") * 60 for i in range(12)
    ]
    write(notes, "long.md", "# Long\n\n" + "\n\n".join(parts))
    for i in range(15):
        write(notes, f"short{i}.md", f"# Note {i}\n\n" + "pool " * (i + 1) + "other words here. " * (20 - i))
    add_collection(config, str(notes), name="notes")
    for i in range(6):  # memories, left out by a filter on the notes
        observation_file(config.export_dir, f"p/s/m{i}.md", uid=f"M{i}", obs_id=i + 1, title=f"Pool {i}",
                         body="pool " * (i + 3) + "and the queue.", type="change", created_at="2026-01-10T00:00:00.000Z")  # fmt: skip
    index_all(config)
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        long_chunks = index_value(
            store,
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = 'long.md'",
        )
        assert long_chunks >= 8
        for filters, matching in ((DocFilters(), 22), (DocFilters(collections=["notes"]), 16)):
            for limit in (1, 2, 3, 5, 16, 100):
                in_fts = retrieve.keyword(store, "pool", filters, limit)
                with monkeypatch.context() as m:
                    m.setattr(retrieve, "RANK_ALONE", 0)  # every search ranks by document, joined first
                    by_document = retrieve.keyword(store, "pool", filters, limit)
                assert [(h.doc_id, h.chunk_id, h.score) for h in in_fts] == [
                    (h.doc_id, h.chunk_id, h.score) for h in by_document
                ]
                assert len(in_fts) == min(limit, matching)
    finally:
        store.close()
