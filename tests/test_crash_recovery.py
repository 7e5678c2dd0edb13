"""kill -9 during a bulk import or an `export --rebuild`, then `doctor --fix`: nothing committed is lost,
nothing uncommitted is kept, no debris is left. Kill points are seeded; each is taken while the victim is
inside its write transaction (its export journal exists), so the test exercises recovery, not luck."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SEED = 20261123
BASE = 20
BATCH = 300


def _cmem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], capture_output=True, text=True, timeout=120
    )


def _kill_inside_transaction(args: list[str], home: Path, delay: float) -> bool:
    """Run ``cmem ARGS``; once it writes (a journal or a new file appears), wait ``delay``, kill -9.

    True if it was killed before it finished."""
    journal, export = home / "journal", home / "export"
    count = len(list(export.rglob("*.md")))
    proc = subprocess.Popen([sys.executable, "-m", "cmem_cli", *args], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if (journal.is_dir() and any(journal.iterdir())) or len(list(export.rglob("*.md"))) != count:
            time.sleep(delay)
            break
        time.sleep(0.001)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    return killed


def _store(home: Path) -> dict[str, dict]:
    """uid -> observation, read from the store directly (read-only)."""
    import apsw

    db = apsw.Connection(str(home / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = db.execute("SELECT uid, title, narrative, path FROM observations").fetchall()
    finally:
        db.close()
    return {uid: {"title": t, "narrative": n, "path": p} for uid, t, n, p in rows}


def _assert_clean(home: Path) -> dict[str, dict]:
    doctor = _cmem("doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout
    export = home / "export"
    files = sorted(p.relative_to(export).as_posix() for p in export.rglob("*") if p.is_file())
    assert not [f for f in files if not f.endswith(".md") or "/." in f or f.startswith(".")], "no debris"
    assert not list((home / "journal").glob("*")), "no journal left"
    rows = _store(home)
    assert sorted(r["path"] for r in rows.values()) == files, "exactly one file per row"
    return rows


def _import(path: Path, records: list[dict]) -> None:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")


@pytest.mark.parametrize("trial", range(3))
def test_kill_during_bulk_import_then_doctor_fix(home: Path, tmp_path: Path, trial: int):
    rng = random.Random(SEED + trial)
    base = tmp_path / "base.ndjson"
    _import(base, [{"title": f"base {i}", "project": "p", "narrative": "original"} for i in range(BASE)])
    assert _cmem("add", "--json", str(base)).returncode == 0
    before = _store(home)
    batch = tmp_path / "batch.ndjson"
    updates = [
        {"uid": uid, "title": row["title"], "project": "p", "narrative": "CHANGED"}
        for uid, row in before.items()
    ]
    news = [{"title": f"batch {i}", "project": "p", "narrative": "uncommitted?"} for i in range(BATCH)]
    mixed = news[: BATCH // 2] + updates + news[BATCH // 2 :]
    _import(batch, mixed)
    killed = _kill_inside_transaction(["add", "--json", str(batch)], home, rng.uniform(0, 0.5))
    assert _cmem("doctor", "--fix").returncode == 0
    rows = _assert_clean(home)
    committed = len(rows) == BASE + BATCH
    assert committed or len(rows) == BASE, "all or nothing"
    assert committed or killed
    for uid in before:
        assert rows[uid]["narrative"] == ("CHANGED" if committed else "original")
        text = (home / "export" / rows[uid]["path"]).read_text()
        assert ("CHANGED" in text) == committed


@pytest.mark.parametrize("trial", range(3))
def test_kill_during_export_rebuild_then_doctor_fix(home: Path, tmp_path: Path, trial: int):
    rng = random.Random(SEED + 100 + trial)
    base = tmp_path / "base.ndjson"
    _import(base, [{"title": f"note {i}", "project": "p", "narrative": "text"} for i in range(BATCH)])
    assert _cmem("add", "--json", str(base)).returncode == 0
    files = sorted((home / "export").rglob("*.md"))
    edited = files[rng.randrange(len(files))]
    edited.write_text(edited.read_text().rstrip("\n") + "\n\nhand words\n")
    for path in rng.sample([f for f in files if f != edited], BATCH // 2):
        path.unlink()
    _kill_inside_transaction(["export", "--rebuild"], home, rng.uniform(0, 0.3))
    assert _cmem("doctor", "--fix").returncode == 0
    rows = _assert_clean(home)
    assert len(rows) == BATCH, "nothing committed lost"
    assert [r["narrative"] for r in rows.values() if "hand words" in (r["narrative"] or "")] == [
        "text\n\nhand words"
    ], "the hand edit was adopted, not overwritten"
