"""`cmem view`: the page it writes (where, how private, what it holds), its filters, cap and errors.

What the page does in a browser is tested in tests/test_view_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cmem_cli.api import Memory, Query
from tests.view_fixtures import HOSTILE_NARRATIVE, HOSTILE_TITLE, PROJECT, day_start, fill_home

DATA = re.compile(r'<script type="application/json" id="cmem-data">(.*?)</script>', re.S)


def page_data(html: str) -> dict:
    return json.loads(DATA.search(html).group(1))


def item_ids(html: str) -> set[str]:
    return {str(item["id"]) for item in page_data(html)["items"]}


@pytest.fixture
def filled(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("CMEM_PROJECT", PROJECT)
    return fill_home(home)


def test_view_writes_a_private_page_under_home_and_prints_its_path(sh, home, filled):
    result = sh("view", "--no-open", env={"CMEM_PROJECT": PROJECT})
    assert result.exit_code == 0, result.stderr
    path = home / "view" / f"{PROJECT}.html"
    assert result.stdout == f"{path}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    html = path.read_text(encoding="utf-8")
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1)
    assert "default-src &#x27;none&#x27;" in csp
    assert "unsafe-inline" not in csp
    assert html.count("<script") == 2  # the data block and the page's own script, nothing else
    # the last 30 days of the current project: not the 40-day-old record, not the other project's
    assert item_ids(html) == {"P1", "1", "2", "3", "4", "5", "S1"}


def test_memory_text_cannot_end_or_bend_the_data_block(cli, home, filled):
    result = cli("view", "--output", "-")
    assert result.exit_code == 0, result.stderr
    html = result.stdout
    block = DATA.search(html).group(1)
    assert "<" not in block and ">" not in block and "&" not in block
    assert "<!--" not in html
    assert html.count("</script>") == 2
    hostile = next(i for i in page_data(html)["items"] if i["id"] == filled["hostile"])
    assert hostile["title"] == HOSTILE_TITLE
    assert hostile["narrative"] == HOSTILE_NARRATIVE
    assert not (home / "view").exists()  # `-o -` writes nothing under the home


def test_the_default_window_widens_and_narrows_with_search_filters(cli, filled):
    def ids(*args: str) -> set[str]:
        result = cli("view", "-o", "-", *args)
        assert result.exit_code == 0, result.stderr
        return item_ids(result.stdout)

    assert "6" in ids("--since", "60d")
    assert ids("--all-projects") >= {"7", "4"}
    assert ids("--type", "decision") == {"4"}  # observation-only filters leave prompts and summaries out
    assert ids("--type", "decision", "--since", "60d") == {"4", "6"}
    assert ids("--agent", "codex") == {"4", "5"}
    assert ids("--session", "01login") == {"P1", "1", "2", "S1"}  # a session is shown whole
    assert ids("--file", "src/auth/jwt.ts") == {"2"}
    assert ids("--concept", "queue") == {"4"}
    found = ids("cookie")
    assert {"1", "S1"} <= found and "4" not in found
    until = day_start(1)  # the 30 days before --until: the first day's records, not the second's
    from cmem_cli.core.timeutil import to_iso

    assert ids("--until", to_iso(until)) == {"P1", "1", "2", "3", "S1"}


def test_more_matches_than_the_cap_are_said_on_stderr_and_in_the_page(cli, home, monkeypatch):
    monkeypatch.setenv("CMEM_PROJECT", PROJECT)
    start = day_start(3)
    with Memory(home) as memory:
        memory.recorder.add_prompt("an early prompt", session="s-cap", project=PROJECT, created_at=start)
        memory.add_many(
            [
                {"title": f"step {n}", "session": "s-cap", "created_at": start + (n + 1) * 60_000}
                for n in range(30)
            ],
            project=PROJECT,
        )
    result = cli("view", "--limit", "10", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("cmem: note: Showing the newest 10 of 30 observations")
    summary = json.loads(result.stdout)
    assert summary["capped"] is True
    assert (summary["observations"], summary["total_observations"], summary["prompts"]) == (10, 30, 0)
    html = Path(summary["path"]).read_text(encoding="utf-8")
    data = page_data(html)
    assert sorted(i["title"] for i in data["items"]) == sorted(f"step {n}" for n in range(20, 30))
    assert data["meta"]["note"].startswith("Showing the newest 10 of 30 observations")

    result = cli("view", "--limit", "30", "--json")
    assert result.stderr == ""
    assert json.loads(result.stdout)["capped"] is False


def test_open_hands_the_page_to_the_browser_only_when_asked(cli, home, filled, tmp_path, monkeypatch):
    called = tmp_path / "browser-args"
    browser = tmp_path / "fake-browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {called}\n')
    browser.chmod(0o700)
    monkeypatch.setenv("BROWSER", str(browser))
    import webbrowser

    # webbrowser reads BROWSER once a process: forget what an earlier test in this worker made it choose
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(webbrowser, "_browsers", {})

    assert cli("view").exit_code == 0  # stdout is not a terminal: written, not opened
    assert not called.exists()
    result = cli("view", "--open")
    assert result.exit_code == 0, result.stderr
    assert called.read_text() == (home / "view" / f"{PROJECT}.html").as_uri()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--project", "x", "--all-projects"], 2, "cmem: give --project or --all-projects, not both"),
        (["--limit", "0"], 2, "cmem: --limit must be between 1 and 100000, got 0"),
        (["--since", "last tuesday"], 4, "cmem: "),
        (["--output", "/nonexistent-dir/page.html"], 7, "cmem: cannot write /nonexistent-dir/page.html"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(sh, home, filled, args, code, message):
    result = sh("view", "--no-open", *args)
    assert result.exit_code == code
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
    assert not (home / "view").exists()


def test_an_output_that_is_a_directory_is_refused(cli, filled, tmp_path):
    result = cli("view", "--output", str(tmp_path))
    assert result.exit_code == 7
    assert result.stderr == f"cmem: cannot write {tmp_path}: it is a directory\n"


def test_a_failed_write_leaves_no_temp_file_and_keeps_the_old_page(tmp_path, monkeypatch):
    from cmem_cli.core.errors import StorageError
    from cmem_cli.view.files import write_private

    page = tmp_path / "page.html"
    write_private(page, "old", make_dirs=False)

    def refuse(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StorageError, match="No space left on device"):
        write_private(page, "new", make_dirs=False)
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]
    assert page.read_text() == "old"


def test_the_api_window_lists_links_both_ways_and_their_far_ends(home, filled):
    with Memory(home) as memory:
        window = memory.window(Query(project=PROJECT, since="30d"))
    links = {(link["from"], link["type"], link["to"]) for link in window["links"]}
    assert links == {
        (filled["decision"], "caused_by", filled["bugfix"]),
        (filled["bugfix"], "related", filled["discovery"]),
        (filled["bugfix"], "led_to", filled["older"]),
    }
    assert set(window["others"]) == {filled["older"]}
    assert window["others"][filled["older"]]["title"] == "Ancient decision outside the window"
    assert window["sessions"]["01login0session0webapp0000a"]["label"] == "Fix early logouts"
    bugfix = next(i for i in window["items"] if i["id"] == filled["bugfix"])
    assert bugfix["files_modified"] == ["src/auth/jwt.ts"]
    assert bugfix["path"].startswith(str(home / "export"))
    assert [i["kind"] for i in window["items"]][:1] == ["observation"]  # newest first: the hostile insight


def test_a_killed_runs_temp_page_is_swept_by_the_next_view(cli, home, filled):
    folder = home / "view"
    folder.mkdir(mode=0o700)
    debris, fresh = folder / ".tmp-view-killed.html", folder / ".tmp-view-writing-now.html"
    for path in (debris, fresh):
        path.write_text("<!doctype html><p>half a pa")
    os.utime(debris, (1_000_000_000, 1_000_000_000))
    assert cli("view").exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == [fresh.name, f"{PROJECT}.html"]


WRITER = """
import os, sys, time
from pathlib import Path
from cmem_cli.view import files

