"""The markdown projection: file layout, front matter, round trip, rebuild and doctor."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cmem_cli.core.config import load_config
from cmem_cli.services.write.service import WriteService
from cmem_export import layout, markdown, reading

FULL = {
    "type": "bugfix",
    "title": 'Fix: JWT expiry "off by 1000"',
    "subtitle": "exp is seconds, not ms",
    "narrative": "We compared `exp` to Date.now().\n\n## A heading inside\n\nStill narrative.",
    "facts": ["exp is in seconds", "yes", "2026-01-01", "colon: inside", "#hash"],
    "concepts": ["auth", "jwt"],
    "files_read": ["src/auth/jwt.ts"],
    "files_modified": ["src/auth/jwt.ts", "tests/jwt.test.ts"],
    "tools_used": ["Edit"],
    "project": "web app/ü",
    "session": "../../etc",
    "agent": "claude",
    "prompt_number": 3,
    "key": "jwt-expiry",
    "confidence": 0.75,
}


def _files(home: Path) -> list[Path]:
    return sorted((home / "export").rglob("*.md"))


def read_back(text: str, relpath: str = "p/s/file.md") -> dict:
    """A file as the product reads it back (``cmem_export.reading``: sync, doctor and rebuild use it): the
    record, with what the reader keeps apart (the uid, the updated time) put back beside it."""
    parsed = reading.parse_file(text, relpath)
    return {**parsed.record, "uid": parsed.uid, **parsed.restore}


def test_observation_file_round_trips_every_field(home):
    with WriteService.open(load_config()) as memory:
        target = memory.records.add_observation({"title": "Earlier finding", "project": "web app/ü"})
        row = memory.records.add_observation({**FULL, "links": [{"type": "caused_by", "id": target["id"]}]})
        text = (home / "export" / row["path"]).read_text()
    parsed = read_back(text, row["path"])
    assert "id" not in parsed  # ids are local to one store; files name uids
    for key in (
        "uid",
        "type",
        "title",
        "subtitle",
        "narrative",
        "facts",
        "concepts",
        "files_read",
        "files_modified",
        "tools_used",
        "project",
        "session",
        "agent",
        "prompt_number",
        "key",
        "confidence",
        "created_at",
        "updated_at",
    ):
        assert parsed[key] == row[key], key
    assert parsed["links"] == [{"type": "caused_by", "uid": target["uid"]}]
    body = text.split("\n---\n", 1)[1]
    assert body.startswith('# Fix: JWT expiry "off by 1000"\n\n*exp is seconds, not ms*\n\n## Facts\n')
    assert "## Narrative" in body
    assert "\nid:" not in text and "(#1)" not in body


@settings(max_examples=60, deadline=None)
@given(
    title=st.text(min_size=1, max_size=80).filter(lambda t: t.strip() and "\x00" not in t),
    narrative=st.text(max_size=300).filter(lambda t: "\x00" not in t),
    facts=st.lists(
        st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and "\x00" not in t), max_size=4
    ),
)
def test_arbitrary_text_reads_back_through_the_product_s_reader(title, narrative, facts):
    from cmem_cli.store.records import normalize_observation

    record = normalize_observation({"title": title, "narrative": narrative, "facts": facts, "project": "p"})
    record.update(
        id=1, uid="01ARZ3NDEKTSV4RRFFQ69G5FAV", created_at=1_700_000_000_123, updated_at=1_700_000_000_456
    )
    parsed = read_back(markdown.render_observation(record))
    # A title and each fact are one line of the body, which the reader takes: their whitespace as one line
    assert parsed["title"] == " ".join(record["title"].split())
    assert parsed["facts"] == [" ".join(fact.split()) for fact in record["facts"]]
    # the narrative as written, its line ends as the reader takes them (a file saved on Windows has \r\n)
    written = (record["narrative"] or "").replace("\r\n", "\n").rstrip("\n")
    assert (parsed["narrative"] or None) == (written or None)


def test_paths_are_safe_readable_and_unique(home):
    with WriteService.open(load_config()) as memory:
        rows = [
            memory.records.add_observation(
                {"title": "Same title", "project": "../../escape", "session": "/abs/olute"}
            )
            for _ in range(3)
        ]
    paths = [r["path"] for r in rows]
    assert len(set(paths)) == 3
    for path in paths:
        assert ".." not in Path(path).parts and not path.startswith("/")
        assert path.startswith("escape/abs-olute/") and "same-title" in path
        resolved = (home / "export" / path).resolve()
        assert (home / "export").resolve() in resolved.parents
    assert not any(p for p in home.parent.rglob("*.md") if home not in p.parents)


def test_safe_segment_never_escapes():
    for name in ["..", ".", "../x", "a/b", "\\..\\", "", "   ", "CON", "x" * 500, "名前"]:
        segment = layout.safe_segment(name)
        assert segment and "/" not in segment and "\\" not in segment and segment not in (".", "..")
        assert len(segment) <= layout.MAX_SEGMENT


def test_files_and_directories_are_private(home):
    with WriteService.open(load_config()) as memory:
        row = memory.records.add_observation({"title": "secret-ish", "project": "p"})
    path = home / "export" / row["path"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for folder in (path.parent, path.parent.parent):  # the project folder too, not only the leaf
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((home / "cmem.db").stat().st_mode) == 0o600


def test_edit_rewrites_the_file_in_place_when_the_title_changes(cli, home):
    cli("add", "-t", "Old title", "-p", "p")
    (old,) = _files(home)
    assert cli("edit", "1", "--title", "New title", "--add-fact", "added later").exit_code == 0
    (new,) = _files(home)
    assert new == old and "old-title" in new.name  # the name is fixed at creation
    parsed = read_back(new.read_text(), new.relative_to(home / "export").as_posix())
    assert parsed["title"] == "New title" and parsed["facts"] == ["added later"]


def test_links_are_written_to_the_linking_file_and_refreshed_on_forget(cli, home):
    cli("add", "-t", "Root cause", "-p", "p")
    cli("add", "-t", "Symptom", "-p", "p")
    assert cli("link", "2", "caused_by", "1").exit_code == 0
    symptom = next(p for p in _files(home) if "symptom" in p.name)
    assert "caused_by: [Root cause](" in symptom.read_text()
    assert cli("forget", "1", "--yes").exit_code == 0
    symptom = next(p for p in _files(home) if "symptom" in p.name)
    assert "Root cause" not in symptom.read_text()
    assert len(_files(home)) == 1


def test_rebuild_is_idempotent_restores_deleted_files_and_adopts_edited_or_new_ones(cli, home):
    for i in range(5):
        cli("add", "-t", f"note {i}", "-p", "p", "--session", "s1")
    cli("summary", "add", "--session", "s1", "--completed", "five notes")
    before = {p: p.read_text() for p in _files(home)}
    assert len(before) == 6
    first = json.loads(cli("export", "--rebuild", "--json").stdout)
    assert first == {
        "written": 0, "unchanged": 6, "adopted": 0, "created": 0, "rolled_back": 0, "invalid": []
    }  # fmt: skip
    victim, edited = (next(p for p in before if f"note-{i}-" in p.name) for i in (1, 2))
    victim.unlink()
    edited.write_text("hand edited")
    stray = home / "export" / "p" / "s1" / "stray.md"
    stray.write_text("---\ncmem: observation\nid: 99\n---\n# gone\n")
    notes = home / "export" / "notes.md"
    notes.write_text("---\ncmem: observation\n---\nclaims to be a memory, of no project")
    own = home / "export" / "TEAM.md"
    own.write_text("my own notes, not cmem's: left alone, never reported")
    second = json.loads(cli("export", "--rebuild", "--json").stdout)
    assert second == {
        "written": 1, "unchanged": 6, "adopted": 1, "created": 1, "rolled_back": 0,
        "invalid": [{"path": "notes.md", "reason": "outside any project folder (and no project: in front matter)"}],
    }  # fmt: skip
    assert victim.read_text() == before[victim]
    assert edited.read_text().rstrip().endswith("## Narrative\n\nhand edited")
    assert not stray.exists()
    assert cli("search", "gone", "--json").json()[0]["title"] == "gone"
    assert notes.read_text() == "---\ncmem: observation\n---\nclaims to be a memory, of no project"
    assert own.read_text() == "my own notes, not cmem's: left alone, never reported"
    third = json.loads(cli("export", "--rebuild", "--json").stdout)
    assert (third["written"], third["adopted"], third["created"]) == (0, 0, 0)


def test_doctor_reports_and_fixes_export_drift(cli, home):
    cli("add", "-t", "one", "-p", "p")
    cli("add", "-t", "two", "-p", "p")
    assert cli("doctor").exit_code == 0
    _files(home)[0].unlink()
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    checks = {c["name"]: c for c in report.json()["checks"]}
    assert checks["missing files"]["status"] == "fail" and len(checks["missing files"]["paths"]) == 1
    assert checks["database integrity"]["status"] == "ok"
    assert cli("doctor", "--fix").exit_code == 0
    assert cli("doctor").exit_code == 0
    assert len(_files(home)) == 2


def test_summary_file_round_trips(home):
    with WriteService.open(load_config()) as memory:
        row = memory.sessions.add_summary(
            "s9",
            {"request": "fix login", "learned": "cookies expire\n\n- twice", "next_steps": "add a test"},
            project="web",
        )
        text = (home / "export" / row["path"]).read_text()
    parsed = read_back(text, row["path"])
    assert {k: parsed[k] for k in ("request", "learned", "next_steps", "completed")} == {
        "request": "fix login",
        "learned": "cookies expire\n\n- twice",
        "next_steps": "add a test",
        "completed": None,
    }
    assert parsed["uid"] == row["uid"] and parsed["created_at"] == row["created_at"]


def test_export_dir_can_be_configured(tmp_path, home, monkeypatch, cli):
    config = tmp_path / "config.toml"
    target = tmp_path / "elsewhere"
    config.write_text(f'export_dir = "{target}"\n')
    monkeypatch.setenv("CMEM_CONFIG", str(config))
    cli("add", "-t", "goes elsewhere", "-p", "p")
    assert len(list(target.rglob("*.md"))) == 1
    assert list((home / "export").rglob("*.md")) == []  # rglob of a missing folder finds nothing too


@settings(max_examples=150, deadline=None)
@given(
    title=st.text(min_size=1, max_size=60).filter(lambda t: t.strip() and "\x00" not in t),
    project=st.text(min_size=1, max_size=20).filter(lambda t: t.strip() and "\x00" not in t),
    concepts=st.lists(
        st.text(min_size=1, max_size=20).filter(lambda t: t.strip() and "\x00" not in t), max_size=3
    ),
    confidence=st.none() | st.floats(min_value=0, max_value=1),
    prompt_number=st.none() | st.integers(min_value=0, max_value=10**6),
)
def test_fast_front_matter_reader_agrees_with_yaml(title, project, concepts, confidence, prompt_number):
    """The YAML-free reader of cmem's own front matter gives exactly what a YAML parser gives, or defers."""
    import yaml

    from cmem_cli.store.records import normalize_observation

    record = normalize_observation(
        {"title": title, "project": project, "concepts": concepts, "confidence": confidence,
         "prompt_number": prompt_number, "key": title}
    )  # fmt: skip
    record.update(
        uid="01ARZ3NDEKTSV4RRFFQ69G5FAV", created_at=1_700_000_000_123, updated_at=1_700_000_000_456
    )
    links = [{"type": "related", "id": 2, "uid": "01B", "title": "t", "href": "x.md"}]
    text = markdown.render_observation(record, links)
    block = text[4 : text.index("\n---\n", 3)]
    fast = markdown._fast_front_matter(block)
    if fast is not None:
        assert fast == yaml.safe_load(block)


