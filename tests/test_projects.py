"""A project is its repository, and a read defaults to the project of the repository it runs in.

Through the real CLI (and a real hook and MCP server) in real git repositories: every worktree and clone
of one repository files under one project and sees the others' memories; two repositories called alike do
not share one; a store made before projects were keyed by repository keeps every memory and `cmem projects`
shows what each old name stands for; `search`, `timeline --query`, `context` and `view` cover the
repository's project inside one and every project elsewhere, say so once on stderr and in `--json`, and
`--all-projects` widens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest
from mcp import Client, StdioServerParameters

from tests.agent_fixtures import tool_payload
from tests.conftest import Result
from tests.runner import invoke

ORIGIN = "https://example.com/acme/app.git"


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def new_repo(root: Path, origin: str | None = None) -> Path:
    """A repository with one commit of src/main.py (and ``origin`` as its remote, never fetched)."""
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "main.py").write_text("print('hi')\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    if origin:
        git(root, "remote", "add", "origin", origin)
    return root


def cmem(cwd: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """`cmem ARGS` run in ``cwd``, as an agent's shell there would run it (in this process: tests/runner.py)."""
    return invoke(*args, cwd=cwd, input=input, env=env)


def add(cwd: Path, title: str, *args: str) -> int:
    result = cmem(cwd, "add", title, *args)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout)


def titles(cwd: Path, *args: str) -> set[str]:
    result = cmem(cwd, "search", *args, "--json")
    assert result.exit_code in (0, 10), result.stderr
    return {row["title"] for row in json.loads(result.stdout or "[]")}


def projects(cwd: Path) -> dict[str, dict[str, Any]]:
    result = cmem(cwd, "projects", "--json")
    assert result.exit_code == 0, result.stderr
    return {row["project"]: row for row in json.loads(result.stdout)}


@pytest.fixture
def app(tmp_path: Path, home: Path) -> Path:
    """~/work/app with an origin on a server, one commit."""
    return new_repo(tmp_path / "work" / "app", ORIGIN)


# -- a project is its repository ----------------------------------------------------------------------
def test_worktrees_and_clones_of_one_repository_share_one_memory(app: Path, tmp_path: Path):
    feature = tmp_path / "work" / "app-feature"
    git(app, "worktree", "add", "-q", "-b", "feature", str(feature))
    ssh_clone = new_repo(tmp_path / "laptop" / "my-app", "git@example.com:acme/app")  # origin spelt otherwise
    local_clone = tmp_path / "scratch" / "app-copy"
    git(tmp_path, "clone", "-q", str(app), str(local_clone))  # origin: the folder ~/work/app

    add(app, "Main checkout picks WAL")
    add(feature, "Feature worktree adds a busy timeout")
    add(ssh_clone, "SSH clone pins apsw")
    add(local_clone, "Local clone measures the hook")

    everything = {
        "Main checkout picks WAL",
        "Feature worktree adds a busy timeout",
        "SSH clone pins apsw",
        "Local clone measures the hook",
    }
    for checkout in (app, feature, ssh_clone, local_clone):
        assert titles(checkout) == everything, checkout
    listed = projects(app)
    assert list(listed) == ["app"]
    assert listed["app"]["observations"] == 4
    assert (listed["app"]["repository"], listed["app"]["mapped"]) == ("example.com/acme/app", "claimed")


def test_two_repositories_named_alike_keep_their_memories_apart(tmp_path: Path, home: Path):
    ours = new_repo(tmp_path / "work" / "api", "https://example.com/acme/api")
    theirs = new_repo(tmp_path / "other" / "api")  # no remote: keyed by its folder
    add(ours, "Our api retries twice")
    add(theirs, "Their api never retries")

    assert titles(ours) == {"Our api retries twice"}
    assert titles(theirs) == {"Their api never retries"}
    listed = projects(tmp_path)
    assert set(listed) == {"api", "api-other"}  # the short name, told apart only on the clash
    assert listed["api"]["repository"] == "example.com/acme/api"
    assert listed["api-other"]["repository"] == os.path.realpath(theirs)
    assert titles(tmp_path) == {"Our api retries twice", "Their api never retries"}  # outside: every project


def test_cmem_project_and_the_project_option_still_win(app: Path):
    assert cmem(app, "add", "Filed by the environment", env={"CMEM_PROJECT": "ops"}).exit_code == 0
    add(app, "Filed by the option", "--project", "infra")
    add(app, "Filed by the repository")

    rows = json.loads(cmem(app, "search", "--all-projects", "--json").stdout)
    assert {row["title"]: row["project"] for row in rows} == {
        "Filed by the environment": "ops",
        "Filed by the option": "infra",
        "Filed by the repository": "app",
    }
    assert titles(app, "--project", "infra") == {"Filed by the option"}
    assert titles(app) == {"Filed by the repository"}
    scoped = cmem(app, "search", "--json", env={"CMEM_PROJECT": "ops"})
    assert {row["title"] for row in scoped.json()} == {"Filed by the environment"}
    assert scoped.stderr == ""  # the user named the project: not news


