"""A word that splits the memories searched (a speaker's name in a two-person chat) is left out of the query
the embedder sees; keyword search still matches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmem_cli.services.read.search_pipeline import signals_json
from cmem_index.fusion import VECTOR, Signal, fuse, vector_norm
from cmem_index.hybrid import hybrid
from cmem_index.loading import load_embedder
from cmem_index.retrieve import DocFilters
from cmem_index.scope_words import splitting_words, without_words
from cmem_index.store import IndexStore
from tests.index_helpers import indexed_with_model, observation_file, stored_vector

MELANIE = [
    "Melanie appreciates cultivating a loving and accepting environment for her kids",
    "Melanie is currently managing kids and work and finds it overwhelming",
    "Melanie values family time and finds it special",
    "Melanie treasures the memory of her youngest child taking her first steps",
    "Melanie is reading a novel about a lighthouse keeper",
    "Melanie's youngest took her first steps at home",
    "Melanie baked bread with her daughter on Sunday",
    "Melanie plays the clarinet in a community band",
    "Melanie visited her parents at the beach house",
    "Melanie volunteers at the animal shelter on weekends",
    "Melanie bought figurines that remind her of family",
    "Melanie is planning a road trip along the coast",
]
CAROLINE = [
    "Caroline attended a council meeting for adoption last Friday and found it inspiring and emotional",
    "Caroline joined an LGBTQ support group in her town",
    "Caroline is studying to become a school counsellor",
    "Caroline received a necklace from her grandmother in Sweden",
    "Caroline gave a talk at her school about transgender rights",
    "Caroline went hiking with friends from her support group",
    "Caroline adopted a cat from a neighbour",
    "Caroline wrote a letter to her younger self",
    "Caroline started learning the guitar",
    "Caroline marched in the pride parade downtown",
    "Caroline is researching adoption agencies",
    "Caroline painted a mural with her art class",
]
WORK = [f"Build step {n}: the linter found {n} unused imports in module_{n}" for n in range(50)]


def _home(root: Path) -> Path:
    home = root / "home"
    memories = [("chat", text) for text in MELANIE + CAROLINE] + [("work", text) for text in WORK]
    for i, (project, text) in enumerate(memories, 1):
        uid = f"U{i:03d}"
        observation_file(
            home / "export", f"{project}/s/{uid}.md", uid=uid, obs_id=i, title=text, project=project
        )
    return home


@pytest.fixture(scope="module")
def chat_home(tmp_path_factory: pytest.TempPathFactory, minilm_gguf: Path) -> Path:
    return _home(tmp_path_factory.mktemp("scope-words"))


@pytest.fixture
def config(chat_home: Path, minilm_gguf: Path, monkeypatch: pytest.MonkeyPatch):
    return indexed_with_model(chat_home, minilm_gguf, monkeypatch)


def _split(config, query: str, **filters) -> set[str]:
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        return splitting_words(store, query, DocFilters.coerce(filters or None))
    finally:
        store.close()


def test_a_name_in_half_the_chat_splits_it_but_not_the_whole_index(config):
    assert _split(config, "What did Melanie see at the council meeting?", project="chat") == {"melanie"}
    # over every memory (24 of 74 are the chat) the name is in 12 of 74 chunks: below the share
    assert _split(config, "What did Melanie see at the council meeting?") == set()


def test_a_word_too_common_in_the_whole_index_is_not_counted_within_a_scope(config, monkeypatch):
    monkeypatch.setattr("cmem_index.scope_words.COUNT_UP_TO", 11)  # the name is in 12 chunks in all
    assert _split(config, "What did Melanie see at the council meeting?", project="chat") == set()
    monkeypatch.setattr("cmem_index.scope_words.COUNT_UP_TO", 12)
    assert _split(config, "What did Melanie see at the council meeting?", project="chat") == {"melanie"}


def test_a_word_in_almost_every_memory_searched_is_kept(config):
    # "unused" and "imports" are in every memory of the work project: they shape how each one reads
    assert _split(config, "unused imports in module_3", project="work") == set()


def test_a_scope_too_small_for_a_share_has_no_splitting_words(config, monkeypatch):
    monkeypatch.setattr("cmem_index.scope_words.MIN_CHUNKS", 25)  # the chat has 24 memories
    assert _split(config, "What did Melanie see at the council meeting?", project="chat") == set()


def test_the_embedder_is_not_led_by_the_name(config, monkeypatch):
    query = "What did Melanie see at the council meeting for adoption?"
    found = hybrid(config, query, mode="vector", limit=3, filters={"project": "chat"})
    assert found[0].uid == "U013"  # Caroline's council meeting, though the question names Melanie
    monkeypatch.setattr("cmem_index.scope_words.splitting_words", lambda *args: set())
    led = hybrid(config, query, mode="vector", limit=3, filters={"project": "chat"})
    assert led[0].uid != "U013"  # with the name embedded, one of Melanie's memories comes first


def test_without_words_drops_the_word_and_its_possessive_and_keeps_lines():
    assert without_words("What did Melanie's kids bake?", {"melanie"}) == "What did kids bake?"
    assert without_words("Ask Lisa\nwhat Lisa won", {"lisa"}) == "Ask\nwhat won"
    assert without_words("Is it Melanie?", {"melanie"}) == "Is it Melanie?"  # nothing but stop words left
    assert without_words("Melanie", set()) == "Melanie"


def test_the_evidence_reads_the_whole_query_and_the_order_the_list():
    lists = {"vector": [("a", 0.60), ("b", 0.50)]}
    # found by a query embedded without a word: "b" is nearer the whole query than "a"
    signals = {"vector": Signal(VECTOR, evidence={"a": 0.40, "b": 0.55})}
    hits = fuse(lists, signals)
    assert [h.key for h in hits] == ["a", "b"]  # ordered by the list that was searched
    assert {h.key: round(h.score, 4) for h in hits} == {
        "a": round(vector_norm(0.40), 4),
        "b": round(vector_norm(0.55), 4),
    }


def test_a_search_without_the_name_scores_by_its_cosine_to_the_whole_question(config):
    query = "What did Melanie see at the council meeting for adoption?"
    found = hybrid(config, query, mode="vector", limit=1, filters={"project": "chat"})
    embedder, _ = load_embedder(config)
    whole = float(stored_vector(config, "U013") @ embedder.embed_query(query))
    assert found[0].signals["vector"].raw > whole + 0.05  # the list's own cosine, without the name
    assert found[0].score == pytest.approx(vector_norm(whole), abs=1e-4)
    # --explain shows both: the list's cosine as the score, the whole query's as "whole"
    shown = signals_json(found[0].signals)["vector"]
    assert shown["score"] == pytest.approx(found[0].signals["vector"].raw, abs=1e-5)
    assert shown["whole"] == pytest.approx(whole, abs=1e-4)
