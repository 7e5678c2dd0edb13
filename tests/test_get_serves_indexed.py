"""`cmem get` (and the MCP `get` tool) serve only what cmem indexes: memories, and the markdown documents of
a collection that the indexer reads. Never dotfiles, `.git/`, other files, FIFOs or symlinks out of the
collection; documents are redacted as memories are; a FIFO named `x.md` blocks nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.test_mcp import text_of, with_server

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def _cmem(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI; a read that blocks fails the test at the timeout instead of hanging the suite."""
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], capture_output=True, text=True, env=os.environ, timeout=30
    )


@pytest.fixture
def notes(home: Path, tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "setup.md").write_text(
        f"# Setup\n\nline two\ntoken: {SECRET}\n<private>the root password</private>\nkubernetes deploys\n"
    )
    (root / ".env").write_text("PASSWORD=hunter2-dotenv\n")
    (root / "guide" / ".draft.md").write_text("# Draft\n\nhunter2-hidden\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[remote]\n\turl = https://me:hunter2-git@example.com/x\n")
    (root / "plain.txt").write_text("hunter2-txt\n")
    os.mkfifo(root / "fifo.md")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Outside\n\nhunter2-outside\n")
    (root / "link-out.md").symlink_to(outside / "secret.md")
    (root / "linked-folder").symlink_to(outside, target_is_directory=True)
    assert _cmem("collection", "add", str(root), "--name", "notes").returncode == 0
    assert _cmem("index").returncode == 0
    assert _cmem("add", "-t", "A memory", "-p", "web").returncode == 0
    return root


REFUSED = {
    "notes:.env": "a hidden or temporary file",
    "notes:guide/.draft.md": "a hidden or temporary file",
    "notes:.git/config": "a hidden or temporary file",
    "notes:plain.txt": "not matched by the collection's mask",
    "notes:fifo.md": "not a regular file",
    "notes:link-out.md": "a symlink out of the collection",
    "notes:linked-folder/secret.md": "inside a symlinked folder",
}


@pytest.mark.parametrize("ref", sorted(REFUSED))
def test_get_refuses_what_the_indexer_does_not_read(notes, ref):
    result = _cmem("get", ref)
    assert result.returncode == 4, result.stderr
    assert result.stdout == "" and "hunter2" not in result.stderr
    assert f"is not a document cmem indexes: {REFUSED[ref]}" in result.stderr


def test_get_refuses_them_by_absolute_path_too(notes, home):
    (home / "export" / ".git").mkdir()
    (home / "export" / ".git" / "config").write_text("url = https://me:hunter2-export@example.com/x\n")
    for path in (notes / ".env", notes / "fifo.md", home / "export" / ".git" / "config"):
        result = _cmem("get", str(path))
        assert result.returncode == 4 and result.stdout == "", (path, result.stderr)
        assert "hunter2" not in result.stderr


def test_get_serves_an_indexed_document_redacted(notes):
    result = _cmem("get", "notes:guide/setup.md", "--json")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "kubernetes deploys" in text
    assert SECRET not in text and "the root password" not in text


def test_mcp_get_refuses_a_fifo_and_keeps_answering(notes):
    async def body(client: Client) -> dict[str, Any]:
        return {
            "fifo": await client.call_tool("get", {"ids": ["notes:fifo.md"]}),
            "dotenv": await client.call_tool("get", {"ids": ["notes:.env"]}),
            "memory": await client.call_tool("get", {"ids": [1]}),
            "document": await client.call_tool("get", {"ids": ["notes:guide/setup.md"]}),
        }

    out = with_server(body)
    assert out["fifo"].is_error and "not a regular file" in text_of(out["fifo"])
    assert out["dotenv"].is_error and "hunter2" not in text_of(out["dotenv"])
    assert not out["memory"].is_error and "A memory" in text_of(out["memory"])
    document = text_of(out["document"])
    assert not out["document"].is_error and "kubernetes deploys" in document
    assert SECRET not in document and "the root password" not in document


def test_the_indexer_never_blocks_on_a_fifo_swapped_in_after_its_scan(tmp_path):
    from cmem_index.collections import Collection
    from cmem_index.indexer import Indexer, IndexReport
    from cmem_index.scan import FileStat
    from cmem_index.store import IndexStore

    root = tmp_path / "docs"
    root.mkdir()
    os.mkfifo(root / "note.md")  # the scan saw a file here; a FIFO took its place before the read
    store = IndexStore.open(tmp_path / "index.db")
    try:
        report = IndexReport()
        indexer = Indexer(store, [Collection("docs", root)], None)
        assert indexer._prepare(Collection("docs", root), "note.md", FileStat(1, 1), None, report) is None
        assert report.errors == ["docs:note.md: not a regular file, skipped"]
    finally:
        store.close()