def test_a_hook_in_a_worktree_records_under_the_repository(app: Path, tmp_path: Path, home: Path):
    feature = tmp_path / "work" / "app-feature"
    git(app, "worktree", "add", "-q", "-b", "feature", str(feature))
    edit = {"file_path": str(feature / "src" / "main.py"), "old_string": "hi", "new_string": "hello"}
    hook = cmem(feature, "hook", "PostToolUse", input=json.dumps(tool_payload("s1", feature, "Edit", edit)))
    assert hook.exit_code == 0, hook.stderr
    [(project,)] = apsw.Connection(str(home / "cmem.db")).execute("SELECT DISTINCT project FROM observations")
    assert project == "app"
    assert len(titles(app)) == 1


# -- an existing store ------------------------------------------------------------------------------------
def forget_project_keys(home: Path) -> None:
    """Make the store look as a cmem before projects were keyed by repository left it: no table, the
    migration not applied (it runs again on the next open)."""
    conn = apsw.Connection(str(home / "cmem.db"))
    conn.execute("DROP TABLE project_keys")
    conn.execute("DELETE FROM _cmem_migrations WHERE scope = 'store' AND name = 'm011_project_keys'")
    conn.close()


def test_an_existing_store_migrates_without_losing_a_memory(app: Path, tmp_path: Path, home: Path):
    feature = tmp_path / "work" / "app-feature"
    git(app, "worktree", "add", "-q", "-b", "feature", str(feature))
    api = new_repo(tmp_path / "work" / "api")
    # What the folder-named projects were: the worktree its own project, every memory citing a file.
    add(app, "Checkout memory", "--project", "app", "--read", "src/main.py")
    add(app, "Second checkout memory", "--project", "app", "--read", "src/main.py")
    add(feature, "Worktree memory", "--project", "app-feature", "--read", "src/main.py")
    add(api, "Api memory", "--project", "api", "--read", "src/main.py")
    add(app, "Chosen name", "--project", "billing", "--read", "src/main.py")  # a name someone chose
    add(tmp_path, "Unanchored note", "--project", "notes")
    before = json.loads(cmem(tmp_path, "search", "--json").stdout)
    forget_project_keys(home)

    after = json.loads(cmem(tmp_path, "search", "--json").stdout)
    assert sorted((r["id"], r["project"], r["title"]) for r in after) == sorted(
        (r["id"], r["project"], r["title"]) for r in before
    )
    listed = projects(tmp_path)
    assert (listed["app"]["repository"], listed["app"]["mapped"], listed["app"]["same_as"]) == (
        "example.com/acme/app",
        "anchors",
        None,
    )
    assert (listed["app-feature"]["repository"], listed["app-feature"]["same_as"]) == (
        "example.com/acme/app",
        "app",
    )
    assert (listed["api"]["repository"], listed["api"]["mapped"]) == (os.path.realpath(api), "anchors")
    assert (listed["notes"]["repository"], listed["notes"]["mapped"]) == (None, None)
    assert (listed["billing"]["repository"], listed["billing"]["mapped"]) == (None, None)
    plain = cmem(tmp_path, "projects", "--format", "plain").stdout
    assert "app-feature\t1\t" in plain and "older name of app" in plain

    # new work from the worktree files under the repository's project, beside the checkout's; the worktree's
    # old name keeps its memory, and a read of the repository's project covers it
    add(feature, "New worktree memory")
    assert titles(feature) == {
        "Checkout memory",
        "Second checkout memory",
        "Worktree memory",
        "New worktree memory",
    }


