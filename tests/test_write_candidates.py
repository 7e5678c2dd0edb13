"""What a new memory may replace, caught when it is written (issue 41): `cmem add` names the candidates on
stderr and in `--format json`, MCP `remember` returns them, a confident one is marked maybe replaced, and
every read path then shows the current fact first and the old one marked (the briefing lists only the
current one)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.test_mcp import with_server

# (older memory, the change as people and agents state it, a later question)
CHANGES = [
    pytest.param("Book the design review for Tuesday at 2pm in room 4B.",
                 "Actually, make that Thursday for the design review, Priya can't do Tuesday.",
                 "When is the design review?", id="a meeting moved"),
    pytest.param("Invoice 88 from Northwind approved for $8,000.",
                 "Change of plans: the approval of invoice 88 is cancelled, it is on hold until legal signs off.",
                 "Is invoice 88 approved?", id="an approval cancelled"),
    pytest.param("Decision: hash passwords with bcrypt, cost factor 10 (BCRYPT_ROUNDS in settings.py).",
                 "Raised the bcrypt cost factor from 10 to 12 after the security review; BCRYPT_ROUNDS=12.",
                 "What bcrypt cost do we use for password hashing?", id="a cost raised"),
    # how often, said as "every X"
    pytest.param("The invoice export job runs every hour (export_invoices in jobs.py).",
                 "export_invoices schedule changed to every 15 minutes.",
                 "How often does the invoice export run?", id="a schedule changed"),
    # a person in the slot another held, the old one still named
    pytest.param("Release notes are written by Tomas.",
                 "Release notes are written by Ingrid from now on, Tomas moved to support.",
                 "Who writes the release notes?", id="a person took over"),
    # the old choice named as what was ("no X")
    pytest.param("Decision: pull requests are merged with rebase-merge.",
                 "Pull requests are squash-merged now, no rebase-merge.",
                 "How are pull requests merged?", id="the old choice retired"),
]  # fmt: skip


def add(cli: Any, title: str, *extra: str) -> tuple[int, str]:
    result = cli("add", title, "--project", "app", "--session", "s1", *extra)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout.strip()), result.stderr


@pytest.mark.parametrize(("old_title", "new_title", "question"), CHANGES)
def test_a_stated_change_is_caught_when_written_and_the_current_fact_leads(
    cli, old_title, new_title, question
):
    old, _ = add(cli, old_title)
    add(cli, "The design system docs live in the wiki.")  # a neighbour that must stay current
    new, told = add(cli, new_title)
    assert f"cmem: #{new} may replace #{old} " in told
    assert f"(marked maybe replaced); if it does: cmem link {new} supersedes {old}" in told

    rows = cli("search", question, "--project", "app", "--json").json()
    by_id = {r["id"]: r for r in rows}
    assert [r["id"] for r in rows].index(new) < [r["id"] for r in rows].index(old)
    assert (by_id[old]["possibly_superseded_by"], by_id[new]["possibly_superseded_by"]) == (new, None)
    assert all(r["possibly_superseded_by"] in (None, new) for r in rows)  # the neighbour is not marked
    plain = cli("search", question, "--project", "app").stdout
    assert f"[maybe replaced by #{new}] " in plain

    briefing = cli("context", "--project", "app").stdout
    assert f"#{new} " in briefing and f"#{old} " not in briefing  # the current version only
    assert cli("get", str(old)).stdout.startswith(f"<!-- maybe replaced by #{new} ")
    timeline = cli("timeline", "--query", question, "--project", "app", "--json").json()
    marks = {
        i["id"]: i.get("possibly_superseded_by") for i in timeline["items"] if i["kind"] == "observation"
    }
    assert marks[old] == new and marks[new] is None

    # the writer confirms: the link is explicit from then on
    assert cli("link", str(new), "supersedes", str(old)).exit_code == 0
    rows = cli("search", question, "--project", "app", "--json").json()
    assert {r["id"]: r["superseded_by"] for r in rows}[old] == new


def test_add_format_json_carries_the_candidates(cli):
    old, _ = add(cli, "Standup is at 9:30 every morning.")
    result = cli("add", "Starting next week standup is at 10:00 instead of 9:30.", "--project", "app",
                 "--session", "s1", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["candidates"][0]["id"] == old and out["candidates"][0]["inferred"] is True
    assert out["candidates"][0]["confirm"] == f"cmem link {out['id']} supersedes {old}"
    records = [{"title": "Release notes template lives in Notion.", "project": "web"},
               {"title": "The official release date for v3 is March 3.", "project": "web",
                "created_at": "2026-01-05T09:00:00Z"},
               {"title": "Heads up: the official release date for v3 is now March 17.", "project": "web",
                "created_at": "2026-01-06T09:00:00Z"}]  # fmt: skip
    result = cli("add", "--json", "-", "--format", "json", input=json.dumps(records))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [c["id"] for c in lines[2]["candidates"]][:1] == [lines[1]["id"]]
    assert f"may replace #{lines[1]['id']}" in result.stderr
    plain = cli("add", "--json", "-", input=json.dumps({"title": "Unrelated note", "project": "web"}))
    assert plain.stdout.strip().isdigit()  # ids, one a line, as before


def test_related_facts_that_both_hold_are_reported_at_most_never_marked(cli):
    sales, _ = add(cli, "Sales budget for Q3 is $25,000.")
    marketing, _ = add(cli, "Marketing budget for Q3 is $40,000.")
    new, _ = add(cli, "Q3 marketing budget raised to $55,000 after the board meeting.")
    rows = {r["id"]: r for r in cli("search", "Q3 budget", "--project", "app", "--json").json()}
    assert rows[marketing]["possibly_superseded_by"] == new
    assert rows[sales]["possibly_superseded_by"] is None
    added, told = add(cli, "We also added GitHub login next to Google login.")
    assert "marked maybe replaced" not in told


def test_a_request_an_addition_or_another_slot_is_never_marked(cli):
    # a conversation's request states no fact, even with a new value of the same subject
    old, _ = add(cli, "My reading goal this winter is 10 books.")
    _, told = add(cli, "I'm trying to reach 12 books this winter, can you suggest a series?")
    assert "marked maybe replaced" not in told
    # one more thing about the same subject: both hold
    _, told = add(cli, "The reading goal this winter is still 10 books, audiobooks count too.")
    assert "marked maybe replaced" not in told
    # the same words, another slot ("events" topic and "audit" topic)
    events, _ = add(cli, "Kafka retention for the clicks topic is 3 days.")
    _, told = add(cli, "Kafka retention for the billing topic is 30 days.")
    assert "marked maybe replaced" not in told
    rows = cli("search", "Kafka retention", "--project", "app", "--json").json()
    assert all(r["possibly_superseded_by"] is None for r in rows)
    assert old in {r["id"] for r in cli("search", "reading goal", "--project", "app", "--json").json()}


def test_a_named_replacement_or_a_key_asks_nothing(cli):
    old, _ = add(cli, "Deploy target is staging.")
    _, told = add(cli, "Deploy target is now production.", "--supersedes", str(old))
    assert "may replace" not in told
    add(cli, "Cache TTL is 300 seconds.", "--key", "cache-ttl")
    _, told = add(cli, "Cache TTL changed to 900 seconds.", "--key", "cache-ttl")
    assert "may replace" not in told  # the key rewrote its note in place


def test_mcp_remember_returns_the_candidates(home):
    async def body(client: Any) -> Any:
        await client.call_tool("remember", {"title": "Logging uses structlog with the JSON renderer",
                                            "project": "demo"})  # fmt: skip
        return await client.call_tool(
            "remember",
            {"title": "Replaced structlog with stdlib logging; structlog is removed", "project": "demo"},
        )

    result = with_server(body)
    found = result.structured_content["candidates"]
    assert found[0]["id"] == 1 and found[0]["confirm"] == "cmem link 2 supersedes 1"
    assert "may replace #1" in "\n".join(block.text for block in result.content)


def test_the_python_api_gives_the_candidates(home):
    from cmem_cli.api import Memory

    with Memory(home) as memory:
        old = memory.add("The job queue visibility timeout is 60 seconds", project="api")
        new = memory.add("Visibility timeout changed to 300 seconds because exports run long", project="api")
        found = memory.candidates(new.id)
    assert found[0].id == old.id and found[0].inferred
    assert found[0].confirm == f"cmem link {new.id} supersedes {old.id}"


def test_the_pool_a_new_memory_is_compared_with_is_ranked_as_fts5s_rank_ties_included(tmp_path):
    """The older memories of the project that share the new one's words, ranked by ``bm25()`` inside the
    project (not by FTS5's ``rank`` over every match of the store): the same rows in the same order,
    including the many ties of memories stated alike, at every depth."""
    import random

    from cmem_cli.store.records import normalize_observation
    from cmem_cli.store.repository import Store

    rng = random.Random(41)
    store = Store.open(tmp_path / "cmem.db")
    try:
        with store.transaction():
            for i in range(600):
                words = rng.choice(["cache deploy", "cache stampede", "deploy cache", "stampede", "cache"])
                title = words if i % 3 else f"{words} {rng.choice(['api', 'worker', 'queue'])}"
                obs = {"title": title, "project": rng.choice(["p", "q", "r"]), "created_at": 1_700_000 + i}
                store.observations.insert(normalize_observation(obs))
        match = '"cache" OR "stampede" OR "deploy"'
        ranked_by_rank = (
            "SELECT o.id, -bm25(observations_fts, 10.0, 4.0, 1.0, 2.0, 3.0, 1.0), o.session "
            "FROM observations_fts CROSS JOIN observations o ON o.id = observations_fts.rowid "
            "WHERE observations_fts MATCH ? AND o.project = ? AND o.id != ? AND o.created_at <= ? "
            "ORDER BY rank LIMIT ?"
        )
        for project in "pqr":
            for limit in (1, 5, 20, 200, 1_000):
                pool = store.supersession.replacement_pool(match, 7, project, None, 1_700_550, limit=limit)
                expected = store.db.rows(ranked_by_rank, (match, project, 7, 1_700_550, limit))
                assert [(i, s) for i, s, _ in pool] == [(i, s) for i, s, _ in expected]
                assert len(pool) == min(limit, len(expected))
    finally:
        store.close()
