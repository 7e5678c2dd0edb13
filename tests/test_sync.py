"""`cmem sync` through git: two homes and a bare repository in a temporary folder."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from copy import deepcopy
from pathlib import Path

import pytest

from tests.sync_helpers import (
    Machine,
    a_test_s_environment,
    all_text,
    bare_repo,
    copy_machines,
    refuse_pushes,
    remote_blobs,
    remote_head,
    remote_history,
)


@pytest.fixture(scope="module")
def team_template(tmp_path_factory: pytest.TempPathFactory):
    """Machines ``a`` and ``b`` (each with one note) connected to one bare repository, made once a module."""
    root = tmp_path_factory.mktemp("team")
    with a_test_s_environment(root):
        url = bare_repo(root / "team.git")
        a, b = Machine(root / "a", None), Machine(root / "b", None)
        first = a.add("Login uses JWT", "--narrative", "tokens expire after an hour")
        a.sync(url)
        second = b.add("Cache lives in redis")
        b.sync(url)
        a.sync()
    return root, first, second


@pytest.fixture
def team(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], team_template):
    """Machines ``a`` and ``b`` (each with one note) connected to one bare repository: this test's copy."""
    root, first, second = team_template
    copy_machines(root, tmp_path)
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    return a, b, str(tmp_path / "team.git"), deepcopy(first), deepcopy(second)


def test_init_pushes_to_an_empty_remote_and_brings_in_a_remote_with_history(team):
    a, b, url, first, second = team
    assert set(a.by_uid()) == set(b.by_uid()) == {first["uid"], second["uid"]}
    assert b.by_uid()[first["uid"]]["narrative"] == "tokens expire after an hour"
    assert ".gitignore" in remote_history(url)


def test_a_second_sync_changes_nothing(team):
    a, b, url, *_ = team
    head = remote_head(url)
    for machine in (a, b, a):
        report = machine.sync()
        assert (report["committed"], report["adopted"], report["forgotten"]) == (0, 0, 0)
    assert remote_head(url) == head
    assert subprocess.run(["git", "status", "--porcelain"], cwd=a.export, capture_output=True).stdout == b""


def test_cmem_edit_travels_and_keeps_uid_and_time(team):
    a, b, url, first, _ = team
    a.ok("edit", str(first["id"]), "--title", "Login uses JWT with 1h expiry")
    a.sync()
    b.sync()
    mine, theirs = a.by_uid()[first["uid"]], b.by_uid()[first["uid"]]
    assert theirs["title"] == "Login uses JWT with 1h expiry"
    assert theirs["updated_at"] == mine["updated_at"]
    assert a.file_of(first["uid"]).read_text() == b.file_of(first["uid"]).read_text()


def test_hand_edit_is_adopted_locally_and_travels(team):
    a, b, url, first, _ = team
    path = a.file_of(first["uid"])
    path.write_text(path.read_text().replace("tokens expire after an hour", "tokens expire after 15 minutes"))
    report = a.sync()
    assert report["adopted"] == 1
    assert a.by_uid()[first["uid"]]["narrative"] == "tokens expire after 15 minutes"
    b.sync()
    assert b.by_uid()[first["uid"]]["narrative"] == "tokens expire after 15 minutes"


def test_forget_travels_and_is_not_resurrected(team):
    a, b, url, first, second = team
    a.ok("forget", "--yes", str(first["id"]))
    a.sync()
    assert b.sync()["forgotten"] == 1
    b.sync()
    a.sync()
    assert set(a.by_uid()) == set(b.by_uid()) == {second["uid"]}
    assert "Login uses JWT" not in all_text(a.export) + all_text(b.export)


def test_edit_on_one_machine_and_forget_on_the_other_keeps_the_edit(team):
    a, b, url, first, _ = team
    a.ok("forget", "--yes", str(first["id"]))
    a.sync()
    b_id = b.by_uid()[first["uid"]]["id"]
    b.ok("edit", str(b_id), "--narrative", "still true after the refactor")
    report = b.sync()
    assert [c["path"] for c in report["conflicts"]] == [b.by_uid()[first["uid"]]["path"]]
    a.sync()
    assert a.by_uid()[first["uid"]]["narrative"] == "still true after the refactor"


