"""The full records of the third layer (`cmem get --json`, ``Memory.get``), one type per kind, for the type
checker only: at run time a record is the plain dict the page prints (this file is imported under
``TYPE_CHECKING``, so a read makes no class). A window of memory (`cmem view`) shows the same records.

Times are ISO-8601 strings. An observation's record is its stored row with its links, what its anchor
says now (``stale``, ``drifted``, ``behind``, ``branch``, ``anchor``) and what replaced it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Literal, NotRequired, TypeAlias, TypedDict

    from cmem_cli.core.hit_types import PromptHit, SummaryHit
    from cmem_cli.services.truth.anchor_notes import AnchorDetail

    class LinkJson(TypedDict):
        """A link as a record shows it, from one end: its type and the observation at the other end."""

        type: str
        id: int
        uid: str
        title: str

    # how a record `get --links` brought in is linked to the record asked for
    Via = TypedDict("Via", {"type": str, "from": int})

    class ObservationRecord(TypedDict):
        """One observation in full."""

        id: int
        uid: str
        type: str
        title: str
        subtitle: str | None
        narrative: str | None
        facts: list[str]
        concepts: list[str]
        files_read: list[str]
        files_modified: list[str]
        tools_used: list[str]
        project: str
        session: str | None
        agent: str
        prompt_number: int | None
        key: str | None
        confidence: float | None
        retrieval_count: int
        last_retrieved_at: str | None
        created_at: str | None
        updated_at: str | None
        tokens: int
        path: str | None
        machine: str | None
        author: str | None
        invalidated: str | None
        edited_on: str | None
        edited_by: str | None
        kind: Literal["observation"]
        links: list[LinkJson]
        linked_from: list[LinkJson]
        stale: list[str] | None
        drifted: list[str] | None
        behind: list[str] | None
        branch: str | None
        anchor: AnchorDetail | None
        superseded_by: int | None
        possibly_superseded_by: int | None
        via: NotRequired[Via]

    class SummaryRecord(SummaryHit):
        """A session summary in full: its search row, its fields and its author."""

        request: str | None
        investigated: str | None
        learned: str | None
        completed: str | None
        next_steps: str | None
        notes: str | None
        author: str | None

    class PromptRecord(PromptHit):
        """A prompt in full: its search row, its text and its author."""

        text: str
        author: str | None

    class DocumentRecord(TypedDict):
        """A passage of a collection document: ``path`` in its collection and ``file`` on this machine;
        as the CLI shows it, ``path`` is the file and ``relpath`` the path in its collection."""

        kind: Literal["document"]
        id: str
        collection: str
        path: str
        file: NotRequired[str]
        line: int | None
        count: int | None
        text: str
        relpath: NotRequired[str]

    RecordJson: TypeAlias = ObservationRecord | SummaryRecord | PromptRecord | DocumentRecord
