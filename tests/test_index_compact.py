"""Compact vectors: past COMPACT_ABOVE vectors a search ranks one bit per dimension, then re-ranks the head
exactly. With real all-MiniLM-L6-v2 vectors, on a fixed set, it must find what exact search finds."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmem_index import retrieve
from cmem_index.hybrid import embed_search_query, hybrid
from cmem_index.loading import load_embedder
from cmem_index.retrieve import DocFilters
from cmem_index.store import IndexStore
from tests.index_helpers import index_rows, index_value, indexed_with_model, observation_file

COMPONENTS = ["login form", "payment webhook", "search index", "image resizer", "nightly backup",
              "email sender", "CSV export", "settings page", "job queue", "mobile app"]  # fmt: skip
PROBLEMS = [
    "times out under load", "leaks memory until it crashes", "shows the wrong currency",
    "loses data after a restart", "is slow on large accounts", "fails for names with accents",
    "sends duplicates twice a day", "ignores the dark theme", "breaks after the database upgrade",
    "logs secrets in plain text", "rejects valid dates", "hangs when the disk is full",
]  # fmt: skip
QUERIES = [
    "sign-in page stops responding when many users arrive",
    "card payment callback charges the customer in euros instead of dollars",
    "thumbnail generator eats RAM",
    "backups vanish when the server reboots",
    "newsletter goes out two times",
    "spreadsheet download chokes on accented names",
    "task workers stuck because storage ran out",
    "phone app colours wrong at night",
]


def _documents() -> list[tuple[str, str]]:
    return [
        (f"U{i:03d}{j:02d}", f"The {c} {p}") for i, c in enumerate(COMPONENTS) for j, p in enumerate(PROBLEMS)
    ]


@pytest.fixture(scope="module")
def compact_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("compact") / "home"
    for n, (uid, title) in enumerate(_documents(), 1):
        observation_file(home / "export", f"p/s/{uid}.md", uid=uid, obs_id=n, title=title, body="")
    return home


@pytest.fixture
def config(compact_home: Path, minilm_gguf: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(retrieve, "COMPACT_ABOVE", 10)  # the 120 documents count as a large index
    return indexed_with_model(compact_home, minilm_gguf, monkeypatch)


def _nearest(config, query: str, k: int) -> tuple[list[int], list[int]]:
    embedder, _ = load_embedder(config)
    vector = embed_search_query(embedder, query)
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        assert retrieve.uses_compact_vectors(store)
        exact = retrieve.exact_nearest(store, vector, DocFilters(), k)
        compact = retrieve.compact_nearest(store, vector, DocFilters(), k)
    finally:
        store.close()
    return [row[0] for row in exact], [row[0] for row in compact]


@pytest.mark.parametrize("query", QUERIES)
def test_bits_then_exact_reranking_finds_the_exact_top_hit(config, monkeypatch, query):
    monkeypatch.setattr(retrieve, "COMPACT_HEAD", 12)  # the bits choose 12 of 120 chunks for re-ranking
    exact, compact = _nearest(config, query, k=1)
    assert compact == exact


def test_a_head_as_large_as_the_index_gives_exactly_the_exact_ranking(config, monkeypatch):
    monkeypatch.setattr(retrieve, "COMPACT_HEAD", 500)
    embedder, _ = load_embedder(config)
    vector = embed_search_query(embedder, QUERIES[0])
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        exact = retrieve.exact_nearest(store, vector, DocFilters(), 120)
        compact = retrieve.compact_nearest(store, vector, DocFilters(), 120)
    finally:
        store.close()
    assert [r[0] for r in compact] == [r[0] for r in exact]
    assert [r[1] for r in compact] == pytest.approx([r[1] for r in exact], abs=1e-6)


def test_search_uses_bits_past_the_limit_and_exact_vectors_below_it(config, monkeypatch):
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        assert store.vectors.count() == len(_documents())
        assert store.vectors.bits_center() is not None
    finally:
        store.close()
    monkeypatch.setattr(retrieve, "COMPACT_HEAD", 12)
    top = hybrid(config, QUERIES[2], mode="vector", limit=1)
    assert top[0].title == "The image resizer leaks memory until it crashes"
    monkeypatch.setattr(retrieve, "COMPACT_ABOVE", 10_000)
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        assert not retrieve.uses_compact_vectors(store)
    finally:
        store.close()


def test_incremental_indexing_keeps_the_bits_in_step(config, minilm_gguf, monkeypatch):
    export = config.export_dir
    observation_file(export, "p/s/NEW.md", uid="UNEW", obs_id=999, title="The kitchen oven burns bread")
    (export / "p/s/U00000.md").unlink()
    config = indexed_with_model(config.home, minilm_gguf, monkeypatch)
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        vectors = index_value(store, "SELECT count(*) FROM chunks WHERE embedded_with IS NOT NULL")
        bits = [r[0] for r in index_rows(store, "SELECT rowid FROM chunk_bits")]
        chunks = [r[0] for r in index_rows(store, "SELECT id FROM chunks WHERE embedded_with IS NOT NULL")]
        assert sorted(bits) == sorted(chunks) and vectors == len(_documents())
        assert store.vectors.count() == vectors
    finally:
        store.close()
    monkeypatch.setattr(retrieve, "COMPACT_HEAD", 12)
    exact, compact = _nearest(config, "bread burnt in the oven", k=1)
    assert compact == exact
    top = hybrid(config, "bread burnt in the oven", mode="vector", limit=1)
    assert top[0].uid == "UNEW"


def test_bits_kept_by_sqlite_vec_before_are_searched_exactly_and_built_again_by_the_next_index_run(
    config, minilm_gguf, monkeypatch
):
    store = IndexStore.open(config.index_path)
    try:  # the layout of the index's first compact vectors: a sqlite-vec bit[] table
        with store.transaction():
            store.conn.execute("DROP TABLE chunk_bits")
            store.conn.execute("CREATE VIRTUAL TABLE chunk_bits USING vec0(embedding bit[384])")
    finally:
        store.close()
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        assert not retrieve.uses_compact_vectors(store)
    finally:
        store.close()
    config = indexed_with_model(config.home, minilm_gguf, monkeypatch)
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        assert retrieve.uses_compact_vectors(store)
        assert index_value(store, "SELECT count(*) FROM chunk_bits") == store.vectors.count()
    finally:
        store.close()
    monkeypatch.setattr(retrieve, "COMPACT_HEAD", 12)
    exact, compact = _nearest(config, QUERIES[3], k=1)
    assert compact == exact