@pytest.mark.parametrize("later", ["a", "b"])
def test_concurrent_edits_keep_both_texts_without_conflict_markers(team, later):
    a, b, url, first, _ = team
    a_id, b_id = a.by_uid()[first["uid"]]["id"], b.by_uid()[first["uid"]]["id"]
    edits = [(a, a_id, "text from machine a"), (b, b_id, "text from machine b")]
    if later == "a":
        edits.reverse()
    for machine, obs_id, text in edits:  # the second edit is the later one
        machine.ok("edit", str(obs_id), "--narrative", text)
    a.sync()
    report = b.sync()
    a.sync()
    assert len(report["conflicts"]) == 1
    for machine in (a, b):
        rows = machine.by_uid()
        assert rows[first["uid"]]["narrative"] == f"text from machine {later}"
        copy = rows[report["conflicts"][0]["copy_uid"]]
        assert copy["narrative"] == f"text from machine {'b' if later == 'a' else 'a'}"
        assert copy["title"].endswith("(conflict copy)")
        text = all_text(machine.export)
        assert "<<<<<<<" not in text and ">>>>>>>" not in text
    assert set(a.by_uid()) == set(b.by_uid())
    code, out, _ = a.run(
        "get", str(a.by_uid()[report["conflicts"][0]["copy_uid"]]["id"]), "--links", "--json"
    )
    assert code == 0 and first["uid"] in out


def test_no_secret_or_private_text_reaches_a_commit(team):
    a, b, url, first, _ = team
    secret = "AKIA" + "Q3ZB7XKM4TPLN2RW"
    a.add("Deploy notes", "--narrative", f"key {secret} <private>the vault password</private> done")
    path = a.file_of(first["uid"])
    path.write_text(path.read_text() + f"\nhand-added {secret} and <private>my pin</private>\n")
    dropped = a.export / "web" / "notes" / "dropped.md"
    dropped.parent.mkdir()
    dropped.write_text(
        f"---\ncmem: observation\ntitle: dropped\nproject: web\n---\n# dropped\n\n## Narrative\n\n{secret}\n"
    )
    a.sync()
    history = remote_history(url)
    for leaked in (secret, "vault password", "my pin"):
        assert leaked not in history
        assert leaked not in all_text(a.export)
    assert "hand-added" in history


def test_bad_files_are_reported_by_path_and_change_nothing(team):
    a, b, url, first, second = team
    project = a.export / "web" / "hand"
    project.mkdir()
    (project / "broken.md").write_text("---\ncmem: observation\ntitle: [unclosed\n---\n# x\n")
    (project / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    with open(project / "huge.md", "wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    (a.export / "outside.md").write_text(
        "---\ncmem: observation\n---\n# loose\n\nno project folder or line\n"
    )
    (a.export / "TEAM.md").write_text("# The team's own page\n\nnot a memory: ignored, and never committed\n")
    good = project / "good.md"
    good.write_text(
        "---\ncmem: observation\ntitle: A good hand note\nproject: web\n---\n# A good hand note\n"
    )
    before = set(a.by_uid())
    code, out, err = a.run("sync")
    assert code == 4
    lines = err.strip().splitlines()
    for name, reason in (
        ("web/hand/broken.md", "broken front matter"),
        ("web/hand/binary.md", "binary file"),
        ("web/hand/huge.md", "file too large"),
        ("outside.md", "outside any project folder"),
    ):
        assert [line for line in lines if line.startswith(f"cmem: {name}: {reason}")], (name, err)
    assert "Traceback" not in err and "TEAM.md" not in err
    titles = {row["title"] for row in a.by_uid().values()}
    assert set(a.by_uid()) - before and "A good hand note" in titles and "loose" not in titles
    history = remote_history(url)
    assert "A good hand note" in history
    for name in ("broken.md", "binary.md", "huge.md", "outside.md", "TEAM.md"):
        assert name not in history


def test_a_remote_that_refuses_the_push_is_one_line_and_exit_9(team):
    a, b, url, *_ = team
    hook = refuse_pushes(url)
    a.add("Will not leave")
    code, out, err = a.run("sync")
    assert code == 9
    assert err.startswith("cmem: git push failed:") and err.count("\n") == 1
    hook.unlink()
    a.sync()
    b.sync()
    assert "Will not leave" in {row["title"] for row in b.by_uid().values()}


def test_an_unreachable_remote_is_a_one_line_error(home, tmp_path, capsys):
    m = Machine(tmp_path / "m", capsys)
    m.add("x")
    code, _, err = m.run("sync", "init", str(tmp_path / "no-such-repo"))
    assert code == 9 and err.startswith("cmem: git ls-remote failed:") and err.count("\n") == 1
    url = bare_repo(tmp_path / "right.git")
    m.sync(url)  # the mistyped URL did not stick
    assert "x" in remote_history(url)


def test_user_git_config_cannot_break_sync(team, tmp_path):
    a, b, url, *_ = team
    (tmp_path / "user-home" / ".gitconfig").parent.mkdir(exist_ok=True)
    (tmp_path / "user-home" / ".gitconfig").write_text(
        "[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = /nonexistent/gpg\n[core]\n\tpager = false\n"
    )
    a.add("Signed? no")
    a.sync()
    b.sync()
    assert "Signed? no" in {row["title"] for row in b.by_uid().values()}


def test_files_git_writes_are_private(team):
    a, *_ = team
    for path in a.export.rglob("*"):
        mode = path.stat().st_mode & 0o777
        assert mode & 0o077 == 0, (path, oct(mode))


def test_sync_while_hooks_write_loses_nothing(team, tmp_path):
    a, b, url, *_ = team
    env = {**os.environ, "CMEM_HOME": str(a.home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "cmem_cli", "add", "--title", f"written during sync {i}", "-p", "web"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for i in range(6)
    ]
    syncer = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "sync"], env=env, capture_output=True, text=True, timeout=120
    )
    assert [w.wait(timeout=120) for w in writers] == [0] * 6
    assert syncer.returncode == 0, syncer.stderr
    a.sync()
    b.sync()
    titles = {row["title"] for row in b.by_uid().values()}
    assert {f"written during sync {i}" for i in range(6)} <= titles
    assert set(a.by_uid()) == set(b.by_uid())