def test_inside_a_repository_the_default_scope_folds_in_its_older_names(
    app: Path, tmp_path: Path, home: Path
):
    """Memories stored before projects were keyed by repository keep their project (the worktree's folder
    name); inside the repository search, timeline --query, context and view cover them with the repository's
    project, as `cmem projects` maps them; the old name alone, another repository and an unmapped name stay
    apart."""
    feature = tmp_path / "work" / "app-feature"
    git(app, "worktree", "add", "-q", "-b", "feature", str(feature))
    other = new_repo(tmp_path / "work" / "api")
    add(app, "Checkout cache decision", "--project", "app", "--read", "src/main.py", "--type", "decision")
    add(
        feature,
        "Worktree cache bugfix",
        "--project",
        "app-feature",
        "--read",
        "src/main.py",
        "--type",
        "bugfix",
    )
    add(other, "Api cache note", "--project", "api", "--read", "src/main.py")
    add(app, "Chosen cache name", "--project", "app-notes")  # unanchored: not known to be this repository
    session = cmem(feature, "session", "start", "--project", "app-feature").stdout.strip()
    summary = cmem(feature, "summary", "add", "--session", session, "--project", "app-feature",
                   "--completed", "Fixed the worktree cache")  # fmt: skip
    assert summary.exit_code == 0, summary.stderr
    forget_project_keys(home)
    assert projects(tmp_path)["app-feature"]["same_as"] == "app"

    ours = {"Checkout cache decision", "Worktree cache bugfix"}
    summarised = {*ours, "Session summary: Fixed the worktree cache"}
    for checkout in (app, feature):
        assert titles(checkout, "cache") == summarised, checkout
        assert titles(checkout) == ours, checkout  # a listing too
    rows = cmem(app, "search", "cache", "--json").json()
    assert {row["project"] for row in rows} == {"app", "app-feature"}  # each memory keeps its project
    assert titles(tmp_path, "cache", "--project", "app-feature") == summarised - {"Checkout cache decision"}
    assert titles(tmp_path, "cache", "--project", "app") == summarised  # the repository's name, named
    assert titles(other, "cache") == {"Api cache note"}

    timeline = cmem(app, "timeline", "--query", "worktree cache bugfix", "--json").json()
    assert [i["title"] for i in timeline["items"] if i["anchor"]] == ["Worktree cache bugfix"]
    context = cmem(feature, "context", "--json").json()
    assert {o["title"] for o in context["observations"]} == ours
    assert "Fixed the worktree cache" in cmem(feature, "context").stdout  # the old name's last session
    view = cmem(app, "view", "--output", str(tmp_path / "v.html"), "--json")
    assert view.exit_code == 0, view.stderr
    assert view.json()["observations"] == 2


# -- one default scope -----------------------------------------------------------------------------------
@pytest.fixture
def two_projects(app: Path, tmp_path: Path) -> Path:
    """app (the repository) and a memory filed elsewhere, both matching "cache"."""
    add(app, "App cache decision", "--type", "decision")
    add(tmp_path, "Elsewhere cache note", "--project", "elsewhere")
    return app


INSIDE = "cmem: note: scope: project app (this git repository); --all-projects for every project\n"
OUTSIDE = "cmem: note: scope: all projects (not inside a git repository); --project NAME for one\n"


def test_search_defaults_to_the_repository_inside_one_and_to_every_project_outside(
    two_projects: Path, tmp_path: Path
):
    inside = cmem(two_projects, "search", "cache")
    assert [line.split("\t")[3] for line in inside.stdout.splitlines()] == ["App cache decision"]
    assert inside.stderr == INSIDE
    outside = cmem(tmp_path, "search", "cache", "--json")
    assert {row["title"] for row in outside.json()} == {"App cache decision", "Elsewhere cache note"}
    assert outside.stderr == OUTSIDE
    wide = cmem(two_projects, "search", "cache", "--all-projects", "--json")
    assert {row["title"] for row in wide.json()} == {"App cache decision", "Elsewhere cache note"}
    assert wide.stderr == ""  # a scope given is not news
    named = cmem(tmp_path, "search", "cache", "--project", "elsewhere", "--json")
    assert [row["title"] for row in named.json()] == ["Elsewhere cache note"] and named.stderr == ""
    both = cmem(two_projects, "search", "cache", "--project", "app", "--all-projects")
    assert (both.exit_code, both.stderr) == (2, "cmem: give --project or --all-projects, not both\n")


def test_timeline_query_takes_the_same_default_scope(two_projects: Path, tmp_path: Path):
    add(tmp_path, "Elsewhere cache decision, newer and better matching cache cache", "--project", "elsewhere")
    inside = cmem(two_projects, "timeline", "--query", "cache", "--json")
    assert inside.exit_code == 0, inside.stderr
    data = inside.json()
    assert [i["title"] for i in data["items"] if i["anchor"]] == ["App cache decision"]
    assert data["notes"] == [INSIDE.removeprefix("cmem: note: ").strip()]
    assert inside.stderr == INSIDE
    wide = cmem(two_projects, "timeline", "--query", "cache", "--all-projects", "--json").json()
    assert [i["project"] for i in wide["items"] if i["anchor"]] == ["elsewhere"]
    assert "notes" not in wide
    by_id = cmem(two_projects, "timeline", "1", "--json")  # an anchor by id has no scope to say
    assert by_id.stderr == "" and "notes" not in by_id.json()


