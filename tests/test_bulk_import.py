"""A bulk import (`cmem add --json`) writes new observations in batches; what it stores must not differ from
what one write at a time stores: ids in input order, every file exactly as the store renders it, the
hashes and token costs recorded, records with a uid, key or links handled in their place."""

from __future__ import annotations

import json

import pytest

from cmem_cli.core.config import load_config
from cmem_cli.core.text import estimate_tokens
from cmem_cli.services.write import records as record_writes
from cmem_cli.services.write.service import WriteService
from cmem_export import digest


def _records() -> list[dict]:
    plain = [
        {"title": f"plain note {i}", "project": "p", "session": "s1", "facts": [f"f{i}"]} for i in range(7)
    ]
    keyed = {"title": "keyed value", "project": "p", "key": "the-key"}
    linked = {"title": "links back", "project": "p", "links": [{"type": "related", "id": 2}]}
    with_uid = {"title": "given uid", "project": "q", "uid": "01HZZZZZZZZZZZZZZZZZZZZZZZ"}
    return [*plain[:3], keyed, *plain[3:5], linked, with_uid, *plain[5:], {**keyed, "narrative": "replaced"}]


@pytest.mark.parametrize("batch", [2, 1000])
def test_a_bulk_import_stores_what_single_writes_would(cli, home, monkeypatch, batch):
    monkeypatch.setattr(record_writes, "BULK_BATCH", batch)
    records = _records()
    result = cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in records))
    assert result.exit_code == 0, result.stderr
    # the second keyed record replaces the first: same id printed twice
    assert result.stdout.split() == [str(i) for i in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 4]]
    memory = WriteService.open(load_config())
    try:
        from cmem_cli.services.upkeep.export_upkeep import expected_files

        expected = expected_files(memory)
        rows = [memory.store.observations.get(i) for i in memory.store.observations.all_ids()]
        assert [r["title"] for r in rows] == [
            "plain note 0", "plain note 1", "plain note 2", "keyed value", "plain note 3", "plain note 4",
            "links back", "given uid", "plain note 5", "plain note 6",
        ]  # fmt: skip
        assert memory.store.links.outgoing(7)[0]["id"] == 2
        on_disk = {
            p.relative_to(memory.export_root).as_posix(): p.read_text(encoding="utf-8")
            for p in memory.export_root.rglob("*.md")
        }
        assert on_disk == expected
        assert {r["path"] for r in rows} == set(expected)
        hashes = memory.store.export_files.hashes()
        assert hashes == {path: digest.text_hash(text) for path, text in expected.items()}
        stats = memory.store.export_files.stats()
        for row in rows:
            path = memory.export_root / row["path"]
            assert row["tokens"] == estimate_tokens(expected[row["path"]])
            assert stats[row["path"]] == (path.stat().st_size, path.stat().st_mtime_ns)
            assert path.stat().st_mode & 0o777 == 0o600
        assert memory.store.observations.get(1)["facts"] == ["f0"]
        assert memory.store.observations.get(4)["narrative"] == "replaced"
    finally:
        memory.close()
    assert cli("doctor", "--json").json()["ok"] is True


def test_a_failed_bulk_import_leaves_no_row_and_no_file(cli, home, monkeypatch):
    monkeypatch.setattr(record_writes, "BULK_BATCH", 2)
    records = [{"title": f"note {i}", "project": "p"} for i in range(5)]
    records.append({"title": "bad link", "project": "p", "links": [{"type": "related", "id": 999}]})
    result = cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in records))
    assert result.exit_code != 0
    assert cli("search", "--json").json() == []
    assert not list((home / "export").rglob("*.md"))
