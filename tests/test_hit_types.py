"""The typed rows of the read paths name exactly the keys their JSON has: a search's hits, a timeline's items,
`get`'s records, a window of memory and the briefing.

The types (``cmem_cli/core/hit_types.py``, ``cmem_cli/services/read/record_types.py``, the window's and the
briefing's) exist for the type checker only, and the row makers build plain dicts that a cast may widen: so
this test reads the types from the source and the rows from real commands. A key added to a row without its
type, or a required key no row has, fails here.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import payload, tool_payload
from tests.conftest import fake_repo

ROOT = Path(__file__).resolve().parent.parent / "cmem_cli"
SOURCES = [
    ROOT / "core" / "hit_types.py",
    ROOT / "services" / "read" / "record_types.py",
    ROOT / "services" / "read" / "window.py",
    ROOT / "services" / "read" / "briefing_types.py",
]


def _typed_dicts() -> dict[str, tuple[list[str], dict[str, bool]]]:
    """Each class of the sources: its bases and its own keys (key -> required)."""
    found: dict[str, tuple[list[str], dict[str, bool]]] = {}
    for source in SOURCES:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ClassDef):
                keys = {
                    item.target.id: not ast.unparse(item.annotation).startswith("NotRequired")
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
                found[node.name] = ([ast.unparse(b) for b in node.bases], keys)
    return found


TYPES = _typed_dicts()


def keys_of(name: str) -> dict[str, bool]:
    """The keys a TypedDict declares, its bases' too (key -> required)."""
    bases, own = TYPES[name]
    keys: dict[str, bool] = {}
    for base in bases:
        if base in TYPES:
            keys.update(keys_of(base))
    return {**keys, **own}


def assert_typed(row: Mapping[str, Any], name: str) -> None:
    keys = keys_of(name)
    assert set(row) - set(keys) == set(), f"{name} lacks keys its rows have"
    assert {k for k, required in keys.items() if required} - set(row) == set(), (
        f"{name} requires keys rows lack"
    )


HIT_TYPE = {"observation": "ObservationHit", "summary": "SummaryHit", "prompt": "PromptHit"}
RECORD_TYPE = {"observation": "ObservationRecord", "summary": "SummaryRecord", "prompt": "PromptRecord"}
WINDOW_TYPE = {"observation": "WindowObservation", "summary": "SummaryRecord", "prompt": "PromptRecord"}
SESSION = "5a1b2c3d-typed-rows"


@pytest.fixture
def filled(sh, home, tmp_path):
    """A home with observations (one replacing another, one linked), a prompt, a summary and a session's
    captured reads (the briefing folds them)."""
    project = fake_repo(tmp_path / "work", "typed")

    def ok(*args: str, **kwargs: Any) -> Any:
        result = sh(*args, **kwargs)
        assert result.exit_code == 0, result.stderr
        return result

    ok("session", "start", SESSION, "-p", "typed")
    ok("add", "Retry budget is three", "--narrative", "retry the sync three times", "-p", "typed",
       "--session", SESSION)  # fmt: skip
    ok("add", "Retry budget is five", "--narrative", "retry the sync five times now", "-p", "typed",
       "--supersedes", "1", "--session", SESSION)  # fmt: skip
    ok("add", "Why does the sync retry?", "--type", "question", "-p", "typed", "--session", SESSION)
    ok("prompt", "add", "make the sync retry less", "--session", SESSION, "-p", "typed")
    ok("summary", "add", "--session", SESSION, "--request", "sync retry budget", "--completed", "retry set",
       "-p", "typed")  # fmt: skip
    ok("link", "2", "related", "3")
    for name in ("a", "b", "c"):
        data = tool_payload(SESSION, project, "Read", {"file_path": f"{project}/src/sync/{name}.py"})
        ok("hook", "PostToolUse", input=json.dumps(data))
    ok("hook", "SessionStart", input=json.dumps(payload("SessionStart", "other-session", project)))
    return ok


@pytest.mark.parametrize(
    "args",
    [
        ("search", "sync retry", "--json", "-p", "typed"),
        ("search", "sync retry", "--json", "-p", "typed", "--explain"),
        ("search", "sync retry", "--json", "-p", "typed", "--order", "newest"),
        ("search", "--json", "-p", "typed"),
    ],
)
def test_a_search_rows_keys_are_its_kinds_type(filled, args):
    from cmem_cli.core.results import Hit

    rows = filled(*args).json()
    assert {row["kind"] for row in rows} >= ({"observation"} if "sync retry" not in args else set(HIT_TYPE))
    for row in rows:
        assert_typed(row, HIT_TYPE[row["kind"]])
        assert_typed(Hit.from_json(row).to_json(), HIT_TYPE[row["kind"]])  # the API's typed hit, as JSON
        for signal in row.get("signals", {}).values():
            assert_typed(signal, "SignalJson")


def test_a_timelines_keys_are_its_types(filled):
    from cmem_cli.core.results import TimelineItem

    data = filled("timeline", "2", "--json").json()
    assert_typed(data, "TimelineJson")
    assert {item["kind"] for item in data["items"]} == {"observation", "prompt", "summary"}
    for item in data["items"]:
        assert_typed(item, "TimelineRow")
        assert_typed(TimelineItem.from_json(item).to_json(), "TimelineRow")


def test_a_records_keys_are_its_kinds_type(filled):
    records = filled("get", "1", "2", "S1", "P1", "--links", "--json").json()
    assert {record["kind"] for record in records} == set(RECORD_TYPE)
    assert any("via" in record for record in records)
    for record in records:
        assert_typed(record, RECORD_TYPE[record["kind"]])


def test_a_windows_keys_are_its_types(filled):
    from cmem_cli.api import Memory

    with Memory() as memory:
        window = memory.window("sync retry")
    assert_typed(window, "WindowJson")
    assert_typed(window["observations"], "WindowCounts")
    assert window["others"] or window["items"]
    for item in window["items"]:
        assert_typed(item, WINDOW_TYPE[item["kind"]])
    for session in window["sessions"].values():
        assert_typed(session, "WindowSession")
    for head in window["others"].values():
        assert_typed(head, "WindowHead")


def test_a_briefings_keys_are_its_types(filled):
    briefing = filled("context", "--json", "-p", "typed").json()
    assert_typed(briefing, "BriefingJson")
    assert briefing["observations"] and briefing["activity"] and briefing["last_session"]
    assert_typed(briefing["last_session"], "LastSessionJson")
    for line in briefing["observations"]:
        assert_typed(line, "BriefedJson")
    for entry in briefing["activity"]:
        assert_typed(entry, "ActivityJson")
