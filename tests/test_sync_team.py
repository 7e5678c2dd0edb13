"""`cmem sync` through the events of team life: renamed and forgotten files, git's debris, failures
reported in JSON, files a teammate committed with plain git, machines joining, links to memories that have
not arrived, and git's folder kept out of the export tree."""

from __future__ import annotations

import json
import os
import subprocess
import time
from copy import deepcopy
from pathlib import Path

import pytest

from tests.sync_helpers import (
    Machine,
    a_test_s_environment,
    bare_repo,
    copy_machines,
    git_in,
    refuse_pushes,
    remote_head,
)

PLAIN_GIT = ["git", "-c", "user.name=teammate", "-c", "user.email=t@x", "-c", "core.hooksPath=/dev/null"]


@pytest.fixture(scope="module")
def team_template(tmp_path_factory: pytest.TempPathFactory):
    """Machine ``a`` with one note and machine ``b`` connected to one bare repository, made once a module."""
    root = tmp_path_factory.mktemp("team")
    with a_test_s_environment(root):
        url = bare_repo(root / "team.git")
        a, b = Machine(root / "a", None), Machine(root / "b", None)
        first = a.add("Login uses JWT", "--narrative", "tokens expire after an hour")
        a.sync(url)
        b.sync(url)
    return root, first


@pytest.fixture
def team(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], team_template):
    """This test's copy of the module's two machines and their repository."""
    root, first = team_template
    copy_machines(root, tmp_path)
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    return a, b, str(tmp_path / "team.git"), deepcopy(first)


def _teammate_commits(tmp_path: Path, url: str, files: dict[str, str | None]) -> Path:
    """A teammate clones the remote, writes (None: deletes) files with plain git, and pushes."""
    clone = tmp_path / "teammate"
    if not clone.exists():
        subprocess.run([*PLAIN_GIT, "clone", "-q", url, str(clone)], check=True)
    subprocess.run([*PLAIN_GIT, "pull", "-q", "--no-rebase"], cwd=clone, check=True)
    for relpath, text in files.items():
        path = clone / relpath
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run([*PLAIN_GIT, "add", "-A"], cwd=clone, check=True)
    subprocess.run([*PLAIN_GIT, "commit", "-qm", "by hand"], cwd=clone, check=True)
    subprocess.run([*PLAIN_GIT, "push", "-q", "origin", "HEAD:main"], cwd=clone, check=True)
    return clone


# -- no wedges --------------------------------------------------------------------------------------------
def test_a_one_memory_tree_whose_file_was_renamed_syncs(home, tmp_path, capsys):
    url = bare_repo(tmp_path / "team.git")
    a = Machine(tmp_path / "a", capsys)
    only = a.add("The only memory", "--narrative", "kept")
    a.sync(url)
    path = a.file_of(only["uid"])
    path.rename(path.with_name("renamed-by-hand.md"))
    code, _, err = a.run("sync")
    assert code == 0, err
    assert a.file_of(only["uid"]) == path and path.exists()
    assert a.by_uid()[only["uid"]]["narrative"] == "kept"
    assert git_in(a, "status", "--porcelain") == ""


def test_forgetting_every_committed_memory_syncs_and_travels(team):
    a, b, url, first = team
    second = a.add("Second")
    a.sync()
    b.sync()
    a.ok("forget", "--yes", str(first["id"]), str(second["id"]))
    code, _, err = a.run("sync")
    assert code == 0, err
    assert b.sync()["forgotten"] == 2
    assert a.by_uid() == b.by_uid() == {}


# -- git's debris -----------------------------------------------------------------------------------------
def _debris(machine: Machine) -> list[Path]:
    git_dir = machine.home / "sync.git"
    made = [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "refs" / "heads" / "main.lock"]
    old = time.time() - 30
    for path in made:
        path.write_text("")
        os.utime(path, (old, old))
    return made


def test_stale_git_locks_are_reported_by_doctor_and_cleared_by_fix_and_by_sync(team):
    a, b, url, _ = team
    made = _debris(a)
    checks = {c["name"]: c for c in json.loads(a.run("doctor", "--json")[1])["checks"]}
    assert checks["git debris"]["status"] == "fail"
    assert sorted(checks["git debris"]["paths"]) == ["HEAD.lock", "index.lock", "refs/heads/main.lock"]
    assert a.run("doctor")[0] == 1
    assert a.run("doctor", "--fix")[0] == 0
    assert not any(p.exists() for p in made) and a.run("doctor")[0] == 0
    _debris(a)
    a.add("After the debris")
    code, _, err = a.run("sync")
    assert code == 0, err
    assert not any(p.exists() for p in made)
    b.sync()
    assert "After the debris" in {r["title"] for r in b.by_uid().values()}


