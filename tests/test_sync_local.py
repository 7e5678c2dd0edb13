"""Edits in the export tree flow back into the store: `cmem sync`, `doctor`, `doctor --fix`, `cmem watch`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cmem_export.markdown import render_observation
from cmem_export.reading import parse_file


def _files(home: Path) -> dict[str, str]:
    root = home / "export"
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.md"))}


def _file_of(home: Path, needle: str) -> Path:
    return next(p for p in (home / "export").rglob("*.md") if needle in p.name)


def _get(cli, obs_id: int) -> dict:
    return cli("get", str(obs_id), "--json").json()[0]


def test_a_rendered_file_parses_back_to_the_same_record():
    record = {
        "uid": "01ABCDEF", "type": "bugfix", "title": "Fix login", "subtitle": "cookie expiry", "project": "web",
        "session": "s1", "agent": "cli", "key": "login", "concepts": ["auth"], "facts": ["a fact", "b"],
        "files_read": ["x.py"], "files_modified": ["y.py"], "tools_used": ["Bash"], "prompt_number": 3,
        "confidence": 0.5, "created_at": 1700000000000, "updated_at": 1700000000001, "id": 4,
        "narrative": "Line one\n\n## A heading inside the narrative\n\nmore",
    }  # fmt: skip
    links = [{"type": "related", "id": 2, "uid": "01XYZ", "title": "Other", "href": "../o.md"}]
    parsed = parse_file(render_observation(record, links), "web/s1/f.md")
    expected = {k: v for k, v in record.items() if k not in ("id", "updated_at")}
    assert {k: parsed.record[k] for k in expected} == expected
    assert parsed.record["links"] == [{"type": "related", "uid": "01XYZ"}]
    assert parsed.restore == {"updated_at": 1700000000001}  # files name uids; ids stay local (git sync)


def test_an_appended_line_is_reported_by_doctor_and_adopted_by_doctor_fix(cli, home):
    cli("add", "-t", "Cookie bug", "-p", "web", "--narrative", "Sessions expired early.")
    path = _file_of(home, "cookie-bug")
    path.write_text(path.read_text() + "\nAlso affects the mobile client.\n")
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    checks = {c["name"]: c for c in report.json()["checks"]}
    assert checks["changed, to adopt"]["paths"] == [path.relative_to(home / "export").as_posix()]
    assert checks["changed files"]["status"] == "ok"
    assert cli("doctor", "--fix").exit_code == 0
    assert _get(cli, 1)["narrative"] == "Sessions expired early.\n\nAlso affects the mobile client."
    assert "Also affects the mobile client." in path.read_text()
    assert cli("doctor").exit_code == 0


def test_sync_adopts_front_matter_and_body_edits_keeping_unknown_text(cli, home):
    cli("add", "-t", "Old title", "-p", "web", "--fact", "one", "--concept", "auth", "--narrative", "Body.")
    cli("add", "-t", "Target", "-p", "web")
    target_uid = _get(cli, 2)["uid"]
    path = _file_of(home, "old-title")
    text = path.read_text()
    text = text.replace("type: change", "type: decision").replace(
        'concepts: ["auth"]', 'concepts: ["auth", "db"]'
    )
    text = text.replace("# Old title", "# New title").replace("- one\n", "- one\n- two\n")
    text = text.replace("---\n# New", f'links: [{{type: related, uid: "{target_uid}"}}]\n---\n# New')
    text = text.replace("## Narrative", "## My own heading\n\nkept words\n\n## Narrative")
    path.write_text(text)
    result = cli("sync", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["adopted"] == [path.relative_to(home / "export").as_posix()]
    got = _get(cli, 1)
    assert (got["type"], got["title"], got["facts"], got["concepts"]) == (
        "decision", "New title", ["one", "two"], ["auth", "db"]
    )  # fmt: skip
    assert got["narrative"] == "Body.\n\n## My own heading\n\nkept words"
    assert [link["uid"] for link in got["links"]] == [target_uid]
    assert path.exists() and not any("new-title" in p.name for p in (home / "export").rglob("*.md"))
    assert "kept words" in path.read_text() and "# New title" in path.read_text()
    again = cli("sync", "--json").json()
    assert (again["adopted"], again["created"], again["forgotten"]) == ([], [], [])


def test_a_new_file_becomes_an_observation_scrubbed_like_cmem_add(cli, home):
    folder = home / "export" / "infra"
    folder.mkdir(parents=True)
    (folder / "deploy-notes.md").write_text(
        "# Deploy notes\n\nUse blue-green. token: ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"
        "<private>the root password</private>\n"
    )
    (folder / "no-heading.md").write_text("just a line\n")
    result = cli("sync", "--json")
    assert result.exit_code == 0, result.stderr
    assert sorted(result.json()["created"]) == ["infra/deploy-notes.md", "infra/no-heading.md"]
    hits = {h["title"]: h for h in cli("search", "blue-green", "--json").json()}
    got = _get(cli, hits["Deploy notes"]["id"])
    assert got["project"] == "infra"
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in got["narrative"]
    assert "root password" not in got["narrative"]
    assert "ghp_abcdefghij" not in "".join(_files(home).values())
    assert cli("search", "line", "--json").json()[0]["title"] == "no heading"


def test_a_deleted_file_forgets_its_observation_but_an_emptied_tree_forgets_nothing(cli, home):
    cli("add", "-t", "Keep me", "-p", "web")
    cli("add", "-t", "Drop me", "-p", "web")
    dropped = _file_of(home, "drop-me")
    dropped.unlink()
    result = cli("sync", "--json")
    assert result.json()["forgotten"] == [dropped.relative_to(home / "export").as_posix()]
    assert [h["title"] for h in cli("search", "me", "--json").json()] == ["Keep me"]
    _file_of(home, "keep-me").unlink()
    result = cli("sync", "--json")
    assert result.exit_code == 4
    assert result.json()["forgotten"] == []
    assert "the export tree is empty" in result.stderr
    assert cli("doctor", "--fix").exit_code == 0
    assert list(_files(home)) and "keep-me" in next(iter(_files(home)))


def test_invalid_files_are_reported_by_path_and_change_nothing(cli, home):
    cli("add", "-t", "Existing", "-p", "web")
    root = home / "export"
    (root / "web" / "broken.md").write_text("---\ncmem: observation\ntitle: [unclosed\n---\n# x\n")
    (root / "web" / "binary.md").write_bytes(b"\x00\x01\x02")
    (root / "web" / "huge.md").write_text("# Huge\n\n" + "x" * 1_100_000)
    (root / "web" / "badtype.md").write_text("---\ncmem: observation\ntype: banana\n---\n# t\n")
    (root / "loose.md").write_text("---\ncmem: observation\n---\n# Loose\n\nno project folder\n")
    (root / "TEAM.md").write_text("# Our team\n\nthe user's own file: not a memory, never an error\n")
    before = _files(home)
    result = cli("sync")
    assert result.exit_code == 4
    lines = sorted(result.stderr.strip().splitlines())
    assert lines == [
        "cmem: loose.md: outside any project folder (and no project: in front matter)",
        "cmem: web/badtype.md: unknown type 'banana' (expected one of: decision, bugfix, feature, refactor, "
        "discovery, change, error, insight, question)",
        "cmem: web/binary.md: binary file (contains NUL bytes)",
        "cmem: web/broken.md: broken front matter (did not find expected ',' or ']')",
        "cmem: web/huge.md: file too large (1100008 bytes, limit 1000000)",
    ]
    assert _files(home) == before
    assert cli("stats", "--json").json()["counts"]["observations"] == 1


def test_cmem_watch_adopts_an_editor_save_within_seconds(sh, home):
    assert sh("add", "-t", "Watched note", "-p", "web", "--narrative", "original text").exit_code == 0
    assert sh("add", "-t", "Doomed note", "-p", "old-project").exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "watch", "--debounce", "0.1"],
        env=os.environ.copy(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        while "watching" not in proc.stderr.readline():
            pass
        path = _file_of(home, "watched-note")
        tmp = path.with_name(".editor-swap.md")
        tmp.write_text(path.read_text().replace("original text", "zebracorn migration"))
        tmp.replace(path)  # an editor's atomic save
        deadline = time.monotonic() + 20
        found = []
        while time.monotonic() < deadline and not found:
            time.sleep(0.2)
            found = sh("search", "zebracorn", "--json").json()
        assert [h["title"] for h in found] == ["Watched note"]
        assert _get(sh, 1)["narrative"] == "zebracorn migration", "adopted into the store, not just indexed"
        import shutil

        shutil.rmtree(home / "export" / "old-project")  # a folder deleted: no event names its files
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and sh("get", "2").exit_code == 0:
            time.sleep(0.2)
        assert sh("get", "2").exit_code == 3, "the deleted file's observation was forgotten"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_an_edited_summary_is_adopted_and_a_plain_note_is_listed_by_doctor(cli, home):
    cli("summary", "add", "--session", "s1", "-p", "web", "--learned", "cookies expire")
    path = _file_of(home, "summary")
    path.write_text(path.read_text().replace("cookies expire", "cookies expire after an hour"))
    (home / "export" / "web" / "todo.md").write_text("# Todo\n\nrotate the keys\n")
    checks = {c["name"]: c for c in cli("doctor", "--json").json()["checks"]}
    assert checks["changed, to adopt"]["paths"] == [path.relative_to(home / "export").as_posix()]
    assert checks["new files, to adopt"]["paths"] == ["web/todo.md"]
    result = cli("sync", "--json").json()
    assert (len(result["adopted"]), result["created"]) == (1, ["web/todo.md"])
    assert cli("get", "S1", "--json").json()[0]["learned"] == "cookies expire after an hour"
    assert cli("search", "cookies hour", "--json").json()[0]["id"] == "S1"
    assert cli("doctor").exit_code == 0


def test_files_written_before_hashes_were_kept_are_not_taken_for_hand_edits(cli, home):
    import apsw

    cli("add", "-t", "Old store", "-p", "web")
    cli("add", "-t", "Edited in the old store", "-p", "web", "--narrative", "before")
    conn = apsw.Connection(str(home / "cmem.db"))
    conn.execute("DELETE FROM export_files")  # as a v1 store upgraded to v2 has none
    conn.close()
    edited = _file_of(home, "edited-in")
    edited.write_text(edited.read_text().replace("before", "after"))
    untouched = _get(cli, 1)["updated_at"]
    result = cli("sync", "--json").json()
    assert result["adopted"] == [edited.relative_to(home / "export").as_posix()]
    assert _get(cli, 2)["narrative"] == "after"
    assert _get(cli, 1)["updated_at"] == untouched


def test_a_renamed_or_moved_file_keeps_its_observation(cli, home):
    cli("add", "-t", "Moving note", "-p", "web", "--narrative", "still here")
    path = _file_of(home, "moving-note")
    (home / "export" / "archive").mkdir()
    path.rename(home / "export" / "archive" / "renamed.md")
    result = cli("sync", "--json").json()
    assert (result["adopted"], result["forgotten"]) == (["archive/renamed.md"], [])
    got = _get(cli, 1)
    assert (got["title"], got["narrative"], got["project"]) == ("Moving note", "still here", "web")
    assert len(_files(home)) == 1 and cli("doctor").exit_code == 0


def test_adopt_tree_takes_a_home_folder_and_only_the_paths_given(cli, home):
    from cmem_cli.services.inbound.adopt import adopt_tree

    (home / "export" / "web").mkdir(parents=True)
    (home / "export" / "web" / "a.md").write_text("# Alpha note\n")
    (home / "export" / "web" / "b.md").write_text("# Beta note\n")
    report = adopt_tree(home, [home / "export" / "web" / "a.md"])
    assert (report.created, report.invalid) == (["web/a.md"], [])
    assert [h["title"] for h in cli("search", "note", "--json").json()] == ["Alpha note"]


def test_two_new_files_with_one_uid_adopt_the_first_and_report_the_second(cli, home):
    assert cli("stats").exit_code == 0  # the store exists: the files arrive in it, not in place of it
    folder = home / "export" / "web"
    folder.mkdir(parents=True)
    head = (
        '---\ncmem: observation\nuid: "01SAMEUID"\ntitle: Twin\nproject: web\n---\n# Twin\n\n## Narrative\n\n'
    )
    (folder / "a.md").write_text(head + "first text\n")
    (folder / "b.md").write_text(head + "second text\n")
    result = cli("sync", "--json")
    assert result.exit_code == 4
    assert result.json()["created"] == ["web/a.md"]
    assert result.json()["conflicts"] == [{"path": "web/b.md", "reason": "same uid as web/a.md; not adopted"}]
    assert (folder / "b.md").read_text().endswith("second text\n"), "left untouched"
    assert _get(cli, 1)["narrative"] == "first text"


def test_a_file_linking_to_an_unknown_uid_is_reported_and_changes_nothing(cli, home):
    assert cli("stats").exit_code == 0
    folder = home / "export" / "web"
    folder.mkdir(parents=True)
    text = (
        "---\ncmem: observation\ntitle: Linked\nlinks: [{type: related, uid: 01NOSUCHUID}]\n---\n# Linked\n"
    )
    (folder / "linked.md").write_text(text)
    result = cli("sync", "--json")
    assert result.exit_code == 4
    assert result.json()["invalid"] == [
        {"path": "web/linked.md", "reason": "link target 01NOSUCHUID does not exist"}
    ]
    assert (folder / "linked.md").read_text() == text
    assert cli("stats", "--json").json()["counts"]["observations"] == 0


def test_a_link_to_a_memory_whose_file_is_deleted_in_the_same_sync_goes_with_it(cli, home):
    cli("add", "-t", "Linking", "-p", "web")
    cli("add", "-t", "Target", "-p", "web")
    target_uid = _get(cli, 2)["uid"]
    linking, target = _file_of(home, "linking"), _file_of(home, "target")
    text = linking.read_text().replace(
        "cmem: observation\n", f"cmem: observation\nlinks: [{{type: related, uid: {target_uid}}}]\n", 1
    )
    linking.write_text(text)
    target.unlink()
    result = cli("sync", "--json")
    relpath = linking.relative_to(home / "export").as_posix()
    assert result.json()["adopted"] == [relpath]
    assert result.json()["forgotten"] == [target.relative_to(home / "export").as_posix()]
    assert (result.exit_code, result.json()["conflicts"]) == (0, [])
    assert _get(cli, 1)["links"] == []
    assert target_uid not in linking.read_text()


def test_a_same_size_edit_right_after_cmem_wrote_the_file_is_still_seen(cli, home):
    cli("add", "-t", "Quick", "-p", "web", "--narrative", "aaaa")
    path = _file_of(home, "quick")
    stat = path.stat()
    path.write_text(path.read_text().replace("aaaa", "bbbb"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime: only the bytes differ
    assert cli("sync", "--json").json()["adopted"] == [path.relative_to(home / "export").as_posix()]
    assert _get(cli, 1)["narrative"] == "bbbb"
