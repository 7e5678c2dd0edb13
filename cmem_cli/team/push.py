"""Pushing the outbox: each queued observation or summary goes to the server by uid, by the one merge rule
git sync follows too (:mod:`cmem_cli.services.inbound.reconcile.rule`).

For each queued uid the server's row is compared with the one this home last saw (its base: the row and
its revision, kept when pulled or pushed):

| here | on the server | result |
|---|---|---|
| changed | unchanged since the base (or absent) | pushed |
| changed | changed since the base, same content | nothing to do (the base moves on) |
| changed | changed since the base, other content | merged field by field against the base: fields one side changed take its value, links merge as sets, the later anchor stays; a field both changed differently takes the later edit's value and the other side becomes a ``(conflict copy)`` (derived uid) linked ``related`` to it. Server and home take the merge |
| forgotten | unchanged since the base | deleted there, a tombstone left (every home forgets it) |
| forgotten | changed since the base | the edit is kept: it comes back here |
| edited | forgotten (a tombstone) | the edit is kept: it comes back everywhere |
| never synced (joining) | forgotten (a tombstone) | forgotten here too: a forget stays forgotten |

A conflict (a copy made, an edit that beat a forget) is told here and logged on the server
(``cmem_conflicts``), so every other home is told at its next pull.

The server side of a batch is one transaction under the write lock; this home's side (acknowledging the
outbox, base revisions, a server's winning edit, copies) is one local transaction after it. A kill between
the two only repeats work: pushing the same content again finds it there and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cmem_cli.core.timeutil import now_ms
from cmem_cli.services.inbound.reconcile.rule import (
    EDIT_BEATS_FORGET,
    Conflict,
    merge,
    same_field_conflict,
    tell,
)
from cmem_cli.services.write.service import WriteService
from cmem_cli.store import team_outbox as outbox
from cmem_cli.team import inbound, outgoing, repository, server
from cmem_cli.team.apply import Applier
from cmem_cli.team.records import (
    OBS_COLUMNS,
    SUMMARY_COLUMNS,
    anchor_of,
    newer_anchor,
    row_of,
    same_anchor,
    same_observation,
    same_summary,
    server_params,
    side,
)
from cmem_cli.team.sessions import (
    PROMPT_COLUMNS,
    SESSION_COLUMNS,
    merged,
    prompt_out,
    same_session,
    session_out,
)
from cmem_cli.team.vectors import VectorMaker

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import ConflictItem, SyncReport

BATCH = 500
MAX_ROUNDS = 10_000  # a runaway guard: each round acknowledges at least one entry
FORGOTTEN_BEFORE_JOINING = "forgotten on another machine before this one joined: forgotten"


@dataclass(frozen=True)
class RecordKind:
    """How one kind of memory differs on the push ladder (:meth:`Pusher._records`); nothing else does."""

    table: str  # the server's table
    columns: tuple[str, ...]  # the server's columns of it
    same_content: Callable[[Mapping[str, Any], Mapping[str, Any]], bool]  # the fields a person edits
    links: bool  # links and a code anchor travel with it (links replaced as a set on each write)

    def same(self, mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
        """Nothing to send: the same fields and, for a kind with links, the same code anchor."""
        return self.same_content(mine, theirs) and (not self.links or same_anchor(mine, theirs))


RECORDS = {
    outbox.OBSERVATION: RecordKind("cmem_observations", OBS_COLUMNS, same_observation, links=True),
    outbox.SUMMARY: RecordKind("cmem_summaries", SUMMARY_COLUMNS, same_summary, links=False),
}


class Pusher:
    """Push everything queued; results go to ``report`` (pushed, forgotten, conflicts, notes)."""

    def __init__(
        self, memory: WriteService, conn: Any, machine: str, report: SyncReport, vectors: VectorMaker
    ):
        self.memory = memory
        self.local = memory.store  # this home's store: the outbox and base revisions
        self.conn = conn
        self.machine = machine
        self.report = report
        self.vectors = vectors
        self._writable: bool | None = None

    def _may_write(self) -> bool:
        """May this role write the memories' table? Asked once per push, before embedding: a reader's push
        is refused, and embedding its queued writes at every sync only burnt CPU."""
        if self._writable is None:
            self._writable = server.may_write(self.conn)
        return self._writable

    def run(self) -> None:
        seen: set[int] = set()
        for _ in range(MAX_ROUNDS):
            entries = [e for e in self.local.team_outbox.pending(limit=BATCH) if e.seq not in seen]
            if not entries:
                return
            seen.update(e.seq for e in entries)
            self._batch(entries)

    # -- one batch ------------------------------------------------------------------------------------
    def _batch(self, entries: list[outbox.Entry]) -> None:
        store = self.memory.store
        obs = [e for e in entries if e.kind == outbox.OBSERVATION]
        sums = [e for e in entries if e.kind == outbox.SUMMARY]
        sessions = [e for e in entries if e.kind == outbox.SESSION]
        prompts = [e for e in entries if e.kind == outbox.PROMPT]
        local_sessions = {
            sid: session_out(row, self.machine)
            for sid, row in store.sessions.by_ids([e.uid for e in sessions]).items()
        }
        local_prompts = {
            uid: prompt_out(row, self.machine)
            for uid, row in store.prompts.by_uids([e.uid for e in prompts]).items()
        }
        local_obs = outgoing.observations(self.memory, [e.uid for e in obs], self.machine)
        local_sums = outgoing.summaries(self.memory, [e.uid for e in sums], self.machine)
        bases = {
            outbox.OBSERVATION: self.local.team_outbox.revs(outbox.OBSERVATION, [e.uid for e in obs]),
            outbox.SUMMARY: self.local.team_outbox.revs(outbox.SUMMARY, [e.uid for e in sums]),
            outbox.SESSION: self.local.team_outbox.revs(outbox.SESSION, [e.uid for e in sessions]),
        }
        embedded = (
            self.vectors.embed([*local_obs.values()], [*local_sums.values()])
            if (local_obs or local_sums) and self._may_write()
            else {}
        )
        plan = _Plan()

        def on_server() -> None:
            plan.reset()
            self._revs: list[int] = []
            self._want = (
                3 * len(entries) + 1
            )  # each entry, a conflict copy and a conflict log at most for each
            self._writes: dict[str, list[Any]] = {"insert": [], "update": [], "links": []}
            with self.conn.transaction():
                repository.take_write_lock(self.conn, server.WRITE_LOCK)
                self._records(outbox.OBSERVATION, obs, local_obs, bases[outbox.OBSERVATION], plan)
                self._records(outbox.SUMMARY, sums, local_sums, bases[outbox.SUMMARY], plan)
                self._sessions(sessions, local_sessions, bases[outbox.SESSION], plan)
                self._prompts(prompts, local_prompts, plan)
                self.vectors.store(self.conn, {**embedded, **self._merged_vectors(plan)}, plan.pushed_uids)
                self._log_conflicts(plan)
                if plan.last_rev:
                    repository.notify(self.conn, server.CHANNEL, plan.last_rev)

        server.with_retries(on_server)
        self._here(entries, plan)

    def _log_conflicts(self, plan: _Plan) -> None:
        """Write this batch's conflicts to the server's log: every other home is told at its next pull."""
        rows = []
        for kind, item, project in plan.logged:
            rows.append(
                (self._rev(), kind, item.uid, item.copy_uid, item.other_uid, item.resolution,
                 json.dumps(item.fields), project, self.machine)
            )  # fmt: skip
        if rows:
            repository.log_conflicts(self.conn, rows)
            plan.last_rev = max(plan.last_rev, max(r[0] for r in rows))

    def _rev(self) -> int:
        """The next revision, from a block taken under the write lock (one round trip per batch; a
        revision left unused is a gap, which pulls do not mind)."""
        if not self._revs:
            self._revs = repository.next_revisions(self.conn, self._want)
            self._revs.reverse()
        return self._revs.pop()

    def _flush(self) -> None:
        """Send the batch's buffered rows and links, a statement for each kind (pipelined by psycopg)."""
        columns = [*server.present(self.conn, OBS_COLUMNS), "rev"]
        w = self._writes
        repository.write_observations(self.conn, columns, w["insert"], w["update"], w["links"])
        self._writes = {"insert": [], "update": [], "links": []}

    def _records(
        self,
        kind: str,
        entries: list[outbox.Entry],
        local: Mapping[str, Mapping[str, Any]],
        bases: dict[str, int],
        plan: _Plan,
    ) -> None:
        """The one push ladder for the memories (observations and summaries, :data:`RECORDS` says how
        each differs): the server's rows of the batch against this home's and their bases."""
        spec = RECORDS[kind]
        write = self._writer(kind)
        base_rows = self.local.team_outbox.bases(kind, [e.uid for e in entries])
        if not entries:
            return
        uids = [e.uid for e in entries]
        names = ", ".join(c for c in server.present(self.conn, spec.columns) if c != "uid")
        remote = {r["uid"]: r for r in repository.rows_for_update(self.conn, spec.table, names, uids)}
        if spec.links:
            self._links_into(remote, uids)
        tombs = repository.tombstones(self.conn, kind, uids)
        for entry in entries:
            mine, theirs, base = local.get(entry.uid), remote.get(entry.uid), bases.get(entry.uid)
            if self._foreign(kind, theirs, mine, plan):
                continue
            if entry.snapshot == outbox.RESTORED and self._restored(kind, entry, mine, theirs, tombs, plan):
                continue
            if mine is None:
                if theirs is None:
                    plan.rev(kind, entry.uid, None)
                elif base == theirs["rev"]:
                    self._tombstone(kind, entry.uid, theirs["project"], plan)
                    plan.forgotten_there += 1
                else:
                    plan.bring(kind, theirs)
                    plan.conflict(kind, Conflict(entry.uid, EDIT_BEATS_FORGET), theirs["project"])
            elif theirs is None:
                if entry.uid in tombs and entry.snapshot:  # joining: a forget stays forgotten, and is told
                    plan.forget(kind, entry.uid)
                    plan.conflict(kind, Conflict(entry.uid, FORGOTTEN_BEFORE_JOINING), None)
                else:
                    if entry.uid in tombs:
                        plan.conflict(kind, Conflict(entry.uid, EDIT_BEATS_FORGET), mine["project"])
                        repository.drop_tombstone(self.conn, kind, entry.uid)
                    write(mine, plan, insert=True)
            elif spec.same(mine, theirs):
                plan.rev(kind, entry.uid, theirs["rev"], theirs)
            elif base == theirs["rev"]:
                write(mine, plan, insert=False)
            else:  # both changed it since the base: the one rule, field by field
                self._merge(kind, mine, theirs, base_rows.get(entry.uid), plan)
        self._flush()

    def _links_into(self, remote: dict[str, dict[str, Any]], uids: list[str]) -> None:
        """The server's links of these observations, as each row's ``links`` (type, to_uid)."""
        for link in repository.links_from(self.conn, uids):
            remote[link["from_uid"]].setdefault("links", []).append((link["type"], link["to_uid"]))
        for row in remote.values():
            row.setdefault("links", [])

    def _writer(self, kind: str) -> Callable[..., int]:
        return self._write_observation if kind == outbox.OBSERVATION else self._write_summary

    def _restored(
        self,
        kind: str,
        entry: outbox.Entry,
        mine: Mapping[str, Any] | None,
        theirs: Mapping[str, Any] | None,
        tombs: dict[str, int],
        plan: _Plan,
    ) -> bool:
        """After a restore (cmem_cli.team.restore) this home's bases are gone: it cannot tell a concurrent
        edit from one the restore undid, so the later edit stays, with no copy; a forget queued here
        wins; a tombstone wins over an edit made before it. True when settled so (an identical row is
        left to the ordinary rules)."""
        write, same = self._writer(kind), RECORDS[kind].same_content
        if mine is None:
            if theirs is not None:
                self._tombstone(kind, entry.uid, theirs["project"], plan)
                plan.forgotten_there += 1
            else:
                plan.rev(kind, entry.uid, None)
            return True
        if theirs is None:
            if entry.uid in tombs and (tombs[entry.uid] or 0) >= mine["updated_at"]:
                plan.forget(kind, entry.uid)
                return True
            if entry.uid in tombs:
                repository.drop_tombstone(self.conn, kind, entry.uid)
            write(mine, plan, insert=True)
            return True
        if RECORDS[kind].same(mine, theirs):
            return False
        if same(mine, theirs):
            if newer_anchor(mine, theirs):
                write(mine, plan, insert=False)
            else:
                plan.bring(kind, theirs)
        elif _later(mine, theirs):
            write(mine, plan, insert=False)
        else:
            plan.bring(kind, theirs)
        return True

    def _foreign(
        self, kind: str, theirs: Mapping[str, Any] | None, mine: Mapping[str, Any] | None, plan: _Plan
    ) -> bool:
        """Is the server's row one cmem never writes (cmem_cli.team.inbound)? Then this home's version
        replaces it (a forget here deletes it there), and the report says so; True when settled so."""
        if theirs is None:
            return False
        key = "session_id" if kind == outbox.SESSION else "uid"
        reason = inbound.problem(kind, theirs)
        if reason is None:
            return False
        plan.skipped.append((kind, theirs, reason, key))
        if kind == outbox.SESSION:
            assert mine is not None
            self._write_session(mine, plan, insert=False)
        elif mine is None:
            project = theirs.get("project")
            self._tombstone(kind, theirs[key], project if isinstance(project, str) else "", plan)
            plan.forgotten_there += 1
        elif kind == outbox.OBSERVATION:
            self._write_observation(mine, plan, insert=False)
        else:
            self._write_summary(mine, plan, insert=False)
        return True

    def _write_observation(
        self, row: Mapping[str, Any], plan: _Plan, *, insert: bool, own: bool = True
    ) -> int:
        """Insert or update one observation and replace its links; ``own`` False: a conflict copy (no
        vector of this home's is stored for it). Returns its new revision."""
        rev = self._rev()
        params = server_params(row, OBS_COLUMNS)
        params["rev"] = rev
        self._writes["insert" if insert else "update"].append(params)
        self._writes["links"] += [(row["uid"], uid, link_type) for link_type, uid in row.get("links") or []]
        plan.pushed(outbox.OBSERVATION, row["uid"], rev, own, row)
        return rev

    def _merge(
        self,
        kind: str,
        mine: Mapping[str, Any],
        theirs: Mapping[str, Any],
        base: Mapping[str, Any] | None,
        plan: _Plan,
    ) -> None:
        """Both homes changed this memory since the base: merged field by field by the one rule
        (:mod:`cmem_cli.services.inbound.reconcile.rule`, as git sync merges). The server takes the merged memory
        (and the conflict copy, when one field was changed on both sides) and so does this home; the
        conflict is logged on the server so that every other home is told too."""
        spec, write = RECORDS[kind], self._writer(kind)
        result = merge(side(kind, base) if base else None, side(kind, mine), side(kind, theirs))
        kept = row_of(result.side)
        if spec.links:
            kept["anchor"] = anchor_of(kept)
        if spec.same(kept, theirs):
            rev = int(theirs["rev"])
            plan.rev(kind, mine["uid"], rev, theirs)
        else:
            rev = write(kept, plan, insert=False)
            if not spec.same_content(kept, mine):  # not this home's text: its vector is made from the merge
                plan.texts.append((kind, kept))
        if not spec.same(kept, mine):
            plan.bring(kind, {**kept, "rev": rev})
        copy = result.copy
        if copy is None:
            return
        row = row_of(copy)
        if not self._exists(kind, copy.uid):  # made before (a sync run again): one copy, not two
            plan.bring(kind, {**row, "rev": write(row, plan, insert=True, own=False)})
            plan.texts.append((kind, row))
        plan.conflict(kind, same_field_conflict(result, copy), str(mine.get("project") or ""))

    def _merged_vectors(self, plan: _Plan) -> dict[tuple[str, str], Any]:
        """Vectors for the merges and conflict copies this batch wrote (rare: made here, under the lock)."""
        observations = [row for kind, row in plan.texts if kind == outbox.OBSERVATION]
        summaries = [row for kind, row in plan.texts if kind == outbox.SUMMARY]
        made = self.vectors.embed(observations, summaries)
        plan.pushed_uids.update(made)
        return made

    def _exists(self, kind: str, uid: str) -> bool:
        return repository.exists(self.conn, RECORDS[kind].table, uid)

    def _tombstone(self, kind: str, uid: str, project: str, plan: _Plan) -> None:
        rev = self._rev()
        repository.tombstone(
            self.conn,
            RECORDS[kind].table,
            kind,
            uid,
            rev=rev,
            project=project,
            machine=self.machine,
            at=now_ms(),
        )
        plan.rev(kind, uid, None)
        plan.tombstoned.append((kind, uid))
        plan.last_rev = max(plan.last_rev, rev)

    def _write_summary(self, row: Mapping[str, Any], plan: _Plan, *, insert: bool, own: bool = True) -> int:
        rev = self._rev()
        params = {**server_params(row, SUMMARY_COLUMNS), "rev": rev}
        columns = [*server.present(self.conn, SUMMARY_COLUMNS), "rev"]
        repository.write_summary(self.conn, columns, params, insert=insert)
        plan.pushed(outbox.SUMMARY, row["uid"], rev, own, row)
        return rev

    def _sessions(
        self,
        entries: list[outbox.Entry],
        local: Mapping[str, Mapping[str, Any]],
        bases: dict[str, int],
        plan: _Plan,
    ) -> None:
        """Sessions merge (one row per session id): this home's changes on the server's row, or both
        machines' when the server's changed since this home last saw it (:func:`sessions.merged`)."""
        if not entries:
            return
        ids = [e.uid for e in entries]
        remote = {r["session_id"]: r for r in repository.sessions_for_update(self.conn, SESSION_COLUMNS, ids)}
        kind = outbox.SESSION
        for entry in entries:
            mine, theirs = local.get(entry.uid), remote.get(entry.uid)
            if mine is not None and self._foreign(kind, theirs, mine, plan):
                continue
            if mine is None:  # sessions are never deleted: nothing to send
                plan.rev(kind, entry.uid, theirs["rev"] if theirs else None)
                continue
            if theirs is None:
                self._write_session(mine, plan, insert=True)
                continue
            result = merged(mine, theirs, concurrent=bases.get(entry.uid) != theirs["rev"])
            if same_session(result, theirs):
                plan.rev(kind, entry.uid, theirs["rev"])
            else:
                self._write_session(result, plan, insert=False)
            if not same_session(result, mine):
                plan.sessions_here.append(result)

    def _write_session(self, row: Mapping[str, Any], plan: _Plan, *, insert: bool) -> None:
        rev = self._rev()
        params = {**{c: row.get(c) for c in SESSION_COLUMNS}, "rev": rev, "machine": self.machine}
        repository.write_session(self.conn, [*SESSION_COLUMNS, "rev"], params, insert=insert)
        plan.pushed(outbox.SESSION, row["session_id"], rev, True, None)

    def _prompts(
        self, entries: list[outbox.Entry], local: Mapping[str, Mapping[str, Any]], plan: _Plan
    ) -> None:
        """Prompts never change: one the server has already is acknowledged, the others inserted."""
        if not entries:
            return
        uids = [e.uid for e in entries]
        there = repository.prompt_revisions(self.conn, uids)
        rows = []
        for entry in entries:
            mine = local.get(entry.uid)
            if entry.uid in there or mine is None:
                plan.rev(outbox.PROMPT, entry.uid, there.get(entry.uid))
                continue
            rev = self._rev()
            rows.append({**mine, "rev": rev})
            plan.pushed(outbox.PROMPT, entry.uid, rev, True, None)
        if rows:
            repository.insert_prompts(self.conn, [*server.present(self.conn, PROMPT_COLUMNS), "rev"], rows)

    # -- this home's side -------------------------------------------------------------------------------
    def _here(self, entries: list[outbox.Entry], plan: _Plan) -> None:
        """Acknowledge the batch and apply what the server decided, in one local transaction. An entry
        queued again meanwhile (a newer local edit) keeps its place and its text: only its base moves on
        when the server took this home's earlier version."""
        with self.memory.write_transaction(fsync=False) as files:
            local = self.local
            still = local.team_outbox.present([e.seq for e in entries])
            requeued = {e.uid for e in entries if e.seq not in still}
            local.team_outbox.queue_on(False)
            applier = Applier(self.memory, files, self.report.notes, self.report.conflicts)
            for kind, row, reason, key in plan.skipped:  # replaced by this home's version: said, not kept
                inbound.skip(self.report, kind, row, reason, key)
            for (kind, uid), rev in plan.revs.items():
                if uid not in requeued or (kind, uid) in plan.pushed_keys:
                    local.team_outbox.set_rev(kind, uid, rev, plan.bases.get((kind, uid)))
            for kind, row in plan.brought:
                if row["uid"] in requeued:
                    continue
                (applier.observation if kind == outbox.OBSERVATION else applier.summary)(row)
            for kind, uid in plan.forgotten:
                if uid not in requeued and applier.forget(kind, uid):
                    self.report.forgotten += 1
            for row in plan.sessions_here:
                if row["session_id"] not in requeued:
                    applier.session(row)
            applier.finish()
            for kind in (outbox.OBSERVATION, outbox.SUMMARY):  # forgotten here and there: remembered
                gone = [uid for k, uid in [*plan.tombstoned, *plan.forgotten] if k == kind]
                local.team_outbox.remember_forgotten(kind, gone, now_ms())
            for kind in {kind for kind, _ in plan.pushed_keys}:  # a row of the wrong shape replaced
                local.team_outbox.clear_skipped(kind, [uid for k, uid in plan.pushed_keys if k == kind])
            local.team_outbox.acknowledge(sorted(still))
            local.team_outbox.queue_on(True)
        for kind, _ in plan.pushed_keys:
            outbox.count(self.report, kind, "pushed")
        self.report.forgotten_there += plan.forgotten_there
        for item in plan.conflicts:
            tell(self.report.conflicts, item)


