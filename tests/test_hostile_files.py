"""Hostile export files are bounded: one bad file is reported (path, reason, exit 4) and skipped while every
other file is adopted, by `cmem sync` (locally and through git), `doctor --fix` and `cmem watch`; nothing
spins, nothing ends in "internal error", and `cmem watch` still stops on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cmem_cli.core.frontmatter import FrontMatterError, load_yaml
from tests.sync_helpers import bare_repo
from tests.watch_helpers import end_watch, start_watch, wait_for_line


def _laughs() -> str:
    """A "billion laughs" front matter: nine levels of nine aliases each walk to 9^9 items."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\nfacts: *i\nconcepts: *i"


HOSTILE = {
    # name: (front matter lines after "cmem: observation" and a title, the reason `sync` reports)
    "laughs": (_laughs(), "YAML anchors or aliases"),
    "year-zero": ("created_at: 0000-01-01", "date '0000-01-01' is out of range"),
    "far-future": ("created_at: 99999-01-01T00:00:00Z", "not an ISO 8601 date"),
    "year-one": ("created_at: 0001-01-01", "out of range (epoch milliseconds from 1970 to 9999)"),
    "not-a-date": ('created_at: "last tuesday"', "not an ISO 8601 date"),
    "deep-json": ("facts: " + "[" * 5000 + "]" * 5000, "nesting depth"),  # the fast reader's form
    "deep-yaml": ("facts: " + "[" * 20 + "]" * 20 + "\nnote: a: b", "nesting depth"),  # YAML's form
    "huge-json": ("prompt_number: " + "9" * 40, "number out of range"),
    "huge-yaml": ("prompt_number: " + "9" * 5000, "number out of range"),
    "infinite": ("confidence: .inf\nnote: a b", "number out of range"),
}


def _hostile_text(name: str) -> str:
    lines, _ = HOSTILE[name]
    return f"---\ncmem: observation\ntitle: hostile {name}\n{lines}\n---\n# hostile {name}\n"


def _write_hostile_tree(export: Path) -> None:
    folder = export / "web"
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOSTILE:
        (folder / f"{name}.md").write_text(_hostile_text(name))
    (folder / "good-note.md").write_text("# A good note\n\nkept despite its neighbours\n")


def _cmem(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess; a spin fails the test at ``timeout`` instead of hanging the suite."""
    env = {**os.environ, "CMEM_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def _titles(home: Path) -> set[str]:
    rows = json.loads(_cmem(home, "search", "--json", "-n", "0").stdout or "[]")
    return {row["title"] for row in rows}


@pytest.mark.parametrize("name", ["laughs", "year-zero", "deep-json", "deep-yaml", "huge-yaml", "infinite"])
def test_the_yaml_reader_refuses_each_hostile_block_with_a_reason(name):
    lines, reason = HOSTILE[name]
    with pytest.raises(FrontMatterError, match=reason):
        load_yaml(f"cmem: observation\ntitle: x\n{lines}")


def test_sync_reports_every_hostile_file_and_adopts_the_rest(home):
    _cmem(home, "add", "-t", "seed", "-p", "web")
    _write_hostile_tree(home / "export")
    result = _cmem(home, "sync", "--json")
    assert result.returncode == 4, result.stderr
    report = json.loads(result.stdout)
    assert report["created"] == ["web/good-note.md"]
    reasons = {item["path"]: item["reason"] for item in report["invalid"]}
    assert set(reasons) == {f"web/{name}.md" for name in HOSTILE}
    for name, (_, reason) in HOSTILE.items():
        assert reason in reasons[f"web/{name}.md"], (name, reasons[f"web/{name}.md"])
        assert f"cmem: web/{name}.md: " in result.stderr
    assert "internal error" not in result.stderr
    assert _titles(home) == {"seed", "A good note"}
    for name in HOSTILE:
        assert (home / "export" / "web" / f"{name}.md").read_text() == _hostile_text(name)  # left as it is


def test_doctor_fix_lists_hostile_files_and_adopts_the_rest(home):
    _cmem(home, "add", "-t", "seed", "-p", "web")
    _write_hostile_tree(home / "export")
    result = _cmem(home, "doctor", "--fix", "--json")
    assert result.returncode == 4, result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert sorted(checks["files not adopted"]["paths"]) == sorted(f"web/{name}.md" for name in HOSTILE)
    assert "internal error" not in result.stderr
    assert _titles(home) == {"seed", "A good note"}
    again = _cmem(home, "doctor", "--json")
    assert again.returncode == 4  # until the files are fixed or removed
    for name in HOSTILE:
        (home / "export" / "web" / f"{name}.md").unlink()
    assert _cmem(home, "doctor").returncode == 0


def test_watch_reports_a_hostile_file_adopts_the_rest_and_stops_on_sigterm(home):
    _cmem(home, "add", "-t", "seed", "-p", "web")
    _write_hostile_tree(home / "export")
    env = {**os.environ, "CMEM_HOME": str(home)}
    proc, lines, reader = start_watch(env)
    try:
        wait_for_line(proc, lines, "adopted 0 edited, 1 new")
        # a new hostile file arrives, and SIGTERM comes while the watcher reads it
        (home / "export" / "web" / "laughs-again.md").write_text(_hostile_text("laughs"))
        time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    finally:
        text = end_watch(proc, lines, reader)
    assert proc.returncode == 0 and "cmem: stopped" in text
    assert "web/laughs.md: front matter uses YAML anchors or aliases" in text
    assert "internal error" not in text and "adopting edits failed" not in text
    assert _titles(home) == {"seed", "A good note"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=Teammate", "-c", "user.email=t@example.com", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def test_a_hostile_file_pushed_with_plain_git_stops_no_machine(home, tmp_path):
    url = bare_repo(tmp_path / "team.git")
    a, b = tmp_path / "a", tmp_path / "b"
    _cmem(a, "add", "-t", "From machine a", "-p", "web")
    assert _cmem(a, "sync", "init", url).returncode == 0
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", url, str(clone))
    (clone / "web").mkdir(exist_ok=True)
    for name in ("year-zero", "laughs", "deep-json"):
        (clone / "web" / f"{name}.md").write_text(_hostile_text(name))
    (clone / "web" / "teammate-note.md").write_text("# Teammate note\n\nwritten with plain git\n")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-q", "-m", "hostile files")
    _git(clone, "push", "-q", "origin", "HEAD:main")

    _cmem(b, "add", "-t", "From machine b", "-p", "web")
    joined = _cmem(b, "sync", "init", url, "--json")
    assert joined.returncode == 4, joined.stderr
    assert "internal error" not in joined.stderr
    for name in ("year-zero", "laughs", "deep-json"):
        assert f"cmem: web/{name}.md: " in joined.stderr
    assert json.loads(joined.stdout)["pushed"] is True
    assert {"From machine a", "From machine b", "Teammate note"} <= _titles(b)

    synced = _cmem(a, "sync", "--json")
    assert synced.returncode == 4 and "internal error" not in synced.stderr
    assert {"From machine a", "From machine b", "Teammate note"} <= _titles(a)
