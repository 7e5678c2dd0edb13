"""Ranking the narrow head first (cmem_cli.core.bm25.head): the same page, scores included, as ranking
every match, through FTS5 itself, the store's search and the index's."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import apsw
import pytest

from cmem_cli.core import bm25
from cmem_cli.core.fts import fts_query, query_tokens

TOKENIZER = "porter unicode61 remove_diacritics 2"
COMMON = ["token", "refresh", "race", "worker", "pool", "deadlock", "retry", "backoff"]
RARE = ["".join(letters) for letters in itertools.product("bcdfgk", "aeiou", "lmnrst", "aeiou")][:400]
WEIGHTS = "bm25(t, 5.0, 1.0)"


@pytest.fixture(scope="module")
def table() -> apsw.Connection:
    """3,000 rows of two columns: common words in a tenth of the rows each, the rest rare, varied lengths."""
    conn = apsw.Connection(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='{TOKENIZER}')")
    rng = random.Random(26)
    with conn:
        for _ in range(3_000):
            words = [
                rng.choice(COMMON) if rng.random() < 0.08 else rng.choice(RARE)
                for _ in range(rng.randint(3, 60))
            ]
            conn.execute("INSERT INTO t VALUES (?, ?)", (" ".join(words[:4]), " ".join(words[4:])))
    return conn


def terms(conn: apsw.Connection, query: str) -> bm25.QueryTerms:
    return bm25.query_terms(conn, "t", TOKENIZER, query_tokens(query))


def ranker(conn: apsw.Connection, match: str, want: int, calls: list[bm25.Head | None]):
    def page(narrow: bm25.Head | None) -> bm25.Ranked:
        calls.append(narrow)
        matching, also, more = bm25.narrowed(match, narrow)
        sql = f"SELECT rowid, {WEIGHTS} AS rank FROM t WHERE t MATCH ?{also} ORDER BY rank, rowid LIMIT ?"
        return list(conn.execute(sql, [matching, *more, want]))

    return page


@pytest.mark.parametrize(
    "query",
    ["token refresh race", "deadlock worker pool retry", "retry retrying backoff", "token bala bale race"],
)
@pytest.mark.parametrize("want", [1, 10, 60])
def test_the_narrow_head_gives_the_page_of_every_match(table, monkeypatch, query, want):
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    page = ranker(table, fts_query(query), want, calls := [])
    narrow = bm25.head("t", terms(table, query))
    assert narrow is not None
    assert bm25.ranked_head(page, want, narrow) == page(None)
    assert calls[0] is narrow


@pytest.mark.parametrize("query", ["token refresh race", "deadlock worker pool retry"])
def test_common_words_are_ranked_once_in_the_narrow_head(table, monkeypatch, query):
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    page = ranker(table, fts_query(query), 60, calls := [])
    narrow = bm25.head("t", terms(table, query))
    bm25.ranked_head(page, 60, narrow)
    assert calls == [narrow]


def test_a_head_that_cannot_prove_its_page_ranks_every_match(table, monkeypatch):
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    query = "bala bale"  # rare words: few rows hold both, so the head is short of the page
    page = ranker(table, fts_query(query), 20, calls := [])
    narrow = bm25.head("t", terms(table, query))
    assert narrow is not None
    ranked = bm25.ranked_head(page, 20, narrow)
    assert calls == [narrow, None]
    assert ranked == page(None)


def test_no_head_where_narrowing_cannot_help(table, monkeypatch):
    def head(*tokens: str) -> bm25.Head | None:
        return bm25.head("t", bm25.query_terms(table, "t", TOKENIZER, tokens))

    assert head("token", "race") is None  # 600 matches: cheap already
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    assert head("token", "race") is not None
    assert head("token") is None
    assert head("token", "bala.bale") is None  # FTS5 makes a phrase of it
    assert head(*COMMON[:7]) is None  # 21 pairs
    assert head("token", "absent") is None  # one term is in the table


def test_no_pairs_head_when_most_matches_hold_two_terms_or_more(monkeypatch):
    """Words in most rows (a 100-word vocabulary): the pairs keep nearly every match, and matching them
    cost more than ranking every match (bm25.HEAD_SHARE); the rows holding every term are the head."""
    conn = apsw.Connection(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='{TOKENIZER}')")
    rng = random.Random(5)
    vocabulary = COMMON[:3] + RARE[:10]
    with conn:
        for _ in range(1_000):
            conn.execute("INSERT INTO t VALUES (?, ?)", ("x", " ".join(rng.choices(vocabulary, k=8))))
    query = terms(conn, "token refresh race")
    share = bm25.several_share([n / query.rows for n in query.counts.values()])
    both = conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", ['("token" AND "refresh") OR '
        '("token" AND "race") OR ("refresh" AND "race")']).fetchall()[0][0]  # fmt: skip
    some = conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", [fts_query("token refresh race")])
    assert abs(share - both / some.fetchall()[0][0]) < 0.05  # the estimate is near the real share
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    narrow = bm25.head("t", query)
    assert share >= bm25.HEAD_SHARE and narrow is not None
    assert (narrow.where, narrow.match) == ("", '"token" AND "refresh" AND "race"')


@pytest.fixture(scope="module")
def dense() -> apsw.Connection:
    """2,000 rows over a 12-word vocabulary: each word in about half the rows, as `bench/core.py`'s."""
    conn = apsw.Connection(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='{TOKENIZER}')")
    rng = random.Random(45)
    vocabulary = COMMON + RARE[:4]
    with conn:
        for _ in range(2_000):
            title = " ".join(rng.sample(vocabulary, 3))
            conn.execute("INSERT INTO t VALUES (?, ?)", (title, " ".join(rng.choices(vocabulary, k=9))))
    return conn


