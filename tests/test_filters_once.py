"""Each filter is declared once (``core/filters.py``'s FILTERS) and every reader offers it: `cmem search`,
`cmem timeline` and `cmem view`'s options, MCP's ``search`` and ``timeline`` arguments, the API's Query and the
three backends' SQL. Adding one touches the table, Query's signature and a test (docs/architecture.md)."""

from __future__ import annotations

import inspect
import json
from typing import Any

import click
import pytest

from cmem_cli.core import filters as filter_table
from cmem_cli.core.filters import FILTERS, Filter, FilterFields
from cmem_cli.core.query import Query

NAMES = [f.name for f in FILTERS]


def _commands() -> dict[str, click.Command]:
    from typer.main import get_command

    from cmem_cli.cli.app import app

    group = get_command(app)
    assert isinstance(group, click.Group)
    return group.commands


@pytest.mark.parametrize("command", ["search", "timeline", "view"])
def test_every_filter_is_an_option_of_search_timeline_and_view(command):
    params = {param.name: param for param in _commands()[command].params}
    for f in FILTERS:
        param = params.get(f.param or f.name)
        assert param is not None, f"filter {f.name!r} is no option of `cmem {command}`"
        assert list(param.opts) == list(f.flags), (command, f.name)
        assert param.multiple == f.many, (command, f.name)


def test_every_filter_is_a_field_of_the_api_s_query_and_of_the_backends_filter_set():
    assert set(NAMES) <= set(inspect.signature(Query).parameters)
    fields = FilterFields().fields()
    assert all(f.field in fields for f in FILTERS)


def _tool_properties(name: str) -> dict[str, Any]:
    import anyio

    from cmem_cli.core.config import load_config
    from cmem_cli.mcp.server import build_server

    server, tools = build_server(load_config())
    try:
        listed = anyio.run(server.list_tools)
    finally:
        tools.close()
    [tool] = [tool for tool in listed if tool.name == name]
    return tool.input_schema["properties"]


@pytest.mark.parametrize("tool", ["search", "timeline"])
def test_every_filter_is_an_argument_of_mcp_search_and_timeline(home, tool):
    properties = _tool_properties(tool)
    for name in NAMES:
        assert name in properties, f"filter {name!r} is no argument of MCP {tool}"
        assert properties[name]["description"], (tool, name)


def test_cmem_view_keeps_every_filter_and_names_each_on_its_page():
    """view/scope.py rebuilt the page's Query by naming each filter: one it missed was silently dropped."""
    from cmem_cli.view.scope import resolve

    every = Query(
        None, project="demo", type="decision", concept="pool", file="db.py", agent="claude", machine="laptop",
        session="s-1", since="2026-01-01", until="2026-02-01",
    )  # fmt: skip
    assert all(getattr(every, name) for name in NAMES)  # the test sets every filter there is
    scope = resolve(every, limit=10)
    assert [getattr(scope.query, name) for name in NAMES] == [getattr(every, name) for name in NAMES]
    header = scope.describe("2026-01-01T00:00:00Z")
    for words in ("project demo", "type decision", "concept pool", "file db.py", "agent claude",
                  "machine laptop", "session s-1", "from 2026-01-01", "until 2026-02-01"):  # fmt: skip
        assert words in header, words


# -- a throwaway filter, registered in the table alone, reaches every reader that builds from it -------------
# the store and the team table hold ``key``; the index does not, so the search checks it on the rows it found
THROWAWAY = Filter(
    "key", "Only the memory with this key.", ("--key",), metavar="KEY", observations=True, indexed=False
)


@pytest.fixture
def with_throwaway(monkeypatch):
    from cmem_cli.cli import options

    monkeypatch.setattr(filter_table, "FILTERS", (*FILTERS, THROWAWAY))
    monkeypatch.setattr(filter_table, "FILTER_FIELDS", (*filter_table.FILTER_FIELDS, "key"))
    monkeypatch.setattr(filter_table, "BY_NAME", {**filter_table.BY_NAME, "key": THROWAWAY})
    options.timeline_command.cache_clear()
    options.view_command.cache_clear()
    yield
    options.timeline_command.cache_clear()
    options.view_command.cache_clear()