def test_a_lock_held_by_a_running_git_is_left_alone(team):
    a, *_ = team
    lock = a.home / "sync.git" / "index.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 30, time.time() - 30))
    live = subprocess.Popen(["git", "cat-file", "--batch"], cwd=a.export, stdin=subprocess.PIPE)
    try:
        time.sleep(0.2)
        checks = {c["name"]: c for c in json.loads(a.run("doctor", "--fix", "--json")[1])["checks"]}
        assert checks["git debris"]["status"] == "ok" and lock.exists()
        a.add("Waits for the lock")
        assert a.run("sync")[0] == 9 and lock.exists()
    finally:
        live.communicate(b"")
    assert a.run("sync")[0] == 0 and not lock.exists()


def test_a_stale_merge_is_abandoned_and_the_sync_goes_on(team):
    a, b, url, first = team
    a.ok("edit", str(first["id"]), "--narrative", "edited on a")
    a.sync()
    b.ok("edit", str(b.by_uid()[first["uid"]]["id"]), "--title", "Retitled on b")
    b.sync()  # b pushes on top of a's edit... now a has something to merge
    git_in(a, "fetch", "-q")
    subprocess.run(
        [*PLAIN_GIT, "merge", "--no-commit", "--no-ff", "origin/main"], cwd=a.export, capture_output=True
    )
    assert (a.home / "sync.git" / "MERGE_HEAD").exists()
    checks = {c["name"]: c for c in json.loads(a.run("doctor", "--json")[1])["checks"]}
    assert checks["git debris"]["status"] == "fail" and "MERGE_HEAD" in checks["git debris"]["detail"]
    code, _, err = a.run("sync")
    assert code == 0, err
    row = a.by_uid()[first["uid"]]
    assert (row["title"], row["narrative"]) == ("Retitled on b", "edited on a")
    assert not (a.home / "sync.git" / "MERGE_HEAD").exists()
    assert git_in(a, "status", "--porcelain") == ""


# -- failures, reported --------------------------------------------------------------------------------------
def test_json_prints_a_result_object_on_failure_and_local_work_stays_committed(team):
    a, b, url, _ = team
    hook = refuse_pushes(url)
    a.add("Will wait for the push")
    code, out, err = a.run("sync", "--json")
    assert code == 9 and err.startswith("cmem: git push failed:") and err.count("\n") == 1
    report = json.loads(out)
    assert (report["ok"], report["exit_code"], report["committed"]) == (False, 9, 1)
    assert report["error"].startswith("git push failed:")
    assert git_in(a, "status", "--porcelain") == ""
    assert git_in(a, "log", "--format=%s", "origin/main..HEAD").strip() == "cmem sync: 1 local change(s)"
    hook.unlink()
    assert a.sync()["pushed"] is True
    b.sync()
    assert "Will wait for the push" in {r["title"] for r in b.by_uid().values()}


def test_an_unreachable_remote_leaves_local_work_adopted_and_committed(team):
    a, b, url, first = team
    Path(url).rename(url + ".away")
    path = a.file_of(first["uid"])
    path.write_text(path.read_text().replace("after an hour", "after a day"))
    code, out, err = a.run("sync", "--json")
    assert code == 9 and err.startswith("cmem: git fetch failed:")
    assert json.loads(out)["adopted"] == 1
    assert a.by_uid()[first["uid"]]["narrative"] == "tokens expire after a day"
    assert git_in(a, "status", "--porcelain") == ""
    Path(url + ".away").rename(url)
    a.sync()
    b.sync()
    assert b.by_uid()[first["uid"]]["narrative"] == "tokens expire after a day"


def test_json_prints_a_result_object_when_another_sync_runs(team):
    from cmem_cli.core.synclock import sync_lock

    a, *_ = team
    with sync_lock(a.home):
        code, out, err = a.run("sync", "--json")
    assert code == 5 and json.loads(out)["exit_code"] == 5 and json.loads(out)["ok"] is False