@pytest.mark.parametrize("query", ["token refresh race", "deadlock worker pool retry", "retry bala token"])
@pytest.mark.parametrize("want", [1, 10, 60])
def test_the_every_term_head_gives_the_page_of_every_match(dense, monkeypatch, query, want):
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    page = ranker(dense, fts_query(query), want, calls := [])
    narrow = bm25.head("t", terms(dense, query))
    assert narrow is not None and narrow.match == fts_query(query, require_all=True)
    assert bm25.ranked_head(page, want, narrow) == page(None)
    assert calls[0] is narrow


def test_the_every_term_head_proves_its_page_alone(dense, monkeypatch):
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    page = ranker(dense, fts_query("token refresh race"), 10, calls := [])
    narrow = bm25.head("t", terms(dense, "token refresh race"))
    assert bm25.ranked_head(page, 10, narrow) == page(None)
    assert calls[0] is narrow and calls[1] is None and len(calls) == 2  # ranked once, then the check


def test_rows_lacking_a_term_that_outscore_the_every_term_head_are_ranked(monkeypatch):
    """A rarer word twice weighted in a title outscores the rows holding every word in their bodies: the
    head cannot prove its page, and every match is ranked."""
    conn = apsw.Connection(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize='{TOKENIZER}')")
    bodies = ["token refresh bala"] * 600 + ["token race bale"] * 300 + ["token refresh race"] * 100
    with conn:
        for body in bodies:
            conn.execute("INSERT INTO t VALUES (?, ?)", ("", body))
        for _ in range(5):
            conn.execute("INSERT INTO t VALUES (?, ?)", ("race refresh", "bali"))
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    query = "token refresh race"
    page = ranker(conn, fts_query(query), 10, calls := [])
    narrow = bm25.head("t", terms(conn, query))
    assert narrow is not None and narrow.match is not None
    every_match = page(None)
    assert bm25.ranked_head(page, 10, narrow) == every_match
    assert calls == [None, narrow, None]
    assert every_match[0][0] > 1_000  # a row without "token" ranks first