class _Plan:
    """What one batch decided on the server, for this home to apply once the server has committed."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.revs: dict[tuple[str, str], int | None] = {}
        self.bases: dict[tuple[str, str], Mapping[str, Any]] = {}  # the server's row at that revision
        self.brought: list[tuple[str, Mapping[str, Any]]] = []
        self.forgotten: list[tuple[str, str]] = []
        self.logged: list[tuple[str, Conflict, str]] = []  # conflicts every other home is told of
        self.sessions_here: list[dict[str, Any]] = []  # merged sessions this home takes
        self.conflicts: list[ConflictItem] = []
        self.pushed_keys: set[tuple[str, str]] = set()
        self.pushed_uids: set[tuple[str, str]] = set()  # own rows pushed: their vectors go with them
        self.texts: list[tuple[str, Mapping[str, Any]]] = []  # merges and copies made here: vectors to make
        self.skipped: list[tuple[str, Mapping[str, Any], str, str]] = []  # server rows cmem never writes
        self.tombstoned: list[tuple[str, str]] = []  # this home's forgets, now on the server
        self.forgotten_there = 0
        self.last_rev = 0

    def rev(self, kind: str, uid: str, rev: int | None, base: Mapping[str, Any] | None = None) -> None:
        self.revs[(kind, uid)] = rev
        if base is not None:
            self.bases[(kind, uid)] = base

    def pushed(self, kind: str, uid: str, rev: int, own: bool, row: Mapping[str, Any] | None) -> None:
        if own:
            self.rev(kind, uid, rev, row)
            self.pushed_keys.add((kind, uid))
            self.pushed_uids.add((kind, uid))
        self.last_rev = max(self.last_rev, rev)

    def bring(self, kind: str, row: Mapping[str, Any]) -> None:
        """This home takes the server's row (an edit that beat a forget, a merge, a conflict copy)."""
        self.brought.append((kind, row))
        self.rev(kind, row["uid"], row["rev"], row)

    def forget(self, kind: str, uid: str) -> None:
        self.forgotten.append((kind, uid))
        self.revs[(kind, uid)] = None

    def conflict(self, kind: str, item: Conflict, project: str | None) -> None:
        """Tell this home; with a ``project``, log it on the server so that every other home is told."""
        self.conflicts.append(item.to_json())
        if project is not None:
            self.logged.append((kind, item, project))


def _later(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Is this home's edit the later one? Ties go the same way on every machine (by content, then machine)."""
    return (mine["updated_at"], _canonical(mine)) > (theirs["updated_at"], _canonical(theirs))


def _canonical(row: Mapping[str, Any]) -> str:
    """The row as the same text on every machine, whether read from this store or from the server."""
    values = {k: v for k, v in row.items() if k != "rev"}
    if "anchor" in values:
        values["anchor"] = anchor_of(values)
    return json.dumps(values, sort_keys=True, default=list, ensure_ascii=False)
