"""Hybrid search with a real model (all-MiniLM-L6-v2 as GGUF): meaning is found without shared words."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmem_index.hybrid import hybrid, model_reads
from cmem_index.loading import load_embedder
from tests.index_helpers import indexed_with_model, observation_file, stored_vector

MEMORIES = [
    (
        "UJWT",
        "Fix JWT expiry check",
        "Tokens expired one hour early because exp is in seconds, not ms.",
        "bugfix",
    ),
    (
        "UPOOL",
        "Database connection pool exhausted",
        "Raised the pool size after Postgres refused clients.",
        "bugfix",
    ),
    ("UCI", "Upgrade the CI pipeline to Node 22", "The build matrix now runs the newer runtime.", "change"),
    (
        "UDARK",
        "Dark theme colours for the settings page",
        "Contrast ratios checked for accessibility.",
        "feature",
    ),
    (
        "ULEAK",
        "Image resizer kept every decoded bitmap",
        "A cache that was never cleared grew without bound.",
        "bugfix",
    ),
    (
        "UIDX",
        "Slow listing: add an index on created_at",
        "The timeline query scanned the whole table.",
        "change",
    ),
    (
        "UPARSE",
        "Parser handles getObservationsByIds",
        "Identifiers in camelCase are split for search.",
        "feature",
    ),
]


@pytest.fixture(scope="module")
def semantic_home(tmp_path_factory: pytest.TempPathFactory, minilm_gguf: Path) -> Path:
    home = tmp_path_factory.mktemp("semantic") / "home"
    for i, (uid, title, body, kind) in enumerate(MEMORIES, 1):
        observation_file(
            home / "export", f"webapp/s/{uid}.md", uid=uid, obs_id=i, title=title, body=body, type=kind
        )
    return home


@pytest.fixture
def config(semantic_home: Path, minilm_gguf: Path, monkeypatch: pytest.MonkeyPatch):
    return indexed_with_model(semantic_home, minilm_gguf, monkeypatch)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("login sessions ending too soon", "UJWT"),
        ("program uses more and more RAM until it crashes", "ULEAK"),
        ("night mode palette for preferences screen", "UDARK"),
    ],
)
def test_a_query_sharing_no_words_finds_the_memory_by_meaning(config, query, expected):
    assert [h.uid for h in hybrid(config, query, mode="keyword")][:1] != [expected]
    results = hybrid(config, query, mode="hybrid", limit=3)
    assert results.mode == "hybrid"
    assert results[0].uid == expected
    assert "vector" in results[0].signals


def test_auto_mode_is_hybrid_once_vectors_exist(config):
    results = hybrid(config, "database refused connections", mode="auto")
    assert results.mode == "hybrid" and results[0].uid == "UPOOL"


def test_an_exact_identifier_match_stays_on_top_in_hybrid_mode(config):
    results = hybrid(config, "getObservationsByIds", mode="hybrid", min_score=0.0)
    assert results[0].uid == "UPARSE"
    assert results[0].score > results[1].score
    # with the default cut-off the memories that merely sit nearest in vector space are gone
    assert [h.uid for h in hybrid(config, "getObservationsByIds", mode="hybrid")] == ["UPARSE"]


def test_front_matter_alone_never_outranks_content(config):
    # Every file's front matter says "project: webapp" and "agent: cli"; the body of none of them does.
    results = hybrid(config, "webapp cli agent project", mode="hybrid", limit=7)
    assert all(h.snippet and "agent:" not in h.snippet for h in results)


def test_a_multi_line_query_scores_by_the_mean_cosine_of_the_whole_and_its_last_line(config):

    query = "We changed the colours of the settings page.\nWhy did login tokens expire an hour early?"
    results = hybrid(config, query, mode="vector", limit=3)
    assert results[0].uid == "UJWT"
    embedder, _ = load_embedder(config)
    doc = stored_vector(config, "UJWT")
    whole = float(doc @ embedder.embed_query(query))
    last = float(doc @ embedder.embed_query(query.splitlines()[-1]))
    assert results[0].signals["vector"].raw == pytest.approx((whole + last) / 2, abs=1e-4)


@pytest.mark.parametrize("nonsense", ["zzzqqqxx", "qwxzv bnmlk", "xyzzy plugh", "1234567890"])
def test_a_query_of_words_the_model_does_not_know_finds_nothing_when_no_word_occurs(
    config, nonsense, monkeypatch
):
    # Even with the neighbourhood margin and the cut-off off, which let every nearest neighbour through:
    # a word the model spells out piece by piece carries no meaning, so its neighbours are not evidence.
    monkeypatch.setattr("cmem_index.hybrid.stands_out", lambda cosines: -1.0)
    monkeypatch.setattr("cmem_index.hybrid.default_cutoff", lambda mode: 0.0)
    assert list(hybrid(config, nonsense, mode="hybrid")) == []
    assert list(hybrid(config, nonsense, mode="vector")) == []
    assert [h.uid for h in hybrid(config, "login sessions ending too soon")][:1] == ["UJWT"]


def test_the_model_reads_real_words_and_not_spelled_out_ones(config):
    embedder, _ = load_embedder(config)
    assert embedder is not None
    pieces = embedder.count_tokens
    for known in ("login sessions ending too soon", "night mode palette", "foo bar baz", "日本語の文章"):
        assert model_reads(pieces, known), known
    for unknown in ("zzzqqqxx", "fjdksla qpwoeiru zmxncb", "ooooooo", "1234567890"):
        assert not model_reads(pieces, unknown), unknown
