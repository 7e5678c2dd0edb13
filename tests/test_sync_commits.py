"""`cmem sync` commits exactly what cmem adopted or wrote: a file saved while a sync runs is left for the
next sync, never committed raw (no secret reaches a pushed blob), and is adopted, scrubbed, next time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, bare_repo, git_in, remote_blobs
from tests.sync_kill import GitWrapper, copy_world

AWS_KEY = "AKIA" + "Q3ZB7XKM4TPLN2RW"
PASSWORD = "password=" + "hunter2-corral-battery"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A and B share a note; A pushed an edit of it and a new note; B has a new note of its own: B's next
    sync commits, merges and pushes."""
    root = tmp_path_factory.mktemp("secret-world")
    url = bare_repo(root / "team.git")
    a, b = Machine(root / "a", None), Machine(root / "b", None)
    shared = a.add("Shared note", "--narrative", "as it began")
    a.sync(url)
    b.sync(url)
    a.ok("edit", str(shared["id"]), "--narrative", "edited on a")
    a.add("Second from a")
    a.sync()
    b.add("From b")
    return root


@pytest.mark.parametrize("step", ["status", "update-index", "ls-files", "commit", "merge", "push"])
def test_a_file_saved_mid_sync_is_never_committed_raw_and_is_adopted_next(world, tmp_path, capsys, step):
    copy_world(world, tmp_path, ["a", "b"])
    b = Machine(tmp_path / "b", capsys)
    [shared] = [r for r in b.by_uid().values() if r["title"] == "Shared note"]
    existing = b.export / shared["path"]
    new = b.export / "web" / "notes" / "deploy.md"
    snippet = (
        f"mkdir -p '{new.parent}'\n"
        f"printf '# Deploy keys\\n\\naws {AWS_KEY} and {PASSWORD}\\n' > '{new}'\n"
        f"printf '\\nsaved mid-sync: {AWS_KEY}\\n' >> '{existing}'\n"
    )
    wrapper = GitWrapper(tmp_path / "wrapper")
    wrapper.arm(after={step: snippet})
    first = wrapper.run(b.home, "sync")
    assert first.returncode in (0, 9), first.stderr  # 9: the merge found the file changed under it
    assert step in wrapper.calls()
    for leaked in (AWS_KEY, "hunter2-corral-battery"):
        assert leaked not in remote_blobs(str(tmp_path / "team.git"))
        assert leaked not in git_in(b, "log", "-p", "--all")
    b.sync()
    rows = {r["title"]: r for r in b.by_uid().values()}
    assert "Deploy keys" in rows, "the file saved mid-sync is adopted by the next sync"
    assert "saved mid-sync" in rows["Shared note"]["narrative"]
    for leaked in (AWS_KEY, "hunter2-corral-battery"):
        assert leaked not in rows["Deploy keys"]["narrative"]
        assert leaked not in remote_blobs(str(tmp_path / "team.git"))
        assert leaked not in "".join(p.read_text() for p in b.export.rglob("*.md"))
    assert "Deploy keys" in remote_blobs(str(tmp_path / "team.git"))
    assert git_in(b, "status", "--porcelain") == ""


def test_a_merge_refused_for_a_file_saved_mid_sync_is_exit_9_and_the_next_sync_merges(
    world, tmp_path, capsys
):
    """docs/sync.md, exit 9 "`git merge` failed": a person saves the note the merge must change after the
    fetch; git refuses to overwrite it. Local work stays committed, the branch and the store are as before
    the merge, the save is left as it is; the next sync adopts the save first, then merges, losing nothing."""
    copy_world(world, tmp_path, ["a", "b"])
    b = Machine(tmp_path / "b", capsys)
    [shared] = [r for r in b.by_uid().values() if r["title"] == "Shared note"]
    existing = b.export / shared["path"]
    wrapper = GitWrapper(tmp_path / "wrapper")
    wrapper.arm(after={"fetch": f"printf '\\nsaved while b fetched\\n' >> '{existing}'\n"})
    first = wrapper.run(b.home, "sync", "--json")
    assert first.returncode == 9 and first.stderr.startswith("cmem: git merge failed:"), first.stderr
    report = json.loads(first.stdout)
    assert (report["exit_code"], report["committed"], report["pushed"]) == (9, 1, False)
    assert git_in(b, "log", "--format=%s", "origin/main..HEAD").strip() == "cmem sync: 1 local change(s)"
    assert git_in(b, "status", "--porcelain").strip() == f"M {shared['path']}"
    rows = {r["title"]: r for r in b.by_uid().values()}
    assert "Second from a" not in rows and rows["Shared note"]["narrative"] == "as it began"
    assert existing.read_text().endswith("\nsaved while b fetched\n")
    b.sync()
    rows = {r["title"]: r for r in b.by_uid().values()}
    assert {"Second from a", "From b"} <= set(rows)
    texts = [r["narrative"] for r in rows.values() if r["title"].startswith("Shared note")]
    assert any("edited on a" in t for t in texts) and any("saved while b fetched" in t for t in texts)
    assert git_in(b, "status", "--porcelain") == ""
