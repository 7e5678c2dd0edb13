"""Editors and `cmem watch`: saving an exported file again and again, as editors do (a new file renamed over
it, or the file truncated and written in place), keeps every save, a retitle among them (the file keeps its
name, so the editor's next save lands where cmem reads it); a killed `export --rebuild` leaves
`doctor --fix` nothing to copy twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.watch_helpers import start_watch, wait_for_line


def _cmem(home: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CMEM_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], capture_output=True, text=True, env=env, timeout=60,
        input=input,
    )  # fmt: skip


def _narrative(home: Path) -> str:
    return json.loads(_cmem(home, "get", "1", "--json").stdout)[0]["narrative"] or ""


def _uids_in_tree(home: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for path in (home / "export").rglob("*.md"):
        for line in path.read_text().splitlines():
            if line.startswith("uid: "):
                found[line.removeprefix("uid: ").strip('"')] += 1
                break
    return found


def test_saving_twice_each_way_while_watch_runs_keeps_every_save(home):
    _cmem(home, "add", "-t", "Edited in an editor", "-p", "web", "--narrative", "as written")
    path = home / "export" / json.loads(_cmem(home, "get", "1", "--json").stdout)[0]["path"]
    env = {**os.environ, "CMEM_HOME": str(home)}
    proc, lines, _ = start_watch(env)
    try:
        wait_for_line(proc, lines, "watching")
        buffer = path.read_text()  # what the editor holds: it never re-reads what cmem rewrote
        for number, how in enumerate(["rename", "in place", "rename", "in place"], 1):
            if number == 1:  # the first save retitles: a file named by its title was renamed here
                assert "# Edited in an editor\n" in buffer
                buffer = buffer.replace("# Edited in an editor\n", "# Retitled in the editor\n")
            buffer = buffer.rstrip("\n") + f"\n\nsave {number} ({how})\n"
            if how == "rename":  # vim's and most editors' safe save: a new file renamed over the old
                fresh = path.with_name(f".{path.name}.new")
                fresh.write_text(buffer)
                os.replace(fresh, path)
            else:  # `:set nowritebackup`, nano, echo >: the same file truncated and written
                with open(path, "r+") as fh:
                    fh.truncate(0)
                    fh.write(buffer)
            deadline = time.monotonic() + 30
            while f"save {number} ({how})" not in _narrative(home):
                assert time.monotonic() < deadline, (number, lines)
                time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    narrative = _narrative(home)
    for number, how in enumerate(["rename", "in place", "rename", "in place"], 1):
        assert f"save {number} ({how})" in narrative
    got = json.loads(_cmem(home, "get", "1", "--json").stdout)[0]
    assert (got["title"], home / "export" / got["path"]) == ("Retitled in the editor", path)
    assert path.exists() and _uids_in_tree(home).most_common(1)[0][1] == 1  # one file, the same name
    assert _cmem(home, "doctor").returncode == 0


@pytest.mark.slow
def test_doctor_fix_after_killed_rebuilds_leaves_one_file_per_memory(home):
    records = [{"title": f"Memory number {i}", "project": "web", "narrative": "x" * 200} for i in range(120)]
    assert _cmem(home, "add", "--json", "-", input="\n".join(json.dumps(r) for r in records)).returncode == 0
    for i in range(1, 121, 5):  # retitles once renamed files, so a killed rebuild left two copies
        assert _cmem(home, "edit", str(i), "-t", f"Retitled memory {i}").returncode == 0
    env = {**os.environ, "CMEM_HOME": str(home)}
    rng = random.Random(23)
    for _ in range(3):
        for path in (home / "export" / "web").rglob("*.md"):
            path.write_text(path.read_text() + "\n")  # every file differs: the rebuild adopts and writes
        proc = subprocess.Popen([sys.executable, "-m", "cmem_cli", "export", "--rebuild"], env=env)
        time.sleep(rng.uniform(0.3, 1.0))
        proc.kill()
        proc.wait()
    assert _cmem(home, "doctor", "--fix").returncode == 0
    uids = _uids_in_tree(home)
    assert len(uids) == 120 and set(uids.values()) == {1}
    assert _cmem(home, "doctor").returncode == 0
