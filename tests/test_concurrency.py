"""Many writers at once: WAL, BEGIN IMMEDIATE and busy timeouts mean nothing is lost."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.agent_fixtures import db_rows


@pytest.mark.slow
def test_eight_processes_adding_fifty_each_lose_nothing(home, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        from cmem_cli.__main__ import main
        worker = sys.argv[1]
        for i in range(50):
            code = main(["add", "--title", f"worker {worker} note {i}", "--project", "load",
                         "--fact", f"w{worker}-{i}"])
            if code != 0:
                sys.exit(code)
    """)
    )
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(w)],
            env=os.environ,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for w in range(8)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors

    conn = apsw.Connection(str(home / "cmem.db"))
    titles = {row[0] for row in conn.execute("SELECT title FROM observations")}
    paths = [row[0] for row in conn.execute("SELECT path FROM observations")]
    assert len(titles) == 400
    assert titles == {f"worker {w} note {i}" for w in range(8) for i in range(50)}
    files = sorted(p.relative_to(home / "export").as_posix() for p in (home / "export").rglob("*.md"))
    assert files == sorted(paths)
    assert not list((home / "export").rglob(".tmp-*"))
    assert (
        conn.execute("SELECT count(*) FROM observations_fts WHERE observations_fts MATCH 'note'").fetchone()[
            0
        ]
        == 400
    )


@pytest.mark.slow
def test_a_cli_write_waits_for_a_long_held_write_lock_instead_of_failing(home, sh, tmp_path):
    """Another process holds the store's write lock for 17 s (past the old 15 s busy timeout): `cmem add`
    started meanwhile waits for it and succeeds (exit 0, not "database is locked", exit 5)."""
    assert sh("add", "first note", "--project", "load").exit_code == 0  # the store exists
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time, apsw
            conn = apsw.Connection({str(home / "cmem.db")!r})
            conn.execute("BEGIN IMMEDIATE")
            print("held", flush=True)
            time.sleep(17)
            conn.execute("COMMIT")
        """)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    env = {k: v for k, v in os.environ.items() if k != "CMEM_BUSY_TIMEOUT_MS"}
    added = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "add", "waited note", "--project", "load"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    holder.wait(timeout=60)
    assert (added.returncode, added.stderr) == (0, "")
    assert [r["title"] for r in sh("search", "waited", "--json").json()] == ["waited note"]


def test_a_sync_walks_the_export_tree_before_it_takes_the_write_lock(sh, home, monkeypatch):
    """The walk of the whole tree (most of a sync of a large tree) never holds the store's write lock:
    another process can write meanwhile. A file it wrote during the walk is not taken for deleted, and a
    person's edit made before the walk is adopted."""
    from cmem_cli.core.config import load_config
    from cmem_cli.services.inbound import adopt
    from cmem_cli.services.write.service import WriteService

    for n in range(3):
        assert sh("add", f"note {n}", "--project", "walk").exit_code == 0
    [edited] = [p for p in (home / "export").rglob("*.md") if "note 1" in p.read_text()]
    edited.write_text(edited.read_text().replace("# note 1", "# note 1 edited by hand"))
    walked_unlocked: list[bool] = []
    real_scan = adopt._Adopter._scan

    def scan(self: adopt._Adopter) -> set[str]:
        if not walked_unlocked:  # another process writes a memory while the tree is walked
            other = subprocess.run(
                [sys.executable, "-m", "cmem_cli", "add", "written during the walk", "--project", "walk"],
                env={**os.environ, "CMEM_BUSY_TIMEOUT_MS": "0"},
                capture_output=True,
                text=True,
                timeout=120,
            )
            walked_unlocked.append(other.returncode == 0)
        return real_scan(self)

    monkeypatch.setattr(adopt._Adopter, "_scan", scan)
    with WriteService.open(load_config()) as memory:
        report = adopt.adopt_tree(memory)
    assert walked_unlocked == [True]
    assert report.forgotten == [] and len(report.adopted) == 1
    titles = sorted(r["title"] for r in sh("search", "--project", "walk", "--json").json())
    assert titles == ["note 0", "note 1 edited by hand", "note 2", "written during the walk"]


