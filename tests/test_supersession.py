"""Explicit supersession through the real CLI and the MCP server: `cmem add --supersedes`, JSON `supersedes`,
`cmem link NEW supersedes OLD`; rows carry `superseded_by`, search ranks the successor first, `get` names it,
the briefing leaves the replaced memory out, and nothing is deleted."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client

from tests.test_mcp import text_of, with_server


def add(sh: Any, *args: str) -> int:
    result = sh("add", *args)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout.strip())


def rows_of(sh: Any, *args: str) -> list[dict[str, Any]]:
    result = sh("search", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


def test_a_replaced_memory_is_marked_and_ranked_below_its_successor(sh):
    # the old memory matches the query far better than its successor does
    old = add(sh, "-t", "Deploy target: staging cluster, deploy target chosen for deploys", "-p", "web",
              "--fact", "deploy target is staging")  # fmt: skip
    other = add(sh, "-t", "Deploy script lives in ops/deploy.sh", "-p", "web")
    new = add(sh, "-t", "We ship to production now", "-p", "web", "--fact", "deploy target is production",
              "--supersedes", str(old))  # fmt: skip
    rows = rows_of(sh, "deploy target", "-p", "web")
    order = [r["id"] for r in rows]
    assert order.index(new) == order.index(old) - 1
    by_id = {r["id"]: r for r in rows}
    assert (by_id[old]["superseded_by"], by_id[new]["superseded_by"], by_id[other]["superseded_by"]) == (
        new, None, None,
    )  # fmt: skip
    plain = sh("search", "deploy target", "-p", "web").stdout.splitlines()
    marked = [line for line in plain if line.startswith(f"{old}\t")]
    assert marked and f"[replaced by #{new}] Deploy target: staging" in marked[0]
    assert not any("replaced by" in line for line in plain if not line.startswith(f"{old}\t"))


def test_a_successor_that_is_no_hit_is_brought_in_unless_the_filters_exclude_it(sh):
    old = add(sh, "-t", "Session cookie lifetime is 30 minutes", "--type", "decision", "-p", "api")
    new = add(sh, "-t", "Logins now last a day", "--type", "change", "-p", "api", "--supersedes", str(old))
    rows = rows_of(sh, "cookie lifetime", "-p", "api")
    assert [(r["id"], r["superseded_by"]) for r in rows] == [(new, None), (old, new)]
    assert rows[0]["score"] == rows[1]["score"]  # it stands in for the row that led to it
    only_decisions = rows_of(sh, "cookie lifetime", "-p", "api", "--type", "decision")
    assert [(r["id"], r["superseded_by"]) for r in only_decisions] == [(old, new)]


def test_a_chain_of_replacements_shows_the_newest_first(sh):
    first = add(sh, "-t", "Python version pinned to 3.9", "-p", "lib")
    second = add(sh, "-t", "Interpreter bumped", "-p", "lib", "--supersedes", str(first))
    third = add(sh, "-t", "Interpreter bumped again", "-p", "lib", "--supersedes", str(second))
    rows = rows_of(sh, "python version pinned", "-p", "lib")
    assert [(r["id"], r["superseded_by"]) for r in rows] == [(third, None), (second, third), (first, second)]


def test_json_supersedes_by_id_or_uid_and_cmem_link_do_the_same(sh):
    records = [
        {"title": "Cache TTL is 60 s", "project": "p"},
        {"title": "Queue is RabbitMQ", "project": "p"},
    ]
    first, second = (int(i) for i in sh("add", "--json", "-", input=json.dumps(records)).stdout.split())
    uid = sh("get", str(second), "--json").json()[0]["uid"]
    newer = [
        {"title": "Cache TTL is 300 s", "project": "p", "supersedes": first},
        {"title": "Queue moved to Redis streams", "project": "p", "supersedes": [uid]},
    ]
    third, fourth = (int(i) for i in sh("add", "--json", "-", input=json.dumps(newer)).stdout.split())
    fifth = add(sh, "-t", "Cache TTL is 600 s", "-p", "p")
    assert sh("link", str(fifth), "supersedes", str(third)).exit_code == 0
    listed = {r["id"]: r["superseded_by"] for r in rows_of(sh, "-p", "p")}
    assert listed == {first: third, second: fourth, third: fifth, fourth: None, fifth: None}
    assert sh("link", str(fifth), "supersedes", str(third), "--remove").exit_code == 0
    assert {r["id"]: r["superseded_by"] for r in rows_of(sh, "-p", "p")}[third] is None


def test_get_and_timeline_name_the_successor_and_nothing_is_deleted(sh):
    old = add(sh, "-t", "Auth uses sessions", "-p", "app", "--narrative", "server-side sessions in Redis")
    new = add(sh, "-t", "Auth uses JWT", "-p", "app", "--supersedes", str(old))
    [record] = sh("get", str(old), "--json").json()
    assert record["superseded_by"] == new and record["narrative"] == "server-side sessions in Redis"
    text = sh("get", str(old)).stdout
    assert (
        text.splitlines()[0]
        == f"<!-- superseded by #{new} (Auth uses JWT): `cmem get {new}` for the current memory -->"
    )
    assert sh("get", str(new), "--json").json()[0]["superseded_by"] is None
    items = sh("timeline", str(old), "--json").json()["items"]
    assert {i["id"]: i["superseded_by"] for i in items} == {old: new, new: None}
    assert f"[replaced by #{new}] Auth uses sessions" in sh("timeline", str(old), "-f", "plain").stdout


def test_the_briefing_leaves_a_replaced_memory_out(sh):
    old = add(sh, "-t", "Release branch is release/1.x", "--type", "decision", "-p", "rel")
    new = add(sh, "-t", "Release branch is release/2.x", "--type", "decision", "-p", "rel",
              "--supersedes", str(old))  # fmt: skip
    briefing = sh("context", "-p", "rel", "--json").json()
    assert [o["id"] for o in briefing["observations"]] == [new]
    assert "release/1.x" not in briefing["text"]
    sh("forget", str(new), "--yes")
    briefing = sh("context", "-p", "rel", "--json").json()
    assert [o["id"] for o in briefing["observations"]] == [old]  # its successor gone, it is current again


def test_the_successor_inherits_the_retrieval_count_and_only_get_counts(sh):
    old = add(sh, "-t", "Build uses make", "-p", "b")
    for _ in range(2):
        sh("get", str(old))
    sh("search", "make", "-p", "b")
    sh("context", "-p", "b")
    sh("timeline", str(old))
    new = add(sh, "-t", "Build uses just", "-p", "b", "--supersedes", str(old))
    assert sh("get", str(old), "--json").json()[0]["retrieval_count"] == 3  # two gets and this one
    assert sh("get", str(new), "--json").json()[0]["retrieval_count"] == 3  # inherited two, plus this get


def test_bad_supersedes_is_a_one_line_error_and_writes_nothing(sh):
    old = add(sh, "-t", "Lint with flake8", "-p", "q")
    for args, code, message in [
        (("--supersedes", "999"), 3, "link target 999 does not exist"),
        (("--supersedes", "NOSUCHUID"), 3, "link target NOSUCHUID does not exist"),
    ]:
        result = sh("add", "-t", "Lint with ruff", "-p", "q", *args)
        assert (result.exit_code, result.stdout) == (code, "")
        assert result.stderr.strip().splitlines() == [f"cmem: {message}"]
    bad_json = sh("add", "--json", "-", input=json.dumps({"title": "x", "project": "q", "supersedes": True}))
    assert bad_json.exit_code == 4 and "supersedes" in bad_json.stderr and "Traceback" not in bad_json.stderr
    assert [r["id"] for r in rows_of(sh, "-p", "q")] == [old]


def test_a_supersedes_loop_is_refused(sh):
    first = add(sh, "-t", "Port is 8000", "-p", "loop")
    second = add(sh, "-t", "Port is 8080", "-p", "loop", "--supersedes", str(first))
    third = add(sh, "-t", "Port is 9000", "-p", "loop", "--supersedes", str(second))
    result = sh("link", str(first), "supersedes", str(third))
    assert result.exit_code == 4
    assert (
        result.stderr.strip()
        == f"cmem: observation {third} already supersedes {first} (directly or by a chain)"
    )
    assert sh("get", str(first), "--json").json()[0]["links"] == []


def test_mcp_remember_supersedes_and_every_tool_returns_the_field(home):
    async def body(client: Client) -> dict[str, Any]:
        out = {}
        await client.call_tool("remember", {"title": "Payments go through Stripe v1", "project": "shop"})
        out["remember"] = await client.call_tool(
            "remember", {"title": "Payments go through Stripe v2 now", "project": "shop", "supersedes": [1]}
        )
        out["search"] = await client.call_tool("search", {"query": "payments stripe", "project": "shop"})
        out["timeline"] = await client.call_tool("timeline", {"anchor": 1})
        out["get"] = await client.call_tool("get", {"ids": [1, 2]})
        out["context"] = await client.call_tool("context", {"project": "shop"})
        return out

    out = with_server(body)
    assert not any(getattr(r, "is_error", False) for r in out.values())
    hits = out["search"].structured_content["hits"]
    assert [(h["id"], h["superseded_by"]) for h in hits] == [(2, None), (1, 2)]
    assert "[replaced by #2] Payments go through Stripe v1" in text_of(out["search"]).splitlines()[1]
    items = out["timeline"].structured_content["items"]
    assert {i["id"]: i["superseded_by"] for i in items} == {1: 2, 2: None}
    records = out["get"].structured_content["records"]
    assert [(r["id"], r["superseded_by"]) for r in records] == [(1, 2), (2, None)]
    assert [o["id"] for o in out["context"].structured_content["observations"]] == [2]
