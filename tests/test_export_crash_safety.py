"""Export files and the store are all-or-nothing together, and a lost store is rebuilt from the markdown."""

from __future__ import annotations

import json
import os
from pathlib import Path


def _files(home: Path) -> dict[Path, str]:
    return {p: p.read_text() for p in sorted((home / "export").rglob("*.md"))}


def test_a_failed_bulk_import_leaves_every_export_file_as_it_was(cli, home):
    cli("add", "-t", "kept", "-p", "p", "--narrative", "original narrative")
    added = cli("get", "1", "--json").json()[0]
    before = _files(home)
    batch = [
        {"uid": added["uid"], "title": "kept", "project": "p", "narrative": "CHANGED narrative"},
        {"title": "new one", "project": "p"},
        {"title": "bad link", "project": "p", "links": [{"type": "related", "id": 99999}]},
    ]
    result = cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in batch))
    assert result.exit_code == 3
    assert "link target 99999 does not exist" in result.stderr
    assert _files(home) == before
    assert not list((home / "journal").glob("*.jsonl"))
    assert cli("doctor").exit_code == 0


def test_doctor_fix_rebuilds_a_lost_store_from_the_markdown(cli, home):
    cli("add", "-t", "Root cause", "-p", "web", "--session", "s1")
    root = cli("get", "1", "--json").json()[0]
    cli("add", "-t", "Symptom", "-p", "web", "--fact", "cookie expired", "--link", "caused_by:1")
    cli("summary", "add", "--session", "s1", "--learned", "cookies expire")
    before = _files(home)
    (home / "cmem.db").unlink()
    report = cli("doctor", "--fix", "--json")
    assert report.exit_code == 0, report.stdout
    assert _files(home) == before  # nothing deleted, nothing rewritten
    symptom = cli("search", "Symptom", "--json").json()[0]
    got = cli("get", str(symptom["id"]), "--json").json()[0]
    assert got["facts"] == ["cookie expired"]
    assert [link["uid"] for link in got["links"]] == [root["uid"]]
    assert cli("search", "cookies", "--json").json()
    assert cli("doctor").exit_code == 0


def _die_in_child(action) -> None:
    """Run ``action`` in a forked child that dies with os._exit (no cleanup, like kill -9)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            action()
        except BaseException:  # the action broke before the kill point: not the crash this test is about
            os._exit(70)
        os._exit(71)  # the action never reached its kill point
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9, "the child did not die where the test kills it"


def test_files_of_a_write_killed_before_its_commit_are_rolled_back(cli, home, monkeypatch):
    cli("add", "-t", "kept", "-p", "p", "--narrative", "original narrative")
    kept = cli("get", "1", "--json").json()[0]
    before = _files(home)

    def import_then_die_before_commit() -> None:
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write import service as memory_module

        synced: list[int] = []  # the first flush is of the files staged before the lock was taken

        def sync_all() -> None:
            synced.append(1)
            if len(synced) == 2:
                os._exit(9)  # files written and renamed into place, no commit

        monkeypatch.setattr(memory_module.atomic, "sync_all", sync_all)
        with memory_module.WriteService.open(load_config()) as memory:
            records = [
                memory.records.prepare(
                    {"uid": kept["uid"], "title": "kept", "project": "p", "narrative": "CHANGED"}
                )
            ]
            records += [memory.records.prepare({"title": f"new {i}", "project": "p"}) for i in range(5)]
            memory.records.add_observations(records)

    _die_in_child(import_then_die_before_commit)
    assert len(_files(home)) == 6 and "CHANGED" in "".join(_files(home).values()), "the kill left debris"
    checks = {c["name"]: c for c in cli("doctor", "--json").json()["checks"]}
    assert checks["interrupted writes"]["status"] == "fail"
    assert cli("doctor", "--fix").exit_code == 0
    assert _files(home) == before
    assert not list((home / "journal").iterdir())
    assert cli("doctor").exit_code == 0


def test_a_bulk_import_killed_while_it_stages_its_files_leaves_only_its_staging_folder(
    cli, home, monkeypatch
):
    """A bulk import writes its new files into a hidden staging folder before it takes the write lock; killed
    there, it changed neither the store nor a file of the tree, and `doctor --fix` removes the folder."""
    cli("add", "-t", "kept", "-p", "p")
    before, rows = _files(home), cli("search", "--json").json()

    def import_then_die_while_staging() -> None:
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write import service as memory_module

        monkeypatch.setattr(memory_module.atomic, "sync_all", lambda: os._exit(9))  # staged, nothing placed
        with memory_module.WriteService.open(load_config()) as memory:
            memory.records.add_observations(
                [memory.records.prepare({"title": f"new {i}", "project": "p"}) for i in range(5)]
            )

    _die_in_child(import_then_die_while_staging)
    staging = home / "export" / ".cmem-staging"
    assert len(list(staging.rglob("*.md"))) == 5 and not list((home / "journal").glob("*"))
    assert cli("search", "--json").json() == rows
    checks = {c["name"]: c for c in cli("doctor", "--json").json()["checks"]}
    assert checks["crash debris"]["status"] != "ok"
    assert cli("doctor", "--fix").exit_code == 0
    assert _files(home) == before and not staging.exists()
    assert cli("doctor").exit_code == 0


def test_a_write_killed_after_its_commit_is_finished_by_doctor_fix(cli, home, monkeypatch):
    cli("add", "-t", "forgotten note", "-p", "p")
    cli("add", "-t", "kept note", "-p", "p", "--link", "related:1")

    def forget_then_die_after_commit() -> None:
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write import service as memory_module

        monkeypatch.setattr(memory_module.FileTransaction, "commit", lambda self: os._exit(9))
        with memory_module.WriteService.open(load_config()) as memory:
            memory.records.forget([1])

    _die_in_child(forget_then_die_after_commit)
    assert sorted("forgotten-note" in p.name for p in _files(home)) == [False, True], "file left behind"
    assert cli("doctor", "--fix").exit_code == 0
    assert ["kept-note" in p.name for p in _files(home)] == [True]
    assert cli("get", "1").exit_code == 3
    assert cli("get", "2", "--json").json()[0]["title"] == "kept note"
    assert cli("doctor").exit_code == 0
