"""Search rows say what they are (issue 25): each row's score is what put it where it is, an exact keyword
match is not listed below a weak vector neighbour, a stored prompt is found by its own words, and
"showing N of M" counts only what a page left out.

Through the real CLI over a home indexed with all-MiniLM-L6-v2, run in this process (tests/runner.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, private_env
from tests.runner import invoke

MEMORIES = [
    (
        "Rate limiter for login",
        "The limiter counts requests per IP in Redis with a sliding window of sixty seconds and a burst of "
        "ten; the nginx config forwards the real address.",
    ),
    ("Sign-in button does nothing on Safari", "SSO failed because of a popup blocker"),
    ("Log on screen flickers", "a CSS transition"),
    ("Users signed out when switching tabs", "The auth token was stored in sessionStorage"),
    ("Database pool exhausted", "Raised the pool size"),
    ("Dark theme colours", "contrast"),
]
PROMPT = "why does the nightly export job skip archived tenants"


@pytest.fixture(scope="module")
def cmem(tmp_path_factory: pytest.TempPathFactory, minilm_gguf: Path) -> Callable[..., Result]:
    root = tmp_path_factory.mktemp("rows")
    env = private_env(root, embed_model=str(minilm_gguf))

    def run(
        *args: str,
    ) -> Result:  # in this process (tests/runner.py): the model is loaded once, not per search
        return invoke(*args, env=env, replace_env=True, cwd=root)

    for title, narrative in MEMORIES:
        assert run("add", title, "--narrative", narrative, "--project", "web").exit_code == 0
    session = run("session", "start", "--project", "web").stdout.strip()
    assert run("prompt", "add", PROMPT, "--session", session, "--project", "web").exit_code == 0
    assert run("index").exit_code == 0
    return run


def _scores(rows: list[dict]) -> list[float]:
    return [row["score"] for row in rows]


def test_an_exact_title_match_is_not_listed_below_a_weak_vector_neighbour(cmem):
    rows = cmem("search", "login", "--json").json()
    assert rows[0]["title"] == "Rate limiter for login"
    assert _scores(rows) == sorted(_scores(rows), reverse=True)


@pytest.mark.parametrize(
    "query", ["login", "sign in problems", "pool", "why are users logged out", "dark theme", PROMPT]
)
def test_rows_are_sorted_by_the_score_they_print(cmem, query):
    rows = cmem("search", query, "--all", "--json").json()
    assert rows
    assert _scores(rows) == sorted(_scores(rows), reverse=True), [(r["title"], r["score"]) for r in rows]


def test_a_stored_prompt_is_found_by_its_own_words(cmem):
    for query in (PROMPT, "archived tenants", "nightly export job"):
        result = cmem("search", query, "--json")
        assert result.exit_code == 0, (query, result.stderr)
        assert [row["kind"] for row in result.json()][:1] == ["prompt"], query


def test_every_hit_listed_is_not_counted_as_more(cli, home, minilm_gguf, monkeypatch):
    """A vector list is cut at sqlite-vec's largest k (here made small, as a home of thousands of documents
    meets it): that says more hits *may* exist only while its last neighbour still had evidence."""
    monkeypatch.setenv("CMEM_EMBED_MODEL", str(minilm_gguf))
    monkeypatch.setattr("cmem_index.retrieve.MAX_K", 12)  # the vector list holds at most 3 documents
    for title, narrative in MEMORIES:
        assert cli("add", title, "--narrative", narrative, "--project", "web").exit_code == 0
    assert cli("index").exit_code == 0
    every = cli("search", "login", "--all")
    assert every.exit_code == 0 and every.stdout
    assert "showing" not in every.stderr
    one = cli("search", "login", "-n", "1")
    assert "showing 1 of 2" in one.stderr


def test_reranked_rows_stay_sorted_by_the_score_they_print(cli, home, monkeypatch):
    """The reranker scores only the first 20 hits: their blended scores must not leave the rest printed
    above them out of order."""

    class Unimpressed:  # a reranker that finds nothing relevant: every blended score halves
        def score(self, query: str, docs: list[str]) -> list[float]:
            return [0.0 for _ in docs]

    monkeypatch.setenv("CMEM_RERANK_MODEL", "fake.gguf")
    monkeypatch.setattr("cmem_index.loading.load_reranker", lambda config: (Unimpressed(), None))
    records = "".join(
        f'{{"title": "alpha note {i}", "narrative": "{"alpha " * (i % 5)}filler", "project": "p"}}\n'
        for i in range(30)
    )
    assert cli("add", "--json", "-", input=records).exit_code == 0
    assert cli("index").exit_code == 0
    rows = cli("search", "alpha", "--all", "--explain", "--json").json()
    assert len(rows) == 30 and sum("rerank" in row["signals"] for row in rows) == 20
    assert _scores(rows) == sorted(_scores(rows), reverse=True)


def test_explain_shows_each_stage_and_each_rows_place_after_it(cmem):
    result = cmem("search", "login", "--explain", "--json")
    assert result.exit_code == 0, result.stderr
    rows = result.json()
    stages = ["fusion", "phrase", "notes", "replies", "branches", "successors"]
    assert [list(row["stages"]) for row in rows] == [stages] * len(rows)
    assert [row["stages"]["successors"] for row in rows] == list(range(1, len(rows) + 1))
    said = [
        line.split(": ")[3] for line in result.stderr.splitlines() if line.startswith("cmem: note: explain: ")
    ]
    assert said == [
        "scope words", "candidates", "unindexed", "code share", "fusion", "cut-off", "rerank", *stages[1:]
    ]  # fmt: skip
    table = cmem("search", "login", "--explain", "--format", "plain")
    assert table.stdout.splitlines()[0].endswith(" fusion>1"), table.stdout
