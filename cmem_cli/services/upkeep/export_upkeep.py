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
from typing import TYPE_CHECKING, Any

from cmem_cli.core.files import read_regular
from cmem_cli.services.write.service import WriteService
from cmem_export import atomic, digest, layout, markdown

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cmem_cli.core.json_types import RebuildJson
    from cmem_cli.store.row_types import LinkedRow, ObservationRow, PendingLinkRow

EXPECTED_PAGE = 500  # observations whose anchors a whole-store pass reads at once
PAGE_GAP = 0.1  # seconds between two pages of a rebuild (a page holds the write lock about as long)


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

    def rows() -> Iterator[ObservationRow]:
        for start in range(0, len(observation_ids), EXPECTED_PAGE):
            yield from memory.store.observations.oldest_first(observation_ids[start : start + EXPECTED_PAGE])

    yield from _rendered(memory, rows(), summary_ids)


def _rendered(
    memory: WriteService, observations: Iterable[ObservationRow], summary_ids: Iterable[int]
) -> Iterator[tuple[str, str]]:
    links = memory.store.links.all_outgoing()
    pending = memory.store.links.all_pending()
    page: list[ObservationRow] = []
    for row in itertools.chain(observations, [None]):
        if row is not None:
            page.append(row)
            if len(page) < EXPECTED_PAGE:
                continue
        yield from _page_files(memory, page, links, pending)
        page = []
    for summary_id in summary_ids:
        yield _summary_file(memory.store.summaries.get(summary_id))


def _summary_file(summary: Mapping[str, Any]) -> tuple[str, str]:
    """A summary's file: (relative path, text), the name it has or the one its fields give it."""
    return summary["path"] or layout.summary_relpath(summary), markdown.render_summary(summary)


def _page_files(
    memory: WriteService,
    page: Sequence[Mapping[str, Any]],
    links: dict[int, list[LinkedRow]],
    pending: dict[int, list[PendingLinkRow]],
) -> Iterator[tuple[str, str]]:
    """The files of a page of observations: (relative path, text)."""
    anchored = memory.store.anchors.for_ids([r["id"] for r in page])  # the page's anchors, in one query
    for done in page:
        relpath = done["path"] or layout.observation_relpath(done)
        entries = memory.export.link_entries(
            done, relpath, links.get(done["id"], []), pending.get(done["id"], [])
        )
        front = memory.export.anchor_front(done["id"], anchored.get(done["id"]))
        yield relpath, markdown.render_observation(done, entries, front)


def rebuild_export(memory: WriteService) -> RebuildJson:
    """Adopt what people changed or added in the tree, then regenerate every file the store implies.

    Never deletes a file: one without a store row is adopted (or reported when it cannot be), except
    the files of a write that never committed, which crash recovery puts back first. Idempotent.

    A page of memories at a time, each page one short write transaction (its rows read, its files
    rendered, compared and written, all under the lock): other writers go on between pages, and every
    file a page writes is what the store says at that moment. A write made meanwhile rewrites the files
    it changes itself, so the tree is whole at the end; a rebuild killed between pages leaves each file
    as it was or rebuilt, and running it again finishes it.
    """
    from cmem_cli.services.inbound.adopt import adopt_tree

    adoption = adopt_tree(memory, forget_deleted=False)
    store = memory.store
    with memory.write_transaction(fsync=False):
        for obs_id in store.observations.ids_without_path():
            row = store.observations.get(obs_id)  # names are kept; only a row without one gets it
            store.observations.set_export(obs_id, layout.observation_relpath(row), row["tokens"])
        for summary_id in store.summaries.all_ids():
            summary = store.summaries.get(summary_id)
            if not summary["path"]:
                store.summaries.set_path(summary_id, layout.summary_relpath(summary))
    records = store.export_files.records()  # as read now: a page checks a file it finds changed again
    tally = {"written": 0, "unchanged": 0}
    after = 0
    while True:
        _let_others_in()
        with memory.write_transaction(fsync=False) as files:
            page = list(
                itertools.islice(store.observations.iter_all(EXPECTED_PAGE, after=after), EXPECTED_PAGE)
            )
            if not page:
                break
            links, pending = store.links.all_outgoing(), store.links.all_pending()
            _write_page(memory, files, _page_files(memory, page, links, pending), records, tally)
            after = page[-1]["id"]
    after = 0
    while True:
        _let_others_in()
        with memory.write_transaction(fsync=False) as files:
            summaries = store.summaries.page(after, EXPECTED_PAGE)
            if not summaries:
                break
            _write_page(memory, files, map(_summary_file, summaries), records, tally)
            after = summaries[-1]["id"]
    with memory.write_transaction(fsync=False):  # records of files no row implies any longer
        implied = store.export_files.record_paths()
        for relpath in set(store.export_files.records()) - set(implied):
            store.export_files.forget(relpath)
    return {
        "written": tally["written"],
        "unchanged": tally["unchanged"],
        "adopted": len(adoption.adopted),
        "created": len(adoption.created),
        "rolled_back": len(adoption.rolled_back),
        "invalid": adoption.to_json()["invalid"],
    }


def _let_others_in() -> None:
    """A pause between two pages, long enough for a writer waiting on the lock to take it: SQLite's busy
    handlers poll (every 100 ms at most), so a page taken again at once could keep a hook waiting for the
    whole rebuild."""
    time.sleep(PAGE_GAP)


def _write_page(
    memory: WriteService,
    files: Any,
    rendered: Iterable[tuple[str, str]],
    records: dict[str, tuple[str, tuple[int, int] | None]],
    tally: dict[str, int],
) -> None:
    """Write each rendered file that differs from the one on disk (in the caller's transaction); a file
    already holding the text only gets its record."""
    for relpath, text in rendered:
        path = layout.resolve_inside(memory.export_root, relpath)
        record = records.get(relpath)
        if written_as(path, record, text):
            tally["unchanged"] += 1  # as cmem wrote it, and that was this text: not even read
            continue
        try:
            if read_regular(path, len(text.encode("utf-8"))).decode("utf-8") == text:
                tally["unchanged"] += 1
                if record is None or record[0] != digest.text_hash(text) or record[1] is None:
                    memory.store.export_files.record(relpath, digest.text_hash(text), atomic.stat_key(path))
                continue
        except (OSError, UnicodeDecodeError):
            pass
        files.write(relpath, text)
        tally["written"] += 1


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