def stuck(*args):  # the page is written and locked, the rename never comes: a run caught midway
    print("writing", flush=True)
    time.sleep(600)

os.replace = stuck
files.write_private(Path(sys.argv[1]), "<!doctype html><p>half a page", make_dirs=True)
"""


def _start_writer(page: Path) -> subprocess.Popen[str]:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(page)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    return writer


def test_the_temp_page_of_a_killed_view_is_gone_after_the_next_view_not_ten_minutes_later(sh, home, filled):
    folder = home / "view"
    killed = _start_writer(folder / f"{PROJECT}.html")
    [debris] = folder.glob(".tmp-view-*")
    killed.kill()  # kill -9 midway
    killed.wait()
    running = _start_writer(folder / "other.html")  # a view writing its page right now
    try:
        [busy] = set(folder.glob(".tmp-view-*")) - {debris}
        result = sh("view", "--no-open", env={"CMEM_PROJECT": PROJECT})
        assert result.exit_code == 0, result.stderr
        assert not debris.exists()
        assert busy.exists()  # never taken from under a live writer
        assert sorted(p.name for p in folder.iterdir()) == sorted([busy.name, f"{PROJECT}.html"])
    finally:
        running.kill()
        running.wait()
    assert sh("view", "--no-open", env={"CMEM_PROJECT": PROJECT}).exit_code == 0
    assert [p.name for p in folder.iterdir()] == [f"{PROJECT}.html"]


def test_a_page_with_a_query_marks_what_search_infers_was_replaced(cli):
    """`possibly_superseded_by` on the page is search's inference for the page's query (docs/truth.md); a
    page without a query shows what was inferred when the newer memory was recorded (issue 41)."""
    now = int(time.time())
    titles = {
        "Max upload size is 10 MB for attachments": 3,  # days ago
        "Max upload size is now 25 MB": 1,
        "Uploads are scanned for viruses": 2,
    }
    records = [
        {
            "title": title,
            "project": "app",
            "created_at": datetime.fromtimestamp(now - days * 86_400, UTC).isoformat(),
        }
        for title, days in titles.items()
    ]
    old, new, other = cli("add", "--json", "-", input=json.dumps(records)).stdout.split()
    asked = {
        str(i["id"]): i
        for i in page_data(cli("view", "max upload size", "-p", "app", "-o", "-").stdout)["items"]
    }
    assert asked[old]["possibly_superseded_by"] == int(new)
    assert "possibly_superseded_by" not in asked[new]  # None: the page leaves empty fields out
    plain = {str(i["id"]): i for i in page_data(cli("view", "-p", "app", "-o", "-").stdout)["items"]}
    assert set(plain) == {old, new, other}
    assert plain[old]["possibly_superseded_by"] == int(new)
    assert all("possibly_superseded_by" not in plain[i] for i in (new, other))
