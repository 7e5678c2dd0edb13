"""A `cmem sync` killed (SIGKILL) after each of its git steps: the next sync converges, with nothing lost,
nothing doubled, no conflict marker in any pushed blob; and `doctor --fix` run in between never brings
back what another machine forgot."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sync_helpers import Machine, bare_repo, git_in, remote_blobs
from tests.sync_kill import GitWrapper, copy_world


def _world(tmp_path: Path, capsys) -> tuple[Path, dict[str, str]]:
    """Two machines that share notes X, Y, Z; A then pushed (an X narrative, a Y retitle, Z forgotten, a new
    note); B has unsynced work (a later X narrative: a conflict; a Y subtitle: merges; a new note, a link
    and a summary). B's next sync is the one killed."""
    world = tmp_path / "world"
    url = bare_repo(world / "team.git")
    a, b = Machine(world / "a", capsys), Machine(world / "b", capsys)
    uids = {name: a.add(f"Shared {name}", "--narrative", f"{name} as it began")["uid"] for name in "XYZ"}
    a.sync(url)
    b.sync(url)
    ids_a = {name: str(a.by_uid()[uid]["id"]) for name, uid in uids.items()}
    ids_b = {name: str(b.by_uid()[uid]["id"]) for name, uid in uids.items()}
    uids["A new"] = a.add("A new")["uid"]
    a.ok("edit", ids_a["X"], "--narrative", "X as a wrote it")
    a.ok("edit", ids_a["Y"], "--title", "Shared Y, retitled on a")
    a.ok("forget", "--yes", ids_a["Z"])
    a.sync()
    uids["B new"] = b.add("B new", "--link", f"related:{ids_b['Y']}")["uid"]
    b.ok("edit", ids_b["X"], "--narrative", "X as b wrote it, later")
    b.ok("edit", ids_b["Y"], "--subtitle", "subtitle from b")
    b.ok("summary", "add", "--session", "s-b", "-p", "web", "--learned", "summaries travel too")
    return world, uids


def _converged(a: Machine, b: Machine, url: str, uids: dict[str, str]) -> None:
    rows_a, rows_b = a.by_uid(), b.by_uid()
    assert set(rows_a) == set(rows_b)
    texts = {u: (r["title"], r["subtitle"], r["narrative"]) for u, r in rows_a.items()}
    assert texts == {u: (r["title"], r["subtitle"], r["narrative"]) for u, r in rows_b.items()}
    assert uids["Z"] not in rows_a, "what a forgot came back"
    assert rows_a[uids["X"]]["narrative"] == "X as b wrote it, later"
    assert (rows_a[uids["Y"]]["title"], rows_a[uids["Y"]]["subtitle"]) == (
        "Shared Y, retitled on a",
        "subtitle from b",
    )
    assert {uids[n] for n in ("X", "Y", "A new", "B new")} <= set(rows_a)
    copies = [r for r in rows_a.values() if r["title"].endswith("(conflict copy)")]
    assert [(c["title"], c["narrative"]) for c in copies] == [("Shared X (conflict copy)", "X as a wrote it")]
    assert len(rows_a) == 5, sorted(r["title"] for r in rows_a.values())
    assert [link["uid"] for link in b.links(rows_b[uids["B new"]]["id"])] == [uids["Y"]]
    for machine in (a, b):
        assert machine.run("doctor")[0] == 0, machine.run("doctor")
        assert "summaries travel too" in machine.ok("search", "summaries travel", "--json")
        assert git_in(machine, "status", "--porcelain") == ""
    blobs = remote_blobs(url)
    assert "<<<<<<<" not in blobs and ">>>>>>>" not in blobs


def _steps(tmp_path: Path, capsys) -> tuple[Path, dict[str, str], GitWrapper, int]:
    world, uids = _world(tmp_path, capsys)
    wrapper = GitWrapper(tmp_path / "wrapper")
    probe = tmp_path / "probe"
    copy_world(world, probe, ["a", "b"])
    wrapper.arm()
    assert wrapper.run(probe / "b", "sync").returncode == 0
    return world, uids, wrapper, len(wrapper.calls())