def test_a_filter_declared_once_is_an_option_of_timeline_and_view(with_throwaway):
    from cmem_cli.cli import options

    for command in (options.timeline_command(), options.view_command()):
        [key] = [opt for opt in command.options if opt.name == "key"]
        assert key.flags == ("--key",) and key.help == THROWAWAY.help


def test_a_filter_declared_once_compiles_in_every_backend_without_dialect_code(with_throwaway):
    from cmem_cli.store.filters import Filters, StoreSql
    from cmem_cli.team.source import _TeamSql
    from cmem_index.repositories.retrieval import _IndexSql

    keyed = FilterFields(key="pool-size", agent="claude")
    assert "o.key = ?" in keyed.clauses(StoreSql("o"))
    assert keyed.clauses(_IndexSql("d")) == ["d.agent = ?"]  # the index keeps no key ...
    assert keyed.misses({"key": "retries"}) and not keyed.misses(
        {"key": "pool-size"}
    )  # ... its hits are checked
    team = _TeamSql("o")
    assert "o.key = %(f_1)s" in keyed.clauses(team) and team.named["f_1"] == "pool-size"
    assert keyed.observation_only  # declared observation-only: summaries and prompts never match it
    assert keyed.clauses(StoreSql("o"), observations=False) == ["o.agent = ?"]
    assert Filters(key="pool-size").sql("o") == ("o.key = ?", ["pool-size"])


def test_a_filter_declared_once_is_an_mcp_timeline_argument(with_throwaway):
    from cmem_cli.mcp.server import timeline_signature

    key = timeline_signature().parameters["key"]
    assert key.default is None and "this key" in str(key.annotation)


# -- what the readers gained: timeline and view take every filter ----------------------------------------------
@pytest.fixture
def pool(sh):
    for title, obs_type, agent in [
        ("Alpha pool", "decision", "claude"), ("Beta pool", "bugfix", "codex"), ("Gamma pool", "decision", "claude"),
    ]:  # fmt: skip
        added = sh("add", title, "--type", obs_type, "--agent", agent, "--project", "demo")
        assert added.exit_code == 0, added.stderr
    return sh


def test_cmem_timeline_keeps_the_items_a_filter_matches_and_always_the_anchor(pool):
    result = pool("timeline", "2", "--type", "decision", "--json")
    assert result.exit_code == 0, result.stderr
    items = json.loads(result.stdout)["items"]
    assert [(item["title"], item["anchor"]) for item in items] == [
        ("Alpha pool", False), ("Beta pool", True), ("Gamma pool", False),
    ]  # fmt: skip
    agent = pool("timeline", "1", "--agent", "codex", "--json")
    assert [item["title"] for item in json.loads(agent.stdout)["items"]] == ["Alpha pool", "Beta pool"]
    hit = pool("timeline", "--query", "pool", "--agent", "codex", "--project", "demo", "--json")
    assert [item["title"] for item in json.loads(hit.stdout)["items"]] == ["Beta pool"]


def test_the_api_and_mcp_timeline_take_the_same_filters(pool):
    from cmem_cli.api import Memory
    from tests.test_mcp import with_server

    with Memory() as memory:
        items = memory.timeline(1, agent="codex").items
        with pytest.raises(TypeError, match="limit"):
            memory.timeline(1, limit=3)
    assert [item.title for item in items] == ["Alpha pool", "Beta pool"]

    async def body(client: Any) -> Any:
        return await client.call_tool("timeline", {"anchor": 1, "agent": "codex"})

    found = with_server(body)
    assert found.is_error is False
    assert [item["title"] for item in found.structured_content["items"]] == ["Alpha pool", "Beta pool"]
