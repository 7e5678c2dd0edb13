"""What a memory is about inside a file, through the real CLI in real git repositories: an edit elsewhere in
a cited file leaves the memory fresh; an edit of its lines, or the removal of its function, makes it stale;
a renamed file with the region intact is fresh; a checkout that lacks the memory's commit is `behind`, not
stale (docs/truth.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agent_fixtures import tool_payload
from tests.sync_helpers import Machine, bare_repo
from tests.test_anchors import add, git, only, search_rows

AUTH = """\
import hashlib


def login(user, password):
    digest = hashlib.sha256(password.encode()).hexdigest()
    if user.password_digest != digest:
        return False
    return user.active


def logout(session):
    session.clear()
    return True
"""


@pytest.fixture
def code(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose src/auth.py has two functions, committed; the cwd."""
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "auth.py").write_text(AUTH)
    (root / "README.md").write_text("app\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    monkeypatch.chdir(root)
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def record(sh, obs: int) -> dict:
    [got] = sh("get", str(obs), "--json").json()
    return got


def file_state(sh, obs: int, path: str) -> dict:
    [entry] = [f for f in record(sh, obs)["anchor"]["files"] if f["path"] == path]
    return entry


def test_an_uncommitted_change_is_the_region_and_edits_elsewhere_leave_it_fresh(sh, code):
    auth = code / "src" / "auth.py"
    edit(
        auth,
        "    return user.active\n",
        "    if user.locked:\n        raise Locked(user)\n    return user.active\n",
    )
    obs = add(sh, "Locked users cannot log in", "--modified", "src/auth.py")
    assert file_state(sh, obs, "src/auth.py")["region"] == {"lines": "8-9", "symbols": ["login"]}
    git(code, "commit", "-qam", "locked users")

    edit(auth, "    session.clear()\n", "    session.clear()\n    session.log('bye')\n")  # logout only
    row = only(search_rows(sh, "locked"), obs)
    assert (row["stale"], row["behind"]) == ([], [])
    state = file_state(sh, obs, "src/auth.py")
    assert (state["status"], state["file_changed"]) == ("unchanged", True)
    assert "[stale]" not in sh("search", "locked").stdout

    edit(auth, "    if user.locked:\n        raise Locked(user)\n", "")  # the memory's own lines go
    assert only(search_rows(sh, "locked"), obs)["stale"] == ["src/auth.py"]
    assert file_state(sh, obs, "src/auth.py")["status"] == "changed"
    assert sh("search", "locked").stdout.split("\t")[3].startswith("[stale] ")


def test_a_memory_written_just_after_a_commit_is_about_that_commits_change(sh, code):
    auth = code / "src" / "auth.py"
    edit(auth, "    session.clear()\n", "    session.clear()\n    session.audit('logout')\n")
    git(code, "commit", "-qam", "audit logouts")
    obs = add(sh, "Logouts are audited", "--modified", "src/auth.py")  # the tree is clean
    assert file_state(sh, obs, "src/auth.py")["region"]["symbols"] == ["logout"]

    edit(
        auth,
        "    if user.password_digest != digest:\n",
        "    if not compare(user.password_digest, digest):\n",
    )
    assert only(search_rows(sh, "audited"), obs)["stale"] == []
    edit(auth, "    session.audit('logout')\n", "")
    assert only(search_rows(sh, "audited"), obs)["stale"] == ["src/auth.py"]


def test_a_file_committed_before_the_head_commit_is_about_its_change_since_the_last_memory_of_it(sh, code):
    auth = code / "src" / "auth.py"
    add(sh, "Auth module written", "--modified", "src/auth.py")  # just after the first commit: every line
    edit(auth, "    session.clear()\n", "    session.clear()\n    session.audit('logout')\n")
    git(code, "commit", "-qam", "audit logouts")
    (code / "README.md").write_text("app, with audited logouts\n")
    git(code, "commit", "-qam", "docs")  # HEAD's commit did not touch src/auth.py; the tree is clean
    obs = add(sh, "Logouts are audited", "--modified", "src/auth.py")
    assert file_state(sh, obs, "src/auth.py")["region"] == {"lines": "13-13", "symbols": ["logout"]}

    edit(auth, "    return user.active\n", "    return user.is_active()\n")  # login, elsewhere
    assert only(search_rows(sh, "audited"), obs)["stale"] == []
    edit(auth, "    session.audit('logout')\n", "")
    assert only(search_rows(sh, "audited"), obs)["stale"] == ["src/auth.py"]


def test_a_file_no_memory_anchored_before_and_the_head_commit_did_not_touch_has_no_region(sh, code):
    (code / "README.md").write_text("app, documented\n")
    git(code, "commit", "-qam", "docs")
    obs = add(sh, "Auth module reviewed", "--modified", "src/auth.py")
    assert file_state(sh, obs, "src/auth.py")["region"] is None  # the file-level rule


def test_a_cited_range_goes_stale_when_its_function_is_removed_not_when_another_one_changes(sh, code):
    auth = code / "src" / "auth.py"
    obs = add(sh, "Login compares sha256 digests", "--read", "src/auth.py:4-8")
    other = add(sh, "Logout clears the session", "--read", "src/auth.py", "--lines", "11-13")
    [got] = sh("get", str(obs), "--json").json()
    assert got["files_read"] == ["src/auth.py"]  # the range goes to the anchor, not the path
    assert file_state(sh, other, "src/auth.py")["region"] == {"lines": "11-13", "symbols": ["logout"]}

    edit(auth, "    return True\n", "    return None\n")  # inside logout: one of its three lines
    rows = search_rows(sh, "--order", "oldest")
    assert only(rows, obs)["stale"] == []
    assert only(rows, other)["stale"] == []  # two of its three lines are still there

    edit(auth, "def logout(session):\n    session.clear()\n    return None\n", "")  # the function goes
    rows = search_rows(sh, "--order", "oldest")
    assert (only(rows, obs)["stale"], only(rows, other)["stale"]) == ([], ["src/auth.py"])


def test_a_renamed_function_makes_its_memory_stale_though_its_body_stays(sh, code):
    obs = add(sh, "Login compares sha256 digests", "--read", "src/auth.py:4-8")
    edit(code / "src" / "auth.py", "def login(user, password):", "def sign_in(user, password):")
    assert only(search_rows(sh, "digests"), obs)["stale"] == ["src/auth.py"]


def test_a_renamed_file_with_its_region_intact_is_fresh(sh, code):
    obs = add(sh, "Login compares sha256 digests", "--read", "src/auth.py:4-8")
    git(code, "mv", "src/auth.py", "src/login.py")
    git(code, "commit", "-qm", "rename")
    edit(code / "src" / "login.py", "import hashlib\n", "import hashlib\nimport hmac\n")
    assert only(search_rows(sh, "digests"), obs)["stale"] == []
    state = file_state(sh, obs, "src/auth.py")
    assert (state["status"], state["renamed_to"]) == ("unchanged", "src/login.py")

    edit(code / "src" / "login.py", "def login(user, password):", "def sign_in(user, password):")
    assert only(search_rows(sh, "digests"), obs)["stale"] == ["src/auth.py"]
    git(code, "rm", "-qf", "src/login.py")
    git(code, "commit", "-qm", "gone")
    assert only(search_rows(sh, "digests"), obs)["stale"] == ["src/auth.py"]
    assert file_state(sh, obs, "src/auth.py")["status"] == "vanished"


def test_a_hook_edit_anchors_the_text_it_wrote(sh, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    auth = code / "src" / "auth.py"
    edit(auth, "    session.clear()\n", "    session.clear()\n    session.rotate_key()\n")  # what Edit did
    payload = tool_payload(
        "s-1",
        code,
        "Edit",
        {
            "file_path": str(auth),
            "old_string": "    session.clear()\n",
            "new_string": "    session.clear()\n    session.rotate_key()\n",
        },
    )
    assert sh("hook", "PostToolUse", input=json.dumps(payload)).exit_code == 0
    [row] = search_rows(sh, "--session", "s-1")
    assert file_state(sh, row["id"], "src/auth.py")["region"]["symbols"] == ["logout"]
    edit(auth, "    return user.active\n", "    return user.is_active()\n")
    assert only(search_rows(sh, "--session", "s-1"), row["id"])["stale"] == []
    edit(auth, "    session.clear()\n    session.rotate_key()\n", "    session.reset()\n")
    assert only(search_rows(sh, "--session", "s-1"), row["id"])["stale"] == ["src/auth.py"]


def test_a_hook_read_of_some_lines_anchors_those_lines(sh, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    auth = code / "src" / "auth.py"
    payload = tool_payload("s-2", code, "Read", {"file_path": str(auth), "offset": 11, "limit": 3})
    assert sh("hook", "PostToolUse", input=json.dumps(payload)).exit_code == 0
    [row] = search_rows(sh, "--session", "s-2")
    [got] = sh("get", str(row["id"]), "--json").json()
    assert (got["files_read"], got["subtitle"]) == (["src/auth.py"], "lines 11-13")
    assert file_state(sh, row["id"], "src/auth.py")["region"] == {"lines": "11-13", "symbols": ["logout"]}
    edit(auth, "    return user.active\n", "    return user.is_active()\n")  # login: not what was read
    assert only(search_rows(sh, "--session", "s-2"), row["id"])["stale"] == []
    edit(auth, "def logout(session):\n    session.clear()\n    return True\n", "")
    assert only(search_rows(sh, "--session", "s-2"), row["id"])["stale"] == ["src/auth.py"]


def test_a_hook_read_of_a_whole_file_or_of_nonsense_lines_keeps_the_file_level_rule(
    sh, code, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    auth = code / "src" / "auth.py"
    for session, tool_input in (
        ("s-3", {"file_path": str(auth)}),
        ("s-4", {"file_path": str(auth), "offset": -5, "limit": 3}),
        ("s-5", {"file_path": str(auth), "offset": 10**12, "limit": 3}),
    ):
        payload = tool_payload(session, code, "Read", tool_input)
        assert sh("hook", "PostToolUse", input=json.dumps(payload)).exit_code == 0
        [row] = search_rows(sh, "--session", session)
        [got] = sh("get", str(row["id"]), "--json").json()
        assert got["files_read"] == ["src/auth.py"]
        assert file_state(sh, row["id"], "src/auth.py")["region"] is None


def test_a_file_without_a_region_keeps_the_file_level_rule(sh, code):
    obs = add(sh, "Auth module overview", "--read", "src/auth.py")
    assert file_state(sh, obs, "src/auth.py")["region"] is None
    edit(code / "src" / "auth.py", "    return True\n", "    return None\n")
    assert only(search_rows(sh, "overview"), obs)["stale"] == ["src/auth.py"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("--lines", "8-4", "--read", "src/auth.py"), "START-END"),
        (("--lines", "x", "--read", "src/auth.py"), "START-END"),
        (("--lines", "1-2", "--read", "src/auth.py", "--read", "README.md"), "exactly one"),
        (("--read", "src/auth.py:0-3"), "START <= END"),
    ],
)
def test_a_bad_line_range_is_refused_with_one_line(sh, code, args, message):
    result = sh("add", "A note", *args)
    assert result.exit_code == 4, result.stderr  # invalid input (cli/exits.py)
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sh("search", "--json").json() == []


# -- behind is not stale ---------------------------------------------------------------------------------------
def test_a_teammates_memory_is_behind_in_a_clone_that_lacks_its_commit(tmp_path, home, capsys, monkeypatch):
    origin = tmp_path / "code.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    mine = tmp_path / "laptop" / "app"
    git(tmp_path, "clone", "-q", str(origin), str(mine))
    (mine / "src").mkdir()
    (mine / "src" / "auth.py").write_text(AUTH)
    git(mine, "add", ".")
    git(mine, "commit", "-qm", "first")
    git(mine, "push", "-q", "origin", "main")
    theirs = tmp_path / "desktop" / "app"
    git(tmp_path, "clone", "-q", str(origin), str(theirs))
    for clone in (mine, theirs):
        git(clone, "remote", "set-url", "origin", "https://example.com/team/app.git")
    memories = bare_repo(tmp_path / "memories.git")
    teammate, me = Machine(tmp_path / "teammate-home", capsys), Machine(tmp_path / "my-home", capsys)

    monkeypatch.chdir(theirs)  # the teammate adds a check, commits, pushes, and writes the memory
    edit(
        theirs / "src" / "auth.py",
        "    return user.active\n",
        "    if user.locked:\n        raise Locked(user)\n    return user.active\n",
    )
    git(theirs, "commit", "-qam", "locked users")
    git(theirs, "push", "-q", str(origin), "main")
    uid = teammate.add("Locked users cannot log in", "--modified", "src/auth.py")["uid"]
    teammate.sync(memories)
    me.sync(memories)

    monkeypatch.chdir(mine)  # my clone has not pulled: it lacks the change the memory describes
    [row] = [r for r in json.loads(me.ok("search", "--json", "-n", "0", "--all-projects")) if r["uid"] == uid]
    assert (row["stale"], row["behind"]) == ([], ["src/auth.py"])
    [got] = json.loads(me.ok("get", uid, "--json"))
    assert got["anchor"]["files"][0]["status"] == "behind"
    assert me.ok("get", uid).startswith("<!-- behind: this checkout lacks commit")
    assert "[behind] Locked users" in me.ok("search", "locked", "--all-projects")

    git(mine, "pull", "-q", str(origin), "main")  # once pulled it holds
    [row] = [r for r in json.loads(me.ok("search", "--json", "-n", "0", "--all-projects")) if r["uid"] == uid]
    assert (row["stale"], row["behind"]) == ([], [])
    edit(
        mine / "src" / "auth.py", "    if user.locked:\n        raise Locked(user)\n", ""
    )  # and then it is stale
    [row] = [r for r in json.loads(me.ok("search", "--json", "-n", "0", "--all-projects")) if r["uid"] == uid]
    assert (row["stale"], row["behind"]) == (["src/auth.py"], [])


def test_behind_on_a_branch_that_head_has_not_merged(sh, code):
    git(code, "checkout", "-q", "-b", "feature")
    edit(code / "src" / "auth.py", "    session.clear()\n", "    session.clear()\n    session.audit()\n")
    git(code, "commit", "-qam", "audit")
    obs = add(sh, "Logouts are audited", "--modified", "src/auth.py")
    git(code, "checkout", "-q", "main")
    row = only(search_rows(sh, "audited", "--branch", "all"), obs)
    assert (row["stale"], row["behind"]) == ([], ["src/auth.py"])
    git(code, "merge", "-q", "feature")
    row = only(search_rows(sh, "audited"), obs)
    assert (row["stale"], row["behind"]) == ([], [])


def test_python_api_rows_carry_behind(code):
    from cmem_cli.api import Memory

    with Memory() as memory:
        obs = memory.add("Login compares digests", files_read=["src/auth.py:4-8"], cwd=code)
        assert obs.stale == [] and obs.behind == []
    assert sys.modules.get("cmem_cli.api") is not None


def test_verify_keeps_the_region_lines_still_in_the_file(sh, code):
    auth = code / "src" / "auth.py"
    obs = add(sh, "Login compares sha256 digests", "--read", "src/auth.py:4-8")
    edit(auth, "    digest = hashlib.sha256(password.encode()).hexdigest()\n", "    digest = sha(password)\n")
    edit(auth, "    if user.password_digest != digest:\n", "    if not same(user.password_digest, digest):\n")
    edit(auth, "        return False\n", "        raise Denied()\n")
    assert only(search_rows(sh, "digests"), obs)["stale"] == ["src/auth.py"]
    verified = sh("verify", str(obs))
    assert verified.exit_code == 0, verified.stderr
    assert only(search_rows(sh, "digests"), obs)["stale"] == []
    assert file_state(sh, obs, "src/auth.py")["region"]["symbols"] == ["login"]
    edit(auth, "    return user.active\n", "    return user.enabled\n")  # the last kept lines go
    edit(auth, "def login(user, password):\n", "def login(user, password, otp):\n")
    assert only(search_rows(sh, "digests"), obs)["stale"] == ["src/auth.py"]


TIMEOUT = """\
def request_timeout():
    return 30  # seconds
"""


def test_a_two_line_region_with_one_changed_line_is_drifted_on_every_read_path(sh, code):
    timeout = code / "src" / "timeout.py"
    timeout.write_text(TIMEOUT)
    git(code, "add", ".")
    git(code, "commit", "-qm", "timeout")
    obs = add(sh, "Request timeout is in seconds", "--read", "src/timeout.py:1-2")
    row = only(search_rows(sh, "timeout"), obs)
    assert (row["stale"], row["drifted"]) == ([], [])

    edit(timeout, "    return 30  # seconds\n", "    return 30_000  # milliseconds\n")
    row = only(search_rows(sh, "timeout"), obs)
    assert (row["stale"], row["drifted"], row["behind"]) == ([], ["src/timeout.py"], [])
    assert sh("search", "timeout").stdout.split("\t")[3].startswith("[drifted] ")
    got = record(sh, obs)
    assert (got["stale"], got["drifted"]) == ([], ["src/timeout.py"])
    assert file_state(sh, obs, "src/timeout.py")["status"] == "drifted"
    markdown = sh("get", str(obs)).stdout
    assert markdown.startswith("<!-- drifted: ") and "src/timeout.py" in markdown.splitlines()[0]
    [item] = [i for i in sh("timeline", str(obs), "--json").json()["items"] if i["id"] == obs]
    assert item["drifted"] == ["src/timeout.py"]

    assert sh("verify", str(obs)).exit_code == 0  # checked: it holds as the file is now
    assert only(search_rows(sh, "timeout"), obs)["drifted"] == []
    edit(timeout, "def request_timeout():\n", "def request_timeout_ms():\n")  # its function is gone
    row = only(search_rows(sh, "timeout"), obs)
    assert (row["stale"], row["drifted"]) == (["src/timeout.py"], [])


def test_python_api_rows_carry_drifted(code):
    from cmem_cli.api import Memory

    timeout = code / "src" / "timeout.py"
    timeout.write_text(TIMEOUT)
    with Memory() as memory:
        obs = memory.add("Request timeout is in seconds", files_read=["src/timeout.py:1-2"], cwd=code)
        assert (obs.stale, obs.drifted) == ([], [])
        timeout.write_text(TIMEOUT.replace("30  # seconds", "30_000  # milliseconds"))
        [got] = memory.get(obs.id)
        assert got.drifted == ["src/timeout.py"]
