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
        also, more = (f" AND {narrow.where}", narrow.params) if narrow else ("", [])
        sql = f"SELECT rowid, {WEIGHTS} AS rank FROM t WHERE t MATCH ?{also} ORDER BY rank, rowid LIMIT ?"
        return list(conn.execute(sql, [match, *more, want]))

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


def test_no_head_when_most_matches_hold_two_terms_or_more(monkeypatch):
    """Words in most rows (a 100-word vocabulary): the pairs keep nearly every match, and matching them
    cost more than ranking every match (bm25.HEAD_SHARE)."""
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
    assert share >= bm25.HEAD_SHARE and bm25.head("t", query) is None


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