def test_a_store_locked_past_the_busy_timeout_is_exit_5_and_changes_nothing(team, monkeypatch):
    import apsw

    a, b, url, first = team
    a.add("Waits for b's store")
    a.sync()
    head, before = git_in(b, "rev-parse", "HEAD"), b.by_uid()
    monkeypatch.setenv("CMEM_BUSY_TIMEOUT_MS", "100")
    holder = apsw.Connection(str(b.home / "cmem.db"))
    holder.execute("BEGIN IMMEDIATE")  # another process's long write
    try:
        code, out, err = b.run("sync", "--json")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 5 and err.count("\n") == 1 and "locked by another process" in err, err
    assert json.loads(out)["exit_code"] == 5
    assert git_in(b, "rev-parse", "HEAD") == head and b.by_uid() == before
    assert git_in(b, "status", "--porcelain") == ""
    assert b.sync()["adopted"] == 1
    assert "Waits for b's store" in {r["title"] for r in b.by_uid().values()}


def test_a_rejected_arriving_file_is_reported_on_every_sync_until_removed(team, tmp_path):
    a, b, url, _ = team
    clone = _teammate_commits(
        tmp_path,
        url,
        {
            "TEAM.md": "# Team\n\nwho does what\n",
            "web/by-hand/broken.md": "---\ncmem: observation\ntitle: [unclosed\n---\n# x\n",
            "web/by-hand/fine.md": "# Fine by hand\n\nadopted\n",
        },
    )
    for _ in range(2):
        code, out, err = b.run("sync", "--json")
        assert code == 4, err
        assert sorted(item["path"] for item in json.loads(out)["rejected"]) == [
            "TEAM.md",
            "web/by-hand/broken.md",
        ]
        assert "cmem: TEAM.md: outside any project folder" in err
    assert "Fine by hand" in {r["title"] for r in b.by_uid().values()}
    for fix in ((), ("--fix",)):  # doctor lists them too, and --fix never calls them fixed
        code, out, _ = b.run("doctor", "--json", *fix)
        not_adopted = {c["name"]: c for c in json.loads(out)["checks"]}["files not adopted"]
        assert (code, not_adopted["status"]) == (4, "fail")
        assert sorted(not_adopted["paths"]) == ["TEAM.md", "web/by-hand/broken.md"]
        assert "outside any project folder" in not_adopted["reasons"][not_adopted["paths"].index("TEAM.md")]
    subprocess.run([*PLAIN_GIT, "pull", "-q", "--no-rebase"], cwd=clone, check=True)
    _teammate_commits(tmp_path, url, {"TEAM.md": None})
    code, out, err = b.run("sync", "--json")
    assert code == 4 and [item["path"] for item in json.loads(out)["rejected"]] == ["web/by-hand/broken.md"]
    code, out, _ = b.run("doctor", "--json")
    assert code == 4 and "TEAM.md" not in out
    (b.export / "web" / "by-hand" / "broken.md").unlink()
    code, out, err = b.run("sync", "--json")
    assert code == 0, err
    assert json.loads(out)["rejected"] == []
    assert b.run("doctor")[0] == 0


# -- joining ------------------------------------------------------------------------------------------------
def test_a_joining_machine_starts_from_the_remote_history(team, tmp_path, capsys):
    a, b, url, first = team
    head = remote_head(url)
    c = Machine(tmp_path / "c", capsys)
    own = c.add("From c before joining")
    c.sync(url)
    assert (
        git_in(c, "rev-list", "--max-parents=0", "HEAD").split()
        == git_in(a, "rev-list", "--max-parents=0", "HEAD").split()
    )
    assert git_in(c, "log", "-1", "--format=%P").split() == [head]  # one commit on top, no merge
    assert set(c.by_uid()) == {first["uid"], own["uid"]}
    a.sync()
    assert own["uid"] in a.by_uid()


# -- links to memories not here yet -------------------------------------------------------------------------
def _waiting_link_files(linking_uid: str, target_uid: str) -> dict[str, str]:
    """A teammate's note linking to a memory whose file does not parse (so it cannot be adopted yet)."""
    linking = (
        f"---\ncmem: observation\nuid: {linking_uid}\ntitle: Linking note\nproject: web\n"
        f'links: [{{"type": "related", "uid": "{target_uid}"}}]\n---\n# Linking note\n\n'
        f"<!-- cmem:links -->\n## Related\n\n- related: [The target](target.md)\n"
    )
    broken_target = f"---\ncmem: observation\nuid: {target_uid}\ntitle: [unclosed\n---\n# x\n"
    return {"web/hand/linking.md": linking, "web/hand/target.md": broken_target}