def test_context_is_the_repository_s_inside_one_and_every_project_s_outside(
    two_projects: Path, tmp_path: Path
):
    inside = cmem(two_projects, "context", "--json")
    data = inside.json()
    assert data["project"] == "app" and data["notes"] == [INSIDE.removeprefix("cmem: note: ").strip()]
    assert [o["title"] for o in data["observations"]] == ["App cache decision"]
    assert inside.stderr == INSIDE
    outside = cmem(tmp_path, "context")
    assert outside.stdout.startswith("# cmem memory, all projects\n")
    assert "App cache decision" in outside.stdout and "Elsewhere cache note" in outside.stdout
    assert outside.stderr == OUTSIDE
    named = cmem(tmp_path, "context", "--project", "elsewhere", "--json").json()
    assert [o["title"] for o in named["observations"]] == ["Elsewhere cache note"] and "notes" not in named


def test_view_covers_the_repository_inside_one_and_every_project_outside(two_projects: Path, tmp_path: Path):
    inside = cmem(two_projects, "view", "--output", str(tmp_path / "in.html"), "--json")
    assert inside.exit_code == 0, inside.stderr
    assert inside.json()["observations"] == 1 and inside.json()["notes"] == [
        INSIDE.removeprefix("cmem: note: ").strip()
    ]
    assert inside.stderr == INSIDE
    outside = cmem(tmp_path, "view", "--output", str(tmp_path / "out.html"), "--json")
    assert outside.json()["observations"] == 2 and outside.stderr == OUTSIDE
    wide = cmem(two_projects, "view", "--all-projects", "--output", str(tmp_path / "all.html"), "--json")
    assert wide.json()["observations"] == 2 and wide.json()["notes"] == [] and wide.stderr == ""


def test_help_says_the_default_scope(home: Path, tmp_path: Path):
    for command in ("search", "timeline", "context", "view"):
        text = " ".join(cmem(tmp_path, command, "--help").stdout.split())
        assert "--all-projects" in text, command
        assert "git repository" in text, command


def mcp_call(cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def main() -> list[Any]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "cmem_cli", "mcp"], env=dict(os.environ), cwd=cwd
        )
        async with Client(params, read_timeout_seconds=60) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


def test_mcp_search_defaults_to_the_server_s_repository_and_all_projects_widens(
    two_projects: Path, tmp_path: Path
):
    scoped, wide = mcp_call(
        two_projects, [("search", {"query": "cache"}), ("search", {"query": "cache", "all_projects": True})]
    )
    assert [h["title"] for h in scoped.structured_content["hits"]] == ["App cache decision"]
    note = "scope: project app (this git repository); all_projects=true for every project"
    assert scoped.structured_content["notes"][0] == note
    assert scoped.content[0].text.splitlines()[-1] == note
    assert {h["title"] for h in wide.structured_content["hits"]} == {
        "App cache decision",
        "Elsewhere cache note",
    }
    assert not any(n.startswith("scope:") for n in wide.structured_content["notes"])

    [from_root] = mcp_call(Path("/"), [("search", {"query": "cache"})])
    assert {h["title"] for h in from_root.structured_content["hits"]} == {
        "App cache decision",
        "Elsewhere cache note",
    }
    assert from_root.structured_content["notes"][0].startswith(
        "scope: all projects (not inside a git repository)"
    )


def test_a_search_scoped_to_the_repository_still_finds_the_user_s_notes(two_projects: Path, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "eviction.md").write_text(
        "# Eviction notes\n\nThe tokenizer cache evicts the least recent entry.\n"
    )
    assert cmem(two_projects, "collection", "add", str(notes)).exit_code == 0
    indexed = cmem(two_projects, "index")
    assert indexed.exit_code == 0, indexed.stderr
    rows = cmem(two_projects, "search", "cache", "--json").json()
    kinds = {(row["kind"], row["project"]) for row in rows}  # a document's project cell is its collection
    assert kinds == {("observation", "app"), ("document", "notes")}
    assert (
        cmem(two_projects, "search", "cache", "--collection", "memories", "--json").json()[0]["project"]
        == "app"
    )


def test_a_team_search_scoped_to_a_repository_covers_its_older_names_too() -> None:
    """The team database's filter takes the same older names the home's search folds in."""
    from cmem_cli.store.filters import Filters
    from cmem_cli.team.source import _Scope

    folded = _Scope(Filters(project="app", folded=("app-feature",)))
    assert "o.project IN (%(f_0)s, %(f_1)s)" in folded.observations
    assert [folded.params["f_0"], folded.params["f_1"]] == ["app", "app-feature"]
    plain = _Scope(Filters(project="app"))
    assert "o.project = %(f_0)s" in plain.observations
    assert plain.params["f_0"] == "app"
