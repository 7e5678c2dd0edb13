"""Writing what the team database sent into this home, through the write service.

Rows that arrive are validated and scrubbed like any input (``Memory.prepare``), keep the time of their
edit (``updated_at``), and get their export files like any memory, in the caller's file transaction. The
outbox's triggers are paused meanwhile (:meth:`cmem_cli.store.team_outbox.TeamOutbox.queue_on`), so nothing that arrives
is pushed back; a conflict copy made here is queued by hand, because it must travel.
"""

from __future__ import annotations

from typing import Any

from cmem_cli.core.errors import CmemError
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.timeutil import now_ms
from cmem_cli.services import supersession
from cmem_cli.services.anchors import adopt_anchor
from cmem_cli.services.writes import FileTransaction, Memory
from cmem_cli.store import team_outbox as outbox
from cmem_cli.team.records import anchor_of, observation_in
from cmem_cli.team.sessions import merged, same_session
from cmem_export import layout


class Applier:
    """One batch of arrivals, written inside the caller's ``Memory.write_transaction`` transaction."""

    def __init__(self, memory: Memory, files: FileTransaction, notes: list[str]):
        self.memory = memory
        self.store = memory.store
        self.files = files
        self.notes = notes
        self._links: dict[int, list[tuple[str, str]]] = {}  # local id -> links (type, uid) to set
        self._export: set[int] = set()

    # -- observations ---------------------------------------------------------------------------------
    def observation(self, row: dict[str, Any], *, queue: bool = False) -> int | None:
        """Store ``row`` (a server row with ``links``) under its uid; None when it is refused (noted)."""
        store = self.store
        try:
            record = self.memory.prepare(observation_in(row))
        except CmemError as exc:
            self.notes.append(f"{row.get('uid')}: not taken from the team database: {exc.message}")
            return None
        record.pop("links", None)
        existing = store.observations.by_uid(record["uid"])
        # the write service's key rule (Memory.check_key): a pull cannot refuse another machine's memory,
        # so the key is dropped here instead, with a note (as git sync does)
        clash = store.observations.key_holder(
            record["project"], record.get("key"), besides=existing["id"] if existing else None
        )
        if clash is not None:
            self.notes.append(
                f"{record['uid']}: key {record['key']!r} is taken here by {clash['uid']}; dropped"
            )
            record["key"] = None
        if record.get("session"):
            store.sessions.ensure(
                record["session"],
                agent=record["agent"],
                project=record["project"],
                at=record.get("created_at"),
            )
        updated = int(row.get("updated_at") or now_ms())
        if existing is not None:
            obs_id = store.observations.update(existing["id"], record, updated_at=updated)["id"]
        else:
            obs_id = store.observations.insert(record, updated_at=updated)["id"]
        if row.get("anchor") is not None:  # the repository by name: a clone here, wherever, is found by it
            adopt_anchor(store, obs_id, anchor_of(row), self.memory.scrub_text)
        self._links[obs_id] = [tuple(link) for link in row.get("links") or []]
        self._export.add(obs_id)
        if queue:
            self.store.team_outbox.enqueue(outbox.OBSERVATION, record["uid"])
        return int(obs_id)

    def add_links(self, links: list[tuple[str, str, str]]) -> None:
        """Links (from uid, to uid, type) whose target just arrived, from memories already here."""
        for from_uid, to_uid, link_type in links:
            source = self.store.observations.by_uid(from_uid)
            target = self.store.observations.by_uid(to_uid)
            if source is None or target is None or source["id"] in self._links:
                continue
            if not any(
                link["uid"] == to_uid and link["type"] == link_type
                for link in self.store.links.outgoing(source["id"])
            ):
                self._link(source["id"], target["id"], link_type, from_uid)
                self._export.add(source["id"])

    def forget(self, kind: str, uid: str) -> bool:
        """Forget what another machine forgot (observations linking to it are written again)."""
        if kind == outbox.SUMMARY:
            row = self.store.summaries.by_uid(uid)
            if row is None:
                return False
            self.store.summaries.delete(row["id"])
            self.files.delete_after_commit(row.get("path"))
            return True
        row = self.store.observations.by_uid(uid)
        if row is None:
            return False
        self._export.discard(row["id"])
        self._links.pop(row["id"], None)
        self.memory.forget_rows([row["id"]], self.files)
        return True

    # -- summaries ------------------------------------------------------------------------------------
    def summary(self, row: dict[str, Any], *, queue: bool = False) -> int | None:
        store = self.store
        try:
            values = self.memory.prepare_summary({f: row.get(f) for f in SUMMARY_FIELDS if row.get(f)})
        except CmemError as exc:
            self.notes.append(f"{row.get('uid')}: not taken from the team database: {exc.message}")
            return None
        record = {
            **values,
            "uid": row["uid"],
            "session": row["session"],
            "project": row["project"],
            "agent": row["agent"],
            "created_at": row["created_at"],
            "updated_at": int(row.get("updated_at") or row["created_at"]),
            "machine": row.get("machine"),
        }
        store.sessions.ensure(
            record["session"], agent=record["agent"], project=record["project"], at=record["created_at"]
        )
        existing = store.summaries.by_uid(record["uid"])
        if existing is not None:
            store.summaries.update(existing["id"], record)
            summary_id = existing["id"]
        else:
            summary_id = store.summaries.insert(record)["id"]
        self.memory.export_summary(store.summaries.get(summary_id), self.files)
        if queue:
            store.team_outbox.enqueue(outbox.SUMMARY, record["uid"])
        return int(summary_id)

    # -- sessions and prompts ------------------------------------------------------------------------
    def session(self, row: dict[str, Any]) -> bool:
        """Merge another machine's version of a session into this one's (one row per session id)."""
        try:
            values = self.memory.prepare_session(row)
        except CmemError as exc:
            self.notes.append(
                f"session {row.get('session_id')}: not taken from the team database: {exc.message}"
            )
            return False
        here = self.store.sessions.find(values["session_id"])
        if here is None:
            self.store.sessions.put(values)
        else:
            result = merged(values, here, concurrent=False)
            if not same_session(result, here):
                self.store.sessions.put(result)
        return True

    def prompt(self, row: dict[str, Any]) -> bool:
        """Store a prompt under its uid (once: prompts never change); its number stays unless this machine
        gave it to another prompt of the session, which a note says."""
        store = self.store
        if store.prompts.by_uids([row["uid"]]):
            return True
        try:
            prompt = self.memory.prepare_prompt_row(row)
        except CmemError as exc:
            self.notes.append(f"prompt {row.get('uid')}: not taken from the team database: {exc.message}")
            return False
        session = prompt["session"]
        store.sessions.ensure(
            session, agent=prompt["agent"], project=prompt["project"], at=prompt["created_at"]
        )
        number = store.prompts.free_number(session, prompt["prompt_number"])
        if number != prompt["prompt_number"]:
            self.notes.append(
                f"prompt {prompt['uid']}: number {prompt['prompt_number']} of session {session} is another "
                f"prompt's here; numbered {number} here"
            )
        store.prompts.insert(
            uid=prompt["uid"],
            session=session,
            number=number,
            text=prompt["text"],
            project=prompt["project"],
            agent=prompt["agent"],
            created_at=prompt["created_at"],
            machine=row.get("machine"),
        )
        store.sessions.raise_prompt_counter(session, number)
        return True

    def _link(self, from_id: int, to_id: int, link_type: str, from_uid: str | None) -> None:
        """One link of what arrived; a ``supersedes`` loop is broken where it closes, with a note."""
        broken = supersession.add_arrived_link(self.store, from_id, to_id, link_type)
        if broken is not None:
            uid = from_uid or self.store.observations.get(from_id)["uid"]
            self.notes.append(f"{uid}: {broken.note}")
            if broken.rewrite is not None:
                self._export.add(broken.rewrite)
            # the server still holds the loop: the memory whose link went is pushed again without it, so a
            # home that joins later (or pulls both links at once) finds no loop to break
            oldest = self.store.observations.get(broken.rewrite or from_id)
            self.store.team_outbox.enqueue(outbox.OBSERVATION, oldest["uid"])

    # -- at the end -------------------------------------------------------------------------------------
    def finish(self) -> None:
        """Set the links of what arrived (their targets may have come in the same batch), then write files."""
        store = self.store
        for obs_id, links in self._links.items():
            for link in store.links.outgoing(obs_id):
                store.links.remove(obs_id, link["id"], link["type"])
            for link_type, uid in links:
                target = store.observations.by_uid(uid)
                if target is not None and target["id"] != obs_id:
                    self._link(obs_id, target["id"], link_type, None)
        arrived = [row for row in map(store.observations.find, sorted(self._export)) if row is not None]
        for new in arrived:  # every arrival named before any file is written: a file names its links' paths
            if not new.get("path"):
                store.observations.set_export(
                    new["id"], layout.observation_relpath(new), new.get("tokens") or 0
                )
        for new in arrived:  # files name their links' paths: after every row is in
            self.memory.export_observation(store.observations.find(new["id"]) or new, self.files)
        referrers = {link["id"] for obs_id in self._export for link in store.links.incoming(obs_id)}
        for obs_id in sorted(referrers - self._export):
            row = store.observations.find(obs_id)
            if row is not None:
                self.memory.export_observation(row, self.files)
