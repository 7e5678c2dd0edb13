"""Uids everywhere: every command and tool that takes an observation takes its integer id, its uid (the one
id that is the same on every machine) or a unique uid prefix of six or more characters, through one resolver
(``cmem_cli.services.read.search_pipeline.resolve_observation``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cmem_cli.core.config import load_config
from cmem_cli.core.errors import InvalidInput, NotFound
from cmem_cli.services.read.search_pipeline import resolve_observation
from cmem_cli.services.write.service import WriteService
from tests.runner import Result, invoke
from tests.test_mcp import text_of, with_server


def _cmem(*args: str, input: str | None = None) -> Result:
    """`cmem ARGS` in this process (tests/runner.py)."""
    return invoke(*args, input=input)


def _store_with(home: Path, uids: list[str]) -> WriteService:
    memory = WriteService.open(load_config(home))
    for number, uid in enumerate(uids):
        memory.records.add_observation(
            {"title": f"note {number}", "uid": uid, "project": "web", "agent": "cli"}
        )
    return memory


def test_the_resolver_takes_ids_uids_and_unique_prefixes(home):
    uids = ["01KBX7AAAA0000000000000000", "01KBX7AAAB0000000000000000", "01KBX9CCCC0000000000000000"]
    with _store_with(home, uids) as memory:
        store = memory.store
        ids = {uid: store.observations.by_uid(uid)["id"] for uid in uids}
        assert resolve_observation(store, 2) == 2 and resolve_observation(store, "2") == 2
        assert resolve_observation(store, uids[0]) == ids[uids[0]]
        assert resolve_observation(store, uids[2].lower()) == ids[uids[2]]  # case does not matter
        assert resolve_observation(store, "01KBX9") == ids[uids[2]]  # six characters, unique
        assert resolve_observation(store, " 01kbx7aaab ") == ids[uids[1]]
        with pytest.raises(InvalidInput, match=f"ambiguous: {uids[0]}, {uids[1]}$"):
            resolve_observation(store, "01KBX7AAA")
        with pytest.raises(NotFound, match="no observation uid starts with 01KBX8"):
            resolve_observation(store, "01KBX8")
        with pytest.raises(InvalidInput, match="at least 6 characters"):
            resolve_observation(store, "01KBX")  # too short to be told from a typo
        with pytest.raises(InvalidInput, match="not an observation id"):
            resolve_observation(store, "01KBX7-U")  # not Crockford base32


FIRST, SECOND = "01KBX7AAAA0000000000000000", "01KBX7AAAB0000000000000000"  # share 9 characters


@pytest.fixture
def two(home: Path) -> list[dict[str, Any]]:
    records = [
        {"title": "Chose WAL for the store", "uid": FIRST, "project": "web", "created_at": "2026-01-01"},
        {"title": "Busy timeout set to 5 s", "uid": SECOND, "project": "web", "created_at": "2026-01-02"},
    ]
    assert _cmem("add", "--json", "-", input="\n".join(json.dumps(r) for r in records)).returncode == 0
    rows = json.loads(_cmem("search", "--json", "--order", "oldest").stdout)
    assert [r["uid"] for r in rows] == [FIRST, SECOND]
    return rows


def test_get_takes_a_uid_or_a_unique_prefix(two):
    first, second = two
    by_uid = json.loads(_cmem("get", FIRST, "--json").stdout)
    by_prefix = json.loads(_cmem("get", "01kbx7aaab", "--json").stdout)
    assert [r["id"] for r in by_uid + by_prefix] == [first["id"], second["id"]]
    ambiguous = _cmem("get", "01KBX7AAA")
    assert ambiguous.returncode == 4 and ambiguous.stdout == ""
    assert ambiguous.stderr == f"cmem: uid prefix '01KBX7AAA' is ambiguous: {FIRST}, {SECOND}\n"
    missing = _cmem("get", "7ZZZZZZZZZ")
    assert missing.returncode == 3
    assert missing.stderr == "cmem: no observation or summary uid starts with 7ZZZZZZZZZ\n"


def test_edit_takes_a_uid(two):
    first, _ = two
    assert _cmem("edit", first["uid"].lower(), "-t", "Chose WAL, edited by uid").returncode == 0
    assert (
        json.loads(_cmem("get", str(first["id"]), "--json").stdout)[0]["title"] == "Chose WAL, edited by uid"
    )


def test_timeline_takes_a_uid_prefix(two):
    first, second = two
    result = json.loads(_cmem("timeline", "01KBX7AAAB", "--json").stdout)
    assert [(i["id"], i["anchor"]) for i in result["items"]] == [(first["id"], False), (second["id"], True)]


def test_link_takes_uids(two):
    first, second = two
    assert _cmem("link", FIRST, "related", "01kbx7aaab").returncode == 0
    links = json.loads(_cmem("get", str(first["id"]), "--json").stdout)[0]["links"]
    assert [(link["id"], link["type"]) for link in links] == [(second["id"], "related")]


def test_forget_takes_a_uid(two):
    first, second = two
    result = _cmem("forget", "--yes", second["uid"])
    assert result.returncode == 0, result.stderr
    assert [r["id"] for r in json.loads(_cmem("search", "--json").stdout)] == [first["id"]]
    assert _cmem("forget", "--yes", "not-an-id").returncode == 4


def test_mcp_get_and_timeline_take_uids(two):
    first, second = two

    async def body(client: Client) -> dict[str, Any]:
        return {
            "get": await client.call_tool("get", {"ids": [first["uid"]]}),
            "timeline": await client.call_tool("timeline", {"anchor": SECOND[:12]}),
        }

    out = with_server(body)
    assert not out["get"].is_error and "Chose WAL for the store" in text_of(out["get"])
    items = out["timeline"].structured_content["items"]
    assert [(i["id"], i["anchor"]) for i in items] == [(first["id"], False), (second["id"], True)]


# -- the uid's tail, as a file name shows it, and summaries' uids ----------------------------------------------
TAILED = "01KBX7AAAC000000007ZK3QW9M"  # shares its first 9 characters with FIRST and SECOND
DIGITS = "01KBX7AAAD0000000012345678"  # a tail of digits only (about one uid in 10,000)


@pytest.fixture
def tailed(home: Path, cli: Any) -> dict[str, Any]:
    """Two memories, whose uids begin like every uid of that minute, and a session summary; each memory's
    file name ends in the last 8 characters of its uid (``...-7zk3qw9m.md``)."""
    records = [
        {"title": "Retry with backoff", "uid": TAILED, "project": "web", "session": "s1"},
        {"title": "Pool of 12 connections", "uid": DIGITS, "project": "web", "session": "s1"},
    ]
    assert cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in records)).exit_code == 0
    assert cli("summary", "add", "--session", "s1", "-p", "web", "--learned", "tails work").exit_code == 0
    names = {p.stem.rsplit("-", 1)[1] for p in (home / "export" / "web" / "s1").glob("*.md")}
    summary = cli("get", "S1", "--json").json()[0]
    assert names == {"7zk3qw9m", "12345678", summary["uid"][-8:].lower()}
    return {"summary": summary, "summary_tail": summary["uid"][-8:].lower()}


def test_the_uid_tail_in_a_file_name_names_its_memory(tailed, cli):
    got = cli("get", "7zk3qw9m", "12345678", "--json").json()
    assert [(r["uid"], r["title"]) for r in got] == [
        (TAILED, "Retry with backoff"), (DIGITS, "Pool of 12 connections")
    ]  # fmt: skip
    assert cli("edit", "7ZK3QW9M", "--narrative", "edited by the tail").exit_code == 0
    assert cli("get", TAILED, "--json").json()[0]["narrative"] == "edited by the tail"
    anchor = cli("timeline", "7zk3qw9m", "--json").json()
    assert [i["title"] for i in anchor["items"] if i["anchor"]] == ["Retry with backoff"]
    ambiguous = cli("get", "01KBX7AAA")
    assert (ambiguous.exit_code, ambiguous.stdout) == (4, "")
    assert ambiguous.stderr == f"cmem: uid prefix '01KBX7AAA' is ambiguous: {TAILED}, {DIGITS}\n"
    missing = cli("get", "zzzzzzzz")
    assert (missing.exit_code, missing.stderr) == (
        3,
        "cmem: no observation or summary uid starts or ends with zzzzzzzz\n",
    )


def test_a_summarys_uid_and_tail_name_it_where_a_command_takes_a_summary(tailed, cli):
    summary, tail = tailed["summary"], tailed["summary_tail"]
    for ref in (summary["uid"], summary["uid"][:12].lower(), tail):
        got = cli("get", ref, "--json")
        assert got.exit_code == 0, (ref, got.stderr)
        assert [(r["id"], r["kind"]) for r in got.json()] == [("S1", "summary")]
    anchor = cli("timeline", tail, "--json").json()
    assert [i["id"] for i in anchor["items"] if i["anchor"]] == ["S1"]
    refused = cli("edit", tail, "-t", "A summary is no observation")
    assert (refused.exit_code, refused.stderr) == (
        4,
        f"cmem: {tail} is the uid of summary S1, not of an observation\n",
    )

    async def body(client: Client) -> Any:
        return await client.call_tool("get", {"ids": ["7zk3qw9m", tail]})

    out = with_server(body)
    assert not out.is_error and "Retry with backoff" in text_of(out) and "tails work" in text_of(out)


def test_a_file_name_tail_is_looked_up_in_an_index_not_by_reading_every_uid(home):
    """An 8-character ref is looked for as a uid prefix and as a file name's tail; the tail reads an index
    of uid tails (at 1,000,000 observations reading every uid cost ~80 ms of each `cmem get PREFIX8`)."""
    with _store_with(home, ["01KBX7AAAA00000000007ZK3QW", "01KBX9CCCC000000000000TAIL"]) as memory:
        database = memory.store.db
        for table in ("observations", "session_summaries"):
            plan = " ".join(
                str(row[-1])
                for row in database.execute(
                    f"EXPLAIN QUERY PLAN SELECT id, uid FROM {table} WHERE substr(uid, -8) = ?", ("007ZK3QW",)
                )
            )
            assert f"USING INDEX {table}_uid_tail" in plan, plan
        assert memory.store.observations.uid_matches("007ZK3QW") == [
            ("observation", 1, "01KBX7AAAA00000000007ZK3QW")
        ]
