"""A key belongs to one observation of a project: one rule, one error, on every write path (issue 25).

`cmem add --key K` replaces the project's earlier observation with that key (a key-value memory). A write
that names an observation by its uid and gives it a key another observation holds cannot replace both:
it is refused with one message, whether it comes from `cmem add --json`, `cmem edit` or a hand edit
adopted by `cmem sync`, and nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path


def _two_keyed(sh) -> tuple[dict, dict]:
    assert sh("add", "Deploy target is staging", "--key", "deploy", "-p", "p").exit_code == 0
    assert sh("add", "Release day is Tuesday", "--key", "release", "-p", "p").exit_code == 0
    first, second = sh("get", "1", "2", "--json").json()
    return first, second


def test_add_json_of_a_known_uid_with_a_key_another_holds_is_refused(sh):
    first, _ = _two_keyed(sh)
    record = {"uid": first["uid"], "key": "release", "title": "Deploy target is production", "project": "p"}
    result = sh("add", "--json", "-", input=json.dumps(record))
    assert result.exit_code == 4, result.stderr
    assert result.stderr == (
        "cmem: stdin: record: key 'release' is already used by observation 2; nothing was imported\n"
    )
    after = sh("get", "1", "2", "--json").json()
    assert [(r["title"], r["key"]) for r in after] == [
        ("Deploy target is staging", "deploy"),
        ("Release day is Tuesday", "release"),
    ]


def test_add_json_of_a_known_uid_keeping_its_own_key_updates_it(sh):
    first, _ = _two_keyed(sh)
    record = {"uid": first["uid"], "key": "deploy", "title": "Deploy target is production", "project": "p"}
    result = sh("add", "--json", "-", input=json.dumps(record))
    assert (result.exit_code, result.stdout) == (0, "1\n")
    assert sh("get", "1", "--json").json()[0]["title"] == "Deploy target is production"


def test_edit_to_a_key_another_holds_is_refused_with_the_same_message(sh):
    _two_keyed(sh)
    result = sh("edit", "1", "--key", "release")
    assert result.exit_code == 4
    assert result.stderr == "cmem: key 'release' is already used by observation 2\n"


def test_a_hand_edit_giving_a_file_a_key_another_holds_is_reported_not_adopted(sh, home: Path):
    first, _ = _two_keyed(sh)
    path = Path(first["path"])
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("key: deploy", "key: release"), encoding="utf-8")
    result = sh("sync")
    assert "key 'release' is already used by observation 2" in result.stderr
    assert [r["key"] for r in sh("get", "1", "2", "--json").json()] == ["deploy", "release"]