def test_fast_front_matter_reader_takes_cmem_files_and_defers_on_hand_yaml():
    record = {
        "uid": "01X",
        "type": "change",
        "title": "Plain title",
        "project": "web",
        "created_at": 1,
        "updated_at": 2,
    }
    links = [{"type": "related", "id": 2, "uid": "01B", "title": "t", "href": "x.md"}]
    text = markdown.render_observation(record, links)
    assert markdown._fast_front_matter(text[4 : text.index("\n---\n", 3)]) is not None
    for hand in ("title: a: b", "title: x # note", "concepts:\n  - a", "title: yes", "confidence: 1e-05"):
        assert markdown._fast_front_matter(f"cmem: observation\n{hand}") is None, hand


def test_doctor_reads_only_files_whose_stat_moved_and_still_sees_a_same_size_edit(cli, home, monkeypatch):
    from cmem_cli.services.upkeep import doctor as doctor_module
    from cmem_export import atomic

    monkeypatch.setattr(atomic, "RACY_NS", 0)  # files just written are read too (racily clean): not here
    for i in range(3):
        cli("add", "-t", f"note {i}", "-p", "p", "--narrative", "abcdef")
    edited = _files(home)[1]
    reads: list[str] = []
    real_read = doctor_module.read_regular
    monkeypatch.setattr(
        doctor_module, "read_regular", lambda path, limit: reads.append(path.name) or real_read(path, limit)
    )
    assert cli("doctor").exit_code == 0
    assert reads == []  # every file as cmem wrote it: none read
    before = edited.stat()
    edited.write_text(edited.read_text().replace("abcdef", "ABCDEF"))  # same size, new mtime
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    report = cli("doctor", "--json")
    checks = {c["name"]: c for c in report.json()["checks"]}
    assert reads == [edited.name]
    assert checks["changed, to adopt"]["paths"] == [edited.relative_to(home / "export").as_posix()]
