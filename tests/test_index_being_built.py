"""An index a first pass is still laying out (the background pass made the file a moment ago) is "not built
yet" to readers, never "an older schema" telling the person to repair what is not broken."""

from __future__ import annotations

import json
from pathlib import Path

import apsw


def test_a_search_and_status_during_a_first_pass_say_the_index_is_not_built_yet(sh, home: Path) -> None:
    assert sh("add", "--title", "Refresh tokens rotate on every use").exit_code == 0
    status = sh("status", "--json").json()
    made = apsw.Connection(status["index"])  # what the pass has done before its schema commits
    made.execute("PRAGMA journal_mode=WAL")
    made.close()

    found = sh("search", "refresh", "--json")
    assert found.exit_code == 0
    assert [row["title"] for row in json.loads(found.stdout)] == ["Refresh tokens rotate on every use"]
    assert "older schema" not in found.stderr
    status = sh("status", "--json").json()
    assert "is not built yet" in status["error"] and "older schema" not in status["error"]
