"""The briefing's rows (`cmem context --json`, the SessionStart hook), for the type checker only.

A SessionStart hook runs the briefing on every session start: its module would pay for unmarshalling
these class bodies, so they live here, imported under ``TYPE_CHECKING`` (the start-up test pins that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import NotRequired, TypedDict

    from cmem_cli.store.row_types import BriefCandidate

    class TestsFold(TypedDict):
        """What a session's test runs folded say: how many failed, how the last one ended, what failed."""

        failed: int
        last_failed: bool
        failing: list[str]
        text: str

    class CommandsFold(TypedDict):
        """What a session's other commands folded say: commits, scratch commands and the rest."""

        commits: int
        scratch: int
        other: int
        text: str

    class Folded(TypedDict):
        """One folded line's keys but its times: a session's calls of one ``kind`` (``ids``) and its
        ``text``; the keys of its kind (:class:`TestsFold`, :class:`CommandsFold`, a search's ``queries``,
        the number of ``files`` read or edited)."""

        session: str | None
        kind: str
        count: int
        ids: list[int]
        failed: NotRequired[int]
        last_failed: NotRequired[bool]
        failing: NotRequired[list[str]]
        commits: NotRequired[int]
        scratch: NotRequired[int]
        other: NotRequired[int]
        queries: NotRequired[list[str]]
        files: NotRequired[int]
        text: NotRequired[str]

    class ActivityLine(Folded):
        """A folded line as the briefing builds it (times in epoch ms)."""

        first_at: int
        last_at: int

    class Briefed(BriefCandidate):
        """A candidate line, with what its anchor says now and whether its branch is merged."""

        stale: list[str] | None
        drifted: list[str] | None
        behind: list[str] | None
        branch: str | None
        unmerged: bool

    class LastSessionJson(TypedDict):
        """The last session as `cmem context --json` shows it."""

        session: str | None
        status: str | None
        summary_id: int | None
        created_at: str | None
        request: str | None
        completed: str | None
        learned: str | None
        outcome: str | None
        next_steps: str | None

    class BriefedJson(TypedDict):
        """An observation line as `cmem context --json` shows it."""

        id: int
        uid: str
        type: str
        title: str
        created_at: str | None
        tokens: int | None
        session: str | None
        stale: list[str] | None
        behind: list[str] | None
        drifted: list[str] | None
        branch: str | None
        unmerged: bool

    class ActivityJson(Folded):
        """A folded line as `cmem context --json` shows it (times as ISO strings, last)."""

        first_at: str | None
        last_at: str | None

    class BriefingJson(TypedDict):
        """What `cmem context --json` prints."""

        project: str | None
        budget: int
        tokens: int
        last_session: LastSessionJson | None
        observations: list[BriefedJson]
        activity: list[ActivityJson]
        text: str