def test_a_link_to_a_memory_that_has_not_arrived_is_kept(team, tmp_path):
    a, b, url, first = team
    target_uid = "01TARGETNOTHEREYET0000000A"
    clone = _teammate_commits(tmp_path, url, _waiting_link_files("01LINKINGFILEFROMTEAMMATE0", target_uid))
    assert b.run("sync")[0] == 4  # the target cannot be adopted here (yet)
    a.run("sync")
    for machine in (a, b):
        assert f'"uid": "{target_uid}"' in (machine.export / "web/hand/linking.md").read_text()
    pushed = subprocess.run(
        ["git", "--git-dir", url, "show", "main:web/hand/linking.md"], capture_output=True, text=True
    ).stdout
    assert f'"uid": "{target_uid}"' in pushed, "the link was not dropped on the way back"
    fixed = f"---\ncmem: observation\nuid: {target_uid}\ntitle: The target\nproject: web\n---\n# The target\n"
    subprocess.run([*PLAIN_GIT, "pull", "-q", "--no-rebase"], cwd=clone, check=True)
    _teammate_commits(tmp_path, url, {"web/hand/target.md": fixed})
    for machine in (b, a):
        code, _, err = machine.run("sync")
        assert code == 0, err
    for machine in (a, b):
        linker = machine.by_uid()["01LINKINGFILEFROMTEAMMATE0"]
        assert [link["uid"] for link in machine.links(linker["id"])] == [target_uid]
        assert machine.run("doctor")[0] == 0


def test_a_link_waiting_for_a_memory_is_set_when_its_file_is_mended_by_hand_here(team, tmp_path):
    a, b, url, first = team
    target_uid = "01TARGETNOTHEREYET0000000B"
    _teammate_commits(tmp_path, url, _waiting_link_files("01LINKINGFILEFROMTEAMMATE1", target_uid))
    assert b.run("sync")[0] == 4  # the target cannot be adopted: the link waits for it
    linker = b.by_uid()["01LINKINGFILEFROMTEAMMATE1"]
    assert b.links(linker["id"]) == []
    mended = (
        f"---\ncmem: observation\nuid: {target_uid}\ntitle: The target\nproject: web\n---\n# The target\n"
    )
    (b.export / "web/hand/target.md").write_text(mended)  # mended here, as a hand edit
    code, _, err = b.run("sync")
    assert code == 0, err
    assert [link["uid"] for link in b.links(linker["id"])] == [target_uid]
    assert "[The target](" in (b.export / "web/hand/linking.md").read_text()
    assert b.run("doctor")[0] == 0


# -- git's folder -------------------------------------------------------------------------------------------
def test_gits_folder_lives_in_the_home_and_a_plain_git_status_breaks_nothing(team):
    a, *_ = team
    git_dir = a.home / "sync.git"
    assert git_dir.is_dir() and (git_dir.stat().st_mode & 0o777) == 0o700
    assert (a.export / ".git").is_file()
    old = os.umask(0o022)
    try:
        subprocess.run(["git", "status", "--short"], cwd=a.export, check=True, capture_output=True)
        subprocess.run(["git", "log", "-1", "-q"], cwd=a.export, check=True, capture_output=True)
    finally:
        os.umask(old)
    code, out, err = a.run("doctor")
    assert code == 0, out + err
    tail = a.by_uid()[team[3]["uid"]]["path"][-11:-3]
    hits = subprocess.run(["grep", "-rli", tail, str(a.export)], capture_output=True, text=True).stdout
    assert [Path(p).relative_to(a.export).as_posix() for p in hits.split()] == [
        a.by_uid()[team[3]["uid"]]["path"]
    ]


def test_a_tree_connected_with_git_inside_it_moves_its_git_folder_into_the_home(team):
    a, b, url, _ = team
    head = git_in(a, "rev-parse", "HEAD")
    (a.export / ".git").unlink()
    os.rename(a.home / "sync.git", a.export / ".git")  # how trees were connected before
    a.add("After the move")
    code, _, err = a.run("sync")
    assert code == 0, err
    assert (a.home / "sync.git").is_dir() and (a.export / ".git").is_file()
    assert head.strip() in git_in(a, "log", "--format=%H")
    b.sync()
    assert "After the move" in {r["title"] for r in b.by_uid().values()}