def _killed_sync(machine: Machine, rng) -> None:
    """`cmem sync` as its own process group, SIGKILLed at a random moment (as systemd or the OOM killer
    ends it: git included)."""
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "--home", str(machine.home), "sync"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    time.sleep(rng.uniform(0.05, 0.8))
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


@pytest.mark.parametrize("seed", [8, 12])  # seeds that kill syncs
def test_random_add_edit_forget_sync_interleavings_converge(home, tmp_path, capsys, seed):
    """Random work on two machines (adds, edits, retitles, project moves, hand edits, forgets), synced at
    random and sometimes killed mid-sync; at the end both stores hold the same observations, every note
    nobody forgot is there once, every conflict copy points at a live observation, and no blob ever pushed
    holds a conflict marker."""
    import random

    rng = random.Random(seed)
    url = bare_repo(tmp_path / "team.git")
    machines = [Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)]
    for machine in machines:
        machine.add(f"seed note {machine.home.name}")
        machine.sync(url)
    forgotten: set[str] = set()
    added: set[str] = set()
    actions = ["add", "edit", "edit", "retitle", "move", "hand", "forget", "sync", "sync", "kill"]
    for step in range(30):
        machine = rng.choice(machines)
        rows = [r for r in machine.by_uid().values() if not r["title"].endswith("(conflict copy)")]
        action = rng.choice(actions)
        if action == "add" or not rows:
            added.add(machine.add(f"note {step}")["uid"])
        elif action == "edit":
            row = rng.choice(rows)
            machine.ok("edit", str(row["id"]), "--narrative", f"edit {step} on {machine.home.name}")
        elif action == "retitle":
            row = rng.choice(rows)
            machine.ok("edit", str(row["id"]), "--title", f"retitled {step} on {machine.home.name}")
        elif action == "move":
            row = rng.choice(rows)
            machine.ok("edit", str(row["id"]), "--project", f"project-{step % 3}")
        elif action == "hand":
            row = rng.choice(rows)
            path = machine.export / row["path"]
            path.write_text(path.read_text() + f"\nhand line {step}\n")
        elif action == "forget":
            # not a note a conflict copy points at: the copy would lose its link (and the check below)
            pointed = {
                r["id"]
                for r in rows
                if any(ln["title"].endswith("(conflict copy)") for ln in machine.links_to(r["id"]))
            }
            row = rng.choice(rows)
            if row["id"] not in pointed:
                machine.ok("forget", "--yes", str(row["id"]))
                forgotten.add(row["uid"])
        elif action == "kill":
            _killed_sync(machine, rng)
        else:
            machine.sync()
    for machine in (*machines, machines[0]):
        machine.sync()
    # one edit made on both machines between syncs, whatever the kills above did: a certain conflict
    shared = sorted(u for u, r in machines[0].by_uid().items() if not r["title"].endswith("(conflict copy)"))[
        0
    ]
    for machine in machines:
        machine.ok(
            "edit", str(machine.by_uid()[shared]["id"]), "--narrative", f"last word of {machine.home.name}"
        )
    for machine in (*machines, machines[0]):
        machine.sync()
    a, b = (m.by_uid() for m in machines)
    assert set(a) == set(b)
    fields = ("title", "narrative", "project")
    assert {u: tuple(r[f] for f in fields) for u, r in a.items()} == {
        u: tuple(r[f] for f in fields) for u, r in b.items()
    }
    assert added - forgotten <= set(a)
    originals = [r["title"] for r in a.values() if not r["title"].endswith("(conflict copy)")]
    assert len(originals) == len(set(originals))
    copies = [r for r in a.values() if r["title"].endswith("(conflict copy)")]
    assert any(c["narrative"].startswith("last word of") for c in copies)
    for copy in copies:
        assert {link["uid"] for link in machines[0].links(copy["id"])} & set(a)
    assert "<<<<<<<" not in remote_blobs(url)
    for machine in machines:
        assert "<<<<<<<" not in all_text(machine.export)
        code, out, err = machine.run("doctor")
        assert code == 0, out + err


