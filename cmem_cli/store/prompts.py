"""The user_prompts table: what was asked in a session, in order."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from cmem_cli.core.batches import batches
from cmem_cli.core.errors import NotFound
from cmem_cli.core.ids import new_uid
from cmem_cli.core.timeutil import now_ms
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from cmem_cli.store.row_types import PromptRow


class PromptRepository(Repository):
    """Prompts: a session's user prompts."""

    def of_session(self, session_id: str) -> list[PromptRow]:
        """The prompts of session ``session_id`` (exactly), in their order."""
        rows = self.db.query(
            "SELECT * FROM user_prompts WHERE session = ? ORDER BY prompt_number", (session_id,)
        )
        return cast("list[PromptRow]", rows)

    def latest_text(self, session_id: str) -> str | None:
        """The text of the latest prompt of session ``session_id``, None if it has none."""
        text = self.db.scalar(
            "SELECT text FROM user_prompts WHERE session = ? ORDER BY prompt_number DESC LIMIT 1",
            (session_id,),
        )
        return str(text) if text else None

    def insert(
        self,
        *,
        session: str,
        number: int,
        text: str,
        project: str,
        agent: str,
        created_at: int | None = None,
        uid: str | None = None,
        machine: str | None = None,
        author: str | None = None,
    ) -> PromptRow:
        """A prompt; ``machine`` and ``author``: whose it is when it arrives from elsewhere (else this home's)."""
        when = created_at or now_ms()
        who = self._store.authorship({} if machine is None else {"machine": machine, "author": author})
        self.db.execute(
            "INSERT INTO user_prompts (uid, session, prompt_number, text, project, agent, created_at, machine, "
            "author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                uid or new_uid(when),
                session,
                number,
                text,
                project,
                agent,
                when,
                who["machine"],
                who["author"],
            ),
        )
        return self.get(self.db.conn.last_insert_rowid())

    def by_uids(self, uids: list[str]) -> dict[str, PromptRow]:
        found: dict[str, PromptRow] = {}
        for chunk, marks in batches(uids):
            for row in self.db.query(f"SELECT * FROM user_prompts WHERE uid IN ({marks})", chunk):
                found[row["uid"]] = cast("PromptRow", row)
        return found

    def free_number(self, session_id: str, number: int) -> int:
        """``number`` if no prompt of the session has it here, else the one after the session's last."""
        if not self.db.scalar(
            "SELECT 1 FROM user_prompts WHERE session = ? AND prompt_number = ?", (session_id, number)
        ):
            return number
        last = self.db.scalar(
            "SELECT max(coalesce((SELECT max(prompt_number) FROM user_prompts WHERE session = :s), 0), "
            "coalesce((SELECT prompt_counter FROM sessions WHERE session_id = :s), 0))",
            {"s": session_id},
        )
        return int(last or 0) + 1

    def get(self, prompt_id: int) -> PromptRow:
        row = self.db.query_one("SELECT * FROM user_prompts WHERE id = ?", (prompt_id,))
        if row is None:
            raise NotFound(f"no prompt P{prompt_id}")
        return cast("PromptRow", row)
