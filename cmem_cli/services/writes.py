"""The write service: every write goes to SQLite and to its markdown file, all or nothing.

A write runs inside one ``BEGIN IMMEDIATE`` transaction: the row is inserted, its file is written
atomically (temp file + rename), the row records the file's path, and only then does the transaction
commit. If anything fails before the commit, the transaction rolls back and the new file is removed;
files that a committed write replaced are deleted after the commit.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from cmem_cli.core.config import Config
from cmem_cli.core.errors import InvalidInput, InvalidRecord, NotFound, StorageError
from cmem_cli.core.fields import LINK_TYPES, SESSION_STATUSES
from cmem_cli.core.files import read_regular
from cmem_cli.core.ids import new_uid
from cmem_cli.core.text import estimate_tokens, is_valid_text
from cmem_cli.core.timeutil import MAX_MS, now_ms
from cmem_cli.store.records import EDITABLE_FIELDS, normalize_observation
from cmem_cli.store.repository import Store
from cmem_cli.store.rows import EDITOR
from cmem_export import atomic, digest, layout, markdown
from cmem_export.journal import JOURNAL_DIR, Journal

_STORED: Any = object()  # "the observation's anchor as the store holds it" (read when needed)

SUMMARY_LIMIT = 50_000

BULK_CANDIDATES = 5_000  # an import up to this size is compared with what it may replace, record by record
SMALL_IMPORT = 50  # unless asked, only an import this small is (a larger one is history brought in)
BULK_BATCH = 1_000  # new observations written per batch of a bulk import (files and rows)
# SQLite's page cache for a bulk import: at the default 2 MB the transaction's dirty pages spill to the WAL
# and are written again and again (17 page writes per observation at 3,000 records)
BULK_CACHE_KIB = 256 * 1024


def _scrubber() -> ModuleType:
    """Privacy filter applied to every text before storage (``<private>`` blocks, secrets); imported here,
    not at module level, so a read-only command never loads its patterns. It is never optional."""
    from cmem_cli.services import privacy

    return privacy


class FileTransaction:
    """Files written during one database transaction: journalled first, undone if the transaction fails.

    Each write records its content hash in the store (same transaction), so after a crash the journal's
    files can be sorted into committed (hash matches) and not (restored from the journal).
    """

    def __init__(
        self, root: Path, store: Store, journal_dir: Path, *, fsync: bool = True, skip_identical: bool = False
    ):
        self.root = root
        self.store = store
        self.fsync = fsync
        self.skip_identical = skip_identical  # adopting files git just wrote: most are already right
        self.journal = Journal(journal_dir, root, fsync=fsync)
        self.written: set[str] = set()
        self.to_delete: list[str] = []
        self._dirs: set[Path] = set()
        self._placed_in: set[Path] = set()  # folders files staged beforehand were renamed into
        self._unsynced = False  # files written without an fsync, to be flushed before the commit
        self._done = False

    def write(self, relpath: str, text: str) -> None:
        self.write_many([(relpath, text)])

    def write_many(self, items: list[tuple[str, str]]) -> None:
        """Write these files (relative path, text): journalled in one append, then each written atomically,
        their hashes and stats recorded in the store (the caller's transaction) in one statement."""
        targets = [(relpath, layout.resolve_inside(self.root, relpath), text) for relpath, text in items]
        recorded: list[tuple[str, str, tuple[int, int] | None]] = []
        if self.skip_identical:
            kept = []
            for relpath, path, text in targets:
                if _same_text(path, text):
                    recorded.append((relpath, digest.text_hash(text), atomic.stat_key(path)))
                    self.written.add(relpath)
                else:
                    kept.append((relpath, path, text))
            targets = kept
        path = self.root
        try:
            self.journal.before_writes([(relpath, path) for relpath, path, _ in targets])
            for relpath, path, text in targets:
                if path.parent not in self._dirs:
                    atomic.ensure_dir(path.parent, self.root)
                    self._dirs.add(path.parent)
                stat = atomic.atomic_write(path, text, fsync=self.fsync, make_dirs=False)
                recorded.append((relpath, digest.text_hash(text), stat))
                self.written.add(relpath)
                self._unsynced = self._unsynced or not self.fsync
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror}") from None
        self.store.export_files.record_many(recorded)

    def place_many(self, items: list[tuple[str, Path, str, str, tuple[int, int]]]) -> None:
        """Move files written and flushed before the transaction (:mod:`cmem_cli.services.bulk_stage`)
        into place: (relative path, its path in the tree, staged path, text hash, stat key), the paths
        checked when staged. Journalled in one append, each renamed over its path (a rename keeps the stat
        key), hashes recorded in the caller's transaction."""
        path = self.root
        try:
            self.journal.before_writes([(relpath, target) for relpath, target, *_ in items])
            folders: dict[str, Path] = {}  # by relative folder: a few, however many files
            for relpath, target, *_ in items:
                folders.setdefault(relpath.rpartition("/")[0], target.parent)
            for path in folders.values():
                if path not in self._dirs:
                    atomic.ensure_dir(path, self.root)
                    self._dirs.add(path)
                self._placed_in.add(path)
            for relpath, target, staged, _, _ in items:
                path = target
                os.replace(staged, target)
                self.written.add(relpath)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror}") from None
        self.store.export_files.record_many(
            [(relpath, hashed, stat) for relpath, _, _, hashed, stat in items]
        )

    def flush(self) -> None:
        """Before the commit: files written without an fsync go to disk (all at once), and the renames of
        staged files (their journal, then their folders' names)."""
        if self._unsynced:
            atomic.sync_all()
        elif self._placed_in:
            self.journal.sync()
            for folder in self._placed_in:
                atomic.sync_dir(folder)

    def delete_after_commit(self, relpath: str | None) -> None:
        if relpath and relpath not in self.written:
            layout.resolve_inside(self.root, relpath)  # refuse a path outside the tree before noting it
            self.journal.before_drop(relpath)
            self.store.export_files.forget(relpath)
            self.to_delete.append(relpath)

    def rollback(self) -> None:
        if self.journal.file is not None and not self._done:
            self.journal.undo()
        self._done = True
        self.journal.close()

    def commit(self) -> None:
        for relpath in self.to_delete:
            if relpath in self.written:
                continue
            path = layout.resolve_inside(self.root, relpath)
            with contextlib.suppress(OSError):
                path.unlink()
                atomic.prune_empty_dirs(path.parent, self.root)
        self.journal.close()


