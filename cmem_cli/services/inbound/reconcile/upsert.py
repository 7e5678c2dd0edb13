"""The one upsert of a memory by uid, for every way a memory comes in: its session, the key rule, the row.

A memory that arrives from another machine (git sync, the team database) is stored under its uid; its
session is made or marked active at the memory's time; and a project's key belongs to one memory. When
an arrival names a key another memory here holds, the **earlier** memory (by creation time, then uid)
keeps it and the other's key goes, on every machine alike, whichever arrived first: both machines end
with the same holder and are told (:data:`cmem_cli.services.inbound.reconcile.rule.KEY_CLASH`). A local write
(`cmem add`, `cmem edit`, a hand edit) is refused instead (:class:`InvalidInput`, the write service's
``check_key``), since a person is there to choose another key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmem_cli.core.timeutil import now_ms
from cmem_cli.store.repository import Store

if TYPE_CHECKING:  # the rule (dataclasses) is loaded only for a clash: `cmem add` writes through here
    from collections.abc import Mapping

    from cmem_cli.services.inbound.reconcile.rule import Conflict
    from cmem_cli.store.row_types import ObservationInput, ObservationRow, SummaryRow


class Put:
    """What :func:`put_observation` did: the stored row, and the key clash it settled (if any) with the
    row whose key went (its file must be written again)."""

    __slots__ = ("row", "clash", "unkeyed")

    def __init__(self, row: ObservationRow, clash: Conflict | None = None, unkeyed: int | None = None):
        self.row = row
        self.clash = clash
        self.unkeyed = unkeyed


def ensure_session(store: Store, record: Mapping[str, Any]) -> None:
    """The record's session exists and was active at the record's time."""
    if record.get("session"):
        store.sessions.ensure(
            record["session"],
            agent=record.get("agent") or "cli",
            project=record.get("project") or "default",
            at=record.get("created_at"),
        )


def put_observation(
    store: Store,
    record: ObservationInput,
    *,
    updated_at: int | None = None,
    arrived: bool = True,
    session_ready: bool = False,
    path: str | None = None,
    restore: Mapping[str, Any] | None = None,
) -> Put:
    """Insert or update the prepared ``record`` under its uid, in the caller's transaction. ``arrived``:
    it came from another machine (the key rule above; a local write has checked its key already);
    ``updated_at``: the time of its edit there; ``session_ready``: its session is made already (a bulk
    import); ``path`` and ``restore``: a new row's file name and the id its file recorded."""
    record = {**record, "links": []}  # the caller adds them, once the row exists
    if not session_ready:
        ensure_session(store, record)
    uid = record["uid"] or ""  # a local write's is given by now; an arrival's always is
    existing = store.observations.by_uid(uid) if uid else None
    clash, unkeyed = None, None
    holder = store.observations.key_holder(
        record["project"], record.get("key"), besides=existing["id"] if existing else None
    )
    if holder is not None and arrived:
        from cmem_cli.services.inbound.reconcile.rule import KEY_CLASH, Conflict

        created = record.get("created_at") or (existing["created_at"] if existing else None) or now_ms()
        if (holder["created_at"], holder["uid"]) <= (created, uid):
            clash = Conflict(holder["uid"], KEY_CLASH.format(key=record["key"]), other_uid=record["uid"])
            record["key"] = None
        else:
            clash = Conflict(uid, KEY_CLASH.format(key=record["key"]), other_uid=holder["uid"])
            unkeyed_row: ObservationRow = {**holder, "key": None}
            store.observations.update(holder["id"], unkeyed_row, updated_at=holder["updated_at"])
            unkeyed = int(holder["id"])
    row: ObservationRow  # read back after an update; built from the values after an insert
    if existing is not None:
        # who made this edit: the machine it arrived from says (None: it does not), else this home
        edited = (record.get("edited_on"), record.get("edited_by")) if arrived else store.writer()
        row = store.observations.update(existing["id"], record, updated_at=updated_at, edited=edited)
    else:
        record["created_at"] = record.get("created_at") or now_ms()
        if arrived:
            record.setdefault("machine", None)  # a memory that does not say whose it is was not written here
        row = store.observations.insert(record, updated_at=updated_at, path=path, restore=restore)
    return Put(row, clash, unkeyed)


def put_summary(
    store: Store, record: Mapping[str, Any], *, arrived: bool = True, summary_id: int | None = None
) -> SummaryRow:
    """Insert or update a summary under its uid, in the caller's transaction; returns the stored row.
    ``arrived``: from another machine (one that does not say whose it is stays unknown); ``summary_id``:
    a new summary's id as its file recorded it (local adoption of a rebuilt store)."""
    existing = store.summaries.by_uid(record["uid"]) if record.get("uid") else None
    if arrived or existing is None:  # a hand edit of a summary is no activity of its session
        ensure_session(store, record)
    if existing is not None:
        store.summaries.update(existing["id"], record)
        return store.summaries.get(existing["id"])
    return store.summaries.insert({"machine": None, **record} if arrived else record, summary_id=summary_id)


def put_session(store: Store, values: Mapping[str, Any]) -> None:
    """Write a session as another machine's version, already merged with this one's, says it."""
    store.sessions.put(values)


def put_prompt(store: Store, prompt: Mapping[str, Any]) -> int:
    """Store a prompt from another machine under its uid (prompts never change); returns the number it
    has here: its own, unless this home gave that number to another prompt of the session."""
    session = prompt["session"]
    store.sessions.ensure(session, agent=prompt["agent"], project=prompt["project"], at=prompt["created_at"])
    number = store.prompts.free_number(session, prompt["prompt_number"])
    store.prompts.insert(
        uid=prompt["uid"],
        session=session,
        number=number,
        text=prompt["text"],
        project=prompt["project"],
        agent=prompt["agent"],
        created_at=prompt["created_at"],
        machine=prompt.get("machine"),
        author=prompt.get("author"),
    )
    store.sessions.raise_prompt_counter(session, number)
    return int(number)
