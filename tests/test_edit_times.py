"""Edits are dated when they were made: a hand edit adopted later is stamped with its file's mtime, so "the
later edit wins" means later (an older hand edit never beats a newer `cmem edit`). A front-matter-only edit
that differs from what cmem last wrote is taken; edited in both places, the body wins."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tests.runner import Result, invoke
from tests.sync_helpers import bare_repo


def _cmem(home: Path, *args: str) -> Result:
    """`cmem ARGS` over ``home``, in this process (tests/runner.py)."""
    return invoke(*args, env={"CMEM_HOME": str(home)})


def _get(home: Path, ref: str) -> dict[str, Any]:
    result = _cmem(home, "get", ref, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


def _ms(iso: str) -> int:
    from cmem_cli.core.timeutil import parse_iso

    return parse_iso(iso)


def test_a_hand_edit_is_stamped_with_its_files_mtime_not_the_adoption_time(home):
    _cmem(home, "add", "-t", "Cache in redis", "-p", "web", "--narrative", "first text")
    before = _get(home, "1")
    path = home / "export" / before["path"]
    path.write_text(path.read_text().replace("first text", "edited by hand"))
    edited_at = _ms(before["updated_at"]) + 700  # the edit was saved then; it is adopted a while later
    os.utime(path, ns=(edited_at * 1_000_000, edited_at * 1_000_000))
    while time.time() * 1000 < edited_at + 1500:
        time.sleep(0.1)
    assert _cmem(home, "sync").returncode == 0
    after = _get(home, "1")
    assert after["narrative"] == "edited by hand"
    assert _ms(after["updated_at"]) == edited_at


def test_an_older_hand_edit_does_not_beat_a_newer_cmem_edit_across_machines(home, tmp_path):
    url = bare_repo(tmp_path / "team.git")
    a, b = tmp_path / "a", tmp_path / "b"
    _cmem(a, "add", "-t", "Deploy target", "-p", "web", "--narrative", "the original text")
    assert _cmem(a, "sync", "init", url).returncode == 0
    assert _cmem(b, "sync", "init", url).returncode == 0
    uid = _get(a, "1")["uid"]
    path = a / "export" / _get(a, uid)["path"]
    path.write_text(path.read_text().replace("the original text", "an older hand edit on a"))
    time.sleep(1.2)  # b's edit comes later than a's save; a adopts its save only afterwards
    assert _cmem(b, "edit", uid, "--narrative", "a newer cmem edit on b").returncode == 0
    assert _cmem(b, "sync").returncode == 0
    assert _cmem(a, "sync").returncode == 0
    assert _cmem(b, "sync").returncode == 0
    for home in (a, b):
        assert _get(home, uid)["narrative"] == "a newer cmem edit on b", home
    copies = json.loads(_cmem(a, "search", "older hand edit", "--json").stdout)
    assert [row["uid"] for row in copies] != [uid]  # the older edit lives on as a copy, not as the memory


def _edit_file(home: Path, replace: list[tuple[str, str]]) -> None:
    path = home / "export" / _get(home, "1")["path"]
    text = path.read_text()
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)


def test_a_front_matter_only_edit_is_taken(home):
    _cmem(home, "add", "-t", "Old title", "-p", "web", "--fact", "one", "--subtitle", "old subtitle")
    _edit_file(
        home,
        [
            ("title: Old title\n", "title: New title from the front matter\n"),
            ('facts: ["one"]', 'facts: ["one", "two"]'),
        ],
    )
    assert _cmem(home, "sync").returncode == 0
    got = _get(home, "1")
    assert (got["title"], got["facts"], got["subtitle"]) == (
        "New title from the front matter", ["one", "two"], "old subtitle"
    )  # fmt: skip
    text = (home / "export" / got["path"]).read_text()
    assert "# New title from the front matter\n" in text and "- two\n" in text


def test_a_field_edited_in_both_places_keeps_the_body(home):
    _cmem(home, "add", "-t", "Old title", "-p", "web")
    _edit_file(
        home, [("title: Old title\n", "title: From the front\n"), ("# Old title\n", "# From the body\n")]
    )
    assert _cmem(home, "sync").returncode == 0
    assert _get(home, "1")["title"] == "From the body"


def test_an_editor_saving_its_stale_front_matter_keeps_the_retitle_it_made(home):
    """An editor that never re-reads the file (vi, a second `:w`) saves the front matter it first read:
    its `title:` is the one before the person's own retitle in the body, which cmem copied into the front
    matter since. That is no front-matter-only edit: the retitle stays."""
    _cmem(home, "add", "-t", "Old title", "-p", "web", "--narrative", "first text")
    path = home / "export" / _get(home, "1")["path"]
    buffer = path.read_text().replace("# Old title\n", "# New title from the body\n")
    path.write_text(buffer)
    assert _cmem(home, "sync").returncode == 0
    assert "title: New title from the body\n" in path.read_text()  # cmem rewrote the front matter
    path.write_text(buffer.replace("first text", "first text, then more"))  # the second save
    assert _cmem(home, "sync").returncode == 0
    got = _get(home, "1")
    assert (got["title"], got["narrative"]) == ("New title from the body", "first text, then more")
