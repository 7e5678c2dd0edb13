"""Ranking that respects evidence, through the real CLI (in this process, tests/runner.py) on a home indexed
with all-MiniLM-L6-v2: keyword evidence counts by how much of the query it covers, so one common word does not
beat a strong meaning match; an exact phrase (an error message, a symbol) puts the record that holds it first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, private_env
from tests.runner import invoke

# An agent's week on a small web app: what it recorded on purpose and what it noted along the way.
MEMORIES = [
    ("bugfix", "JWT expiry compared seconds to milliseconds",
     "The exp claim is in seconds and Date.now() in milliseconds, so sessions never timed out."),
    ("decision", "Rate limiter uses a token bucket per client",
     "Each API client gets 100 requests a minute, refilled every second."),
    ("error", "sqlite3.OperationalError: no such table: sessions",
     "The test database was created before the migration that adds it ran."),
    ("change", "Migration adds the orders table", "The orders table has a row per checkout."),
    ("decision", "Users table gets an index on email", "Login looks users up by email; the table scan was slow."),
    ("discovery", "The report builds a pivot table of sales", "One table per region, pivoted by month."),
    ("change", "Table of contents for the docs site", "The docs table of contents is generated from headings."),
    ("discovery", "Sessions table keeps a row per login", "The table grows by a row at each login."),
    ("feature", "Dark theme for the settings page", "Contrast checked for accessibility."),
    ("change", "Upgrade the CI pipeline to Node 22", "The build matrix runs the newer runtime."),
    ("discovery", "Image resizer kept every decoded bitmap", "A cache that was never cleared grew without bound."),
    ("decision", "Cookie max_age is one day", "Set on the session cookie so a browser restart keeps the login."),
    ("discovery", "Max age of cached pages", "The max age of a cached page is a week; max age checks run hourly."),
]  # fmt: skip


@pytest.fixture(scope="module")
def cmem(tmp_path_factory: pytest.TempPathFactory, minilm_gguf: Path) -> Callable[..., Result]:
    """The memories above in one project, indexed with vectors once."""
    root = tmp_path_factory.mktemp("evidence")
    env = private_env(root, embed_model=str(minilm_gguf))

    def run(
        *args: str,
    ) -> Result:  # in this process (tests/runner.py): the model is loaded once, not per search
        return invoke(*args, env=env, replace_env=True, cwd=root)

    for kind, title, narrative in MEMORIES:
        added = run("add", "--type", kind, "--title", title, "--narrative", narrative, "--project", "app")
        assert added.exit_code == 0, added.stderr
    indexed = run("index")
    assert indexed.exit_code == 0, indexed.stderr
    return run


def titles(cmem: Callable[..., Result], *args: str) -> list[str]:
    result = cmem("search", *args, "--project", "app", "--json")
    assert result.exit_code == 0, result.stderr
    return [row["title"] for row in result.json()]


def test_one_common_word_does_not_beat_a_strong_meaning_match(cmem):
    found = titles(cmem, "token expiration bug")
    assert found[0] == "JWT expiry compared seconds to milliseconds"
    assert found.index("JWT expiry compared seconds to milliseconds") < found.index(
        "Rate limiter uses a token bucket per client"
    )


def test_an_error_message_puts_the_record_that_holds_it_first(cmem):
    for mode in ("auto", "keyword"):
        assert (
            titles(cmem, "no such table", "--mode", mode)[0]
            == "sqlite3.OperationalError: no such table: sessions"
        )


def test_a_symbol_puts_the_record_that_holds_it_first(cmem):
    assert titles(cmem, "max_age")[0] == "Cookie max_age is one day"


def test_words_said_in_quotes_are_a_phrase(cmem):
    assert titles(cmem, '"sessions table"')[0] == "Sessions table keeps a row per login"