def test_the_receiving_index_picks_up_exactly_what_arrived(team):
    """Change detection by content hash: after a sync, the receiving machine's index pass re-chunks only
    the files that arrived or changed, drops the forgotten one, and embeds only new chunk texts."""
    from cmem_cli.core.config import load_config
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer
    from cmem_index.store import IndexStore
    from tests.index_helpers import CountingEmbedder, index_rows

    a, b, url, first, second = team
    config = load_config(b.home)
    embedder = CountingEmbedder()

    def index_pass():
        store = IndexStore.open(config.index_path)
        try:
            return Indexer(store, load_collections(config), embedder).run()
        finally:
            store.close()

    index_pass()
    third = a.add("Rate limiter uses a token bucket", "--narrative", "refill every second")
    a.ok("edit", str(first["id"]), "--narrative", "tokens expire after 15 minutes")
    a.ok("forget", "--yes", str(a.by_uid()[second["uid"]]["id"]))
    a.sync()
    b.sync()
    embedder.embedded.clear()
    report = index_pass()
    assert (report.chunked, report.removed) == (2, 1)
    embedded = " ".join(text for _, text in embedder.embedded)
    assert "refill every second" in embedded and "15 minutes" in embedded
    assert "Cache lives in redis" not in embedded
    store = IndexStore.open(config.index_path)
    try:
        uids = {r[0] for r in index_rows(store, "SELECT uid FROM documents")}
    finally:
        store.close()
    assert {first["uid"], third["uid"]} <= uids and second["uid"] not in uids
    embedder.embedded.clear()
    assert (index_pass().chunked, embedder.embedded) == (0, [])


def test_a_rename_on_one_machine_and_an_edit_on_the_other_keep_both_texts(team):
    a, b, url, first, _ = team
    a.ok("edit", str(a.by_uid()[first["uid"]]["id"]), "--title", "JWT login, renamed")  # new file name
    b.ok("edit", str(b.by_uid()[first["uid"]]["id"]), "--narrative", "edited on b")
    a.sync()
    b.sync()
    a.sync()
    assert set(a.by_uid()) == set(b.by_uid())
    for machine in (a, b):
        rows = list(machine.by_uid().values())
        texts = {(r["title"], r["narrative"]) for r in rows}
        assert any(title.startswith("JWT login, renamed") for title, _ in texts), texts
        assert any(narrative == "edited on b" for _, narrative in texts), texts
        assert len([r for r in rows if r["uid"] == first["uid"]]) == 1
        assert "<<<<<<<" not in all_text(machine.export)
        code, out, err = machine.run("doctor")
        assert code == 0, out + err


