"""The store's keyword ranking beside the index's: cmem_cli.core.background and the search that uses it."""

from __future__ import annotations

import threading

import pytest

from cmem_cli.cli.exits import EXIT_BUSY
from cmem_cli.core.background import Background
from cmem_cli.core.errors import DatabaseBusy, StorageError


def test_the_work_runs_on_another_thread_and_hands_back_its_value():
    ran_on: list[threading.Thread] = []
    pending = Background(lambda: ran_on.append(threading.current_thread()) or 42)
    assert pending.result() == 42
    assert ran_on[0] is not threading.current_thread()


def test_the_works_error_is_raised_where_the_result_is_asked_for():
    def fails() -> int:
        raise StorageError("the store is locked")

    pending = Background(fails)
    pending.wait()  # waiting alone does not raise
    with pytest.raises(StorageError, match="the store is locked"):
        pending.result()


def test_a_store_that_fails_while_the_index_ranks_fails_the_search_with_its_own_error(cli, monkeypatch):
    assert cli("add", "--title", "Token refresh race in the worker pool").exit_code == 0
    assert cli("index").exit_code == 0
    from cmem_cli.store.keyword import KeywordSearch

    def locked(*args, **kwargs):
        raise DatabaseBusy("the database is locked: another cmem is writing")

    monkeypatch.setattr(KeywordSearch, "summaries", locked)
    out = cli("search", "token refresh")
    assert out.exit_code == EXIT_BUSY
    assert out.stderr.strip().splitlines() == ["cmem: the database is locked: another cmem is writing"]
