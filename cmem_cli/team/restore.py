"""A team database that went back in time: restored from a pg_dump, a point-in-time recovery, a copy.

Its revisions then start again from the backup's: a home that had pulled past them would pull nothing
until the server caught up (and then skip what others pushed meanwhile), and what was pushed between
the backup and the restore would be gone from the server for good. So every sync first compares the
server with what this home remembers of it:

- its **identity**: the cluster's system identifier, the database's and cmem's table's OIDs (a reload
  from a dump makes new ones), its timeline (a point-in-time recovery starts a new one) and cmem's own
  ``epoch`` (``cmem_meta``);
- its **high-water mark**: the highest revision this home has seen. A server whose revisions end below
  it went back in time, whatever its identity says (a copy of its files put back).

When either says so, this home starts again: it forgets its base revisions, queues everything it holds
(marked ``RESTORED``: on the server, the later edit of a memory stays, with no conflict copy, since this
home cannot tell what the server's copy was based on) and pulls from the first revision. All that is one
local transaction, so a sync killed during the re-pull carries on with the next one. A home that saw
the restore by its high-water mark alone also gives the server a new epoch, so that every other home
starts again too (one that had not pulled past the backup could not tell otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmem_cli.services.write.service import WriteService
from cmem_cli.team import repository, server
from cmem_cli.team.pull import PULLED, RESTORING, top_revision

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import SyncReport

SERVER = "server"  # team_state key: the server's identity as this home last saw it


def identity(conn: Any) -> str:
    """Who the server is (see the module's docstring); parts a role may not read are left empty."""
    return ":".join(repository.identity_parts(conn))


def check(memory: WriteService, conn: Any, report: SyncReport) -> bool:
    """Compare the server with what this home remembers of it; start again when it went back in time.
    True when this sync started again (``report.restored``, and a note)."""
    local = memory.store
    values = local.team_outbox.settings()
    now = identity(conn)
    known = values.get(SERVER)
    high = local.team_outbox.high_water(int(values.get(PULLED) or 0))
    top = top_revision(conn)
    changed = known is not None and _differs(known, now)
    if not changed and top >= high:
        if known is None:
            with local.transaction():
                local.team_outbox.put(**{SERVER: now})
        return False
    why = (
        "it is another server or was restored (its identity changed)"
        if changed
        else f"its revisions end at {top}, this home has seen {high}"
    )
    if not changed:  # the others may not see it: a new epoch tells them
        now = _new_epoch(conn, now)
    with local.transaction():
        queued = local.team_outbox.start_again()
        local.team_outbox.put(**{PULLED: "0", SERVER: now, RESTORING: "1"})
    report.restored = True
    report.notes.append(
        f"the team database went back in time ({why}): pulling it again from the start and pushing "
        f"what it lacks ({queued} queued)"
    )
    return True


def _differs(known: str, now: str) -> bool:
    """Does a part both identities hold differ? (A part a role could not read, or a server without cmem's
    epoch yet, is empty: its appearing or going is no restore.)"""
    old, new = known.split(":"), now.split(":")
    if len(old) != len(new):
        return known != now
    return any(a and b and a != b for a, b in zip(old, new, strict=True))


def _new_epoch(conn: Any, current: str) -> str:
    """Give the server a new epoch (a read-only role cannot: then only this home starts again)."""
    repository.new_epoch(conn, server.WRITE_LOCK)
    return identity(conn) or current
