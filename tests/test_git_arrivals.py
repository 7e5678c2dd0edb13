"""Files that arrive by git sync in a shape cmem never writes (issue 35): a teammate's script or a hand
edit committed with plain git. Each is skipped with a one-line note naming its uid and the machine that
wrote it, listed in `cmem sync --json` (``rejected``, exit 4 as for any file not taken) and by `cmem
doctor`, and the rest of the sync goes on; the same rule as team rows (``services/inbound/record_shapes.py``).
Through the real CLI, with a bare repository and a plain git clone in a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path, PurePath
from typing import Any

import pytest

from tests.sync_helpers import bare_repo

UID = "01M8GEBQ5PMCB88X56TXQD7RRQ"
TARGET = "01M8GEBPZJYSDRQCJGEK5VF39A"
ANCHOR = {
    "repo": "github.com/acme/billing", "branch": "main", "commit": "a" * 40, "files": {"src/a.py": "b" * 40},
    "anchored_at": "2026-11-28T06:44:24.886Z",
}  # fmt: skip
OBSERVATION: dict[str, Any] = {
    "cmem": "observation", "uid": UID, "type": "decision", "title": "T", "subtitle": "sub", "project": "web",
    "session": "s1", "agent": "cli", "machine": "script", "author": "a@example.com",
    "concepts": ["c"], "facts": ["f"], "files_read": ["src/a.py"], "files_modified": ["src/b.py"],
    "tools_used": ["Read"], "prompt_number": 2, "confidence": 0.5, "created_at": "2026-11-28T06:44:24.886Z",
    "updated_at": "2026-11-28T06:44:24.886Z", "links": [{"type": "supersedes", "uid": TARGET}],
    "anchor": ANCHOR,
}  # fmt: skip
SUMMARY: dict[str, Any] = {
    "cmem": "summary", "uid": UID, "session": "s1", "project": "web", "agent": "cli", "machine": "script",
    "author": "a@example.com", "created_at": "2026-11-28T06:44:24.886Z",
}  # fmt: skip
CONTROL = "ctl \x1b[31m red \x07 bell \x08\x0b\x0c\x7f \u2028 \u0085 end"
# What a front matter field can hold that cmem never writes (or may, for the numbers and the controls).
BAD: list[Any] = [
    None, 5, True, "a string", {"an": "object"}, [1, 2], [None], ["ok", 7], [["nested"]], [{"a": 1}], "",
    CONTROL, "x" * 2_100, -5, 1.5,
]  # fmt: skip
# Values that are refused whichever field holds them: no field cmem writes is a mapping or a nested list.
ALWAYS_REFUSED = ({"an": "object"}, [["nested"]], [{"a": 1}])


def cmem(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CMEM_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Teammate", "-c", "user.email=t@example.com", *args],
        cwd=cwd, capture_output=True, check=True,
    )  # fmt: skip


def file_text(meta: dict[str, Any], body: str) -> str:
    """Front matter as a script would write it: one key a line, each value in JSON (which YAML reads)."""
    lines = [f"{key}: {json.dumps(value)}" for key, value in meta.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + body


def push_files(url: str, tmp_path: Path, files: dict[str, str]) -> None:
    """What a teammate does with plain git: clone, write, commit, push."""
    clone = tmp_path / "clone"
    if not clone.exists():
        git(tmp_path, "clone", "-q", url, str(clone))
    else:
        git(clone, "pull", "-q")
    for relpath, text in files.items():
        (clone / relpath).parent.mkdir(parents=True, exist_ok=True)
        (clone / relpath).write_text(text)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "files from a script")
    git(clone, "push", "-q", "origin", "HEAD:main")


def titles(home: Path) -> set[str]:
    found = cmem(home, "search", "--json", "-n", "0", "--all-projects")
    return {row["title"] for row in json.loads(found.stdout or "[]")}


@pytest.fixture
def team(tmp_path: Path, home: Path) -> tuple[str, Path, Path]:
    """A bare repository that machine a joined, and machine b's home, not joined yet."""
    url = bare_repo(tmp_path / "team.git")
    a, b = tmp_path / "a", tmp_path / "b"
    assert cmem(a, "add", "-t", "From machine a", "-p", "web").returncode == 0
    assert cmem(a, "sync", "init", url).returncode == 0
    return url, a, b


def test_a_file_whose_list_field_is_a_number_is_skipped_naming_its_uid_and_machine(team, tmp_path):
    """The team row's reproduction as a file: `facts: 5` was taken as the fact "5"; `session: {...}` made a
    session called "{'an': 'object'}"; a link of a mapping with no type was dropped without a word."""
    url, a, b = team
    push_files(
        url,
        tmp_path,
        {
            "web/bad-facts.md": file_text({**OBSERVATION, "uid": "bad-facts", "facts": 5}, "# Bad facts\n"),
            "web/bad-session.md": file_text(
                {**SUMMARY, "uid": "bad-session", "session": {"an": "object"}}, "## Learned\n\nx\n"
            ),
            "web/bad-link.md": file_text(
                {**OBSERVATION, "uid": "bad-link", "machine": "laptop", "links": [{"uid": TARGET}]}, "# Bad\n"
            ),
            "web/good.md": file_text({**OBSERVATION, "uid": "good-one"}, "# Good one\n"),
        },
    )
    joined = cmem(b, "sync", "init", url, "--json")
    assert joined.returncode == 4, joined.stderr
    assert "internal error" not in joined.stderr
    report = json.loads(joined.stdout)
    assert report["pushed"] is True and report["exit_code"] == 4
    assert sorted((r["path"], r["uid"], r["machine"]) for r in report["rejected"]) == [
        ("web/bad-facts.md", "bad-facts", "script"),
        ("web/bad-link.md", "bad-link", "laptop"),
        ("web/bad-session.md", "bad-session", "script"),
    ]
    assert (
        "cmem: web/bad-facts.md: skipped bad-facts (written by script): facts is 5, not a list of texts\n"
        in (joined.stderr)
    )
    assert "skipped bad-session (written by script): session is {" in joined.stderr
    assert "skipped bad-link (written by laptop): a link is {" in joined.stderr
    assert titles(b) == {"From machine a", "Good one"}
    doctor = cmem(b, "doctor", "--json")
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "files not adopted"]
    assert check["status"] == "fail" and sorted(check["paths"]) == [
        "web/bad-facts.md",
        "web/bad-link.md",
        "web/bad-session.md",
    ]
    assert "skipped bad-facts (written by script): facts is 5" in check["detail"]
    # fixed by the teammate: the next sync takes it, and says nothing more of it
    push_files(
        url, tmp_path, {"web/bad-facts.md": file_text({**OBSERVATION, "uid": "bad-facts"}, "# Fixed\n")}
    )
    again = json.loads(cmem(b, "sync", "--json").stdout)
    assert sorted(r["uid"] for r in again["rejected"]) == ["bad-link", "bad-session"]
    assert "Fixed" in titles(b)


