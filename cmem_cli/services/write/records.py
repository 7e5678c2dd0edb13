"""The record service: observations and their links written to SQLite and to their markdown files, all or
nothing, under the one key rule (a project's key belongs to one observation).

Each write runs in the home's write transaction (:class:`cmem_cli.services.write.service.WriteService`); the files
are written by the export service (:mod:`cmem_cli.services.write.exporter`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.errors import InvalidInput, InvalidRecord, NotFound
from cmem_cli.core.fields import LINK_TYPES
from cmem_cli.core.ids import new_uid
from cmem_cli.core.timeutil import now_ms
from cmem_cli.services.write.exporter import STORED
from cmem_cli.store.records import EDITABLE_FIELDS, normalize_observation
from cmem_export import layout

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.json_types import CandidateJson
    from cmem_cli.services.write.bulk_stage import StagedBatch
    from cmem_cli.services.write.exporter import FileWriter
    from cmem_cli.services.write.home import WriteHome
    from cmem_cli.store.row_types import AddedObservation, ObservationInput, ObservationRow

BULK_CANDIDATES = 5_000  # an import up to this size is compared with what it may replace, record by record
SMALL_IMPORT = 50  # unless asked, only an import this small is (a larger one is history brought in)
BULK_BATCH = 1_000  # new observations written per batch of a bulk import (files and rows)
# SQLite's page cache for a bulk import: at the default 2 MB the transaction's dirty pages spill to the WAL
# and are written again and again (17 page writes per observation at 3,000 records)
BULK_CACHE_KIB = 256 * 1024
NO_REASON = "no reason given"  # what an invalidation without a reason says (the field is never empty)


class RecordWrites:
    """Observations and links: add (one, or a bulk import in one transaction), edit, invalidate and restore,
    link, forget. Sync, team sync and adoption compose their own writes from :meth:`prepare`,
    :meth:`store_observation` and the export service, so that what came in is written as cmem writes it."""

    def __init__(self, home: WriteHome) -> None:
        self.home = home
        self.store = home.store
        self.export = home.export

    def prepare(self, record: Any, defaults: Mapping[str, Any] | None = None) -> ObservationInput:
        """Validate (and scrub) one input record without writing anything."""
        if isinstance(record, dict):
            record = self.home.scrub_record(record)
        return normalize_observation(record, defaults=defaults)

    def add_observation(
        self,
        record: Any,
        defaults: Mapping[str, Any] | None = None,
        *,
        cwd: str | None = None,
        written: dict[str, str] | None = None,
        candidates: bool = False,
    ) -> AddedObservation:
        """Validate and store one observation; returns the stored row (with id, uid, path). With ``cwd``
        (where the caller works; relative file paths are resolved against it) the observation is anchored
        to its files and branch in git (see :mod:`cmem_cli.services.truth.anchor_record`); ``written``: the text a
        tool call wrote into cited files (by path as cited), what the memory is about in them. With
        ``candidates``, a new memory is compared with what it may replace (:mod:`cmem_cli.services.truth.candidates`):
        the row's ``candidates`` lists them, and a confident one is recorded as inferred."""
        prepared = self.prepare(record, defaults)
        self._ready_to_store(anchored=cwd is not None)
        with self.home.write_transaction() as files:
            new = not prepared.get("uid") and self._key_holder(prepared) is None
            row = _added(self.store_observation(prepared, files, cwd=cwd, written=written))
            if candidates and new:
                row["candidates"] = self.replacement_candidates(row, prepared)
            return row

    def _key_holder(self, record: Mapping[str, Any]) -> Any:
        """The observation a keyed record rewrites in place (None without a key or holder)."""
        return self.store.observations.by_key(record["project"], record["key"]) if record.get("key") else None

    def replacement_candidates(self, row: ObservationRow, record: ObservationInput) -> list[CandidateJson]:
        """What the new observation ``row`` may replace, as the writer is told (ids it names as
        ``supersedes`` left out: it said so already); confident ones recorded as inferred."""
        from cmem_cli.services.truth import candidates

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
        from cmem_cli.services.inbound.reconcile import upsert  # noqa: F401

        if anchored:
            from cmem_cli.services.truth import anchor_record  # noqa: F401
        store = self.store
        for name in ("observations", "export_files", "anchors", "team_outbox"):
            getattr(store, name)  # each table's module, imported and made once

    def add_observations(
        self,
        records: list[ObservationInput],
        *,
        cwd: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        candidates: bool | None = None,
    ) -> list[AddedObservation]:
        """Store already-prepared records in one transaction (bulk import): all or none. Each new record is
        compared with what it may replace (:meth:`replacement_candidates`, its row's ``candidates``) when
        ``candidates`` says so; None: in an import of at most ``SMALL_IMPORT`` records (a larger one is
        history brought in, not a writer stating a change).

        Records that can only be new (no uid, key or links to look up) are rendered, written to a staging
        folder and flushed before the write lock is taken (:mod:`cmem_cli.services.write.bulk_stage`); under it
        their files are renamed into place and their rows inserted, a batch at a time. The others, in their
        place in the order, go one at a time."""
        from cmem_cli.services.write.bulk_stage import Staging

        rows: list[AddedObservation] = []
        self.store.prepare_bulk_write(BULK_CACHE_KIB)
        staging = Staging(self.store, self.home.export_root, self.export.anchor_front, cwd=cwd)
        try:
            steps: list[Any] = []  # in the import's order: a StagedBatch, or (index, record) stored alone
            batch: list[ObservationInput] = []
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
            with self.home.write_transaction(fsync=False) as files:
                self._ensure_sessions(records)
                for step in steps:
                    if not isinstance(step, tuple):
                        rows += map(_added, self._place_new(step, files))
                        continue
                    index, record = step
                    try:
                        rows.append(
                            _added(self.store_observation(record, files, session_ready=True, cwd=cwd))
                        )
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

    def _place_new(self, staged: StagedBatch, files: FileWriter) -> list[ObservationRow]:
        """Make a staged batch of new observations (:class:`~cmem_cli.services.write.bulk_stage.StagedBatch`)
        part of the caller's transaction: files renamed into place, rows inserted, anchors put."""
        files.place_many(staged.files)
        rows = self.store.observations.insert_new(staged.records, staged.values)
        store = self.store.anchors
        for row, anchor in zip(rows, staged.anchors, strict=True):
            if anchor is not None:
                store.put(row["id"], anchor)
        store.cache_blobs(staged.blobs)
        return rows

    def _ensure_sessions(self, records: list[ObservationInput]) -> None:
        """Create each session a batch mentions once, spanning its first and last record's time."""
        spans: dict[str, tuple[ObservationInput, int, int]] = {}
        now = now_ms()
        for record in records:
            session = record["session"]
            if session:
                at = record["created_at"] or now
                first, low, high = spans.get(session, (record, at, at))
                spans[session] = (first, min(low, at), max(high, at))
        for session, (first, low, high) in spans.items():
            for at in (low, high):
                self.store.sessions.ensure(session, agent=first["agent"], project=first["project"], at=at)

    def store_observation(
        self,
        record: ObservationInput,
        files: FileWriter,
        *,
        session_ready: bool = False,
        restore: Mapping[str, Any] | None = None,
        relpath: str | None = None,
        cwd: str | None = None,
        updated_at: int | None = None,
        anchor: Mapping[str, Any] | None = None,
        written: dict[str, str] | None = None,
    ) -> ObservationRow:
        """Insert or update one prepared record (:meth:`prepare`) and write its file, in the caller's
        :meth:`write_transaction` (``files``); returns the stored row. A new row's file name is fixed here,
        for good: ``relpath`` (a file adopted with a uid keeps the name it has), else the standard name
        of the record as it is now; an existing row keeps its name whatever changes. ``updated_at``: when
        an update was made, if not now (a hand edit adopted later is dated by its file). ``cwd``: anchor
        it in git from there; else ``anchor``, the code anchor an adopted file states, is taken."""
        store = self.store
        uid, key = record["uid"], record["key"]
        existing = store.observations.by_uid(uid) if uid else None
        if existing is None and key:
            existing = store.observations.by_key(record["project"], key)  # a key replaces
        elif existing is not None:
            self.check_key(record, existing["id"])
        if existing is not None:
            record = {**record, "uid": existing["uid"]}
            relpath = None
        else:
            created = record.get("created_at") or now_ms()
            record = {**record, "created_at": created, "uid": record.get("uid") or new_uid(created)}
            relpath = relpath or layout.observation_relpath(record)
        from cmem_cli.services.inbound.reconcile.upsert import (
            put_observation,  # not loaded by reads and hooks
        )

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
            self.export.refresh_referrers(row["id"], files)
        for link in record.get("links") or []:
            self._add_link(row["id"], self._resolve_link_target(link), link["type"])
        made: Any = STORED
        if cwd is not None:
            from cmem_cli.services.truth.anchor_record import Hints, cited_files, record_anchor

            made = record_anchor(store, row["id"], cited_files(record), cwd, hints=Hints.of(record, written))
        elif anchor is not None:
            from cmem_cli.services.truth.anchor_files import adopt_anchor

            adopt_anchor(store, row["id"], anchor, self.home.scrub_text)
        # a new row without links has none to list: no need to ask the store (bulk imports do this a lot)
        no_links = existing is None and not record.get("links")
        return self.export.export_observation(row, files, relpath=relpath, no_links=no_links, anchor=made)

    def check_key(self, record: Mapping[str, Any], obs_id: int | None) -> None:
        """The one key rule of every write that names its observation (an edit, a uid, a file): a project's
        key belongs to one observation, so giving observation ``obs_id`` (None: a new one) a key another
        holds is :class:`InvalidInput`. (A new record without a uid replaces the key's holder instead.)"""
        holder = self.store.observations.key_holder(record["project"], record.get("key"), besides=obs_id)
        if holder is not None:
            raise InvalidInput(f"key {record['key']!r} is already used by observation {holder['id']}")

    def _resolve_link_target(self, link: Mapping[str, Any]) -> int:
        if "id" in link:
            if self.store.observations.find(link["id"]) is None:
                raise NotFound(f"link target {link['id']} does not exist")
            return int(link["id"])
        target = self.store.observations.by_uid(link["uid"])
        if target is None:
            raise NotFound(f"link target {link['uid']} does not exist")
        return int(target["id"])

    def edit_observation(
        self, obs_id: int, changes: Mapping[str, Any], *, cwd: str | None = None
    ) -> ObservationRow:
        """Apply field changes (same names as the JSON record) and re-export. With ``cwd`` (where the
        caller works), files the edit adds are anchored and those it drops leave the anchor."""
        with self.home.write_transaction() as files:
            current = self.store.observations.get(obs_id)
            merged: dict[str, object] = {k: current.get(k) for k in EDITABLE_FIELDS}
            merged.update(changes)
            prepared = normalize_observation(self.home.scrub_record(merged))
            self.check_key(prepared, obs_id)
            row = self.store.observations.update(obs_id, prepared, edited=self.store.writer())
            for link in prepared.get("links") or []:
                self._add_link(obs_id, self._resolve_link_target(link), link["type"])
            if cwd is not None:
                from cmem_cli.services.truth.anchor_record import cited_files, reanchor_edit

                reanchor_edit(self.store, obs_id, cited_files(current), cited_files(prepared), cwd)
            row["path"] = current["path"]
            if row["title"] != current["title"]:
                self.export.refresh_referrers(obs_id, files)
            return self.export.export_observation(row, files)

    def invalidate(self, obs_id: int, reason: str | None = None) -> ObservationRow:
        """Mark an observation as no longer true, for ``reason``: kept whole (its file says so, so git and
        team sync carry it), left out of search, context and the briefing until :meth:`restore`."""
        return self.edit_observation(obs_id, {"invalidated": (reason or "").strip() or NO_REASON})

    def restore(self, obs_id: int) -> ObservationRow:
        """Undo :meth:`invalidate`: the observation is current again, as it was."""
        return self.edit_observation(obs_id, {"invalidated": None})

    def link(self, from_id: int, to_id: int, link_type: str, *, remove: bool = False) -> ObservationRow:
        if link_type not in LINK_TYPES:
            raise InvalidInput(f"unknown link type {link_type!r} (expected one of: {', '.join(LINK_TYPES)})")
        with self.home.write_transaction() as files:
            row = self.store.observations.get(from_id)
            if remove:
                if not self.store.links.remove(from_id, to_id, link_type):
                    raise NotFound(f"no {link_type} link from {from_id} to {to_id}")
            else:
                self._add_link(from_id, to_id, link_type)
            self.store.observations.mark_edited(from_id)  # a link is an edit of the memory it leaves
            machine, person = self.store.writer()
            edited: ObservationRow = {**row, "edited_on": machine, "edited_by": person}
            return self.export.export_observation(edited, files)

    def _add_link(self, from_id: int, to_id: int, link_type: str) -> None:
        """One link, inside the caller's transaction. A ``supersedes`` link that would make two memories
        replace each other is refused; a new one hands the replaced memory's retrieval count on."""
        from cmem_cli.services.truth import supersession

        if link_type == supersession.SUPERSEDES and supersession.would_cycle(self.store, from_id, to_id):
            raise InvalidInput(f"observation {to_id} already supersedes {from_id} (directly or by a chain)")
        if self.store.links.add(from_id, to_id, link_type) and link_type == supersession.SUPERSEDES:
            supersession.inherit_retrievals(self.store, from_id, to_id)

    def forget(self, obs_ids: Iterable[int]) -> list[int]:
        """Delete observations and their files; observations that linked to them are re-exported."""
        ids = list(dict.fromkeys(obs_ids))
        with self.home.write_transaction() as files:
            self.forget_rows(ids, files)
        return ids

    def forget_rows(self, ids: list[int], files: FileWriter) -> None:
        """``forget`` inside the caller's write transaction."""
        rows = [self.store.observations.get(i) for i in ids]
        referrers = {link["id"] for i in ids for link in self.store.links.incoming(i)} - set(ids)
        for row in rows:
            self.store.observations.delete(row["id"])
            files.delete_after_commit(row["path"])
        for referrer in sorted(referrers):
            self.export.export_observation(self.store.observations.get(referrer), files)


def _added(row: ObservationRow) -> AddedObservation:
    """A stored row as an add returns it: the same dict, which gets ``candidates`` when they are asked for."""
    return cast("AddedObservation", row)