def test_a_caller_needing_fewer_rows_takes_the_rows_the_head_proves(dense, monkeypatch):
    """A page of 400 the head cannot prove whole: a caller that needs 10 of them (documents of several
    chunks) takes the first rows no row left out can outscore, the first rows of every match's ranking."""
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    query = "token refresh race"
    page = ranker(dense, fts_query(query), 400, calls := [])
    narrow = bm25.head("t", terms(dense, query))
    ranked = bm25.ranked_head(page, 400, narrow, lambda first: len(first) >= 10)
    assert calls == [narrow]
    assert 10 <= len(ranked) < 400
    assert ranked == page(None)[: len(ranked)]
    assert bm25.ranked_head(page, 400, narrow, lambda first: len(first) >= 400) == page(None)


def test_table_rows_reads_what_fts5_counts(table):
    assert bm25.table_rows(table, "t") == 3_000
    empty = apsw.Connection(":memory:")
    empty.execute("CREATE VIRTUAL TABLE e USING fts5(x)")
    assert bm25.table_rows(empty, "e") == 0


def test_the_store_and_the_index_rank_the_same_with_the_head(home: Path, monkeypatch, cli):
    """Through the real search: every query's rows and scores as ranking every match gives them."""
    rng = random.Random(7)
    lines = []
    for i in range(400):
        words = [rng.choice(COMMON) if rng.random() < 0.3 else rng.choice(RARE) for _ in range(12)]
        lines.append(
            f'{{"type": "change", "title": "{" ".join(words[:4])} {i}", "narrative": "{" ".join(words)}"}}'
        )
    assert cli("add", "--json", "-", input="\n".join(lines) + "\n").exit_code == 0
    assert cli("index").exit_code == 0

    def results(query: str) -> list[tuple[str, float]]:
        out = cli("search", query, "--json", "-n", "30")
        assert out.exit_code == 0, out.output
        return [(r["id"], r["score"]) for r in out.json()]

    queries = ["token refresh race", "deadlock pool", "retry backoff worker", "bala token"]
    every_match = {q: results(q) for q in queries}
    heads: list[bm25.Head | None] = []
    real_head = bm25.head
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    monkeypatch.setattr(bm25, "head", lambda *a: heads.append(real_head(*a)) or heads[-1])
    for query in queries:
        assert results(query) == every_match[query]
    assert sum(h is not None for h in heads) >= 4  # the store's and the index's head for the common queries


def test_the_store_and_the_index_rank_the_same_with_the_every_term_head(home: Path, monkeypatch, cli):
    """Through the real search, words in most memories (`bench/core.py`'s corpus): each query's rows and
    scores as ranking every match gives them, the store's and the index's head holding every term."""
    rng = random.Random(45)
    vocabulary = COMMON + RARE[:4]
    lines = []
    for i in range(300):
        title, words = " ".join(rng.sample(vocabulary, 3)), " ".join(rng.choices(vocabulary, k=9))
        lines.append(f'{{"type": "change", "title": "{title} {i}", "narrative": "{words}"}}')
    assert cli("add", "--json", "-", input="\n".join(lines) + "\n").exit_code == 0
    assert cli("index").exit_code == 0

    def results(query: str) -> str:
        out = cli("search", query, "--mode", "keyword", "--json", "-n", "30")
        assert out.exit_code == 0, out.stderr
        assert out.json()  # the page is not empty
        return out.stdout

    queries = ["token refresh race", "deadlock worker pool retry", "retry bala token"]
    real_head = bm25.head
    monkeypatch.setattr(bm25, "head", lambda *a: None)
    every_match = {q: results(q) for q in queries}
    heads: list[bm25.Head | None] = []
    monkeypatch.setattr(bm25, "HEAD_FROM", 0)
    monkeypatch.setattr(bm25, "head", lambda *a: heads.append(real_head(*a)) or heads[-1])
    for query in queries:
        assert results(query) == every_match[query]
    assert sum(h is not None and h.match is not None for h in heads) >= 6  # the store's and the index's
