"""Writing what the team database sent into this home, through the inbound writer git sync uses too.

Rows that arrive are validated and scrubbed like any input (``WriteService.prepare``), keep the time of their
edit (``updated_at``), and get their export files like any memory, in the caller's file transaction
(:class:`cmem_cli.services.inbound.reconcile.writer.Inbound`). The outbox's triggers are paused meanwhile
(:func:`cmem_cli.store.team_outbox.queue_on`), so nothing that arrives is pushed back (a merge or a
conflict copy a push made is on the server already).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import CmemError
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.timeutil import now_ms
from cmem_cli.services.inbound.reconcile.upsert import put_prompt, put_session
from cmem_cli.services.inbound.reconcile.writer import Inbound
from cmem_cli.services.write.service import FileTransaction, WriteService
from cmem_cli.store import team_outbox as outbox
from cmem_cli.team.records import anchor_of, observation_in
from cmem_cli.team.sessions import merged, same_session
from cmem_export import layout

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.sync_report import ConflictItem
    from cmem_cli.store.row_types import LinkTarget


def travelled_name(row: Mapping[str, Any]) -> str | None:
    """The one rule for a pulled memory's file name: the name its writer's home gave it (it travels with
    the row, as a file's name travels through git), when that is a name cmem gives this memory (a
    ``.md`` file in a project and a group folder, ending in the memory's uid tail, inside the tree);
    else None, and the standard name is made here."""
    path = row.get("path")
    if not isinstance(path, str):
        return None
    parts = path.split("/")
    if (
        len(parts) != 3
        or any(part != layout.safe_segment(part) for part in parts[:2])
        or not parts[2].endswith(layout.file_name_ending(str(row.get("uid"))))
        or parts[2] != layout.safe_segment(parts[2])
    ):
        return None
    return path


class Applier:
    """One batch of arrivals, written inside the caller's ``WriteService.write_transaction`` transaction through
    the inbound writer git sync uses too (:class:`cmem_cli.services.inbound.reconcile.writer.Inbound`)."""

    def __init__(
        self,
        memory: WriteService,
        files: FileTransaction,
        notes: list[str],
        conflicts: list[ConflictItem] | None = None,
    ):
        self.memory = memory
        self.store = memory.store
        self.files = files
        self.notes = notes
        self.writer = Inbound(
            memory.export, files, notes, conflicts if conflicts is not None else [], on_loop=self._push_again
        )

    def _push_again(self, obs_id: int) -> None:
        """A ``supersedes`` loop broken here: the server still holds it, so the memory whose link went is
        pushed again without it (a home that joins later, or pulls both links at once, finds no loop)."""
        self.store.team_outbox.enqueue(outbox.OBSERVATION, self.store.observations.get(obs_id)["uid"])

    # -- observations ---------------------------------------------------------------------------------
    def observation(self, row: Mapping[str, Any]) -> int | None:
        """Store ``row`` (a server row with ``links``) under its uid; None when it is refused (noted)."""
        try:
            record = self.memory.records.prepare(observation_in(row))
        except CmemError as exc:
            self.notes.append(f"{row.get('uid')}: not taken from the team database: {exc.message}")
            return None
        links: list[LinkTarget] = [
            {"type": link_type, "uid": uid} for link_type, uid in row.get("links") or []
        ]
        # the repository by name: a clone here, wherever, is found by it
        anchor = anchor_of(row) if row.get("anchor") is not None else None
        new = self.store.observations.by_uid(record["uid"] or "") is None
        obs_id = self.writer.observation(
            record,
            links,
            updated_at=int(row.get("updated_at") or now_ms()),
            anchor=anchor,
            relpath=travelled_name(row) if new else None,
        )
        return obs_id

    def add_links(self, links: list[tuple[str, str, str]]) -> None:
        """Links (from uid, to uid, type) whose target just arrived, from memories already here."""
        self.writer.add_links(links)

    def forget(self, kind: str, uid: str) -> bool:
        """Forget what another machine forgot (observations linking to it are written again)."""
        return self.writer.forget(outbox.SUMMARY if kind == outbox.SUMMARY else "observation", uid)

    # -- summaries ------------------------------------------------------------------------------------
    def summary(self, row: Mapping[str, Any]) -> int | None:
        try:
            values = self.memory.sessions.prepare_summary(
                {f: row.get(f) for f in SUMMARY_FIELDS if row.get(f)}
            )
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
            "author": row.get("author"),
        }
        return self.writer.summary(record)

    # -- sessions and prompts ------------------------------------------------------------------------
    def session(self, row: Mapping[str, Any]) -> bool:
        """Merge another machine's version of a session into this one's (one row per session id)."""
        try:
            values = self.memory.sessions.prepare_session(row)
        except CmemError as exc:
            self.notes.append(
                f"session {row.get('session_id')}: not taken from the team database: {exc.message}"
            )
            return False
        here = self.store.sessions.find(values["session_id"])
        if here is None:
            put_session(self.store, values)
        else:
            result = merged(values, here, concurrent=False)
            if not same_session(result, here):
                put_session(self.store, result)
        return True

    def prompt(self, row: Mapping[str, Any]) -> bool:
        """Store a prompt under its uid (once: prompts never change); its number stays unless this machine
        gave it to another prompt of the session, which a note says."""
        if self.store.prompts.by_uids([row["uid"]]):
            return True
        try:
            prompt = self.memory.sessions.prepare_prompt_row(row)
        except CmemError as exc:
            self.notes.append(f"prompt {row.get('uid')}: not taken from the team database: {exc.message}")
            return False
        number = put_prompt(
            self.store, {**prompt, "machine": row.get("machine"), "author": row.get("author")}
        )
        if number != prompt["prompt_number"]:
            self.notes.append(
                f"prompt {prompt['uid']}: number {prompt['prompt_number']} of session {prompt['session']} is "
                f"another prompt's here; numbered {number} here"
            )
        return True

    # -- at the end -------------------------------------------------------------------------------------
    def finish(self) -> None:
        """Set the links of what arrived (their targets may have come in the same batch), then write files."""
        self.writer.finish()
