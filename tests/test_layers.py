"""Timeline and get: the second and third retrieval layers, plus sessions, prompts and summaries."""

from __future__ import annotations

import json
import subprocess


def _import(cli, records):
    result = cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in records))
    assert result.exit_code == 0, result.stderr
    return [int(x) for x in result.stdout.split()]


def _day(day: int, hour: int) -> str:
    return f"2026-05-{day:02d}T{hour:02d}:00:00Z"


def test_timeline_orders_items_around_the_anchor_in_its_project(cli):
    ids = _import(
        cli,
        [{"title": f"step {i}", "project": "p", "created_at": _day(1 + i // 3, 8 + i)} for i in range(9)]
        + [{"title": "other project", "project": "q", "created_at": _day(2, 12)}],
    )
    result = cli("timeline", str(ids[4]), "--before", "2", "--after", "3", "--json").json()
    items = result["items"]
    assert [i["id"] for i in items] == ids[2:8]
    assert [i["anchor"] for i in items] == [False, False, True, False, False, False]
    assert all(i["project"] == "p" for i in items)
    assert [i["created_at"] for i in items] == sorted(i["created_at"] for i in items)


def test_timeline_interleaves_prompts_and_summaries(cli):
    cli("prompt", "add", "find the login bug", "--session", "s", "-p", "p")
    obs = int(cli("add", "-t", "Found it in cookie parsing", "-p", "p", "--session", "s").stdout)
    cli("summary", "add", "--session", "s", "-p", "p", "--completed", "login fixed")
    items = cli("timeline", str(obs), "--json").json()["items"]
    assert [i["kind"] for i in items] == ["prompt", "observation", "summary"]
    assert items[0]["id"] == "P1" and items[2]["id"] == "S1"
    anchored_on_prompt = cli("timeline", "P1", "--json").json()["items"]
    assert anchored_on_prompt[0]["anchor"] is True


def test_timeline_by_query_uses_the_best_hit_as_anchor(cli):
    _import(
        cli,
        [
            {"title": t, "project": "p", "created_at": _day(3, h)}
            for h, t in [(8, "setup"), (9, "postgres migration failed"), (10, "rollback")]
        ],
    )
    items = cli("timeline", "--query", "migration", "--json").json()["items"]
    assert [i["title"] for i in items if i["anchor"]] == ["postgres migration failed"]


def test_timeline_plain_text_and_day_grouping(cli):
    _import(
        cli,
        [
            {"title": "a", "project": "p", "created_at": _day(1, 9)},
            {"title": "b", "project": "p", "created_at": _day(2, 9)},
        ],
    )
    plain = cli("timeline", "1").stdout.splitlines()
    assert plain == [">>\t1\t2026-05-01 09:00\tchange\ta\t~47", "\t2\t2026-05-02 09:00\tchange\tb\t~47"]
    md = cli("timeline", "1", "--format", "md").stdout
    assert "## 2026-05-01" in md and "## 2026-05-02" in md


def test_get_prints_full_details_and_counts_retrievals(cli, home):
    cli("add", "-t", "Root cause", "-p", "p", "--narrative", "deadlock in pool", "--fact", "pool size 1")
    cli("add", "-t", "Symptom", "-p", "p", "--link", "caused_by:1")
    out = cli("get", "1").stdout
    assert "# Root cause" in out and "deadlock in pool" in out and "- pool size 1" in out
    record = cli("get", "2", "--links", "--json").json()
    assert [r["id"] for r in record] == [2, 1]
    assert record[0]["links"][0]["type"] == "caused_by" and record[1]["via"] == {
        "type": "caused_by",
        "from": 2,
    }
    again = cli("get", "1", "--json").json()[0]
    assert again["retrieval_count"] == 3 and again["last_retrieved_at"].endswith("Z")
    assert again["linked_from"][0]["id"] == 2


def test_get_escapes_terminal_control_sequences(cli):
    cli("add", "-t", "evil \x1b]0;title\x07 text", "-p", "p")
    out = cli("get", "1").stdout
    assert "\x1b" not in out and "\\x1b" in out


def test_session_lifecycle_and_prompt_numbers(cli):
    assert (
        cli("session", "start", "sess-1", "-p", "web", "--agent", "claude", "--goal", "fix login").exit_code
        == 0
    )
    assert cli("prompt", "add", "first", "--session", "sess-1").stdout.split() == ["P1", "1"]
    assert cli("prompt", "add", "second", "--session", "sess-1").stdout.split() == ["P2", "2"]
    cli("summary", "add", "--session", "sess-1", "--request", "fix login", "--next-steps", "write a test")
    assert cli("session", "end", "sess-1", "--outcome", "fixed").exit_code == 0
    shown = cli("session", "show", "sess-1", "--json").json()
    assert shown["status"] == "completed" and shown["prompt_counter"] == 2 and shown["goal"] == "fix login"
    assert [p["text"] for p in shown["prompts"]] == ["first", "second"] and shown["summaries"] == ["S1"]
    (listed,) = cli("session", "list", "--json").json()
    assert listed["session_id"] == "sess-1" and listed["project"] == "web"
    assert cli("session", "end", "nope").exit_code == 3
    assert cli("session", "end", "sess-1", "--status", "weird").exit_code == 4


def test_session_defaults_come_from_the_environment(cli, monkeypatch):
    monkeypatch.setenv("CMEM_SESSION", "env-session")
    monkeypatch.setenv("CMEM_PROJECT", "env-project")
    monkeypatch.setenv("CMEM_AGENT", "env-agent")
    cli("add", "-t", "from env")
    (row,) = cli("search", "--json").json()
    assert (row["session"], row["project"], row["agent"]) == ("env-session", "env-project", "env-agent")
    cli("add", "-t", "flags win", "--project", "flag-project", "--agent", "flag-agent", "--session", "s2")
    row = cli("search", "flags", "--all-projects", "--json").json()[0]  # $CMEM_PROJECT scopes reads too
    assert (row["session"], row["project"], row["agent"]) == ("s2", "flag-project", "flag-agent")


def test_project_defaults_to_the_enclosing_git_repository(cli, tmp_path, monkeypatch):
    repo = tmp_path / "my-repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    monkeypatch.chdir(repo / "src" / "deep")
    cli("add", "-t", "in a repo")
    monkeypatch.chdir(tmp_path)
    plain = tmp_path / "plain-dir"
    plain.mkdir()
    monkeypatch.chdir(plain)
    cli("add", "-t", "not in a repo")
    projects = {r["title"]: r["project"] for r in cli("search", "--json").json()}
    assert projects == {"in a repo": "my-repo", "not in a repo": "plain-dir"}


def test_stats_counts_everything(cli):
    _import(cli, [{"title": "a", "type": "bugfix", "project": "p"}, {"title": "b", "project": "q"}])
    data = cli("stats", "--json").json()
    assert data["counts"]["observations"] == 2
    assert data["by_type"] == {"bugfix": 1, "change": 1} and data["by_project"] == {"p": 1, "q": 1}


def test_home_option_beats_environment(cli, tmp_path):
    other = tmp_path / "other-home"
    assert cli("--home", str(other), "add", "-t", "elsewhere", "-p", "p").exit_code == 0
    assert (other / "cmem.db").exists()
    assert cli("search", "elsewhere", "--format", "ids").stdout == ""
    assert cli("--home", str(other), "search", "elsewhere", "--format", "ids").stdout == "1\n"


def test_timeline_names_only_the_ids_it_takes(cli):
    """Its error must not suggest a form it refuses (`doc:<docid>` is for `cmem get`)."""
    wrong = cli("timeline", "zzz")
    assert (wrong.exit_code, wrong.stderr) == (
        4,
        "cmem: not an id: 'zzz' (expected an observation's number or uid, S<n> for a summary or P<n> for a prompt)\n",
    )
    document = cli("timeline", "doc:abc123")
    assert (document.exit_code, document.stderr) == (
        4,
        "cmem: doc:abc123 is a document: documents have no timeline (`cmem get doc:abc123` shows it)\n",
    )