def test_init_keeps_a_gitignore_a_person_wrote(home, tmp_path, capsys):
    url = bare_repo(tmp_path / "team.git")
    m = Machine(tmp_path / "m", capsys)
    m.add("x")
    (m.export / ".gitignore").write_text("drafts/\n")
    m.sync(url)
    m.sync(url)  # again: the rules are not appended twice
    text = (m.export / ".gitignore").read_text()
    assert text.startswith("drafts/\n") and text.count("!*.md") == 1


def test_a_failed_adoption_undoes_the_merge_and_the_store(team, monkeypatch):
    from cmem_cli.services.inbound import arrivals as sync_adopt

    a, b, url, first, _ = team
    a.add("Arrives at b")
    a.sync()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=b.export, capture_output=True, text=True).stdout
    before = b.by_uid()

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sync_adopt, "apply", broken)
    code, _, err = b.run("sync")
    assert code != 0 and err.count("\n") == 1 and "Traceback" not in err
    after = subprocess.run(["git", "rev-parse", "HEAD"], cwd=b.export, capture_output=True, text=True).stdout
    assert after == head and b.by_uid() == before
    assert subprocess.run(["git", "status", "--porcelain"], cwd=b.export, capture_output=True).stdout == b""
    monkeypatch.undo()
    b.sync()
    assert "Arrives at b" in {row["title"] for row in b.by_uid().values()}


def test_a_tree_kept_under_git_by_a_person_is_not_pushed_without_sync_init(home, tmp_path, capsys):
    url = bare_repo(tmp_path / "own.git")
    m = Machine(tmp_path / "m", capsys)
    m.add("kept under my own git")
    git = ["git", "-c", "user.name=me", "-c", "user.email=me@x"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=m.export, check=True)
    subprocess.run([*git, "remote", "add", "origin", url], cwd=m.export, check=True)
    code, _, err = m.run("sync")
    assert code == 0, err
    assert "pushed" not in err and remote_history(url) == ""
    assert subprocess.run(["git", "log", "--oneline"], cwd=m.export, capture_output=True).stdout == b""


