"""A bulk import's new observations, made ready before the store's write lock is taken.

A 5,000-record ``cmem add --json`` held every other writer back for 5.7 s when it rendered, wrote and
inserted under the lock (issue 42). Now everything that needs no lock is done first: each new record's
uid, file name, anchor, markdown text and column values, and its file, written into a staging folder and
flushed to disk. The folder is ``.cmem-staging/PID-RANDOM`` inside the export tree: the same file system
(a rename moves a file into place), and hidden, so adoption, the index and git never look in it.

Under the lock (:meth:`WriteService.add_observations`) the files are journalled and renamed into place
and the rows inserted, in one short transaction: all or nothing, as before. A failure rolls the rows back
and the journal undoes the renames. A process killed while it staged leaves only its staging folder,
which ``doctor --fix`` removes once that process is gone (:mod:`cmem_cli.services.upkeep.debris`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import StorageError
from cmem_cli.core.ids import new_uid
from cmem_cli.core.text import estimate_tokens
from cmem_cli.core.timeutil import now_ms
from cmem_export import atomic, digest, layout, markdown

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from cmem_cli.store.anchors import Anchor, CachedBlob
    from cmem_cli.store.repository import Store
    from cmem_cli.store.row_types import ObservationInput

STAGING_DIR = ".cmem-staging"  # under the export root; one folder per importing process


@dataclass
class StagedBatch:
    """New observations ready to be made visible: their records, column values, staged files and
    anchors, in the import's order."""

    records: list[ObservationInput]  # each with its uid, times, authorship, file name and token cost
    values: list[dict[str, Any]]  # their columns' values (ObservationRepository.new_values)
    # (relpath, its path in the tree, staged path, text hash, stat key)
    files: list[tuple[str, Path, str, str, tuple[int, int]]]
    anchors: list[Anchor | None]
    blobs: dict[str, CachedBlob]


class Staging:
    """The staging folder of one bulk import, and what is staged in it."""

    def __init__(
        self,
        store: Store,
        export_root: Path,
        anchor_front: Callable[[int, Anchor | None], Any],
        *,
        cwd: str | None = None,
    ):
        self.store = store
        self.root = export_root
        self.anchor_front = anchor_front  # the write service's: the anchor as a file states it
        self.cwd = cwd
        self.folder = export_root / STAGING_DIR / f"{os.getpid()}-{os.urandom(4).hex()}"
        self.repos: dict[str, Any] = {}  # folder -> its git work tree, looked up once for the whole import
        self.diffs: dict[Any, Any] = {}  # (work tree, file) -> the lines its change touched, asked once
        self._made: set[Path] = set()
        self._count = 0

    def stage(self, records: Sequence[ObservationInput]) -> StagedBatch:
        """Render new observations (no uid, key or links) and write their files into the staging folder
        (not yet flushed: :meth:`flush`). Reads the store (authorship, anchors' previous blobs) but never
        writes to it."""
        from cmem_cli.services.truth.anchor_record import Hints, cited_files, make_anchor

        store = self.store
        now = now_ms()
        made: list[ObservationInput] = []
        files: list[tuple[str, Path, str, str, tuple[int, int]]] = []
        anchors: list[Anchor | None] = []
        blobs: dict[str, CachedBlob] = {}
        for record in records:
            created = record["created_at"] or now
            row: ObservationInput = {
                **record,
                "created_at": created,
                "uid": new_uid(created),
                "updated_at": max(now, created),
            }
            who = store.authorship(record)  # the file says whose it is, as the row does
            row["machine"], row["author"] = who["machine"], who["author"]
            row["path"] = relpath = layout.observation_relpath(row)
            anchor = None
            if self.cwd is not None:  # anchored before the file is written: the file carries the anchor
                hints = Hints.of(record, diffs=self.diffs)
                if hints.modified:
                    hints.previous = store.anchors.latest_blob
                anchor, hashed = make_anchor(cited_files(record), self.cwd, repos=self.repos, hints=hints)
                blobs.update(hashed)
            text = markdown.render_observation(row, [], self.anchor_front(0, anchor))
            row["tokens"] = estimate_tokens(text)  # what `cmem get` prints for it
            made.append(row)
            target = layout.resolve_inside(self.root, relpath)  # refused here, not under the lock
            files.append((relpath, target, *self._write(text)))
            anchors.append(anchor)
        return StagedBatch(made, store.observations.new_values(made), files, anchors, blobs)

    def _write(self, text: str) -> tuple[str, str, tuple[int, int]]:
        """Write one file into the staging folder: its path there, its text's hash and its stat key."""
        if not self._made:
            atomic.ensure_dir(self.folder.parent, self.root)
            atomic.ensure_dir(self.folder, self.root)
            self._made.add(self.folder)
        self._count += 1
        path = os.path.join(self.folder, f"{self._count}.md")
        try:
            stat = atomic.write_new(path, text.encode("utf-8"))
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror}") from None
        return path, digest.text_hash(text), stat

    def flush(self) -> None:
        """Put every staged file on disk before the lock is taken: under it, only renames are left."""
        if self._made:
            atomic.sync_all()

    def discard(self) -> None:
        """Remove the staging folder (whatever was not moved into place), and its parent once empty."""
        if not self._made:
            return
        shutil.rmtree(self.folder, ignore_errors=True)
        with contextlib.suppress(OSError):  # unless another import's folder is in it
            self.folder.parent.rmdir()
