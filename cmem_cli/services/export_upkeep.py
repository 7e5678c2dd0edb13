"""Export upkeep: the files the store implies, rebuilding the tree from the store, and the files no row
accounts for. Kept out of the write service (which writes one memory's file at a time) so that the
adoption of hand edits, which writes through the write service, and the rebuild, which adopts first, do
not import each other: ``doctor``, ``cmem export --rebuild`` and the API call these functions.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from cmem_cli.core.files import read_regular
from cmem_cli.services.writes import WriteService
from cmem_export import atomic, digest, layout, markdown

EXPECTED_PAGE = 500  # observations whose anchors a whole-store pass reads at once


def expected_files(memory: WriteService) -> dict[str, str]:
    """Every export file the database implies: relative path -> exact content."""
    return dict(iter_expected_files(memory))


def iter_expected_files(memory: WriteService) -> Iterator[tuple[str, str]]:
    """:meth:`expected_files` one file at a time, the store read a page at a time: a whole-store pass
    holds one page of rows, not a million rendered files."""
    yield from _rendered(memory, memory.store.observations.iter_all(), memory.store.summaries.all_ids())


def expected_files_of(
    memory: WriteService, observation_ids: list[int], summary_ids: list[int]
) -> Iterator[tuple[str, str]]:
    """The files of these observations and summaries only, as :func:`iter_expected_files` renders them (a
    quick doctor renders just the files whose stat says they changed)."""

    def rows() -> Iterator[dict[str, Any]]:
        for start in range(0, len(observation_ids), EXPECTED_PAGE):
            yield from memory.store.observations.oldest_first(observation_ids[start : start + EXPECTED_PAGE])

    yield from _rendered(memory, rows(), summary_ids)


def _rendered(
    memory: WriteService, observations: Iterable[dict[str, Any]], summary_ids: Iterable[int]
) -> Iterator[tuple[str, str]]:
    links = memory.store.links.all_outgoing()
    pending = memory.store.links.all_pending()
    anchors = memory.store.anchors
    page: list[dict[str, Any]] = []
    for row in itertools.chain(observations, [None]):
        if row is not None:
            page.append(row)
            if len(page) < EXPECTED_PAGE:
                continue
        anchored = anchors.for_ids([r["id"] for r in page])  # the page's anchors, in one query
        for done in page:
            relpath = done["path"] or layout.observation_relpath(done)
            entries = memory.link_entries(
                done, relpath, links.get(done["id"], []), pending.get(done["id"], [])
            )
            front = memory.anchor_front(done["id"], anchored.get(done["id"]))
            yield relpath, markdown.render_observation(done, entries, front)
        page = []
    for summary_id in summary_ids:
        row = memory.store.summaries.get(summary_id)
        yield row["path"] or layout.summary_relpath(row), markdown.render_summary(row)


def rebuild_export(memory: WriteService) -> dict[str, Any]:
    """Adopt what people changed or added in the tree, then regenerate every file the store implies.

    Never deletes a file: one without a store row is adopted (or reported when it cannot be), except
    the files of a write that never committed, which crash recovery puts back first. Idempotent.
    """
    from cmem_cli.services.adopt import adopt_tree

    adoption = adopt_tree(memory, forget_deleted=False)
    written = unchanged = 0
    with memory.write_transaction(fsync=False) as files:
        for obs_id in memory.store.observations.ids_without_path():
            row = memory.store.observations.get(obs_id)  # names are kept; only a row without one gets it
            memory.store.observations.set_export(obs_id, layout.observation_relpath(row), row["tokens"])
        for summary_id in memory.store.summaries.all_ids():
            row = memory.store.summaries.get(summary_id)
            if not row["path"]:
                memory.store.summaries.set_path(summary_id, layout.summary_relpath(row))
        records = memory.store.export_files.records()
        expected: set[str] = set()
        for relpath, text in iter_expected_files(memory):
            expected.add(relpath)
            path = layout.resolve_inside(memory.export_root, relpath)
            record = records.get(relpath)
            if written_as(path, record, text):
                unchanged += 1  # as cmem wrote it, and that was this text: not even read
                continue
            try:
                if read_regular(path, len(text.encode("utf-8"))).decode("utf-8") == text:
                    unchanged += 1
                    if record is None or record[0] != digest.text_hash(text) or record[1] is None:
                        memory.store.export_files.record(
                            relpath, digest.text_hash(text), atomic.stat_key(path)
                        )
                    continue
            except (OSError, UnicodeDecodeError):
                pass
            files.write(relpath, text)
            written += 1
        for relpath in set(records) - expected:
            memory.store.export_files.forget(relpath)
    return {
        "written": written,
        "unchanged": unchanged,
        "adopted": len(adoption.adopted),
        "created": len(adoption.created),
        "rolled_back": len(adoption.rolled_back),
        "invalid": adoption.to_json()["invalid"],
    }


def orphan_files(memory: WriteService, expected: set[str]) -> list[Path]:
    """Markdown files no database row accounts for: regular files in a project folder, or files in the
    export root that claim to be memories (``reading.claims_memory``).

    These are what ``cmem sync`` and ``doctor --fix`` adopt (a person's, or another machine's)."""
    import stat

    from cmem_export import reading  # the reader loads dataclasses: not on every hook's write path

    orphans: list[Path] = []
    if not memory.export_root.exists():
        return orphans
    unexpected = (relpath for relpath in _markdown_files(memory.export_root) if relpath not in expected)
    for relpath in sorted(unexpected, key=lambda r: r.split("/")):  # not a million paths, only these
        path = memory.export_root / relpath
        parts = relpath.split("/")
        try:
            if not stat.S_ISREG(path.lstat().st_mode):
                continue  # a FIFO, a folder or a symlink: adoption never reads those either
            if len(parts) == 1 and not reading.claims_memory(
                read_regular(path, reading.MAX_FILE_BYTES).decode("utf-8", errors="replace")
            ):
                continue  # a person's own file beside the project folders: not a memory
        except OSError:
            if len(parts) == 1:
                continue
        orphans.append(path)
    return orphans


def written_as(path: Path, record: tuple[str, tuple[int, int] | None] | None, text: str) -> bool:
    """True when ``path`` is as cmem last wrote it (the same size and modification time, to the nanosecond,
    as recorded then: the test git and make use) and what cmem wrote is ``text`` (its recorded hash):
    a whole-tree pass then reads only the files that changed."""
    if record is None or record[1] is None or record[1][1] >= time.time_ns() - atomic.RACY_NS:
        return False  # no record, or written so lately that a same-size edit could share its time
    return atomic.stat_key(path) == record[1] and record[0] == digest.text_hash(text)


def _markdown_files(root: Path) -> Iterator[str]:
    """Relative paths of the ``*.md`` entries under ``root``, hidden files and folders (``.git``: a synced
    tree's object store) skipped without being entered; symlinked folders are not followed."""
    import os

    stack = [(os.fspath(root), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, f"{prefix}{entry.name}/"))
                    elif entry.name.endswith(".md"):
                        yield prefix + entry.name
        except OSError:
            continue
