"""The search's fields are declared once (``Query``) and offered from one table (``core/query_fields.py``):
every field is an option of `cmem search` and an argument of MCP's ``search`` tool, and both mean the same."""

from __future__ import annotations

import json
from typing import Any

import anyio
import click
import pytest

from cmem_cli.core.query import DEFAULTS, LIST_FIELDS, Query
from cmem_cli.core.query_fields import BY_NAME, QUERY_FIELDS
from tests.test_mcp import with_server

FIELDS = list(Query.__slots__)  # the constructor's parameters: text first, then every option


def test_every_query_field_has_one_row_in_the_table():
    names = [field.name for field in QUERY_FIELDS]
    assert sorted(names) == sorted(FIELDS)
    assert len(names) == len(set(names))


def _search_command() -> click.Command:
    from typer.main import get_command

    from cmem_cli.cli.app import app

    group = get_command(app)
    assert isinstance(group, click.Group)
    return group.commands["search"]


def test_every_query_field_is_an_option_of_cmem_search_with_the_query_s_default():
    params = {param.name: param for param in _search_command().params}
    for name in FIELDS:
        field = BY_NAME[name]
        param = params.get(field.param_name)
        assert param is not None, f"Query field {name!r} has no `cmem search` option"
        if field.flags:
            assert list(param.opts) == list(field.flags), name
            assert list(param.secondary_opts) == ([field.off] if field.off else []), name
        else:
            assert isinstance(param, click.Argument), name
        if name not in LIST_FIELDS and name != "text":
            assert param.default == DEFAULTS[name], name
        assert param.multiple == (name in LIST_FIELDS), name


def _mcp_schema(home: Any) -> dict[str, Any]:
    from cmem_cli.core.config import load_config
    from cmem_cli.mcp.server import build_server

    server, tools = build_server(load_config())
    try:
        listed = anyio.run(server.list_tools)
    finally:
        tools.close()
    [search] = [tool for tool in listed if tool.name == "search"]
    return search.input_schema


def test_every_query_field_is_an_argument_of_mcp_search_with_a_description(home):
    properties = _mcp_schema(home)["properties"]
    for name in FIELDS:
        field = BY_NAME[name]
        assert field.mcp_name in properties, f"Query field {name!r} has no MCP search argument"
        assert properties[field.mcp_name]["description"], name
    assert set(properties) == {BY_NAME[name].mcp_name for name in FIELDS} | {"all_projects"}
    assert properties["limit"]["maximum"] == 200 and properties["limit"]["default"] == 10


@pytest.fixture
def two_agents(sh):
    for title, agent in [("Alpha pool", "claude"), ("Beta pool", "codex"), ("Gamma pool", "claude")]:
        added = sh("add", title, "--agent", agent, "--project", "demo", "--concept", "pool")
        assert added.exit_code == 0, added.stderr
    return sh


def test_the_options_mcp_gained_from_the_table_mean_what_they_mean_in_cmem_search(two_agents):
    """agent, order, offset and explain were options of `cmem search` only: the same call through MCP
    gives the same rows."""
    cli = two_agents(
        "search", "pool", "--project", "demo", "--agent", "claude", "--order", "oldest", "--offset", "1",
        "--explain", "--json",
    )  # fmt: skip
    assert cli.exit_code == 0, cli.stderr
    cli_rows = json.loads(cli.stdout)
    assert [row["title"] for row in cli_rows] == ["Gamma pool"]

    async def body(client: Any) -> Any:
        return await client.call_tool(
            "search",
            {"query": "pool", "project": "demo", "agent": "claude", "order": "oldest", "offset": 1,
             "explain": True},
        )  # fmt: skip

    found = with_server(body)
    assert found.is_error is False
    [hit] = found.structured_content["hits"]
    assert (hit["id"], hit["title"]) == (cli_rows[0]["id"], "Gamma pool")
    assert hit["signals"] == cli_rows[0]["signals"]


def test_a_bad_value_is_refused_alike_by_both(two_agents):
    cli = two_agents("search", "pool", "--order", "sideways")
    assert cli.exit_code == 2 and "sideways" in cli.stderr

    async def body(client: Any) -> Any:
        return await client.call_tool("search", {"query": "pool", "order": "sideways"})

    refused = with_server(body)
    assert refused.is_error is True
    assert "unknown order 'sideways'" in refused.content[0].text


# -- the filter set, compiled per backend ---------------------------------------------------------------------
def test_every_backend_compiles_every_filter_it_holds():
    """The store (SQLite), the index (SQLite) and the team database (PostgreSQL) each spell the one filter
    set (core/filters.py); a filter none of them answers would raise here, not in a user's search."""
    from cmem_cli.core.filters import FILTER_FIELDS, FilterFields
    from cmem_cli.store.filters import StoreSql
    from cmem_cli.team.source import _TeamSql
    from cmem_index.repositories.retrieval import _IndexSql

    every = FilterFields(
        project="demo", types=["decision", "bugfix"], concepts=["pool"], files=["src/db.py"], agent="claude",
        session="s1", machine="laptop", branch="main", since=1, until=2, folded=["demo-old"],
    )  # fmt: skip
    assert set(every.fields()) == set(FILTER_FIELDS)
    assert all(value not in (None, [], ()) for value in every.fields().values())
    store, team = StoreSql("o"), _TeamSql("o")
    clauses = len(FILTER_FIELDS) - 1  # the project and its older names (folded) are one clause
    assert len(every.clauses(store)) == clauses
    assert len(store.params) == 14  # two project names, three patterns for a file, one value per type
    assert len(every.clauses(team)) == clauses
    assert len(team.named) == 13  # the types bind as one array
    index = _IndexSql("d")
    assert len(every.clauses(index)) == clauses - 1  # the index keeps no branch
    assert "d.machine = ?" in every.clauses(_IndexSql("d"))
    summaries = every.clauses(StoreSql("o"), observations=False)
    assert len(summaries) == 6  # project, agent, session, machine, since, until
