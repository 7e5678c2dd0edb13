"""Small facts that are no record (table ``state``): what a pass last did, kept between runs."""

from __future__ import annotations

from cmem_cli.store.rows import Repository


class StateRepository(Repository):
    """Small facts that are no record (table ``state``)."""

    def get(self, key: str) -> str | None:
        value = self.db.scalar("SELECT value FROM state WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set(self, key: str, value: str | None) -> None:
        """Set (or with None remove) one value, in the caller's transaction."""
        if value is None:
            self.db.execute("DELETE FROM state WHERE key = ?", (key,))
        else:
            self.db.execute(
                "INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
