"""The index commands as users run them: collection add/list/remove, index, status."""

from __future__ import annotations

from pathlib import Path

from tests.index_helpers import write


def test_collections_can_be_added_listed_and_removed_and_survive_deleting_the_index(cli, home, tmp_path):
    notes = tmp_path / "my notes"
    write(notes, "a.md", "# A\n\nalpha\n")
    added = cli("collection", "add", str(notes))
    assert added.exit_code == 0, added.stderr
    assert added.stdout.strip() == "my-notes"
    assert cli("index").exit_code == 0
    listed = cli("collection", "list", "--json").json()
    assert [c["name"] for c in listed] == ["memories", "my-notes"]
    assert listed[1]["path"] == str(notes.resolve()) and listed[1]["mask"] == "**/*.md"

    (home / "index.db").unlink()
    assert [c["name"] for c in cli("collection", "list", "--json").json()] == ["memories", "my-notes"]
    assert cli("index").exit_code == 0
    assert cli("status", "--json").json()["documents"] == 1

    removed = cli("collection", "remove", "my-notes")
    assert removed.exit_code == 0 and "1 documents dropped" in removed.stderr
    assert cli("status", "--json").json()["documents"] == 0
    plain = cli("collection", "list").stdout.splitlines()
    assert [line.split("\t")[0] for line in plain] == ["memories"]


def test_bad_collection_input_is_a_one_line_error(cli, home, tmp_path):
    missing = cli("collection", "add", str(tmp_path / "nope"))
    assert missing.exit_code == 3 and missing.stderr.count("\n") == 1 and "not a directory" in missing.stderr
    (tmp_path / "d").mkdir()
    assert cli("collection", "add", str(tmp_path / "d"), "--name", "memories").exit_code == 4
    assert cli("collection", "add", str(tmp_path / "d"), "--name", "bad/name").exit_code == 4
    assert cli("collection", "add", str(tmp_path / "d"), "--mask", "/abs/*.md").exit_code == 4
    assert cli("collection", "add", str(tmp_path / "d")).exit_code == 0
    duplicate = cli("collection", "add", str(tmp_path / "d"))
    assert duplicate.exit_code == 4 and "already exists" in duplicate.stderr
    assert cli("collection", "remove", "nope").exit_code == 3
    assert cli("collection", "remove", "memories").exit_code == 4
    inside = cli("collection", "add", str(home / "export"))
    assert inside.exit_code in (3, 4)


def test_index_without_a_model_is_keyword_only_and_says_how_to_get_one(cli, home, tmp_path):
    notes = tmp_path / "notes"
    write(notes, "a.md", "---\ntitle: Deploy notes\n---\nHow we deploy.\n")
    cli("collection", "add", str(notes))
    result = cli("index", "--json")
    assert result.exit_code == 0
    assert "cmem models pull" in result.stderr and "cmem models import" in result.stderr
    report = result.json()
    assert report["chunked"] == 1 and report["model"] is None
    status = cli("status", "--json").json()
    assert status["chunks"] == 1 and status["vectors"] == 0
    assert status["models"]["embed"]["available"] is False
    assert "cmem models" in status["models"]["embed"]["hint"]
    text = cli("status").stdout
    assert "documents\t1\n" in text and "embed model\tnone usable" in text


def test_full_rebuild_from_the_command_line(cli, home, tmp_path):
    notes = tmp_path / "notes"
    for i in range(3):
        write(notes, f"{i}.md", f"# Note {i}\n\ntext {i}\n")
    cli("collection", "add", str(notes))
    assert cli("index").exit_code == 0
    (notes / "0.md").unlink()
    full = cli("index", "--full", "--json")
    assert full.exit_code == 0, full.stderr
    assert full.json()["full"] is True
    assert cli("status", "--json").json()["documents"] == 2
    assert not Path(str(home / "index.db") + ".rebuild").exists()


def test_status_before_any_index_exists(cli, home):
    status = cli("status", "--json")
    assert status.exit_code == 0
    data = status.json()
    assert data["exists"] is False and data["documents"] == 0
    assert [c["name"] for c in data["collections"]] == ["memories"]


def test_status_counts_files_changed_since_the_last_index_run(cli):
    first = cli("add", "First note").stdout.strip()
    second = cli("add", "Second note").stdout.strip()
    assert cli("status", "--json").json()["changed_files"] == {"added": 2, "modified": 0, "removed": 0}
    assert cli("index").exit_code == 0
    assert "changed\tnone since the last index run\n" in cli("status").stdout
    cli("add", "Third note")
    cli("edit", first, "--subtitle", "now with a subtitle")  # same file, new content
    cli("forget", second, "--yes")
    assert cli("status", "--json").json()["changed_files"] == {"added": 1, "modified": 1, "removed": 1}
    assert (
        "changed\t3 files since the last index run (1 new, 1 modified, 1 deleted): run `cmem index`\n"
        in cli("status").stdout
    )


def test_piped_status_is_key_tab_value_on_every_line(sh, home):
    """As `cmem stats` and `session show` print when piped: scripts split each line on its tabs."""
    assert sh("add", "A note to index").exit_code == 0
    lines = sh("status").stdout.splitlines()
    assert [line.split("\t")[0] for line in lines][:4] == ["index", "documents", "chunks", "changed"]
    assert all("\t" in line and "  " not in line.split("\t")[0] for line in lines)
    (collection,) = [line.split("\t") for line in lines if line.startswith("collection\t")]
    assert collection[1:4] == ["memories", "0 docs", "0 chunks"]
