"""Code anchors through the real CLI in a real git repository: an observation that cites files records
their git blob hashes; every read path says which cited files changed or vanished since (`stale`);
`cmem verify` re-anchors. No repository, a detached HEAD or a deleted repository make nothing fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent_fixtures import tool_payload


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository on branch main with one commit of src/auth.py and src/db.py; the cwd."""
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "auth.py").write_text("def login():\n    return True\n")
    (root / "src" / "db.py").write_text("POOL = 4\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    monkeypatch.chdir(root)
    return root


def search_rows(sh, *args: str) -> list[dict]:
    result = sh("search", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


def only(rows: list[dict], obs_id: int) -> dict:
    [row] = [r for r in rows if r["id"] == obs_id]
    return row


def add(sh, *args: str) -> int:
    result = sh("add", *args)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout)


def test_a_cited_file_that_changes_or_vanishes_makes_the_memory_stale_on_every_read_path(sh, repo):
    obs = add(sh, "Login always succeeds in tests", "--read", "src/auth.py", "--modified", "src/db.py")
    row = only(search_rows(sh, "login"), obs)
    assert (row["stale"], row["branch"]) == ([], "main")
    assert sh("search", "login").stdout.split("\t")[3] == "Login always succeeds in tests"

    (repo / "src" / "auth.py").write_text("def login():\n    return check()\n")
    assert only(search_rows(sh, "login"), obs)["stale"] == ["src/auth.py"]
    plain = sh("search", "login", env={"NO_COLOR": "1"}).stdout
    assert plain.split("\t")[3] == "[stale] Login always succeeds in tests"
    [timeline_item] = sh("timeline", str(obs), "--json").json()["items"]
    assert timeline_item["stale"] == ["src/auth.py"]
    [record] = sh("get", str(obs), "--json").json()
    assert record["stale"] == ["src/auth.py"] and record["branch"] == "main"
    files = {f["path"]: f for f in record["anchor"]["files"]}
    assert files["src/auth.py"]["status"] == "changed" and files["src/auth.py"]["modified_at"]
    assert files["src/db.py"]["status"] == "unchanged"
    assert record["anchor"]["commit"] == git(repo, "rev-parse", "HEAD")
    text = sh("get", str(obs)).stdout
    assert "stale: src/auth.py changed" in text and f"anchored {record['anchor']['anchored_at'][:10]}" in text

    (repo / "src" / "db.py").unlink()
    assert only(search_rows(sh, "login"), obs)["stale"] == ["src/auth.py", "src/db.py"]
    [record] = sh("get", str(obs), "--json").json()
    assert {f["path"]: f["status"] for f in record["anchor"]["files"]} == {
        "src/auth.py": "changed",
        "src/db.py": "vanished",
    }
    context = sh("context", "--json").json()
    assert only(context["observations"], obs)["stale"] == ["src/auth.py", "src/db.py"]
    assert f"#{obs} " in context["text"] and "[stale]" in context["text"]


def test_an_uncommitted_edit_is_what_the_memory_is_anchored_to(sh, repo):
    (repo / "src" / "auth.py").write_text("def login():\n    return user.ok\n")  # not committed
    obs = add(sh, "Login checks the user", "--modified", "src/auth.py")
    assert only(search_rows(sh, "login"), obs)["stale"] == []
    git(repo, "commit", "-qam", "check the user")  # committing the same content changes nothing
    assert only(search_rows(sh, "login"), obs)["stale"] == []


def test_touching_a_file_without_changing_it_is_not_a_change(sh, repo):
    obs = add(sh, "Pool size is four", "--read", "src/db.py")
    path = repo / "src" / "db.py"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    assert only(search_rows(sh, "pool"), obs)["stale"] == []


def test_verify_reanchors_and_verify_stale_lists_what_changed(sh, repo):
    fresh = add(sh, "Database pool of four", "--read", "src/db.py")
    stale = add(sh, "Login returns True", "--read", "src/auth.py")
    (repo / "src" / "auth.py").write_text("def login():\n    return False\n")

    listed = sh("verify", "--stale", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert [(r["id"], r["stale"]) for r in listed.json()] == [(stale, ["src/auth.py"])]
    assert sh("verify", "--stale", "--project", "elsewhere", "--json").json() == []
    assert sh("verify", "--stale").stdout.startswith(f"{stale}\t")

    done = sh("verify", str(stale))
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith(f"{stale}\tverified")
    assert only(search_rows(sh, "login"), stale)["stale"] == []
    [record] = sh("get", str(stale), "--json").json()
    assert record["anchor"]["verified_at"] is not None and record["branch"] == "main"
    assert sh("verify", "--stale", "--json").json() == []
    assert only(search_rows(sh, "pool"), fresh)["stale"] == []


def test_verify_refuses_unknown_ids_and_a_missing_argument(sh, repo):
    obs = add(sh, "Something", "--read", "src/db.py")
    missing = sh("verify", str(obs), "999")
    assert missing.exit_code == 3 and "999" in missing.stderr and "Traceback" not in missing.stderr
    assert sh("verify").exit_code == 2


def test_outside_git_nothing_is_anchored_and_nothing_fails(sh, home, tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("hello\n")
    monkeypatch.chdir(plain)
    obs = add(sh, "Notes say hello", "--read", "notes.txt")
    row = only(search_rows(sh, "hello"), obs)
    assert (row["stale"], row["branch"]) == (None, None)
    [record] = sh("get", str(obs), "--json").json()
    assert (record["stale"], record["anchor"]) == (None, None)
    verified = sh("verify", str(obs))
    assert verified.exit_code == 3 and "not in a git work tree" in verified.stderr
    assert sh("verify", "--stale", "--json").json() == []


def test_an_observation_without_files_records_the_branch(sh, repo):
    obs = add(sh, "Decided to keep sessions short")
    row = only(search_rows(sh, "sessions"), obs)
    assert (row["stale"], row["branch"]) == (None, "main")


def test_a_detached_head_records_no_branch_and_still_anchors(sh, repo):
    git(repo, "checkout", "-q", "--detach")
    obs = add(sh, "Detached work on auth", "--read", "src/auth.py")
    row = only(search_rows(sh, "detached"), obs)
    assert (row["stale"], row["branch"]) == ([], None)
    [record] = sh("get", str(obs), "--json").json()
    assert record["anchor"]["commit"] == git(repo, "rev-parse", "HEAD")


def test_a_deleted_repository_leaves_stale_unknown(sh, repo, tmp_path, monkeypatch):
    obs = add(sh, "Auth module layout", "--read", "src/auth.py")
    monkeypatch.chdir(tmp_path)
    shutil.rmtree(repo)
    row = only(search_rows(sh, "auth"), obs)
    assert (row["stale"], row["branch"]) == (None, "main")
    [record] = sh("get", str(obs), "--json").json()
    assert record["anchor"]["present"] is False and record["stale"] is None
    assert sh("get", str(obs)).exit_code == 0
    assert sh("verify", "--stale", "--json").json() == []


def test_a_moved_clone_is_found_by_its_origin_and_without_one_is_unknown(sh, repo, tmp_path, monkeypatch):
    git(repo, "remote", "add", "origin", "https://user:secret@example.com/team/app.git")
    obs = add(sh, "Auth returns a bool", "--read", "src/auth.py")
    [record] = sh("get", str(obs), "--json").json()
    assert record["anchor"]["repo"] == "example.com/team/app"  # no credentials kept
    moved = tmp_path / "elsewhere" / "app"
    moved.parent.mkdir()
    shutil.move(repo, moved)
    monkeypatch.chdir(moved)
    assert only(search_rows(sh, "auth"), obs)["stale"] == []
    (moved / "src" / "auth.py").write_text("changed\n")
    assert only(search_rows(sh, "auth"), obs)["stale"] == ["src/auth.py"]

    git(moved, "remote", "remove", "origin")  # a clone without the same origin is another repository,
    assert sh("search", "auth", "--json").stdout == "[]\n"  # so another project (docs/projects),
    assert (
        only(search_rows(sh, "auth", "--all-projects"), obs)["stale"] is None
    )  # whose files cmem cannot tell


def test_files_in_json_records_and_paths_outside_the_repository(sh, repo, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n")
    records = [{"title": "Imported auth note", "files_read": ["src/auth.py", str(outside), "src/nope.py"]}]
    result = sh("add", "--json", "-", input=json.dumps(records))
    assert result.exit_code == 0, result.stderr
    obs = int(result.stdout)
    [record] = sh("get", str(obs), "--json").json()
    assert [f["path"] for f in record["anchor"]["files"]] == ["src/auth.py"]
    assert record["stale"] == []
    row = {**only(search_rows(sh, "imported"), obs), "anchor": record["anchor"]}
    fed_back = sh("add", "--json", "-", input=json.dumps(row))  # output-only fields are accepted
    assert (fed_back.exit_code, fed_back.stdout.strip()) == (0, str(obs)), fed_back.stderr


def test_a_hook_anchors_against_the_sessions_cwd(sh, repo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # Claude Code runs hooks from anywhere; the payload says where the work is
    edit = tool_payload(
        "s-1",
        repo,
        "Edit",
        {"file_path": str(repo / "src" / "auth.py"), "old_string": "True", "new_string": "False"},
    )
    assert sh("hook", "PostToolUse", input=json.dumps(edit)).exit_code == 0
    bash = tool_payload("s-1", repo, "Bash", {"command": "pytest -q"}, {"stdout": "1 failed", "stderr": ""})
    assert sh("hook", "PostToolUse", input=json.dumps(bash)).exit_code == 0
    rows = search_rows(sh, "--session", "s-1", "--order", "oldest")
    assert [(r["branch"], r["stale"]) for r in rows] == [("main", []), ("main", None)]
    (repo / "src" / "auth.py").write_text("changed\n")
    assert search_rows(sh, "--session", "s-1", "--order", "oldest")[0]["stale"] == ["src/auth.py"]


def anchored_files(sh, obs: int) -> dict[str, str]:
    [record] = sh("get", str(obs), "--json").json()
    return {f["path"]: f["status"] for f in record["anchor"]["files"]}


def test_cmem_edit_that_changes_files_anchors_the_new_ones_and_keeps_the_others(sh, repo):
    (repo / "src" / "new.py").write_text("NEW = 1\n")
    (repo / "src" / "cache.py").write_text("CACHE = {}\n")
    obs = add(sh, "Auth reads the pool", "--read", "src/auth.py", "--modified", "src/db.py")
    (repo / "src" / "auth.py").write_text("def login():\n    return check()\n")  # stale from here on

    edited = sh("edit", str(obs), "--read", "src/auth.py", "--read", "src/new.py")
    assert edited.exit_code == 0, edited.stderr
    # auth.py keeps the content it was anchored to (still stale); new.py is anchored as it is now
    assert anchored_files(sh, obs) == {
        "src/auth.py": "changed",
        "src/db.py": "unchanged",
        "src/new.py": "unchanged",
    }
    assert only(search_rows(sh, "pool"), obs)["stale"] == ["src/auth.py"]

    assert sh("edit", str(obs), "--modified", "src/cache.py").exit_code == 0  # db.py no longer cited
    assert anchored_files(sh, obs) == {
        "src/auth.py": "changed",
        "src/new.py": "unchanged",
        "src/cache.py": "unchanged",
    }
    assert sh("edit", str(obs), "--title", "Auth reads the pool and the cache").exit_code == 0  # no files
    assert set(anchored_files(sh, obs)) == {"src/auth.py", "src/new.py", "src/cache.py"}
    (repo / "src" / "new.py").write_text("NEW = 2\n")
    assert only(search_rows(sh, "pool"), obs)["stale"] == ["src/auth.py", "src/new.py"]


def test_cmem_edit_anchors_a_memory_that_had_no_anchor(sh, repo, tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    obs = add(sh, "Login notes from outside the work tree")
    monkeypatch.chdir(repo)
    assert sh("edit", str(obs), "--read", "src/auth.py").exit_code == 0
    [record] = sh("get", str(obs), "--json").json()
    assert (record["stale"], record["branch"]) == ([], "main")
    assert anchored_files(sh, obs) == {"src/auth.py": "unchanged"}


# -- branches --------------------------------------------------------------------------------------------------
def test_memories_of_a_branch_not_merged_rank_last_until_it_is_merged(sh, repo):
    on_main = add(sh, "Notes on comments in the old parser module, and on other things entirely")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src" / "parser.py").write_text("def parse(): ...\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "parser")
    # a stronger match for the query than the memory on main
    on_feature = add(sh, "Parser comments: the parser drops comments", "--modified", "src/parser.py")
    assert [r["id"] for r in search_rows(sh, "parser comments")] == [on_feature, on_main]  # its own branch

    git(repo, "checkout", "-q", "main")
    rows = search_rows(sh, "parser comments")
    assert [(r["id"], r["branch"]) for r in rows] == [(on_main, "main"), (on_feature, "feature")]
    assert [r["id"] for r in search_rows(sh, "parser comments", "--branch", "all")] == [on_feature, on_main]
    assert [r["id"] for r in search_rows(sh, "parser comments", "--branch", "feature")] == [on_feature]
    assert [r["id"] for r in search_rows(sh, "--branch", "main")] == [on_main]  # listing, no query
    assert sh("search", "parser", "--branch", "nope").exit_code == 10

    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    assert [r["id"] for r in search_rows(sh, "parser comments")] == [on_feature, on_main]
    git(repo, "branch", "-q", "-d", "feature")  # a merged branch deleted: its memories stay merged
    assert [r["id"] for r in search_rows(sh, "parser comments")] == [on_feature, on_main]


def test_an_abandoned_branch_stays_last_after_it_is_deleted(sh, repo):
    on_main = add(sh, "Notes on cache keys in the session layer, and on other things entirely")
    git(repo, "checkout", "-q", "-b", "spike")
    (repo / "src" / "cache.py").write_text("KEYS = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "spike")
    spike = add(sh, "Cache keys: drop the user from cache keys", "--modified", "src/cache.py")
    git(repo, "checkout", "-q", "main")
    assert [r["id"] for r in search_rows(sh, "cache keys", "--branch", "all")] == [spike, on_main]
    git(repo, "branch", "-q", "-D", "spike")
    assert [r["id"] for r in search_rows(sh, "cache keys")] == [on_main, spike]


def on_branch(repo: Path, name: str, path: str) -> None:
    """Check out a new branch ``name`` with one commit of ``path``."""
    git(repo, "checkout", "-q", "-b", name)
    (repo / path).write_text(f"# {name}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", name)


def test_an_unmerged_branch_ranks_below_the_same_match_here_and_above_weak_matches(sh, repo):
    """A memory of a branch HEAD has not merged weighs less than the current line's, not nothing: the three
    memories that say "OAuth" rank under this branch's OAuth memory and above what merely says "login"."""
    weak = [add(sh, title) for title in (
        "Login page shows the company logo",
        "The login form trims the email address",
        "Login errors are logged at warning level",
    )]  # fmt: skip
    for title in ("Deploys run from the release pipeline", "Postgres vacuum runs nightly",
                  "Feature flags live in flags.toml", "Cache warmup happens at boot"):  # fmt: skip
        add(sh, title)
    here = add(sh, "OAuth login: tokens come from the OAuth provider")
    on_branch(repo, "oauth", "src/oauth.py")
    there = [add(sh, title, "--modified", "src/oauth.py") for title in (
        "OAuth login: the callback checks the OAuth state",
        "OAuth login: refresh tokens rotate on OAuth use",
        "OAuth login: OAuth scopes are asked per provider",
    )]  # fmt: skip
    git(repo, "checkout", "-q", "main")

    rows = search_rows(sh, "oauth login")
    ids = [r["id"] for r in rows]
    assert ids[0] == here
    assert set(ids[1:4]) == set(there)
    assert set(ids[4:]) == set(weak)
    assert [r["branch"] for r in rows[1:4]] == ["oauth"] * 3
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)

    on_own = [r["id"] for r in search_rows(sh, "oauth login", "--branch", "all")]
    assert set(on_own[:4]) == {here, *there}  # nothing weighed: the four match alike


def test_the_briefing_marks_memories_of_a_branch_head_has_not_merged(sh, repo):
    here = add(sh, "--type", "decision", "Sessions expire after 30 minutes")
    on_branch(repo, "oauth", "src/oauth.py")
    there = add(sh, "--type", "decision", "Login goes through OAuth", "--modified", "src/oauth.py")
    git(repo, "checkout", "-q", "main")

    briefing = sh("context", "--json")
    assert briefing.exit_code == 0, briefing.stderr
    rows = {r["id"]: r for r in briefing.json()["observations"]}
    assert (rows[there]["branch"], rows[there]["unmerged"]) == ("oauth", True)
    assert (rows[here]["branch"], rows[here]["unmerged"]) == ("main", False)
    lines = {line.split()[0]: line for line in briefing.json()["text"].splitlines() if line.startswith("#")}
    assert lines[f"#{there}"].endswith("[branch oauth, not merged]")
    assert "branch" not in lines[f"#{here}"]
    assert sh("context").stdout == briefing.json()["text"] + "\n"

    git(repo, "merge", "-q", "--no-ff", "-m", "merge oauth", "oauth")
    rows = {r["id"]: r for r in sh("context", "--json").json()["observations"]}
    assert rows[there]["unmerged"] is False
    assert "not merged" not in sh("context").stdout


def test_a_branch_memory_before_its_first_commit_is_marked_and_weighed_on_main_until_merged(sh, repo):
    """The branch is named at capture: a decision recorded on a new branch, before it has a commit of its
    own, is that branch's work, not main's (its commit is main's too)."""
    on_main = add(sh, "--type", "decision", "Notes on login tokens, and on other things entirely")
    git(repo, "checkout", "-q", "-b", "oauth")
    there = add(sh, "--type", "decision", "Login tokens come from the OAuth provider: login tokens")
    assert [r["id"] for r in search_rows(sh, "login tokens")] == [there, on_main]  # its own branch

    git(repo, "checkout", "-q", "main")
    rows = search_rows(sh, "login tokens")
    assert [(r["id"], r["branch"]) for r in rows] == [(on_main, "main"), (there, "oauth")]
    briefing = {r["id"]: r for r in sh("context", "--json").json()["observations"]}
    assert (briefing[there]["branch"], briefing[there]["unmerged"]) == ("oauth", True)
    assert briefing[on_main]["unmerged"] is False
    assert f"#{there} " in sh("context").stdout and "[branch oauth, not merged]" in sh("context").stdout

    git(repo, "checkout", "-q", "oauth")  # the branch's first commit: still not merged into main
    (repo / "src" / "oauth.py").write_text("PROVIDER = 'oauth'\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "oauth")
    git(repo, "checkout", "-q", "main")
    assert {r["id"]: r for r in sh("context", "--json").json()["observations"]}[there]["unmerged"] is True

    git(repo, "merge", "-q", "--no-ff", "-m", "merge oauth", "oauth")
    assert {r["id"]: r for r in sh("context", "--json").json()["observations"]}[there]["unmerged"] is False
    assert [r["id"] for r in search_rows(sh, "login tokens")] == [there, on_main]


def test_a_branch_checked_out_from_a_teammates_remote_branch_is_merged_with_its_commit(
    sh, repo, tmp_path, monkeypatch
):
    """A branch created from a remote branch starts at the teammate's work, not at a fork of this line: a
    memory recorded on it there counts as merged once main holds that commit."""
    git(repo, "checkout", "-q", "-b", "shared")
    (repo / "src" / "shared.py").write_text("X = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shared")
    git(repo, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "checkout", "-q", "shared")  # created from refs/remotes/origin/shared
    monkeypatch.chdir(clone)
    there = add(sh, "--type", "decision", "Shared constants live in shared.py")
    git(clone, "checkout", "-q", "main")
    git(clone, "merge", "-q", "--no-ff", "-m", "merge shared", "shared")
    assert {r["id"]: r for r in sh("context", "--json").json()["observations"]}[there]["unmerged"] is False


def test_outside_git_search_order_does_not_change(sh, repo, tmp_path, monkeypatch):
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src" / "x.py").write_text("x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "x")
    strong = add(sh, "Upload retry: retry the upload")
    git(repo, "checkout", "-q", "main")
    weak = add(sh, "Notes on retry of the upload in the old client, and on other things entirely")
    assert [r["id"] for r in search_rows(sh, "retry upload")] == [weak, strong]  # in the work tree
    monkeypatch.chdir(tmp_path)  # not a work tree: nothing to compare branches with
    assert [r["id"] for r in search_rows(sh, "retry upload")] == [strong, weak]


def test_the_mcp_server_returns_the_same_fields(sh, repo):
    from mcp import Client

    from tests.test_mcp import with_server

    (repo / "src" / "auth.py").write_text("def login():\n    return None\n")  # uncommitted: anchored as is

    async def body(client: Client) -> dict:
        out = {}
        out["remember"] = await client.call_tool(
            "remember", {"title": "Login returns None now", "files_modified": ["src/auth.py"]}
        )
        (repo / "src" / "auth.py").write_text("def login():\n    return 1\n")
        out["search"] = await client.call_tool("search", {"query": "login"})
        out["feature"] = await client.call_tool("search", {"query": "login", "branch": "feature"})
        out["timeline"] = await client.call_tool("timeline", {"anchor": 1})
        out["get"] = await client.call_tool("get", {"ids": [1]})
        out["context"] = await client.call_tool("context", {})
        return out

    out = with_server(body, cwd=repo)
    assert not any(getattr(r, "is_error", False) for r in out.values())
    [hit] = out["search"].structured_content["hits"]
    assert (hit["stale"], hit["branch"]) == (["src/auth.py"], "main")
    assert "[stale] Login returns None now" in out["search"].content[0].text
    assert out["feature"].structured_content["hits"] == []
    [item] = out["timeline"].structured_content["items"]
    assert (item["stale"], item["branch"]) == (["src/auth.py"], "main")
    [record] = out["get"].structured_content["records"]
    assert record["stale"] == ["src/auth.py"] and record["anchor"]["files"][0]["status"] == "changed"
    [row] = out["context"].structured_content["observations"]
    assert row["stale"] == ["src/auth.py"]
    cli_row = only(search_rows(sh, "login"), 1)
    assert (cli_row["stale"], cli_row["branch"]) == (hit["stale"], hit["branch"])


# -- git's answers kept until HEAD moves -----------------------------------------------------------------------
@pytest.fixture
def git_log(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` writes each call's arguments to a log, then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "logged-git"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    script = folder / "git"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


def calls(log: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def test_search_asks_git_once_per_head_commit(sh, repo, git_log):
    env, log = git_log
    on_main = add(sh, "Notes on comments in the old parser module, and on other things entirely")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src" / "parser.py").write_text("def parse(): ...\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "parser")
    on_feature = add(sh, "Parser comments: the parser drops comments", "--modified", "src/parser.py")
    git(repo, "checkout", "-q", "main")

    def ranked() -> list[int]:
        result = sh("search", "parser comments", "--json", env=env)
        assert result.exit_code == 0, result.stderr
        return [r["id"] for r in result.json()]

    assert ranked() == [on_main, on_feature]
    # asked once: the branch's merge (rev-list), and, for the feature's file that main lacks, whether
    # main has the commit (cat-file, rev-list: the memory is behind, not stale) ...
    assert [c.split()[2] for c in calls(log)] == ["rev-list", "cat-file", "rev-list"]
    assert ranked() == [on_main, on_feature]
    assert calls(log) == []  # ... and not again while HEAD stays where it was
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")  # HEAD moves: ask again
    assert ranked() == [on_feature, on_main]
    assert len(calls(log)) == 1
    assert ranked() == [on_feature, on_main]
    assert calls(log) == []


def test_a_commit_the_clone_lacked_is_asked_about_again_once_it_arrives(
    sh, tmp_path, home, git_log, monkeypatch
):
    """A memory of a branch another clone has not fetched counts as merged there (git knows nothing of its
    commit); once a fetch brings the commit, without HEAD moving, the memory ranks last."""
    env, log = git_log
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    first = tmp_path / "first"
    git(tmp_path, "clone", "-q", str(origin), str(first))
    (first / "parser.py").write_text("def parse(): ...\n")
    git(first, "add", ".")
    git(first, "commit", "-qm", "parser")
    git(first, "push", "-q", "origin", "main")
    second = tmp_path / "second"
    git(tmp_path, "clone", "-q", str(origin), str(second))

    monkeypatch.chdir(second)
    on_main = add(sh, "Notes on comments in the old parser module, and on other things entirely")
    monkeypatch.chdir(first)
    git(first, "checkout", "-q", "-b", "feature")
    (first / "parser.py").write_text("def parse(): drop_comments()\n")
    git(first, "commit", "-qam", "drop comments")
    on_feature = add(sh, "Parser comments: the parser drops comments", "--modified", "parser.py")

    monkeypatch.chdir(second)

    def ranked() -> list[int]:
        result = sh("search", "parser comments", "--json", env=env)
        assert result.exit_code == 0, result.stderr
        return [r["id"] for r in result.json()]

    assert ranked() == [on_feature, on_main]  # its commit is unknown here: nothing says it is unmerged
    assert len(calls(log)) == 1
    assert ranked() == [on_feature, on_main]
    assert calls(log) == []
    git(first, "push", "-q", "origin", "feature")
    git(second, "fetch", "-q", "origin")  # the commit arrives; HEAD does not move
    assert ranked() == [on_main, on_feature]
    assert len(calls(log)) == 1


# -- what anchoring costs a hook and a search ----------------------------------------------------------------
HEAVY = ("dataclasses", "subprocess", "hashlib", "_hashlib")  # inspect/ast; a process; OpenSSL


def loaded_modules(code: str, cwd: Path, *args: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(n for n in {HEAVY!r} if n in sys.modules))\n"
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=cwd, capture_output=True, text=True, env=os.environ.copy()
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1].replace("'", '"'))


def test_a_hook_that_anchors_a_read_and_a_search_that_checks_it_load_nothing_heavy(sh, repo):
    """A Read in a work tree is anchored (the file hashed) and a search checks it, on every call: neither
    may load OpenSSL (hashlib), start a process (subprocess) or load dataclasses (inspect, ast)."""
    read = tool_payload("s-1", repo, "Read", {"file_path": str(repo / "src" / "auth.py")})
    hook = (
        "import io, json\n"
        "from cmem_cli.capture.hooks.runner import run\n"
        "run(['PostToolUse'], stdin=io.BytesIO(sys.argv[1].encode()), stdout=io.StringIO())"
    )
    assert loaded_modules(hook, repo, json.dumps(read)) == []
    [row] = search_rows(sh, "--session", "s-1")
    assert (row["stale"], row["branch"]) == ([], "main")
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "commit", "-q", "--allow-empty", "-m", "feature")
    add(sh, "Auth on the feature branch")
    git(repo, "checkout", "-q", "main")
    assert [r["branch"] for r in search_rows(sh, "auth")] == ["main", "feature"]  # git asked, once
    search = "from cmem_cli.__main__ import main\nmain(['search', 'auth', '-f', 'ids'])"
    assert loaded_modules(search, repo) == []  # HEAD has not moved: git's answer is kept
