"""Adopting the export tree: what people edit, add or delete in the markdown flows back into the store.

cmem keeps a content hash of every file it writes (``export_files``). A file whose bytes differ from that
hash was changed by a person (or by git); a markdown file no row points at is new; a file cmem wrote that
is gone was deleted. ``adopt_tree`` turns each into the same store operation `cmem add`, `cmem edit` and
`cmem forget` perform, with the same validation, limits, ``<private>`` stripping and redaction (it calls
``WriteService.prepare``), then rewrites the file in cmem's form (which keeps every word: text the parser does
not recognise lands in the narrative). An invalid file is reported with its reason and left untouched.
What passes is written by the one inbound writer git and team arrivals use
(:class:`cmem_cli.services.inbound.reconcile.writer.Inbound`, ``local=True``): rows, forgets, then every link once
all rows are in, then the files. Adoption reads and checks; it settles no link itself.

Everything runs in one write transaction, after crash recovery has rolled back files of writes that never
committed (``cmem_cli.services.upkeep.recovery``), so a file from an interrupted write is never mistaken for a person's.
The walk of the whole tree (most of a sync of a large tree) is made before the write lock is taken, so that
hooks and `cmem add` never wait for it: under the lock only the files that differ from what cmem last wrote
are read again, and a file cmem wrote that the walk missed is looked for once more before it counts as deleted.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.errors import CmemError, InvalidInput
from cmem_cli.core.fields import LINK_TYPES, SUMMARY_FIELDS
from cmem_cli.core.files import FileTooLarge, NotRegularFile, read_in_tree
from cmem_cli.core.ids import new_uid
from cmem_cli.core.timeutil import now_ms, to_date
from cmem_cli.services.inbound.reconcile.writer import Inbound
from cmem_cli.services.inbound.record_shapes import front_matter_problem
from cmem_cli.services.inbound.sync_repo import indexed_links
from cmem_cli.services.upkeep.recovery import recover
from cmem_cli.services.write.service import WriteService
from cmem_cli.store.records import EDITABLE_FIELDS
from cmem_export import atomic, digest
from cmem_export.journal import pending
from cmem_export.reading import (
    MAX_FILE_BYTES,
    ParsedFile,
    UnreadableFile,
    claims_memory,
    decode,
    front_matter_edits,
    parse_file,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.json_types import AdoptJson
    from cmem_cli.store.row_types import ObservationInput

RACY_NS = atomic.RACY_NS  # a file cmem wrote this recently is read even when its stat matches


@dataclass
class AdoptReport:
    adopted: list[str] = field(default_factory=list)  # edited files whose changes went into the store
    created: list[str] = field(default_factory=list)  # new files that became observations or summaries
    forgotten: list[str] = field(default_factory=list)  # deleted files whose record was forgotten
    invalid: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): left untouched
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (path, what): left untouched
    rolled_back: list[str] = field(default_factory=list)  # files of interrupted writes put back
    debris: list[str] = field(default_factory=list)  # temporary files of killed writes, removed
    ignored: list[str] = field(default_factory=list)  # a person's own files in the export root (not memories)
    written: list[str] = field(default_factory=list)  # every file cmem (re)wrote (git sync stages these)
    removed: list[str] = field(default_factory=list)  # every file cmem removed

    @property
    def changed(self) -> bool:
        return bool(self.adopted or self.created or self.forgotten or self.rolled_back or self.debris)

    def to_json(self) -> AdoptJson:
        return {
            "adopted": self.adopted,
            "created": self.created,
            "forgotten": self.forgotten,
            "invalid": [{"path": p, "reason": r} for p, r in self.invalid],
            "conflicts": [{"path": p, "reason": r} for p, r in self.conflicts],
            "rolled_back": self.rolled_back,
            "debris": self.debris,
            "ignored": self.ignored,
        }


def adopt_tree(
    target: WriteService | Any,
    paths: list[Path] | None = None,
    *,
    forget_deleted: bool = True,
) -> AdoptReport:
    """Bring the store up to date with the export tree (all of it, or just ``paths``).

    ``target`` is an open ``WriteService``, a ``Config`` or a cmem home folder. ``forget_deleted=False`` (doctor, export --rebuild)
    leaves rows whose file is gone alone, so the caller can restore the file instead.
    """
    if isinstance(target, WriteService):
        return _Adopter(target, forget_deleted).run(paths)
    if isinstance(target, str | os.PathLike):
        from cmem_cli.core.config import load_config

        target = load_config(target)
    with WriteService.open(target) as memory:
        return _Adopter(memory, forget_deleted).run(paths)


def refused_files(memory: WriteService, relpaths: list[str]) -> list[tuple[str, str]]:
    """(path, reason) for each of ``relpaths`` that adoption would refuse (invalid, or a second file of one
    uid), found by the same checks and nothing written: what doctor lists before and after ``--fix``."""
    return _Adopter(memory, forget_deleted=False).refusals(relpaths)


class _Adopter:
    def __init__(self, memory: WriteService, forget_deleted: bool):
        self.memory = memory
        self.store = memory.store
        self.root = memory.export_root
        self.forget_deleted = forget_deleted
        self.report = AdoptReport()
        self.touched: set[tuple[str, int]] = set()  # (kind, id) of every record adopted in this run
        self.staged_uids: dict[str, str] = {}  # uid -> the file adopted for it in this run
        self.locked = False  # the write lock is held (temporary files seen are then debris)
        self.debris_seen: list[str] = []  # temporary files the walk before the lock saw

    def run(self, paths: list[Path] | None) -> AdoptReport:
        walked = self._walk_unlocked() if paths is None else None
        with self.memory.write_transaction(fsync=False) as files:
            self.locked = True
            if walked is not None and any(True for _ in pending(self.memory.journal_dir)):
                walked = None  # interrupted writes are undone now: the tree is walked again after that
            self.report.rolled_back = recover(self.memory)
            self.load_state()
            if walked is None:
                on_disk = self._scan() if paths is None else self._given(paths)
                changed = on_disk
            else:
                on_disk, changed = self._settle(*walked)
            staged = [item for relpath in sorted(changed) if (item := self._stage(relpath))]
            staged = [item for item in staged if self._links_valid(*item)]
            staged.sort(
                key=lambda item: "id" not in item[1].restore
            )  # keep known ids before new rows take them
            # the one inbound writer, as for git and team arrivals: rows, then links, forgets, files
            writer = Inbound(self.memory.export, files, [], [], local=True, tell=self._told)
            for relpath, parsed, row in staged:
                self._apply(writer, relpath, parsed, row)
            if self.forget_deleted:
                self._forget_missing(writer, on_disk, paths)
            writer.finish()
        self.report.written = sorted(files.written)
        self.report.removed = sorted(files.to_delete)
        return self.report

    def refusals(self, relpaths: list[str]) -> list[tuple[str, str]]:
        """(path, reason) for each of ``relpaths`` adoption would refuse, by the checks :meth:`run` makes,
        writing nothing."""
        self.load_state()
        for relpath in sorted(set(relpaths)):
            item = self._stage(relpath)
            if item is not None:
                self._links_valid(*item)
        return self.report.invalid + self.report.conflicts

    def _walk_unlocked(self) -> tuple[set[str], set[str]]:
        """The tree's files, and those of them that may differ from what cmem last wrote, found before the
        write lock is taken (the stat of every file is most of a no-op sync of a large tree)."""
        self.load_state()
        on_disk = self._scan()
        return on_disk, {relpath for relpath in on_disk if not self._as_written(relpath)}

    def _settle(self, on_disk: set[str], changed: set[str]) -> tuple[set[str], set[str]]:
        """Under the write lock, the walk made before it brought up to date: temporary files it saw are
        removed now (no write is under way), and a file cmem recorded that the walk did not see (written
        since) is looked for again, so it is never taken for deleted. Files changed since the walk by
        anyone but cmem are read by the next adoption."""
        for relpath in self.debris_seen:
            if atomic.remove_file(self.root / relpath):
                self.report.debris.append(relpath)
        unseen = [relpath for relpath in self.known if relpath not in on_disk]
        present = {relpath for relpath in unseen if os.path.lexists(os.path.join(self.root, relpath))}
        return on_disk | present, changed

    def _as_written(self, relpath: str) -> bool:
        """Same size and modification time as when cmem wrote it (then it is not read again)."""
        written = self.stats.get(relpath) if relpath in self.known else None
        return (
            written is not None
            and written[1] < self.racy_before  # else a same-size edit in the same clock tick could hide
            and atomic.stat_key(os.path.join(self.root, relpath)) == written
        )

    def load_state(self) -> None:
        """What cmem last wrote: each file's record, hash and size/mtime."""
        self.known = self.store.export_files.record_paths()
        self.hashes = self.store.export_files.hashes()
        self.stats = self.store.export_files.stats()
        self.racy_before = time.time_ns() - RACY_NS
        self.links: set[str] | None = None  # paths git's index holds as links, read when first needed

    # -- finding files ---------------------------------------------------------------------------------
    def _scan(self) -> set[str]:
        """Every markdown file in the tree (hidden folders such as .git skipped); removes temp debris.

        Plain strings and ``os.scandir`` (no pathlib): this walk is most of a no-op sync of a large tree."""
        found: set[str] = set()
        stack = [("", os.fspath(self.root))]
        while stack:
            prefix, folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                self.report.invalid.append((prefix or ".", f"cannot read folder: {exc.strerror}"))
                continue
            for entry in entries:
                name = entry.name
                if name.startswith(atomic.TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                    # a killed atomic write, removed under the write lock (no live one then)
                    if not self.locked:
                        self.debris_seen.append(prefix + name)
                    elif atomic.remove_file(Path(entry.path)):
                        self.report.debris.append(prefix + name)
                elif name.startswith("."):
                    continue
                elif entry.is_dir(follow_symlinks=False):
                    stack.append((prefix + name + "/", entry.path))
                elif name.endswith(".md"):
                    # a link, a FIFO or a hard link too: reading refuses it by name, and a memory whose
                    # file was replaced by one is not taken for deleted
                    found.add(prefix + name)
        return found

    def _given(self, paths: list[Path]) -> set[str]:
        found: set[str] = set()
        self.gone: set[str] = set()
        for path in paths:
            absolute = path if path.is_absolute() else self.root / path
            try:
                relpath = absolute.relative_to(self.root).as_posix()
            except ValueError:
                self.report.invalid.append((str(path), "outside the export tree"))
                continue
            if any(part.startswith(".") for part in PurePosixPath(relpath).parts) or not relpath.endswith(
                ".md"
            ):
                continue
            if os.path.lexists(absolute):  # anything there: reading refuses what is no regular file
                found.add(relpath)
            else:
                self.gone.add(relpath)
        return found

    # -- reading and validating ------------------------------------------------------------------------
    def _stage(self, relpath: str) -> tuple[str, ParsedFile, Mapping[str, Any] | None] | None:
        """Parse and validate one file; None when it is unchanged, invalid or a conflict."""
        if self._as_written(relpath):
            return None  # same size and modification time as when cmem wrote it: not read again
        try:
            data = read_in_tree(self.root, relpath, MAX_FILE_BYTES)
            written_at = os.lstat(os.path.join(self.root, relpath)).st_mtime_ns // 1_000_000
        except NotRegularFile as exc:
            self.report.invalid.append((relpath, f"{exc.strerror}, not adopted"))
            return None
        except FileTooLarge as exc:
            self.report.invalid.append((relpath, str(exc.strerror)))
            return None
        except OSError as exc:
            self.report.invalid.append((relpath, f"cannot read: {exc.strerror}"))
            return None
        known = self.known.get(relpath)
        if known is not None and self._unchanged(relpath, known, data):
            return None  # exactly what cmem wrote
        # git's index is asked only for a file that changed (a racy re-read of cmem's own is not), so a
        # sync runs the same git commands whatever the clock says
        if self.links is None:
            self.links = indexed_links(self.memory.config.home, Path(self.root))
        if relpath in self.links:  # checked out as text (core.symlinks=false): its text is a target path
            self.report.invalid.append((relpath, "a symbolic link in the git repository, not adopted"))
            return None
        try:
            text = decode(data)
            if known is None and "/" not in relpath and not claims_memory(text):
                self.report.ignored.append(relpath)  # a person's own file beside the project folders
                return None
            parsed = parse_file(text, relpath)
            parsed.written_at = written_at
            problem = front_matter_problem(parsed.kind, parsed.meta)
            if problem is not None:  # a shape cmem never writes: the rule for what git or a team brings
                raise UnreadableFile(problem)
        except UnreadableFile as exc:
            self.report.invalid.append((relpath, str(exc)))
            return None
        except CmemError as exc:  # a front-matter value the store's own checks refuse (e.g. a date)
            self.report.invalid.append((relpath, exc.message))
            return None
        if parsed.uid and parsed.uid in self.staged_uids:
            other = self.staged_uids[parsed.uid]
            self.report.conflicts.append((relpath, f"same uid as {other}; not adopted"))
            return None
        row = self._row_for(relpath, parsed, known)
        if row is None and parsed.uid and parsed.kind == "observation":
            forgotten = self.store.observations.forgotten_at(parsed.uid.upper())
            if forgotten is not None:
                self.report.invalid.append(
                    (relpath, f"a copy of memory {parsed.uid}, forgotten here on {to_date(forgotten)}: "
                     "not brought back (delete the file, or its uid: line to keep the text as a new memory)")
                )  # fmt: skip
                return None
        moved = row is not None and row.get("path") and row["path"] != relpath
        if row is not None and moved and (self.root / row["path"]).exists():
            self.report.conflicts.append((relpath, f"same uid as {row['path']}; not adopted"))
            return None
        if known is None and len(PurePosixPath(relpath).parts) < 2 and not parsed.record.get("project"):
            self.report.invalid.append(
                (relpath, "outside any project folder (and no project: in front matter)")
            )
            return None
        try:
            parsed.record = self._validate(parsed, row)
        except CmemError as exc:
            self.report.invalid.append((relpath, exc.message))
            return None
        if parsed.uid:
            self.staged_uids[parsed.uid] = relpath
        return relpath, parsed, row

    def _unchanged(self, relpath: str, known: tuple[str, int], data: bytes) -> bool:
        stored = self.hashes.get(relpath)
        if stored is not None:
            return stored == digest.bytes_hash(data)
        # written before cmem kept hashes (schema v1): compare with the rendering once, then remember it
        if data != self.memory.export.render_record(*known).encode("utf-8"):
            return False
        self.store.export_files.record(relpath, digest.bytes_hash(data), atomic.stat_key(self.root / relpath))
        self.hashes[relpath] = digest.bytes_hash(data)
        return True

    def _row_for(
        self, relpath: str, parsed: ParsedFile, known: tuple[str, int] | None
    ) -> Mapping[str, Any] | None:
        store = self.store
        if parsed.kind == "summary":
            if parsed.uid:
                found = store.summaries.by_uid(parsed.uid)
                if found is not None:
                    return {**found, "kind": "summary"}
            if known and known[0] == "summary":
                return {**store.summaries.get(known[1]), "kind": "summary"}
            return None
        if parsed.uid:
            stored = store.observations.by_uid(parsed.uid)
            if stored is not None:
                return stored
        if known and known[0] == "observation" and not (parsed.uid and parsed.has_front_matter):
            return store.observations.get(known[1])
        return None

    def _validate(self, parsed: ParsedFile, row: Mapping[str, Any] | None) -> dict[str, Any]:
        if parsed.kind == "summary":
            record = parsed.record
            values = self.memory.sessions.prepare_summary({k: record.get(k) for k in SUMMARY_FIELDS})
            if row is None and not record.get("session"):
                raise InvalidInput("a summary file needs a session: in its front matter")
            return {**record, **values}
        record = dict(parsed.record)
        links = record.pop("links", None)
        if row is not None:
            merged = {k: row.get(k) for k in EDITABLE_FIELDS}
            merged.update({k: v for k, v in record.items() if k in parsed.stated})
            if not _stale_front_matter(parsed, row):
                merged.update(front_matter_edits(parsed, row))
            merged["uid"] = row["uid"]
            record = merged
        prepared = self.memory.records.prepare(record)
        known = row if row is not None else self.store.observations.by_uid(prepared.get("uid") or "")
        self.memory.records.check_key(prepared, known["id"] if known is not None else None)
        if not prepared.get("uid"):
            prepared["created_at"] = prepared.get("created_at") or _edited_at(parsed, None)
            prepared["uid"] = new_uid(prepared["created_at"])
        # links: None when the file names none (those it had stay; the inbound writer's rule)
        return {**prepared, "links": links if "links" in parsed.stated else None}

    def _waiting(self, row: Mapping[str, Any] | None) -> set[tuple[str, str]]:
        """(uid, type) of the row's links to observations this store does not hold yet (git sync)."""
        if row is None or row.get("kind") == "summary":
            return set()
        return {(link["uid"], link["type"]) for link in self.store.links.pending_from(row["id"])}

    def _links_valid(self, relpath: str, parsed: ParsedFile, row: Mapping[str, Any] | None) -> bool:
        """Every link a file names needs a known type and a target in the store or adopted in this run
        (or one the store keeps waiting for, as it arrived from another machine)."""
        links = (parsed.record.get("links") or []) if parsed.kind == "observation" else []
        waiting = self._waiting(row) if links else set()
        for link in links:
            if link.get("type") not in LINK_TYPES:
                problem = f"unknown link type {link.get('type')!r} (expected one of: {', '.join(LINK_TYPES)})"
            elif (link["uid"], link["type"]) in waiting:
                continue
            elif link["uid"] not in self.staged_uids and self.store.observations.by_uid(link["uid"]) is None:
                problem = f"link target {link['uid']} does not exist"
            else:
                continue
            self.report.invalid.append((relpath, problem))
            return False
        return True

    # -- writing -----------------------------------------------------------------------------------------
    def _apply(
        self, writer: Inbound, relpath: str, parsed: ParsedFile, row: Mapping[str, Any] | None
    ) -> None:
        """Hand one validated file to the inbound writer (its links and its file come at ``finish``)."""
        # A file cmem wrote (it names its uid) that has no row here (a rebuilt store, another machine's
        # file) keeps its name; a person's new file gets the standard name, once.
        kept_name = relpath if row is None and parsed.uid else None
        record = parsed.record
        if parsed.kind == "summary":
            if row is None:
                values = {
                    **record,
                    "uid": parsed.uid,
                    "agent": record.get("agent") or "cli",
                    "project": record.get("project") or "default",
                }
            else:
                values = {**record, "uid": row["uid"], "updated_at": _edited_at(parsed, row)}
            summary_id = parsed.restore.get("id") if row is None else None
            ident = writer.summary(values, relpath=kept_name, arrived_at=relpath, summary_id=summary_id)
        else:
            ident = writer.observation(
                cast("ObservationInput", record),  # prepared by _validate
                record.get("links"),  # None: the file names no links, and those it had stay
                updated_at=None if row is None else _edited_at(parsed, row),
                anchor=parsed.anchor,
                relpath=kept_name,
                arrived_at=relpath,
                restore=parsed.restore if row is None else None,
            )
        self.touched.add((parsed.kind, ident))
        (self.report.created if row is None else self.report.adopted).append(relpath)

    def _told(self, relpath: str, what: str) -> None:
        """What the inbound writer says of a file's links (one dropped, a supersedes loop broken)."""
        self.report.conflicts.append((relpath, what))

    def _forget_missing(self, writer: Inbound, on_disk: set[str], paths: list[Path] | None) -> None:
        """Forget records whose file cmem wrote is gone; never when the whole tree is missing or empty."""
        gone = (
            [p for p in self.known if p not in on_disk and p in self.hashes]
            if paths is None
            else [p for p in sorted(self.gone) if p in self.known and p in self.hashes]
        )
        if not gone:
            return
        if paths is None and not on_disk:
            self.report.conflicts.append(
                (
                    str(self.root),
                    "the export tree is empty: nothing forgotten (`cmem doctor --fix` restores it)",
                )
            )
            return
        uids = self.store.export_files.uids_at_paths(gone)
        for relpath in gone:
            kind, ident = self.known[relpath]
            if (kind, ident) in self.touched:
                continue  # the file was renamed or moved, not deleted: adopted from its new place
            self.report.forgotten.append(relpath)
            writer.forget(*uids[relpath])


def _edited_at(parsed: ParsedFile, row: Mapping[str, Any] | None) -> int:
    """When a person made the edit: the file's mtime, not the time it is adopted (so "the later edit wins"
    means later, across machines too). Never in the future, and after the row's last update, so a file
    restored with an old mtime still counts as a change here."""
    now = now_ms()
    stamp = max(0, min(parsed.written_at or now, now))
    return stamp if row is None else max(stamp, int(row["updated_at"]) + 1)


def _stale_front_matter(parsed: ParsedFile, row: Mapping[str, Any]) -> bool:
    """Is the file's front matter older than cmem's last rewrite of it? An editor that never re-read the
    file saves its old front matter again: its ``title:`` is the one before the person's own retitle in
    the body, which cmem has since copied into the front matter. Taking that as a front-matter-only edit
    would undo the retitle, so a stale front matter never overrides what the body shows."""
    written = parsed.restore.get("updated_at")
    current = row.get("updated_at")
    return isinstance(written, int) and isinstance(current, int) and written < current
