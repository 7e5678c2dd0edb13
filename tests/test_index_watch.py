"""`cmem watch`: the index follows creates, edits, atomic saves, deletes, moves and a re-created folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cmem_cli.core.config import load_config
from cmem_index.collections import add_collection
from cmem_index.store import IndexStore
from cmem_index.watcher import Watcher
from tests.index_helpers import index_rows, observation_file, write

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 20.0


def wait_until(check: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {what}")


def indexed(config) -> dict[str, str]:
    """collection:path -> concatenated chunk text, read the way a search would (read-only)."""
    if not config.index_path.exists():
        return {}
    try:
        store = IndexStore.open(config.index_path, readonly=True)
    except Exception:  # noqa: BLE001 - not created yet
        return {}
    try:
        rows = index_rows(
            store,
            "SELECT d.collection || ':' || d.path, group_concat(c.text, '') FROM documents d "
            "LEFT JOIN chunks c ON c.doc_id = d.id GROUP BY d.id",
        )
    finally:
        store.close()
    return {key: text or "" for key, text in rows}


@pytest.fixture
def watching(home: Path, tmp_path: Path) -> Iterator[tuple]:
    config = load_config()
    config.ensure_home()
    notes = tmp_path / "notes"
    notes.mkdir()
    add_collection(config, str(notes), name="notes")
    errors: list[str] = []
    watcher = Watcher(config, debounce=0.1, on_error=errors.append)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    wait_until(lambda: watcher.passes >= 1, "the initial pass")
    yield config, notes, watcher
    watcher.stop()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the watcher stops promptly"
    assert errors == []


def test_created_modified_and_deleted_files_are_reflected(watching):
    config, notes, _ = watching
    write(notes, "a.md", "# A\n\nfirst version\n")
    wait_until(lambda: "first version" in indexed(config).get("notes:a.md", ""), "create")
    write(notes, "a.md", "# A\n\nsecond version\n")
    wait_until(lambda: "second version" in indexed(config).get("notes:a.md", ""), "modify")
    (notes / "a.md").unlink()
    wait_until(lambda: "notes:a.md" not in indexed(config), "delete")


def test_an_editors_atomic_save_and_moves_are_followed(watching):
    config, notes, _ = watching
    write(notes, "doc.md", "# Doc\n\noriginal\n")
    wait_until(lambda: "notes:doc.md" in indexed(config), "create")
    temp = notes / ".doc.md.swp"
    temp.write_text("# Doc\n\nsaved atomically\n")
    os.replace(temp, notes / "doc.md")
    wait_until(lambda: "saved atomically" in indexed(config).get("notes:doc.md", ""), "atomic save")
    (notes / "sub").mkdir()
    os.rename(notes / "doc.md", notes / "sub" / "moved.md")
    wait_until(
        lambda: "notes:sub/moved.md" in indexed(config) and "notes:doc.md" not in indexed(config),
        "move within",
    )
    os.rename(notes / "sub", notes / "renamed-dir")
    wait_until(lambda: "notes:renamed-dir/moved.md" in indexed(config), "directory rename")
    os.rename(notes / "renamed-dir" / "moved.md", notes.parent / "outside.md")
    wait_until(lambda: not any(k.startswith("notes:") for k in indexed(config)), "move out")


def test_cmem_export_files_are_indexed_as_memories(watching):
    config, _, _ = watching
    observation_file(config.export_dir, "webapp/s1/x.md", uid="UX", title="Watched memory", body="memo")
    wait_until(lambda: "memories:webapp/s1/x.md" in indexed(config), "export file")


def test_a_collection_folder_removed_and_recreated_is_watched_again(watching):
    config, notes, _ = watching
    write(notes, "keep.md", "# Keep\n\nbefore\n")
    wait_until(lambda: "notes:keep.md" in indexed(config), "create")
    shutil.rmtree(notes)
    wait_until(lambda: "notes:keep.md" not in indexed(config), "folder removed")
    notes.mkdir()
    write(notes, "again.md", "# Again\n\nafter\n")
    wait_until(lambda: "notes:again.md" in indexed(config), "folder recreated")
    write(notes, "again.md", "# Again\n\nedited after recreation\n")
    wait_until(
        lambda: "edited after" in indexed(config).get("notes:again.md", ""), "edit in recreated folder"
    )


def test_a_burst_of_writes_is_coalesced_into_few_passes(watching):
    config, notes, watcher = watching
    before = watcher.passes
    for i in range(40):
        write(notes, f"burst/{i}.md", f"# Burst {i}\n\ntext {i}\n")
    wait_until(lambda: sum(k.startswith("notes:burst/") for k in indexed(config)) == 40, "all burst files")
    assert watcher.passes - before <= 5


def test_sigterm_stops_cmem_watch_cleanly(home: Path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "watch"],
        cwd=REPO,
        env=os.environ.copy(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert "keyword-only" in first and "cmem models" in first, "says how to get a model"
        assert "watching" in proc.stderr.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 0
        assert "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_watching_while_other_processes_write_and_search(watching):
    config, _, _ = watching
    from cmem_index.hybrid import hybrid

    env = {**os.environ, "CMEM_HOME": str(config.home)}
    errors: list[str] = []
    stop = threading.Event()

    def search_loop() -> None:
        while not stop.is_set():
            try:
                hybrid(config, "concurrent memory", mode="keyword")
            except Exception as exc:  # noqa: BLE001 - any failure is what this test looks for
                errors.append(repr(exc))

    searcher = threading.Thread(target=search_loop)
    searcher.start()
    try:
        for i in range(8):
            proc = subprocess.run(
                [sys.executable, "-m", "cmem_cli", "add", "--title", f"Concurrent memory {i}", "-p", "busy"],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
    finally:
        wait_until(
            lambda: sum(k.startswith("memories:busy/") for k in indexed(config)) == 8, "all 8 memories"
        )
        stop.set()
        searcher.join(timeout=10)
    assert errors == []
    assert len(hybrid(config, "concurrent memory", mode="keyword", limit=20)) == 8