def _prompt_hook(home: Path, project: Path, session: str, prompt: str) -> tuple[int, list[tuple]]:
    """A Claude Code UserPromptSubmit hook, a process of its own that does not wait for a locked store
    (busy_timeout_ms = 0: it spools its event instead); its exit and the prompts stored after it."""
    from tests.agent_fixtures import payload

    config = home.parent / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[hooks]\nbusy_timeout_ms = 0\n")
    done = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "hook", "UserPromptSubmit"],
        input=json.dumps(payload("UserPromptSubmit", session, project, prompt=prompt)),
        env={**os.environ, "XDG_CONFIG_HOME": str(config.parent.parent)},
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.returncode, db_rows(home, "SELECT text FROM user_prompts")


def test_a_hook_prompt_lands_while_a_bulk_import_gets_its_records_ready(sh, home, tmp_path, monkeypatch):
    """A bulk `add --json` renders and writes its files before it takes the store's write lock: a hook
    that comes meanwhile (here once 1,000 of 1,500 files are rendered) stores its prompt at once, where it
    found the store locked and spooled it before. The import still lands whole, after the prompt."""
    from cmem_export import markdown

    project = tmp_path / "work" / "bulk-app"
    (project / ".git").mkdir(parents=True)
    records = tmp_path / "records.json"
    records.write_text(json.dumps([{"title": f"Imported {i}", "narrative": f"n {i}"} for i in range(1500)]))
    assert sh("add", "first note", "--project", "bulk-app").exit_code == 0
    real, calls, landed = markdown.render_observation, [], []

    def render(*args: Any, **kwargs: Any) -> str:
        calls.append(1)
        if len(calls) == 1000:
            landed.append(_prompt_hook(home, project, "s-bulk", "Ship the bulk import"))
        return real(*args, **kwargs)

    monkeypatch.setattr(markdown, "render_observation", render)
    added = sh("add", "--json", str(records), "--project", "bulk-app")
    assert added.exit_code == 0 and len(added.stdout.split()) == 1500
    assert landed == [(0, [("Ship the bulk import",)])]  # stored, not spooled, while the import ran
    titles = [t for (t,) in db_rows(home, "SELECT title FROM observations ORDER BY id")]
    assert titles == ["first note", *(f"Imported {i}" for i in range(1500))]
    export = home / "export"
    assert len(list(export.rglob("*.md"))) == 1501 and not (export / ".cmem-staging").exists()


def test_a_hook_prompt_lands_between_the_pages_of_an_export_rebuild(sh, home, tmp_path, monkeypatch):
    """`cmem export --rebuild` writes a page of memories per short transaction: a hook that comes between
    two pages stores its prompt at once (it found the store locked for the whole rebuild before), and the
    rebuild still rewrites every deleted file."""
    from cmem_cli.services.write.service import WriteService

    project = tmp_path / "work" / "rebuild-app"
    (project / ".git").mkdir(parents=True)
    records = tmp_path / "records.json"
    records.write_text(json.dumps([{"title": f"Kept {i}", "narrative": f"n {i}"} for i in range(1200)]))
    assert sh("add", "--json", str(records), "--project", "rebuild-app").exit_code == 0
    export = home / "export"
    deleted = sorted(export.rglob("*.md"))[::3]
    for path in deleted:
        path.unlink()
    real, entered, landed = WriteService.write_transaction, [], []

    @contextlib.contextmanager
    def write_transaction(self: WriteService, **kwargs: Any) -> Iterator[Any]:
        entered.append(1)
        if len(entered) == 4:  # adoption, the names, the first page: then the second page's turn
            landed.append(_prompt_hook(home, project, "s-rebuild", "Rebuild the export"))
        with real(self, **kwargs) as files:
            yield files

    monkeypatch.setattr(WriteService, "write_transaction", write_transaction)
    rebuilt = sh("export", "--rebuild", "--json")
    assert rebuilt.exit_code == 0 and rebuilt.json()["written"] == len(deleted)
    assert landed == [(0, [("Rebuild the export",)])]
    assert len(list(export.rglob("*.md"))) == 1200 and all(path.exists() for path in deleted)