@pytest.mark.slow
@pytest.mark.parametrize("half", [0, 1])
def test_a_sync_killed_after_each_git_step_converges_on_the_next(home, tmp_path, capsys, half):
    world, uids, wrapper, count = _steps(tmp_path, capsys)
    assert count >= 8
    for step in range(1 + half, count + 1, 2):
        trial = tmp_path / f"kill-{step}"
        copy_world(world, trial, ["a", "b"])
        a, b = Machine(trial / "a", capsys), Machine(trial / "b", capsys)
        wrapper.arm(kill_at=step)
        killed = wrapper.run(b.home, "sync")
        assert killed.returncode == -9, (step, wrapper.calls(), killed.stderr)
        assert b.run("doctor", "--fix")[0] in (0, 1)
        b.sync()
        a.sync()
        b.sync()
        _converged(a, b, str(trial / "team.git"), uids)


@pytest.mark.slow
def test_a_machine_killed_while_joining_converges_and_history_stays_one_line(home, tmp_path, capsys):
    """A new machine with memories of its own joins a remote with history (`sync init URL`), killed after
    each git step; the next sync leaves it with everything, its own memories pushed on top of the
    remote's history (one root commit), and nothing doubled."""
    world = tmp_path / "world"
    url = bare_repo(world / "team.git")
    a, c = Machine(world / "a", capsys), Machine(world / "c", capsys)
    theirs = {a.add(f"from a {i}")["uid"] for i in range(3)}
    a.sync(url)
    mine = {c.add(f"from c {i}")["uid"] for i in range(2)}
    wrapper = GitWrapper(tmp_path / "wrapper")
    probe = tmp_path / "probe"
    copy_world(world, probe, ["a", "c"])
    wrapper.arm()
    assert wrapper.run(probe / "c", "sync", "init", str(probe / "team.git")).returncode == 0
    count = len(wrapper.calls())
    for step in range(1, count + 1):
        trial = tmp_path / f"kill-{step}"
        copy_world(world, trial, ["a", "c"])
        a, c = Machine(trial / "a", capsys), Machine(trial / "c", capsys)
        wrapper.arm(kill_at=step)
        assert wrapper.run(c.home, "sync", "init", str(trial / "team.git")).returncode == -9
        c.sync(str(trial / "team.git"))
        a.sync()
        assert set(c.by_uid()) == set(a.by_uid()) == theirs | mine, step
        roots = git_in(c, "rev-list", "--max-parents=0", "HEAD").split()
        assert len(roots) == 1, (step, roots)
        assert c.run("doctor")[0] == 0 and git_in(c, "status", "--porcelain") == ""


def test_a_git_killed_while_its_merge_wrote_the_tree_is_undone_and_merged_again(home, tmp_path, capsys):
    """What a git killed half-way through writing a merge into the tree leaves (no MERGE_HEAD yet): one
    file at the new version, one cut short, one removed. None of it is taken for a person's edit (a cut
    short file adopted would lose text; an unreadable one would block every later merge); a person's own
    edit made since stays and travels."""
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    notes = {
        n: a.add(f"Note {n}", "--narrative", f"{n} as it began")["uid"]
        for n in ("cut", "new", "gone", "mine")
    }
    a.sync(url)
    b.sync(url)
    for name in ("cut", "new", "gone"):
        a.ok("edit", str(a.by_uid()[notes[name]]["id"]), "--narrative", f"{name} edited on a " + "x" * 400)
    a.sync()
    git_in(b, "fetch", "-q")
    head, target = git_in(b, "rev-parse", "HEAD").strip(), git_in(b, "rev-parse", "origin/main").strip()
    paths = {name: b.by_uid()[uid]["path"] for name, uid in notes.items()}
    theirs = {name: git_in(b, "show", f"origin/main:{paths[name]}") for name in ("cut", "new")}
    (b.export / paths["new"]).write_text(theirs["new"])
    (b.export / paths["cut"]).write_text(theirs["cut"][:60])  # cut inside the front matter
    (b.export / paths["gone"]).unlink()
    mine = b.export / paths["mine"]
    mine.write_text(mine.read_text().replace("mine as it began", "mine, edited by a person meanwhile"))
    (b.home / "sync.git" / "cmem-merging").write_text(f"{head} {target}\n")
    code, out, err = b.run("sync")
    assert code == 0, err
    a.sync()
    for machine in (a, b):
        rows = machine.by_uid()
        for name in ("cut", "new", "gone"):
            assert rows[notes[name]]["narrative"] == f"{name} edited on a " + "x" * 400
        assert rows[notes["mine"]]["narrative"] == "mine, edited by a person meanwhile"
        assert not [r for r in rows.values() if r["title"].endswith("(conflict copy)")]
        assert git_in(machine, "status", "--porcelain") == ""
