"""`cmem get` serves collection documents by docid or path slice, and nothing outside cmem's folders."""

from __future__ import annotations

import pytest


@pytest.fixture
def notes(cli, tmp_path):
    root = tmp_path / "notes"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "setup.md").write_text(
        "# Setup\n\nline two\nline three: kubernetes deploys\nline four\n"
    )
    assert cli("collection", "add", str(root), "--name", "notes").exit_code == 0
    assert cli("index").exit_code == 0
    return root


def test_search_shows_documents_with_docid_and_path(cli, notes):
    (row,) = cli("search", "kubernetes", "--json").json()
    assert row["kind"] == "document" and row["path"] == str(notes / "guide" / "setup.md")  # absolute
    assert row["id"].startswith("doc:") and len(row["id"]) == 10


def test_get_by_docid_and_by_path_slice(cli, notes):
    docid = cli("search", "kubernetes", "--format", "ids").stdout.strip()
    whole = cli("get", docid)
    assert whole.exit_code == 0 and "line three: kubernetes deploys" in whole.stdout
    sliced = cli("get", "notes:guide/setup.md:3:2").stdout.splitlines()
    assert sliced[1:] == ["line two", "line three: kubernetes deploys"]
    by_file = cli("get", f"{notes}/guide/setup.md:5", "--json").json()[0]
    assert by_file["text"] == "line four\n" and by_file["id"] == docid
    assert by_file["path"] == str(notes / "guide" / "setup.md") and by_file["relpath"] == "guide/setup.md"
    assert cli("get", docid, "--path").stdout == f"{notes / 'guide' / 'setup.md'}\n"


def test_get_refuses_files_outside_cmem_and_collections(cli, notes, tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("not for cmem")
    result = cli("get", str(outside))
    assert result.exit_code == 3 and "not in cmem's export tree" in result.stderr
    assert cli("get", "notes:../secret.md").exit_code == 4
    assert cli("get", "#abcdef").exit_code == 3
