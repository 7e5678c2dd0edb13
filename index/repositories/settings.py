"""index.db's settings: small facts about the index as a whole (the chunker, the vectors' model, the last
pass), one text value a key."""

from __future__ import annotations

import json
from typing import Any

from cmem_index.repositories import Repository


class Settings(Repository):
    """The ``settings`` table: one text value a key."""

    def get(self, key: str) -> str | None:
        value = self._one("SELECT value FROM settings WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set(self, key: str, value: str) -> None:
        """Set one value, in the caller's transaction."""
        self.conn.execute("INSERT OR REPLACE INTO settings(key, value) VALUES (?, ?)", (key, value))

    def get_json(self, key: str) -> Any:
        value = self.get(key)
        return json.loads(value) if value else None

    def delete(self, key: str) -> None:
        """Remove one value, in the caller's transaction."""
        self.conn.execute("DELETE FROM settings WHERE key = ?", (key,))
