"""Pulling what other homes pushed: every revision after the last one this home has, in revision order.

One read-only REPEATABLE READ transaction gives a consistent view; what it holds is applied page by page,
each page in one local transaction that also records how far this home has pulled, so a kill loses
nothing and repeats nothing. Revisions are committed in order on the server (see
:mod:`cmem_cli.team.server`), so "everything after N" never skips a row. A memory with a local change
still queued is left for the push, which settles it by the conflict rules; a row this home already has
at that revision (its own push) is skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmem_cli.core.fields import LINK_TYPES
from cmem_cli.core.timeutil import now_ms
from cmem_cli.services.inbound.reconcile.rule import Conflict, tell
from cmem_cli.services.write.service import WriteService
from cmem_cli.store import team_outbox as outbox
from cmem_cli.team import inbound, repository, server
from cmem_cli.team.apply import Applier
from cmem_cli.team.records import OBS_COLUMNS, SUMMARY_COLUMNS
from cmem_cli.team.sessions import PROMPT_COLUMNS, SESSION_COLUMNS

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import SyncReport

PAGE = 1000
PULLED = "pulled"  # team_state key: the last revision applied here
RESTORING = "restoring"  # team_state key: pulling again from the start after a restore (team.restore)
TABLES = {
    outbox.SESSION: "cmem_sessions",
    outbox.PROMPT: "cmem_prompts",
    outbox.OBSERVATION: "cmem_observations",
    outbox.SUMMARY: "cmem_summaries",
    "tombstone": "cmem_tombstones",
}


def _columns(conn: Any) -> dict[str, str]:
    """What a pull reads of each table (as this server has its columns: :func:`server.present`)."""
    return {
        outbox.SESSION: ", ".join(SESSION_COLUMNS),
        outbox.PROMPT: ", ".join(server.present(conn, PROMPT_COLUMNS)),
        outbox.OBSERVATION: ", ".join(server.present(conn, OBS_COLUMNS)),
        outbox.SUMMARY: ", ".join(server.present(conn, SUMMARY_COLUMNS)),
        "tombstone": "kind, uid",
    }


has_log = repository.has_log


def top_revision(conn: Any, log: bool | None = None) -> int:
    """The highest revision the server holds (every row this home has seen has it or a later one)."""
    tables = [*TABLES.values(), *(["cmem_conflicts"] if (has_log(conn) if log is None else log) else [])]
    return repository.top_revision(conn, tables)


class Puller:
    def __init__(self, memory: WriteService, conn: Any, projects: list[str], report: SyncReport):
        self.memory = memory
        self.local = memory.store  # this home's store: the outbox and base revisions
        self.pg = conn  # the team database's connection (its SQL: cmem_cli.team.repository)
        self.projects = projects
        self.report = report

    def run(self) -> None:
        values = self.local.team_outbox.settings()
        cursor = int(values.get(PULLED) or 0)
        self.restoring = values.get(RESTORING) == "1"
        start = cursor
        with repository.snapshot(self.pg):
            self._log = has_log(self.pg)
            horizon = top_revision(self.pg, self._log)
            while cursor < horizon:
                cursor = self._page(cursor, horizon)
            self._told(start, horizon)
        if self.restoring:  # the whole server pulled again: a restore is settled
            with self.local.transaction():
                self.local.team_outbox.put(**{RESTORING: None})

    def _told(self, start: int, horizon: int) -> None:
        """The conflicts settled since the last pull (the server's log, written by pushes): this home is
        told of them as they were. Its own are in the log too: told once by the sync that settled them
        (the report holds each once), and told still when that sync died before this home took the merge."""
        if start >= horizon or not self._log:
            return  # a server older than the log (a reader syncing before a writer migrated it)
        for uid, copy_uid, other_uid, resolution, fields in repository.conflicts_between(
            self.pg, start, horizon, self.projects
        ):
            item = Conflict(
                uid, resolution, copy_uid=copy_uid, other_uid=other_uid, fields=list(fields or [])
            )
            tell(self.report.conflicts, item.to_json())

    def _page(self, cursor: int, horizon: int) -> int:
        fetched = {
            name: repository.rows_between(
                self.pg, TABLES[name], columns, cursor, horizon, self.projects, PAGE
            )
            for name, columns in _columns(self.pg).items()
        }
        end = horizon
        for rows in fetched.values():
            if len(rows) == PAGE:
                end = min(end, rows[-1]["rev"])
        for name, rows in fetched.items():
            fetched[name] = [r for r in rows if r["rev"] <= end]
        self._apply(fetched, end)
        return end

    def _apply(self, fetched: dict[str, list[dict[str, Any]]], end: int) -> None:
        observations, tombs = fetched["observation"], fetched["tombstone"]
        uids = [r["uid"] for r in observations]
        links: dict[str, list[tuple[str, str]]] = {uid: [] for uid in uids}
        arriving: list[tuple[str, str, str]] = []
        if uids:
            for from_uid, to_uid, link_type in repository.links_touching(self.pg, uids):
                if from_uid in links:
                    links[from_uid].append((link_type, to_uid))
                else:
                    arriving.append((from_uid, to_uid, link_type))
        local = self.local
        with self.memory.write_transaction(fsync=False) as files:
            local.team_outbox.queue_on(False)
            applier = Applier(self.memory, files, self.report.notes, self.report.conflicts)
            for kind in (outbox.SESSION, outbox.PROMPT, outbox.OBSERVATION, outbox.SUMMARY):
                rows = fetched[kind]
                key = "session_id" if kind == outbox.SESSION else "uid"
                keys = [r[key] for r in rows]
                waiting = local.team_outbox.pending_uids(kind, keys)
                known = local.team_outbox.revs(kind, keys)
                forgotten = local.team_outbox.forgotten_at(kind, keys) if self.restoring else {}
                taken: list[str] = []
                for row in rows:
                    uid = row[key]
                    if uid in waiting or known.get(uid) == row["rev"]:
                        continue
                    if (
                        uid in forgotten
                        and isinstance(row.get("updated_at"), int)
                        and (row["updated_at"] <= forgotten[uid])
                    ):
                        # a restored server's copy of what this home forgot since: forgotten there again
                        local.team_outbox.set_rev(kind, uid, row["rev"])
                        local.team_outbox.enqueue(kind, uid)
                        continue
                    if kind == outbox.OBSERVATION:
                        row = {**row, "links": links.get(uid, [])}
                    reason = inbound.problem(kind, row)
                    if reason is not None:  # a row cmem never writes: skipped, said, and the sync goes on
                        item = inbound.skip(self.report, kind, row, reason, key)
                        local.team_outbox.note_skipped(kind, item["uid"], item["machine"], reason, row["rev"])
                        continue
                    taken.append(uid)
                    done: Any
                    if kind == outbox.OBSERVATION:
                        done = applier.observation(row)
                    elif kind == outbox.SUMMARY:
                        done = applier.summary(row)
                    elif kind == outbox.SESSION:
                        done = applier.session(row) or None
                    else:
                        done = applier.prompt(row) or None
                    if done is not None:
                        base = row if kind in (outbox.OBSERVATION, outbox.SUMMARY) else None
                        local.team_outbox.set_rev(kind, uid, row["rev"], base)
                        outbox.count(self.report, kind, "pulled")
                local.team_outbox.clear_skipped(kind, taken)
                local.team_outbox.unforget(kind, taken)
            for kind in (outbox.OBSERVATION, outbox.SUMMARY):
                rows = [t for t in tombs if t["kind"] == kind and isinstance(t["uid"], str)]
                local.team_outbox.clear_skipped(kind, [t["uid"] for t in rows])
                waiting = local.team_outbox.pending_uids(kind, [t["uid"] for t in rows])
                gone = []
                for tomb in rows:
                    if tomb["uid"] in waiting:
                        continue
                    if applier.forget(kind, tomb["uid"]):
                        self.report.forgotten += 1
                    local.team_outbox.set_rev(kind, tomb["uid"], None)
                    gone.append(tomb["uid"])
                local.team_outbox.remember_forgotten(kind, gone, now_ms())
            applier.add_links([link for link in arriving if link[2] in LINK_TYPES])
            applier.finish()
            local.team_outbox.put(**{PULLED: str(end)})
            local.team_outbox.queue_on(True)