def test_bad_files_arriving_from_the_remote_are_reported_and_the_rest_adopted(team, tmp_path):
    """Files committed to the remote by something other than cmem: the bad ones are reported by path and
    change nothing; good ones that came in the same merge are adopted."""
    a, b, url, *_ = team
    clone = tmp_path / "clone"
    git = ["git", "-c", "user.name=x", "-c", "user.email=x@x", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "clone", "-q", url, str(clone)], check=True)
    folder = clone / "web" / "from-elsewhere"
    folder.mkdir(parents=True)
    (folder / "broken.md").write_text("---\ncmem: observation\ntitle: [unclosed\n---\n# x\n")
    (folder / "binary.md").write_bytes(b"\x00\x01 binary")
    (folder / "good.md").write_text(
        "---\ncmem: observation\ntitle: Arrived fine\nproject: web\n---\n# Arrived fine\n"
    )
    (folder / "plain.md").write_text("# Plain arrival\n\nno front matter at all\n")
    subprocess.run([*git, "add", "-A"], cwd=clone, check=True)
    subprocess.run([*git, "commit", "-qm", "outside"], cwd=clone, check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD:main"], cwd=clone, check=True)
    before = set(b.by_uid())
    code, out, err = b.run("sync")
    assert code == 4
    assert (
        "cmem: web/from-elsewhere/broken.md: " in err and "cmem: web/from-elsewhere/binary.md: binary" in err
    )
    assert "Traceback" not in err
    added = {row["title"] for uid, row in b.by_uid().items() if uid not in before}
    assert added == {"Arrived fine", "Plain arrival"}


def test_a_second_sync_at_the_same_time_exits_5(team):
    from cmem_cli.core.synclock import sync_lock

    a, *_ = team
    with sync_lock(a.home):
        code, _, err = a.run("sync")
    assert code == 5 and err == "cmem: another cmem sync is running; try again later\n"


def test_a_lost_export_tree_is_not_a_forget_that_travels(team):
    import shutil

    a, b, url, first, second = team
    head = remote_head(url)
    for child in a.export.iterdir():
        if child.name not in (".git", ".gitignore"):
            shutil.rmtree(child)
    code, _, err = a.run("sync")
    assert (
        code == 2 and err.startswith("cmem: every file of the export tree is gone") and err.count("\n") == 1
    )
    assert remote_head(url) == head
    assert set(a.by_uid()) == {first["uid"], second["uid"]}


def test_git_missing_is_a_one_line_error(team, monkeypatch, tmp_path):
    a, *_ = team
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    a.add("no git here")
    code, _, err = a.run("sync")
    assert code == 9 and err == "cmem: git is not installed (cmem sync needs git on PATH)\n"


def test_a_session_summary_travels_and_is_updated_by_uid(team):
    a, b, url, *_ = team
    a.ok("summary", "add", "--session", "s-team", "-p", "web", "--learned", "tokens need a refresh path")
    a.sync()
    b.sync()
    listed = json.loads(b.ok("search", "refresh path", "--json"))
    summary = next(hit for hit in listed if hit["kind"] == "summary")
    got = json.loads(b.ok("get", summary["id"], "--json"))[0]
    assert got["learned"] == "tokens need a refresh path"
    summary_files = [p for p in a.export.rglob("*.md") if "refresh path" in p.read_text()]
    assert len(summary_files) == 1
    relpath = summary_files[0].relative_to(a.export)
    assert (b.export / relpath).read_text() == summary_files[0].read_text()
    # a hand edit of the summary on b travels back to a, as the same summary (no copy)
    edited = (b.export / relpath).read_text().replace("refresh path", "refresh endpoint")
    (b.export / relpath).write_text(edited)
    b.sync()
    a.sync()
    texts = [p.read_text() for p in a.export.rglob("*.md") if "refresh" in p.read_text()]
    assert len(texts) == 1 and "refresh endpoint" in texts[0]


def test_a_hook_writing_while_sync_merges_loses_nothing(team, tmp_path):
    """A Claude Code hook fires (as its own process) while `cmem sync` pulls and adopts on the same home."""
    a, b, url, *_ = team
    for i in range(20):
        b.add(f"arrives from b {i}")
    b.sync()
    prompt = {
        "session_id": "s-hook",
        "hook_event_name": "UserPromptSubmit",
        "cwd": str(tmp_path),
        "prompt": "keep this prompt while syncing",
    }
    env = {**os.environ, "CMEM_HOME": str(a.home)}
    hooks = [
        subprocess.Popen(
            [sys.executable, "-m", "cmem_cli", "hook", "UserPromptSubmit"],
            stdin=subprocess.PIPE,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for i, hook in enumerate(hooks):
        hook.stdin.write(json.dumps({**prompt, "prompt": f"{prompt['prompt']} {i}"}).encode())
        hook.stdin.close()
    report = a.sync()
    for hook in hooks:
        assert hook.wait(timeout=60) == 0, hook.stderr.read()
    assert report["adopted"] >= 20
    assert {f"arrives from b {i}" for i in range(20)} <= {row["title"] for row in a.by_uid().values()}
    stored = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "--home", str(a.home), "search", "keep this prompt", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    prompts = [hit for hit in json.loads(stored.stdout) if hit["kind"] == "prompt"]
    assert len(prompts) == 3


def test_a_sync_tells_its_progress_each_phase(tmp_path: Path, capsys):
    """A first sync of a large tree runs for minutes: on a terminal each phase shows (reading git's status,
    taking a remote's files when joining it, adopting the files a person added, staging, committing,
    pushing; fetching and merging when the remote moved on)."""
    from cmem_cli.core.config import load_config
    from cmem_cli.services.write.service import WriteService
    from cmem_cli.sync.gitsync import run_sync

    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    a.add("Login uses JWT")
    a.sync(url)
    b.add("Cache lives in redis")
    (b.export / "web").mkdir(parents=True, exist_ok=True)
    (b.export / "web" / "by-hand.md").write_text("# Deploys go out on Tuesdays\n", encoding="utf-8")
    seen: list[tuple[str, int, int]] = []
    with WriteService.open(load_config(b.home)) as memory:
        run_sync(memory, url, progress=lambda phase, done, total: seen.append((phase, done, total)))
    phases = list(dict.fromkeys(phase for phase, _, _ in seen))
    assert phases == ["fetch", "join", "status", "adopt", "stage", "commit", "push"]
    assert ("adopt", 2, 2) in seen  # the file written by hand and b's own note
    b.add("Queue is RabbitMQ")
    a.add("Search uses FTS5")
    a.sync()
    seen.clear()
    with WriteService.open(load_config(b.home)) as memory:
        run_sync(memory, progress=lambda phase, done, total: seen.append((phase, done, total)))
    assert "merge" in [phase for phase, _, _ in seen]
