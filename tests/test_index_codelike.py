"""Telling code from prose, and what it changes in hybrid search: keyword matches a question in words makes
against code count less; an identifier in the question keeps them at full weight."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmem_cli.core.config import load_config
from cmem_index import hybrid as index_search
from cmem_index.codelike import code_share, identifier_words, is_code, names_identifier
from cmem_index.collections import add_collection
from cmem_index.fusion import DEFAULT_PARAMS, KEYWORD, VECTOR, Signal, fuse
from cmem_index.hybrid import hybrid
from cmem_index.indexer import embedding_input
from tests.index_helpers import CountingEmbedder, index_for_search, write

FUNCTION = '''def file_exists(path):
    """Whether a regular file is there."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode)
'''
PROSE = (
    "Tokens expired one hour early because the expiry was compared in seconds, not milliseconds. "
    "Fixed the check in the auth middleware (see the JWT notes) and added a test for it."
)


def test_code_is_told_from_prose_and_from_a_memory_that_mentions_a_name():
    assert is_code(FUNCTION)
    assert not is_code(PROSE)
    assert not is_code("Fixed the expiry check in cmem_cli/core/config.py after the review. " * 3)
    assert not is_code("")
    assert code_share([FUNCTION, PROSE, FUNCTION, PROSE]) == 0.5
    assert code_share([]) == 0.0


@pytest.mark.parametrize(
    "query", ["max_age doubled", "os.path.exists", "parseArgs fails", "why does run() hang", "self.cv"]
)
def test_a_query_naming_an_identifier_is_recognised(query):
    assert names_identifier(query)


@pytest.mark.parametrize(
    "query", ["python check if file exists", "When did Caroline go camping?", "version 3.11 release"]
)
def test_a_question_in_words_names_no_identifier(query):
    assert not names_identifier(query)


def _two_kinds(code_share_of_keywords: float) -> list[str]:
    # Both lists single one hit out about equally; the keyword list is a little more decisive.
    keyword = [("k0", 12.0)] + [(f"k{i}", 3.0 - 0.01 * i) for i in range(1, 60)]
    vector = [("v0", 0.80)] + [(f"v{i}", 0.45 - 0.001 * i) for i in range(1, 60)]
    signals = {"keyword": Signal(KEYWORD, 5.0, code_share_of_keywords), "vector": Signal(VECTOR)}
    return [h.key for h in fuse({"keyword": keyword, "vector": vector}, signals)]


def test_keyword_matches_in_code_count_less_so_the_vectors_decide():
    assert _two_kinds(0.0)[0] == "k0"
    assert _two_kinds(1.0)[0] == "v0"
    assert DEFAULT_PARAMS.code_keyword < 1.0


def test_the_discount_leaves_the_calibrated_scores_alone():
    def scores(share: float) -> dict[str, float]:
        keyword = [("k0", 12.0), ("k1", 3.0)]
        signals = {"keyword": Signal(KEYWORD, 5.0, share), "vector": Signal(VECTOR)}
        return {h.key: h.score for h in fuse({"keyword": keyword, "vector": [("v0", 0.8)]}, signals)}

    assert scores(1.0) == scores(0.0)  # what --min-score and the cut-off read does not move


@pytest.fixture
def code_home(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = load_config()
    config.ensure_home()
    code = tmp_path / "code"
    write(code, "exists.md", "# file_exists\n\n```python\n" + FUNCTION + "```\n")
    write(code, "size.md", "# file_size\n\n```python\ndef file_size(path):\n    info = os.stat(path)\n"
          "    return info.st_size if info else 0\n```\n")  # fmt: skip
    write(code, "notes.md", "# Auth notes\n\n" + PROSE + "\n")
    add_collection(config, str(code), name="code")
    index_for_search(config, CountingEmbedder(), monkeypatch)
    return config


def _signals_seen(config, query: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Signal]:
    seen: dict[str, Signal] = {}
    real = index_search.fuse

    def recording(lists, signals=None, **kwargs):
        seen.update(signals or {})
        return real(lists, signals, **kwargs)

    monkeypatch.setattr(index_search, "fuse", recording)
    hybrid(config, query, mode="hybrid")
    return seen


def test_hybrid_search_reads_the_keyword_hits_text_for_a_question_in_words(code_home, monkeypatch):
    signals = _signals_seen(code_home, "is the file there", monkeypatch)
    assert signals[KEYWORD].code_share == 1.0  # both hits are code
    prose = _signals_seen(code_home, "tokens expired early", monkeypatch)
    assert prose[KEYWORD].code_share == 0.0
    named = _signals_seen(code_home, "file_exists returns false", monkeypatch)
    assert named[KEYWORD].code_share == 0.0  # an identifier matched exactly is full evidence


def test_keyword_search_alone_does_not_read_the_hits_text(code_home, monkeypatch):
    signals = {}
    real = index_search.fuse
    monkeypatch.setattr(
        index_search, "fuse", lambda lists, s=None, **kw: signals.update(s or {}) or real(lists, s, **kw)
    )
    hybrid(code_home, "is the file there", mode="keyword")
    assert signals[KEYWORD].code_share == 0.0


@pytest.mark.parametrize(
    ("title", "words"),
    [
        ("is_iterable_but_not_string", "is iterable but not string"),
        ("parseArgs", "parse args"),
        ("_read_stream_for_size", "read stream for size"),
        ("HTTPServer_start", "http server start"),
        ("average", None),  # a plain word: nothing to spell out
        ("Fix the JWT expiry check", None),  # a sentence
        ("os.path.join", None),  # not one identifier
    ],
)
def test_a_title_that_is_one_identifier_is_spelled_out_as_words(title, words):
    assert identifier_words(title) == words


def test_the_embedder_sees_a_function_name_also_as_words():
    context, text = embedding_input("is_iterable", "is_iterable", "def is_iterable(x): ...")
    assert context == "is_iterable (is iterable)"
    assert text == "def is_iterable(x): ..."
    assert embedding_input("Fix login", "Fix login", "body")[0] == "Fix login"