class WriteService:
    """High-level operations used by commands, hooks and importers.

    Besides the one-call writes (``add_observation``, ``edit_observation``, ``forget``, ...), sync, team
    sync and the adoption of hand edits compose their own writes from three public steps, so that what
    git or a remote brought is written exactly as cmem writes it: :meth:`write_transaction` (the store
    and the export files, all or nothing), :meth:`store_observation` (insert or update a prepared record
    and write its file) and :meth:`export_observation` (write a stored row's file again)."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        store.configured_writer = (config.machine, config.author)
        self.privacy = _scrubber()
        self._joined: FileTransaction | None = None  # the file transaction of an open :meth:`transaction`

    @classmethod
    def open(cls, config: Config) -> WriteService:
        config.ensure_home()
        return cls(config, Store.open(config.db_path, config.export_dir))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> WriteService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def export_root(self) -> Path:
        return self.config.export_dir

    @property
    def journal_dir(self) -> Path:
        return self.config.home / JOURNAL_DIR

    @contextlib.contextmanager
    def write_transaction(
        self, *, fsync: bool = True, skip_identical: bool = False
    ) -> Iterator[FileTransaction]:
        """One write transaction over the store and the export files: all or nothing across both. Yields
        the :class:`FileTransaction` that :meth:`store_observation` and :meth:`export_observation` write to.

        ``fsync=False``: the files are synced once, before the commit, not one by one (a sync or an
        import writes many); ``skip_identical``: a file whose text is already on disk is not rewritten
        (adopting what git brought must not touch the work tree it came in). Inside :meth:`transaction`
        it joins that one: its files are kept or undone with the whole."""
        if self._joined is not None:
            yield self._joined
            return
        files = FileTransaction(
            self.export_root, self.store, self.journal_dir, fsync=fsync, skip_identical=skip_identical
        )
        try:
            with self.store.transaction():
                try:
                    yield files
                    files.flush()  # files durable before the rows that point at them
                except BaseException:
                    files.rollback()  # still under the write lock: nobody sees the half-written files
                    raise
        except BaseException:
            files.rollback()  # no-op after the one above; covers a COMMIT that failed
            raise
        files.commit()
        if files.written or files.to_delete:
            from cmem_index.refresh import note_written

            note_written(self.config, len(files.written) + len(files.to_delete))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Several writes (and the caller's own rows on this connection) in one transaction: every row and
        every export file they write is kept, or none is. An exception inside must end the transaction (a
        write that failed and was caught inside would keep its files until the whole is undone)."""
        if self._joined is not None:
            yield
            return
        with self.write_transaction() as files:
            self._joined = files
            try:
                yield
            finally:
                self._joined = None

    # -- privacy ----------------------------------------------------------------------------------------
    def _scrub_record(self, record: dict[str, Any]) -> dict[str, Any]:
        scrubbed: dict[str, Any] = self.privacy.scrub_record(record, config=self.config)
        return scrubbed

    def scrub_text(self, text: str | None) -> str | None:
        """``text`` with this home's privacy rules applied (private spans and secrets removed); what adoption
        and team sync pass to a record's other fields, such as an adopted anchor."""
        if text is None:
            return text
        return str(self.privacy.scrub(text, config=self.config))

    # -- observations ----------------------------------------------------------------------------------
    def prepare(self, record: Any, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
        """Validate (and scrub) one input record without writing anything."""
        if isinstance(record, dict):
            record = self._scrub_record(record)
        return normalize_observation(record, defaults=defaults)

    def add_observation(
        self,
        record: Any,
        defaults: dict[str, Any] | None = None,
        *,
        cwd: str | None = None,
        written: dict[str, str] | None = None,
        candidates: bool = False,
    ) -> dict[str, Any]:
        """Validate and store one observation; returns the stored row (with id, uid, path). With ``cwd``
        (where the caller works; relative file paths are resolved against it) the observation is anchored
        to its files and branch in git (see :mod:`cmem_cli.services.anchors`); ``written``: the text a
        tool call wrote into cited files (by path as cited), what the memory is about in them. With
        ``candidates``, a new memory is compared with what it may replace (:mod:`cmem_cli.services.candidates`):
        the row's ``candidates`` lists them, and a confident one is recorded as inferred."""
        prepared = self.prepare(record, defaults)
        self._ready_to_store(anchored=cwd is not None)
        with self.write_transaction() as files:
            new = not prepared.get("uid") and self._key_holder(prepared) is None
            row = self.store_observation(prepared, files, cwd=cwd, written=written)
            if candidates and new:
                row["candidates"] = self.replacement_candidates(row, prepared)
            return row

    def _key_holder(self, record: dict[str, Any]) -> Any:
        """The observation a keyed record rewrites in place (None without a key or holder)."""
        return self.store.observations.by_key(record["project"], record["key"]) if record.get("key") else None

    def replacement_candidates(self, row: dict[str, Any], record: dict[str, Any]) -> list[dict[str, Any]]:
        """What the new observation ``row`` may replace, as the writer is told (ids it names as
        ``supersedes`` left out: it said so already); confident ones recorded as inferred."""
        from cmem_cli.services import candidates

        named = {
            int(link["id"])
            for link in self.store.links.outgoing(int(row["id"]))
            if link["type"] == "supersedes"
        }
        if named:
            return []  # the writer named what it replaces
        return [c.as_dict(int(row["id"])) for c in candidates.find(self.store, row)]

    def _ready_to_store(self, *, anchored: bool) -> None:
        """Load the code a stored observation runs before its write transaction takes the store's write
        lock: imported inside it, a process on a busy machine held every other writer back for as long as
        it took (a third of a `cmem add`'s hold, half a second at a load of 10 on two cores)."""
        from cmem_cli.core import authorship  # noqa: F401  (loaded, not used here)
        from cmem_cli.services.reconcile import upsert  # noqa: F401

        if anchored:
            from cmem_cli.services import anchors  # noqa: F401
        store = self.store
        for name in ("observations", "export_files", "anchors", "team_outbox"):
            getattr(store, name)  # each table's module, imported and made once

    def add_observations(
        self,
        records: list[dict[str, Any]],
        *,
        cwd: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        candidates: bool | None = None,
    ) -> list[dict[str, Any]]:
        """Store already-prepared records in one transaction (bulk import): all or none. Each new record is
        compared with what it may replace (:meth:`replacement_candidates`, its row's ``candidates``) when
        ``candidates`` says so; None: in an import of at most ``SMALL_IMPORT`` records (a larger one is
        history brought in, not a writer stating a change).

        Records that can only be new (no uid, key or links to look up) are rendered, written to a staging
        folder and flushed before the write lock is taken (:mod:`cmem_cli.services.bulk_stage`); under it
        their files are renamed into place and their rows inserted, a batch at a time. The others, in their
        place in the order, go one at a time."""
        from cmem_cli.services.bulk_stage import Staging

        rows: list[dict[str, Any]] = []
        self.store.prepare_bulk_write(BULK_CACHE_KIB)
        staging = Staging(self.store, self.export_root, self.anchor_front, cwd=cwd)
        try:
            steps: list[Any] = []  # in the import's order: a StagedBatch, or (index, record) stored alone
            batch: list[dict[str, Any]] = []
            for index, record in enumerate(records):
                if not (record.get("uid") or record.get("key") or record.get("links")):
                    batch.append(record)
                    if len(batch) >= BULK_BATCH:
                        steps.append(staging.stage(batch))
                        batch = []
                        if progress is not None:
                            progress("write", index + 1, len(records))
                    continue
                if batch:
                    steps.append(staging.stage(batch))
                    batch = []
                steps.append((index, record))
            if batch:
                steps.append(staging.stage(batch))
            staging.flush()
            self._ready_to_store(anchored=cwd is not None)
            with self.write_transaction(fsync=False) as files:
                self._ensure_sessions(records)
                for step in steps:
                    if not isinstance(step, tuple):
                        rows += self._place_new(step, files)
                        continue
                    index, record = step
                    try:
                        rows.append(self.store_observation(record, files, session_ready=True, cwd=cwd))
                    except InvalidRecord:
                        raise
                    except InvalidInput as exc:  # a clash with what is stored: which record, for the caller
                        raise InvalidRecord(index, exc.message) from None
                if candidates is None:
                    candidates = len(records) <= SMALL_IMPORT
                if candidates and len(rows) <= BULK_CANDIDATES:
                    for row, record in zip(rows, records, strict=True):
                        if not (record.get("uid") or record.get("key")):
                            row["candidates"] = self.replacement_candidates(row, record)
        finally:
            staging.discard()
        return rows

    def _place_new(self, staged: Any, files: FileTransaction) -> list[dict[str, Any]]:
        """Make a staged batch of new observations (:class:`~cmem_cli.services.bulk_stage.StagedBatch`)
        part of the caller's transaction: files renamed into place, rows inserted, anchors put."""
        files.place_many(staged.files)
        rows = self.store.observations.insert_new(staged.records, staged.values)
        store = self.store.anchors
        for row, anchor in zip(rows, staged.anchors, strict=True):
            if anchor is not None:
                store.put(row["id"], anchor)
        store.cache_blobs(staged.blobs)
        return rows

    def _ensure_sessions(self, records: list[dict[str, Any]]) -> None:
        """Create each session a batch mentions once, spanning its first and last record's time."""
        spans: dict[str, tuple[dict[str, Any], int, int]] = {}
        now = now_ms()
        for record in records:
            if record.get("session"):
                at = record.get("created_at") or now
                first, low, high = spans.get(record["session"], (record, at, at))
                spans[record["session"]] = (first, min(low, at), max(high, at))
        for session, (first, low, high) in spans.items():
            for at in (low, high):
                self.store.sessions.ensure(session, agent=first["agent"], project=first["project"], at=at)

    def store_observation(
        self,
        record: dict[str, Any],
        files: FileTransaction,
        *,
        session_ready: bool = False,
        restore: dict[str, Any] | None = None,
        relpath: str | None = None,
        cwd: str | None = None,
        updated_at: int | None = None,
        anchor: dict[str, Any] | None = None,
        written: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Insert or update one prepared record (:meth:`prepare`) and write its file, in the caller's
        :meth:`write_transaction` (``files``); returns the stored row. A new row's file name is fixed here,
        for good: ``relpath`` (a file adopted with a uid keeps the name it has), else the standard name
        of the record as it is now; an existing row keeps its name whatever changes. ``updated_at``: when
        an update was made, if not now (a hand edit adopted later is dated by its file). ``cwd``: anchor
        it in git from there; else ``anchor``, the code anchor an adopted file states, is taken."""
        store = self.store
        existing = store.observations.by_uid(record["uid"]) if record.get("uid") else None
        if existing is None and record.get("key"):
            existing = store.observations.by_key(record["project"], record["key"])  # a key replaces
        elif existing is not None:
            self.check_key(record, existing["id"])
        if existing is not None:
            record = {**record, "uid": existing["uid"]}
            relpath = None
        else:
            created = record.get("created_at") or now_ms()
            record = {**record, "created_at": created, "uid": record.get("uid") or new_uid(created)}
            relpath = relpath or layout.observation_relpath(record)
        from cmem_cli.services.reconcile.upsert import put_observation  # not loaded by reads and hooks

        row = put_observation(
            store,
            record,
            updated_at=updated_at,
            arrived=False,
            session_ready=session_ready,
            path=relpath,
            restore=restore,
        ).row
        if existing is not None and row["title"] != existing["title"]:
            self._refresh_referrers(row["id"], files)
        for link in record.get("links") or []:
            self._add_link(row["id"], self._resolve_link_target(link), link["type"])
        made: Any = _STORED
        if cwd is not None:
            from cmem_cli.services.anchors import Hints, cited_files, record_anchor

            made = record_anchor(store, row["id"], cited_files(record), cwd, hints=Hints.of(record, written))
        elif anchor is not None:
            from cmem_cli.services.anchors import adopt_anchor

            adopt_anchor(store, row["id"], anchor, self.scrub_text)
        # a new row without links has none to list: no need to ask the store (bulk imports do this a lot)
        no_links = existing is None and not record.get("links")
        return self.export_observation(row, files, relpath=relpath, no_links=no_links, anchor=made)

    def check_key(self, record: dict[str, Any], obs_id: int | None) -> None:
        """The one key rule of every write that names its observation (an edit, a uid, a file): a project's
        key belongs to one observation, so giving observation ``obs_id`` (None: a new one) a key another
        holds is :class:`InvalidInput`. (A new record without a uid replaces the key's holder instead.)"""
        holder = self.store.observations.key_holder(record["project"], record.get("key"), besides=obs_id)
        if holder is not None:
            raise InvalidInput(f"key {record['key']!r} is already used by observation {holder['id']}")

    def _resolve_link_target(self, link: dict[str, Any]) -> int:
        if "id" in link:
            if self.store.observations.find(link["id"]) is None:
                raise NotFound(f"link target {link['id']} does not exist")
            return int(link["id"])
        target = self.store.observations.by_uid(link["uid"])
        if target is None:
            raise NotFound(f"link target {link['uid']} does not exist")
        return int(target["id"])

    def link_entries(
        self,
        row: dict[str, Any],
        relpath: str,
        links: list[dict[str, Any]] | None = None,
        pending: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The row's outgoing links as its file lists them (``links``, ``pending``: already read, else asked
        for; :func:`cmem_export.markdown.link_entries`). A link to a uid this store does not hold yet (git
        sync) is listed as its file showed it."""
        held = self.store.links.outgoing(row["id"]) if links is None else links
        waiting = self.store.links.pending_from(row["id"]) if pending is None else pending
        return markdown.link_entries([*held, *({**link, "path": None} for link in waiting)], relpath)

    def _refresh_referrers(self, obs_id: int, files: FileTransaction) -> None:
        """Write again the files that link to ``obs_id``: they show its title."""
        for link in self.store.links.incoming(obs_id):
            if link["id"] != obs_id:
                self.export_observation(self.store.observations.get(link["id"]), files)

    def export_observation(
        self,
        row: dict[str, Any],
        files: FileTransaction,
        *,
        relpath: str | None = None,
        no_links: bool = False,
        anchor: Any = _STORED,
    ) -> dict[str, Any]:
        """Write the row's file at the name the row holds and record path and token cost, in the caller's
        :meth:`write_transaction` (``files``); returns the row with its path and tokens.

        The name never changes with the content (a retitle, a project move): only a row without one (a
        store older than names in rows) gets its standard name. ``relpath`` is given for a new row's
        chosen name, or to move the file there (git brought it under another name); ``no_links`` says
        the row cannot have links yet; ``anchor``: its code anchor when the caller just made it (else it
        is read from the store)."""
        relpath = relpath or row.get("path") or layout.observation_relpath(row)
        links = [] if no_links else self.link_entries(row, relpath)
        text = markdown.render_observation(row, links, self.anchor_front(row["id"], anchor))
        files.write(relpath, text)
        tokens = estimate_tokens(text)  # what `cmem get` prints for it
        if row.get("path") and row["path"] != relpath:
            files.delete_after_commit(row["path"])
        if relpath != row.get("path") or tokens != row.get("tokens"):
            self.store.observations.set_export(row["id"], relpath, tokens)
            row["path"], row["tokens"] = relpath, tokens
        return row

    def anchor_front(self, obs_id: int, anchor: Any = _STORED) -> dict[str, Any] | None:
        """What the observation's file says of its code anchor (``cmem_cli.services.anchors.exported``)."""
        from cmem_cli.services.anchors import exported

        if anchor is _STORED:
            anchor = self.store.anchors.for_ids([obs_id]).get(obs_id)
        return exported(anchor, self.scrub_text)

    def edit_observation(
        self, obs_id: int, changes: dict[str, Any], *, cwd: str | None = None
    ) -> dict[str, Any]:
        """Apply field changes (same names as the JSON record) and re-export. With ``cwd`` (where the
        caller works), files the edit adds are anchored and those it drops leave the anchor."""
        with self.write_transaction() as files:
            current = self.store.observations.get(obs_id)
            merged = {k: current.get(k) for k in EDITABLE_FIELDS}
            merged.update(changes)
            prepared = normalize_observation(self._scrub_record(merged))
            self.check_key(prepared, obs_id)
            row = self.store.observations.update(obs_id, prepared, edited=self.store.writer())
            for link in prepared.get("links") or []:
                self._add_link(obs_id, self._resolve_link_target(link), link["type"])
            if cwd is not None:
                from cmem_cli.services.anchors import cited_files, reanchor_edit

                reanchor_edit(self.store, obs_id, cited_files(current), cited_files(prepared), cwd)
            row["path"] = current["path"]
            if row["title"] != current["title"]:
                self._refresh_referrers(obs_id, files)
            return self.export_observation(row, files)

    def invalidate(self, obs_id: int, reason: str | None = None) -> dict[str, Any]:
        """Mark an observation as no longer true, for ``reason``: kept whole (its file says so, so git and
        team sync carry it), left out of search, context and the briefing until :meth:`restore`."""
        return self.edit_observation(obs_id, {"invalidated": (reason or "").strip() or NO_REASON})

    def restore(self, obs_id: int) -> dict[str, Any]:
        """Undo :meth:`invalidate`: the observation is current again, as it was."""
        return self.edit_observation(obs_id, {"invalidated": None})

    def link(self, from_id: int, to_id: int, link_type: str, *, remove: bool = False) -> dict[str, Any]:
        if link_type not in LINK_TYPES:
            raise InvalidInput(f"unknown link type {link_type!r} (expected one of: {', '.join(LINK_TYPES)})")
        with self.write_transaction() as files:
            row = self.store.observations.get(from_id)
            if remove:
                if not self.store.links.remove(from_id, to_id, link_type):
                    raise NotFound(f"no {link_type} link from {from_id} to {to_id}")
            else:
                self._add_link(from_id, to_id, link_type)
            self.store.observations.mark_edited(from_id)  # a link is an edit of the memory it leaves
            row = {**row, **dict(zip(EDITOR, self.store.writer(), strict=True))}
            return self.export_observation(row, files)

    def _add_link(self, from_id: int, to_id: int, link_type: str) -> None:
        """One link, inside the caller's transaction. A ``supersedes`` link that would make two memories
        replace each other is refused; a new one hands the replaced memory's retrieval count on."""
        from cmem_cli.services import supersession

        if link_type == supersession.SUPERSEDES and supersession.would_cycle(self.store, from_id, to_id):
            raise InvalidInput(f"observation {to_id} already supersedes {from_id} (directly or by a chain)")
        if self.store.links.add(from_id, to_id, link_type) and link_type == supersession.SUPERSEDES:
            supersession.inherit_retrievals(self.store, from_id, to_id)

    def forget(self, obs_ids: Iterable[int]) -> list[int]:
        """Delete observations and their files; observations that linked to them are re-exported."""
        ids = list(dict.fromkeys(obs_ids))
        with self.write_transaction() as files:
            self.forget_rows(ids, files)
        return ids

    def forget_rows(self, ids: list[int], files: FileTransaction) -> None:
        """``forget`` inside the caller's write transaction."""
        rows = [self.store.observations.get(i) for i in ids]
        referrers = {link["id"] for i in ids for link in self.store.links.incoming(i)} - set(ids)
        for row in rows:
            self.store.observations.delete(row["id"])
            files.delete_after_commit(row["path"])
        for referrer in sorted(referrers):
            self.export_observation(self.store.observations.get(referrer), files)

    def forget_summary(self, summary_id: int, files: FileTransaction) -> None:
        """Forget a summary (its file is deleted after the commit) inside the caller's write transaction."""
        row = self.store.summaries.get(summary_id)
        self.store.summaries.delete(summary_id)
        files.delete_after_commit(row.get("path"))

    # -- sessions, prompts, summaries -------------------------------------------------------------------
    def ensure_session(
        self,
        session_id: str,
        *,
        agent: str,
        project: str,
        label: str | None = None,
        goal: str | None = None,
        resume: bool = False,
        at: int | None = None,
    ) -> dict[str, Any]:
        """Create the session if new; ``resume`` also reopens it if it had ended (`cmem session start ID`).
        ``at``: when it began (an imported transcript's time; an earlier one moves the start back)."""
        session_id = _required_text("session id", session_id)
        with self.store.transaction():
            if resume:
                self.store.sessions.reopen(session_id)
            return self.store.sessions.ensure(
                session_id,
                agent=agent,
                project=project,
                label=self.scrub_text(label),
                goal=self.scrub_text(goal),
                at=at,
            )

    def label_sessions(self, labels: dict[str, str]) -> None:
        """Label sessions that have no label yet (a transcript's title), scrubbed and clipped to 500
        characters, in one transaction; a session that does not exist is left alone."""
        with self.store.transaction():
            for session_id, label in labels.items():
                self.store.sessions.label(session_id, (self.scrub_text(label) or "")[:500] or None)

    def end_session(
        self,
        session_id: str,
        *,
        status: str = "completed",
        outcome: str | None = None,
        next_steps: str | None = None,
    ) -> dict[str, Any]:
        if status not in SESSION_STATUSES:
            raise InvalidInput(f"unknown status {status!r} (expected one of: {', '.join(SESSION_STATUSES)})")
        with self.store.transaction():
            return self.store.sessions.end(
                session_id,
                status=status,
                outcome=self.scrub_text(outcome),
                next_steps=self.scrub_text(next_steps),
            )

    def add_prompt(
        self,
        session_id: str,
        text: str,
        *,
        project: str | None = None,
        agent: str | None = None,
        created_at: int | None = None,
    ) -> dict[str, Any]:
        text = self.prepare_prompt(text)
        with self.store.transaction():
            session = self.store.sessions.ensure(
                session_id, agent=agent or "cli", project=project or "default", at=created_at
            )
            number = self.store.sessions.next_prompt_number(session_id)
            return self.store.prompts.insert(
                session=session_id,
                number=number,
                text=text,
                project=project or session["project"],
                agent=agent or session["agent"],
                created_at=created_at,
            )

    def prepare_prompt(self, text: Any) -> str:
        """A prompt's text as stored: scrubbed, then checked (a string, not empty, within the limit)."""
        if not isinstance(text, str):
            raise InvalidInput("prompt must be a string")
        return _required_text("prompt", self.scrub_text(text) or "", limit=SUMMARY_LIMIT)

    def prepare_prompt_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A prompt from elsewhere (a team database), checked and scrubbed as `cmem prompt add` would."""
        number, created = row.get("prompt_number"), row.get("created_at")
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 2**31:
            raise InvalidInput("prompt_number must be a whole number from 1")
        if isinstance(created, bool) or not isinstance(created, int) or not 0 <= created <= MAX_MS:
            raise InvalidInput("created_at must be a time in epoch milliseconds")
        return {
            "uid": _required_text("uid", row.get("uid"), limit=64),
            "session": _required_text("session id", row.get("session")),
            "prompt_number": number,
            "text": self.prepare_prompt(row.get("text")),
            "project": _required_text("project", row.get("project")),
            "agent": _required_text("agent", row.get("agent")),
            "created_at": created,
        }

    def prepare_session(self, row: dict[str, Any]) -> dict[str, Any]:
        """A session row from elsewhere (a team database), checked and scrubbed as a local write would be."""
        values: dict[str, Any] = {
            "session_id": _required_text("session id", row.get("session_id")),
            "agent": _required_text("agent", row.get("agent")),
            "project": _required_text("project", row.get("project")),
        }
        if row.get("status") not in SESSION_STATUSES:
            raise InvalidInput(f"unknown session status {row.get('status')!r}")
        values["status"] = row["status"]
        for name in ("started_at", "last_activity_at", "completed_at", "prompt_counter"):
            value = row.get(name)
            if value is None and name in ("completed_at",):
                values[name] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MS:
                raise InvalidInput(f"session {name} must be a whole number from 0")
            values[name] = value
        for name, limit in (("label", 500), ("goal", SUMMARY_LIMIT), ("outcome", SUMMARY_LIMIT),
                            ("next_steps", SUMMARY_LIMIT)):  # fmt: skip
            value = row.get(name)
            if value is not None:
                value = self.scrub_text(_required_text(name, value, limit=limit, allow_empty=True)) or None
            values[name] = value
        return values

    def add_summary(
        self, session_id: str, fields: dict[str, Any], *, project: str | None = None, agent: str | None = None
    ) -> dict[str, Any]:
        values = self.prepare_summary(fields)
        with self.write_transaction() as files:
            session = self.store.sessions.ensure(
                session_id, agent=agent or "cli", project=project or "default"
            )
            row = self.store.summaries.insert(
                {
                    **values,
                    "session": session_id,
                    "project": project or session["project"],
                    "agent": agent or session["agent"],
                    "created_at": fields.get("created_at") or now_ms(),
                }
            )
            return self.export_summary(row, files)

    def prepare_summary(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Validate and scrub a summary's text fields (the checks `cmem summary add` applies)."""
        from cmem_cli.core.fields import SUMMARY_FIELDS

        unknown = set(fields) - set(SUMMARY_FIELDS) - {"created_at"}
        if unknown:
            raise InvalidInput(f"unknown summary field '{sorted(unknown)[0]}'")
        values: dict[str, Any] = {}
        for name in SUMMARY_FIELDS:
            value = fields.get(name)
            if value is not None:
                if not isinstance(value, str):
                    raise InvalidInput(f"summary field '{name}' must be a string")
                value = self.scrub_text(_required_text(name, value, limit=SUMMARY_LIMIT, allow_empty=True))
            values[name] = value or None
        if not any(values.values()):
            raise InvalidInput("a summary needs at least one of: " + ", ".join(SUMMARY_FIELDS))
        return values

    def export_summary(
        self, row: dict[str, Any], files: FileTransaction, *, relpath: str | None = None
    ) -> dict[str, Any]:
        """Write a summary's file at the name its row holds (fixed at creation, like an observation's)
        and record it; ``relpath`` names a new summary's file, or moves it there."""
        relpath = relpath or row.get("path") or layout.summary_relpath(row)
        files.write(relpath, markdown.render_summary(row))
        if row.get("path") and row["path"] != relpath:
            files.delete_after_commit(row["path"])
        if row.get("path") != relpath:
            self.store.summaries.set_path(row["id"], relpath)
        row["path"] = relpath
        return row

    # -- rendering -------------------------------------------------------------------------------------
    def render_record(self, kind: str, record_id: int) -> str:
        """The exact text cmem writes for one observation or summary (at its current path)."""
        if kind == "summary":
            return markdown.render_summary(self.store.summaries.get(record_id))
        row = self.store.observations.get(record_id)
        relpath = row["path"] or layout.observation_relpath(row)
        return markdown.render_observation(row, self.link_entries(row, relpath), self.anchor_front(record_id))


NO_REASON = "no reason given"  # what an invalidation without a reason says (the field is never empty)


def _same_text(path: Path, text: str) -> bool:
    """True when ``path`` already holds exactly ``text`` (reading is far cheaper than a rename)."""
    try:
        return read_regular(path, len(text.encode("utf-8"))) == text.encode("utf-8")
    except OSError:
        return False


def _required_text(name: str, value: Any, *, limit: int = 2_000, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if not is_valid_text(value) or "\x00" in value:
        raise InvalidInput(f"{name} is not valid UTF-8 text")
    if len(value) > limit:
        raise InvalidInput(f"{name} is too long ({len(value)} characters, limit {limit})")
    if not value.strip() and not allow_empty:
        raise InvalidInput(f"{name} must not be empty")
    return value.strip()
