"""The observation_links and pending_links tables: typed links between memories, and links that wait for a
memory this store does not hold yet (it arrives later by sync)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.timeutil import now_ms
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from cmem_cli.store.row_types import LinkedRow, PendingLinkRow


class LinkRepository(Repository):
    """Links between observations, and links waiting for a uid this store does not hold yet."""

    def add(self, from_id: int, to_id: int, link_type: str) -> bool:
        """Add a link; False when it was already there."""
        if from_id == to_id:
            raise InvalidInput("an observation cannot link to itself")
        self._store.observations.get(to_id)
        self.db.execute(
            "INSERT OR IGNORE INTO observation_links (from_id, to_id, type, created_at) VALUES (?, ?, ?, ?)",
            (from_id, to_id, link_type, now_ms()),
        )
        return self.db.conn.changes() > 0

    def remove(self, from_id: int, to_id: int, link_type: str | None = None) -> int:
        sql = "DELETE FROM observation_links WHERE from_id = ? AND to_id = ?"
        params: list[Any] = [from_id, to_id]
        if link_type:
            sql += " AND type = ?"
            params.append(link_type)
        self.db.execute(sql, params)
        return self.db.conn.changes()

    def outgoing(self, obs_id: int) -> list[LinkedRow]:
        """Outgoing links with the target's id, uid, title and export path (for files and `get --links`)."""
        return self._linked(
            "SELECT l.type, o.id, o.uid, o.title, o.path FROM observation_links l "
            "JOIN observations o ON o.id = l.to_id WHERE l.from_id = ? ORDER BY l.created_at, o.id",
            (obs_id,),
        )

    def incoming(self, obs_id: int) -> list[LinkedRow]:
        return self._linked(
            "SELECT l.type, o.id, o.uid, o.title, o.path FROM observation_links l "
            "JOIN observations o ON o.id = l.from_id WHERE l.to_id = ? ORDER BY l.created_at, o.id",
            (obs_id,),
        )

    def _linked(self, sql: str, params: tuple[int]) -> list[LinkedRow]:
        return cast("list[LinkedRow]", self.db.query(sql, params))

    def all_outgoing(self) -> dict[int, list[LinkedRow]]:
        """:meth:`outgoing` of every observation that has links, in one query."""
        found: dict[int, list[LinkedRow]] = {}
        for row in self.db.query(
            "SELECT l.from_id, l.type, o.id, o.uid, o.title, o.path FROM observation_links l "
            "JOIN observations o ON o.id = l.to_id ORDER BY l.from_id, l.created_at, o.id"
        ):
            found.setdefault(row.pop("from_id"), []).append(cast("LinkedRow", row))
        return found

    def add_pending(
        self, from_id: int, uid: str, link_type: str, title: str | None, href: str | None
    ) -> None:
        """A link to a uid this store does not hold yet, kept (with the title and href its file showed)."""
        self.db.execute(
            "INSERT INTO pending_links (from_id, to_uid, type, title, href) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (from_id, to_uid, type) DO UPDATE SET title = excluded.title, href = excluded.href",
            (from_id, uid, link_type, title, href),
        )

    def pending_from(self, obs_id: int) -> list[PendingLinkRow]:
        rows = self.db.query(
            "SELECT type, to_uid AS uid, title, href FROM pending_links WHERE from_id = ? ORDER BY rowid",
            (obs_id,),
        )
        return cast("list[PendingLinkRow]", rows)

    def all_pending(self) -> dict[int, list[PendingLinkRow]]:
        """:meth:`pending_from` of every observation at once (a whole-store pass)."""
        found: dict[int, list[PendingLinkRow]] = {}
        for row in self.db.query(
            "SELECT from_id, type, to_uid AS uid, title, href FROM pending_links ORDER BY rowid"
        ):
            found.setdefault(row.pop("from_id"), []).append(cast("PendingLinkRow", row))
        return found

    def clear_pending_from(self, obs_id: int) -> None:
        self.db.execute("DELETE FROM pending_links WHERE from_id = ?", (obs_id,))

    def take_pending_to(self, uid: str) -> list[tuple[int, str]]:
        """(from id, type) of every link waiting for ``uid``, removed from the waiting list."""
        rows = [
            (r[0], r[1])
            for r in self.db.execute("SELECT from_id, type FROM pending_links WHERE to_uid = ?", (uid,))
        ]
        if rows:
            self.db.execute("DELETE FROM pending_links WHERE to_uid = ?", (uid,))
        return rows
