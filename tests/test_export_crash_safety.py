"""Export files and the store are all-or-nothing together, and a lost store is rebuilt from the markdown."""

from __future__ import annotations

import json
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
