"""Adopting exported files that git brought in (or a person changed) into the store, all or nothing.

`cmem sync` knows exactly which files changed (git tells it), so this module works on a list of paths:
each file is read and validated first (size, encoding, front matter, the same rules as `cmem add`,
redaction included); invalid ones are reported by path and change nothing; the valid ones are then
written to the store inside the caller's transaction and re-exported, so the store and the tree agree.

Files are read with the tree's own reader (``cmem_export.reading``, which local adoption uses too). What this
module adds for git: identity by uid only (ids are local), an edit's ``updated_at`` kept from the file
(so a later sync does not see the adoption as a new edit), conflict copies, and deletions by path.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.timeutil import now_ms
from cmem_cli.services.writes import FileTransaction, Memory
from cmem_cli.store.records import parse_link
from cmem_export import reading


class Incoming:
    """One observation or summary to write: its validated record, links by uid, and times to keep."""

    def __init__(
        self,
        kind: str,
        record: dict[str, Any],
        *,
        relpath: str | None = None,
        links: list[dict[str, Any]] | None = None,
        updated_at: int | None = None,
    ):
        self.kind = kind
        self.record = record
        self.relpath = relpath
        self.links = links or []
        self.updated_at = updated_at

    @property
    def uid(self) -> str | None:
        return self.record.get("uid")


def parse_file(memory: Memory, relpath: str, data: bytes, *, keep_times: bool = True) -> Incoming:
    """Validate one file with the tree's own reader (``cmem_export.reading``, as local adoption uses);
    InvalidInput names the first problem. Nothing is written.

    ``keep_times``: keep the file's ``updated_at`` (an edit made on another machine keeps its time)."""
    try:
        parsed = reading.parse_file(reading.decode(data), relpath)
    except reading.UnreadableFile as exc:
        raise InvalidInput(str(exc)) from None
    record = dict(parsed.record)
    if not record.get("project"):
        if len(PurePosixPath(relpath).parts) < 2:
            raise InvalidInput("outside any project folder (and no project: in front matter)")
        record["project"] = PurePosixPath(relpath).parts[0]
    record["uid"] = parsed.uid
    updated = parsed.restore.get("updated_at") if keep_times else None
    if parsed.kind == "summary":
        if not record.get("session") or not parsed.uid:
            raise InvalidInput("a summary needs a session and a uid")
        values = memory.prepare_summary({k: record.get(k) for k in SUMMARY_FIELDS})
        record.update(values, agent=record.get("agent") or "cli")
        return Incoming("summary", record, relpath=relpath)
    links = [parse_link(link) for link in record.pop("links", None) or [] if link.get("uid")]
    prepared = memory.prepare({k: v for k, v in record.items() if v is not None})
    return Incoming("observation", prepared, relpath=relpath, links=links, updated_at=updated)


def apply(
    memory: Memory, files: FileTransaction, incoming: list[Incoming], deleted: list[str]
) -> dict[str, Any]:
    """Write ``incoming`` and forget what was at the ``deleted`` paths, inside the caller's transaction.

    A deleted path whose uid arrives again under another name (a renamed file) is a move, not a forget.
    """
    store = memory.store
    notes: list[str] = []
    arriving = {item.uid for item in incoming if item.uid}
    rows: list[tuple[Incoming, dict[str, Any]]] = []
    # a file that names its uid lives where git put it (its name was fixed where it was made); one
    # without (a person's, committed with plain git) gets its standard name here
    named = {id(item) for item in incoming if item.uid and item.relpath}
    for item in incoming:
        if item.kind == "removal":  # a duplicate file whose text lives on elsewhere
            if item.relpath:
                files.delete_after_commit(item.relpath)
        elif item.kind == "summary":
            _write_summary(memory, files, item)
        else:
            rows.append((item, _upsert_observation(memory, item, notes)))
    for item, row in rows:  # links last: their targets may have arrived in the same batch
        for link in store.links_from(row["id"]):
            store.remove_link(row["id"], link["id"], link["type"])
        for link in item.links:
            target = store.observation_by_uid(link["uid"])
            if target is not None and target["id"] != row["id"]:
                store.add_link(row["id"], target["id"], link["type"])
    referrers: set[int] = set()
    forgotten = 0
    for _relpath, (kind, uid) in store.uids_at_paths(deleted).items():
        if uid in arriving:
            continue
        if kind == "summary":
            summary = store.summary_by_uid(uid)
            if summary is not None:
                store.delete_summary(summary["id"])
        else:
            gone = store.observation_by_uid(uid)
            if gone is None:
                continue
            referrers.update(link["id"] for link in store.links_to(gone["id"]))
            referrers.discard(gone["id"])
            store.delete_observation(gone["id"])
        forgotten += 1
    exported = {row["id"] for _, row in rows}
    for item, row in rows:
        fresh = store.get_observation(row["id"])
        fresh = memory._export_observation(fresh, files, relpath=item.relpath if id(item) in named else None)
        if item.relpath and item.relpath != fresh["path"]:
            files.delete_after_commit(item.relpath)
    for item, row in rows:  # links name paths: write linking files again once every target has moved
        if item.links:
            memory._export_observation(store.get_observation(row["id"]), files)
    for obs_id in sorted(referrers - exported):
        referrer = store.find_observation(obs_id)
        if referrer is not None:
            memory._export_observation(referrer, files)
    return {"adopted": len(rows), "forgotten": forgotten, "notes": notes}


def _upsert_observation(memory: Memory, item: Incoming, notes: list[str]) -> dict[str, Any]:
    store = memory.store
    record = dict(item.record)
    record.pop("links", None)
    existing = store.observation_by_uid(record["uid"]) if record.get("uid") else None
    # The write service's key rule (Memory.check_key); a merge cannot refuse another machine's file, so
    # the key is dropped instead, with a note.
    clash = store.key_holder(
        record["project"], record.get("key"), besides=existing["id"] if existing else None
    )
    if clash is not None:
        notes.append(f"{item.relpath}: key {record['key']!r} is taken here by {clash['uid']}; dropped")
        record["key"] = None
    if record.get("session"):
        store.ensure_session(
            record["session"], agent=record["agent"], project=record["project"], at=record.get("created_at")
        )
    if existing is not None:
        return store.update_observation(existing["id"], record, updated_at=item.updated_at)
    record["created_at"] = record.get("created_at") or now_ms()
    return store.insert_observation(record, updated_at=item.updated_at)


def _write_summary(memory: Memory, files: FileTransaction, item: Incoming) -> None:
    store = memory.store
    record = item.record
    existing = store.summary_by_uid(record["uid"])
    store.ensure_session(record["session"], agent=record["agent"], project=record["project"])
    if existing is not None:
        store.update_summary(existing["id"], record)
        summary_id = existing["id"]
    else:
        summary_id = store.insert_summary(record)["id"]
    row = memory.export_summary(store.get_summary(summary_id), files, relpath=item.relpath)
    if item.relpath and item.relpath != row["path"]:
        files.delete_after_commit(item.relpath)
