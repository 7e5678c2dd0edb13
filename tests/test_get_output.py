"""`cmem get` shows each title once and where the file is; a summary has one title everywhere."""

from __future__ import annotations

from pathlib import Path


def test_get_prints_the_title_once_and_the_absolute_path(cli, home):
    new_id = cli("add", "Cookie max-age set in seconds twice", "-p", "web").stdout.strip()
    text = cli("get", new_id).stdout
    assert text.count("Cookie max-age set in seconds twice") == 1
    record = cli("get", new_id, "--json").json()[0]
    path = Path(record["path"])
    assert path.is_absolute() and path.is_file() and path.is_relative_to(home / "export")
    assert f'path: "{path}"' in text
    assert cli("get", new_id, "--path").stdout == f"{path}\n"
    (row,) = cli("search", "cookie", "--json").json()
    assert row["path"] == str(path)


def test_get_path_refuses_a_prompt_which_has_no_file(cli):
    session = cli("session", "start").stdout.strip()
    prompt = cli("prompt", "add", "hello", "--session", session).stdout.split()[0]
    result = cli("get", prompt, "--path")
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == f"cmem: {prompt} has no file (prompts live only in the database)\n"


def test_a_summary_has_one_title_in_search_get_timeline_and_its_file(cli):
    session = cli("session", "start", "-p", "web").stdout.strip()
    summary = cli("summary", "add", "--session", session, "--learned", "max-age was multiplied twice").stdout
    summary = summary.strip()
    title = "Session summary: max-age was multiplied twice"
    (row,) = cli("search", "max-age", "--json").json()
    assert row["title"] == title
    record = cli("get", summary, "--json").json()[0]
    assert record["title"] == title
    assert Path(record["path"]).read_text().count(title) == 2  # front matter and heading of the file
    assert cli("get", summary).stdout.count(title) == 1
    (item,) = cli("timeline", summary, "--json").json()["items"]
    assert item["title"] == title