def test_a_file_no_yaml_parser_takes_is_named_by_its_uid_and_machine(team, tmp_path):
    url, a, b = team
    laughs = 'a: &a ["lol","lol"]\nb: [*a, *a]'
    push_files(
        url,
        tmp_path,
        {"web/laughs.md": f'---\ncmem: observation\nuid: "laugh-1"\nmachine: ci-box\n{laughs}\n---\n# L\n'},
    )
    synced = cmem(a, "sync", "--json")
    assert synced.returncode == 4 and "internal error" not in synced.stderr
    [item] = json.loads(synced.stdout)["rejected"]
    assert (item["uid"], item["machine"]) == ("laugh-1", "ci-box")
    assert "cmem: web/laughs.md: skipped laugh-1 (written by ci-box): front matter uses YAML anchors" in (
        synced.stderr
    )


def fuzzed_files() -> dict[str, tuple[str, Any, str]]:
    """relpath -> (field, value, file text): each field of an observation's and a summary's front matter
    given each bad value, one file each, every file with its own uid and title."""
    out = {}
    for kind, base in (("observation", OBSERVATION), ("summary", SUMMARY)):
        for field in [*base, "id", "unknown_key"]:
            for i, value in enumerate(BAD):
                uid = f"fz-{kind[0]}-{field.replace('_', '')}-{i}"
                meta = {**base, "uid": uid, field: value}
                if field == "uid":
                    meta = {**base, field: value}
                title = f"Fuzz {kind} {field} {i}"
                body = f"# {title}\n" if kind == "observation" else f"## Learned\n\n{title}\n"
                out[f"web/fz/{uid}.md"] = (field, value, file_text(meta, body))
    return out


def test_every_front_matter_field_given_every_wrong_shape_never_stops_a_sync(team, tmp_path):
    """The team-row fuzz for files: one commit of every field given every bad value. Every sync ends with
    exit 4 (some files not taken), never an internal error; each file is either taken or reported by
    its own path, naming the uid and machine it states; the machine that pushed them syncs on too."""
    url, a, b = team
    files = fuzzed_files()
    push_files(url, tmp_path, {relpath: text for relpath, (_, _, text) in files.items()})
    joined = cmem(b, "sync", "init", url, "--json")
    assert joined.returncode == 4, joined.stderr[-2000:]
    assert "internal error" not in joined.stderr and "Traceback" not in joined.stderr
    report = json.loads(joined.stdout)
    rejected = {item["path"]: item for item in report["rejected"]}
    assert set(rejected) <= set(files)
    for relpath, item in rejected.items():
        field, _, _ = files[relpath]
        if field != "machine":
            assert item["machine"] == "script", item
        if field != "uid":
            assert item["uid"] == PurePath(relpath).stem, item
        if item["uid"] or item["machine"]:  # a file that states neither is named by its path alone
            named = f"skipped {item['uid'] or 'a memory without a uid'} (written by "
            assert item["reason"].startswith(named + f"{item['machine'] or 'an unknown machine'}): "), item
    for relpath, (field, value, _) in files.items():
        if value in ALWAYS_REFUSED and field not in ("id", "unknown_key", "cmem", "anchor"):
            assert relpath in rejected, (field, value)
    taken = {relpath for relpath in files if relpath not in rejected}
    assert len(taken) > 100  # the harmless ones (an unknown key, a null, a number where a text goes) are in
    # each observation file is either in the store or reported, never both
    held = titles(b)
    for relpath, (field, _, text) in files.items():
        if 'cmem: "observation"' in text:
            title = text.split("\n---\n# ", 1)[1].strip()
            assert (title in held) == (relpath in taken), (relpath, field)
    assert "From machine a" in held
    doctor = json.loads(cmem(b, "doctor", "--json").stdout)
    failing = {c["name"]: c for c in doctor["checks"] if c["status"] == "fail"}
    assert set(failing) == {"files not adopted"}
    assert set(failing["files not adopted"]["paths"]) == set(rejected)
    synced = cmem(a, "sync", "--json")  # the machine that had them pushed at it goes on too
    assert synced.returncode == 4 and "internal error" not in synced.stderr
    assert {item["path"] for item in json.loads(synced.stdout)["rejected"]} == set(rejected)
    assert cmem(b, "sync").returncode == 4  # and a later sync reports the same, and nothing else
