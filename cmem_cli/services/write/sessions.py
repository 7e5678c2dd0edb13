"""The session service: sessions, their prompts and their summaries, checked and scrubbed as stored.

A prompt or a session row from elsewhere (a team database) passes the same checks as a local write
(:meth:`SessionWrites.prepare_prompt_row`, :meth:`SessionWrites.prepare_session`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.fields import SESSION_STATUSES
from cmem_cli.core.text import is_valid_text
from cmem_cli.core.timeutil import MAX_MS, now_ms

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.services.write.home import WriteHome
    from cmem_cli.store.row_types import (
        PromptInput,
        PromptRow,
        SessionRow,
        SessionValues,
        SummaryRow,
        SummaryText,
    )

SUMMARY_LIMIT = 50_000


class SessionWrites:
    """Sessions (made, labelled, ended), prompts and summaries of this home."""

    def __init__(self, home: WriteHome) -> None:
        self.home = home
        self.store = home.store
        self.export = home.export

    def ensure_session(
        self,
        session_id: str,
        *,
        agent: str,
        project: str,
        label: str | None = None,
        goal: str | None = None,
        resume: bool = False,
        at: int | None = None,
    ) -> SessionRow:
        """Create the session if new; ``resume`` also reopens it if it had ended (`cmem session start ID`).
        ``at``: when it began (an imported transcript's time; an earlier one moves the start back)."""
        session_id = _required_text("session id", session_id)
        with self.store.transaction():
            if resume:
                self.store.sessions.reopen(session_id)
            return self.store.sessions.ensure(
                session_id,
                agent=agent,
                project=project,
                label=self.home.scrub_text(label),
                goal=self.home.scrub_text(goal),
                at=at,
            )

    def label_sessions(self, labels: dict[str, str]) -> None:
        """Label sessions that have no label yet (a transcript's title), scrubbed and clipped to 500
        characters, in one transaction; a session that does not exist is left alone."""
        with self.store.transaction():
            for session_id, label in labels.items():
                self.store.sessions.label(session_id, (self.home.scrub_text(label) or "")[:500] or None)

    def end_session(
        self,
        session_id: str,
        *,
        status: str = "completed",
        outcome: str | None = None,
        next_steps: str | None = None,
    ) -> SessionRow:
        if status not in SESSION_STATUSES:
            raise InvalidInput(f"unknown status {status!r} (expected one of: {', '.join(SESSION_STATUSES)})")
        with self.store.transaction():
            return self.store.sessions.end(
                session_id,
                status=status,
                outcome=self.home.scrub_text(outcome),
                next_steps=self.home.scrub_text(next_steps),
            )

    def add_prompt(
        self,
        session_id: str,
        text: str,
        *,
        project: str | None = None,
        agent: str | None = None,
        created_at: int | None = None,
    ) -> PromptRow:
        text = self.prepare_prompt(text)
        with self.store.transaction():
            session = self.store.sessions.ensure(
                session_id, agent=agent or "cli", project=project or "default", at=created_at
            )
            number = self.store.sessions.next_prompt_number(session_id)
            return self.store.prompts.insert(
                session=session_id,
                number=number,
                text=text,
                project=project or session["project"],
                agent=agent or session["agent"],
                created_at=created_at,
            )

    def prepare_prompt(self, text: Any) -> str:
        """A prompt's text as stored: scrubbed, then checked (a string, not empty, within the limit)."""
        if not isinstance(text, str):
            raise InvalidInput("prompt must be a string")
        return _required_text("prompt", self.home.scrub_text(text) or "", limit=SUMMARY_LIMIT)

    def prepare_prompt_row(self, row: Mapping[str, Any]) -> PromptInput:
        """A prompt from elsewhere (a team database), checked and scrubbed as `cmem prompt add` would."""
        number, created = row.get("prompt_number"), row.get("created_at")
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 2**31:
            raise InvalidInput("prompt_number must be a whole number from 1")
        if isinstance(created, bool) or not isinstance(created, int) or not 0 <= created <= MAX_MS:
            raise InvalidInput("created_at must be a time in epoch milliseconds")
        return {
            "uid": _required_text("uid", row.get("uid"), limit=64),
            "session": _required_text("session id", row.get("session")),
            "prompt_number": number,
            "text": self.prepare_prompt(row.get("text")),
            "project": _required_text("project", row.get("project")),
            "agent": _required_text("agent", row.get("agent")),
            "created_at": created,
        }

    def prepare_session(self, row: Mapping[str, Any]) -> SessionValues:
        """A session row from elsewhere (a team database), checked and scrubbed as a local write would be."""
        session_id = _required_text("session id", row.get("session_id"))
        agent = _required_text("agent", row.get("agent"))
        project = _required_text("project", row.get("project"))
        if row.get("status") not in SESSION_STATUSES:
            raise InvalidInput(f"unknown session status {row.get('status')!r}")
        times: dict[str, int | None] = {}
        for name in ("started_at", "last_activity_at", "completed_at", "prompt_counter"):
            value = row.get(name)
            if value is None and name in ("completed_at",):
                times[name] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MS:
                raise InvalidInput(f"session {name} must be a whole number from 0")
            times[name] = value
        texts: dict[str, str | None] = {}
        for name, limit in (("label", 500), ("goal", SUMMARY_LIMIT), ("outcome", SUMMARY_LIMIT),
                            ("next_steps", SUMMARY_LIMIT)):  # fmt: skip
            value = row.get(name)
            if value is not None:
                value = (
                    self.home.scrub_text(_required_text(name, value, limit=limit, allow_empty=True)) or None
                )
            texts[name] = value
        started, active, counter = times["started_at"], times["last_activity_at"], times["prompt_counter"]
        assert started is not None and active is not None and counter is not None  # checked above
        return {
            "session_id": session_id,
            "agent": agent,
            "project": project,
            "status": row["status"],
            "started_at": started,
            "last_activity_at": active,
            "completed_at": times["completed_at"],
            "prompt_counter": counter,
            "label": texts["label"],
            "goal": texts["goal"],
            "outcome": texts["outcome"],
            "next_steps": texts["next_steps"],
        }

    def add_summary(
        self,
        session_id: str,
        fields: Mapping[str, Any],
        *,
        project: str | None = None,
        agent: str | None = None,
    ) -> SummaryRow:
        values = self.prepare_summary(fields)
        with self.home.write_transaction() as files:
            session = self.store.sessions.ensure(
                session_id, agent=agent or "cli", project=project or "default"
            )
            row = self.store.summaries.insert(
                {
                    **values,
                    "session": session_id,
                    "project": project or session["project"],
                    "agent": agent or session["agent"],
                    "created_at": fields.get("created_at") or now_ms(),
                }
            )
            return self.export.export_summary(row, files)

    def prepare_summary(self, fields: Mapping[str, Any]) -> SummaryText:
        """Validate and scrub a summary's text fields (the checks `cmem summary add` applies)."""
        from cmem_cli.core.fields import SUMMARY_FIELDS

        unknown = set(fields) - set(SUMMARY_FIELDS) - {"created_at"}
        if unknown:
            raise InvalidInput(f"unknown summary field '{sorted(unknown)[0]}'")

        def text(name: str) -> str | None:
            value = fields.get(name)
            if value is not None:
                if not isinstance(value, str):
                    raise InvalidInput(f"summary field '{name}' must be a string")
                value = self.home.scrub_text(
                    _required_text(name, value, limit=SUMMARY_LIMIT, allow_empty=True)
                )
            return value or None

        values: SummaryText = {
            "request": text("request"),
            "investigated": text("investigated"),
            "learned": text("learned"),
            "completed": text("completed"),
            "next_steps": text("next_steps"),
            "notes": text("notes"),
        }
        if not any(values.values()):
            raise InvalidInput("a summary needs at least one of: " + ", ".join(SUMMARY_FIELDS))
        return values


def _required_text(name: str, value: Any, *, limit: int = 2_000, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if not is_valid_text(value) or "\x00" in value:
        raise InvalidInput(f"{name} is not valid UTF-8 text")
    if len(value) > limit:
        raise InvalidInput(f"{name} is too long ({len(value)} characters, limit {limit})")
    if not value.strip() and not allow_empty:
        raise InvalidInput(f"{name} must not be empty")
    return value.strip()
