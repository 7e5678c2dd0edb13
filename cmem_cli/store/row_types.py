"""The rows the store's repositories hand out, one type per kind, for the type checker only.

At run time a row is the plain dict SQLite gave (no class is made, so a search pays nothing for these):
modules import this file under ``TYPE_CHECKING``. A row is read-only to its reader; code that wants a
changed row builds a new one (``{**row, ...}``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import NotRequired, TypedDict

    from cmem_cli.core.json_types import CandidateJson

    class ObservationRow(TypedDict):
        """A row of the observations table, its list columns decoded (``search_terms`` left out)."""

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
        last_retrieved_at: int | None
        created_at: int
        updated_at: int
        tokens: int
        path: str | None
        machine: str | None
        author: str | None
        invalidated: str | None
        edited_on: str | None
        edited_by: str | None

    class SummaryRow(TypedDict):
        """A row of the session_summaries table."""

        id: int
        uid: str
        session: str
        project: str
        agent: str
        request: str | None
        investigated: str | None
        learned: str | None
        completed: str | None
        next_steps: str | None
        notes: str | None
        created_at: int
        path: str | None
        updated_at: int
        machine: str | None
        author: str | None

    class PromptRow(TypedDict):
        """A row of the user_prompts table."""

        id: int
        uid: str
        session: str
        prompt_number: int
        text: str
        project: str
        agent: str
        created_at: int
        machine: str | None
        author: str | None

    class SessionRow(TypedDict):
        """A row of the sessions table."""

        id: int
        session_id: str
        agent: str
        project: str
        label: str | None
        status: str
        prompt_counter: int
        started_at: int
        completed_at: int | None
        last_activity_at: int
        goal: str | None
        outcome: str | None
        next_steps: str | None

    class LinkRow(TypedDict):
        """A row of the observation_links table, as a window reads it."""

        from_id: int
        to_id: int
        type: str
        created_at: int

    class ObservationHead(TypedDict):
        """What a window shows of an observation at a link's far end."""

        id: int
        uid: str
        type: str
        title: str
        project: str
        created_at: int

    class LinkedRow(TypedDict):
        """A link as seen from one end: its type and the memory at the other end."""

        type: str
        id: int
        uid: str
        title: str
        path: str | None

    class PendingLinkRow(TypedDict):
        """A link waiting for a memory this store does not hold yet (the title and href its file showed)."""

        type: str
        uid: str
        title: str | None
        href: str | None

    class SessionOutcome(TypedDict):
        """How a session ended, as the briefing's "Last session" block shows it."""

        session_id: str
        status: str
        outcome: str | None
        next_steps: str | None
        started_at: int
        last_activity_at: int

    class BriefCandidate(TypedDict):
        """An observation the briefing may list: no narrative (they can be large), list fields decoded."""

        id: int
        uid: str
        type: str
        title: str
        created_at: int
        tokens: int
        session: str | None
        tools_used: list[str]
        files_read: list[str]
        files_modified: list[str]

    class TranscriptOffset(TypedDict):
        """Where the import of a transcript file resumes."""

        offset: int  # bytes already imported
        head: str  # fingerprint of the file's first line: another file at the same path starts over
        counts: dict[str, int]  # prompt occurrences up to ``offset`` (prompt keys count from them)
        session: str | None

    class ListedSession(SessionRow):
        """A session as `cmem session list` reads it: its row, how many observations it holds, its machine."""

        observations: int
        machine: str | None

    class ProjectKey(TypedDict):
        """What the store knows of a project's name: its repository's key, whether it is the key's main
        name, and how that was learnt (``claimed`` or ``anchors``)."""

        key: str
        main: bool
        source: str | None

    class StoreCounts(TypedDict):
        """How much the store holds: rows per table, observations per type and project (most first), and
        the creation times of the oldest and newest observation (None: there are none)."""

        counts: dict[str, int]
        by_type: dict[str, int]
        by_project: dict[str, int]
        first: int | None
        last: int | None

    class ProjectActivity(TypedDict):
        """A project with observations: how many, and when the latest was made."""

        project: str
        observations: int
        last: int

    class AddedObservation(ObservationRow):
        """The row an add stored, with the older memories it may replace when the add compared them."""

        candidates: NotRequired[list[CandidateJson]]

    class Authorship(TypedDict):
        """Whose a new row is: the machine and person that wrote it (None: not known)."""

        machine: str | None
        author: str | None

    class PromptInput(TypedDict):
        """A prompt from elsewhere (a team database), checked and scrubbed for writing."""

        uid: str
        session: str
        prompt_number: int
        text: str
        project: str
        agent: str
        created_at: int

    class SessionValues(TypedDict):
        """A whole session row from elsewhere (a team database), checked and scrubbed for writing."""

        session_id: str
        agent: str
        project: str
        status: str
        started_at: int
        last_activity_at: int
        completed_at: int | None
        prompt_counter: int
        label: str | None
        goal: str | None
        outcome: str | None
        next_steps: str | None

    class SummaryText(TypedDict):
        """A summary's text fields, checked and scrubbed (None: not given)."""

        request: str | None
        investigated: str | None
        learned: str | None
        completed: str | None
        next_steps: str | None
        notes: str | None

    class LinkTarget(TypedDict):
        """A link a record asks for (``records.parse_link``): its type and its target's id or uid; a link
        read from a file also has the title and href the file showed."""

        type: str
        id: NotRequired[int]
        uid: NotRequired[str]
        title: NotRequired[str | None]
        href: NotRequired[str | None]

    class ObservationInput(TypedDict):
        """A record checked and cleaned for writing (``records.normalize_observation``): the row's content
        fields, plus what the write still decides (uid and time, when not given) and the links it adds."""

        type: str
        title: str
        subtitle: str | None
        narrative: str | None
        project: str
        session: str | None
        agent: str
        key: str | None
        facts: list[str]
        concepts: list[str]
        files_read: list[str]
        files_modified: list[str]
        tools_used: list[str]
        prompt_number: int | None
        confidence: float | None
        invalidated: str | None
        created_at: int | None
        uid: str | None
        links: list[LinkTarget]
        machine: NotRequired[str | None]  # whose it is: stated by a memory that arrives
        author: NotRequired[str | None]
        edited_on: NotRequired[str | None]  # who changed it last: stated by a memory that arrives
        edited_by: NotRequired[str | None]
        _spans: NotRequired[dict[str, tuple[int, int]]]  # cited line ranges, by path: the anchor's regions
        tokens: NotRequired[int]  # a bulk import's staged record: its file's token cost,
        updated_at: NotRequired[int]  # time
        path: NotRequired[str | None]  # and file name

    class ObservationMatch(ObservationRow):
        """An observation the keyword search matched: FTS5's BM25 (positive), its 0..1 ``score`` and its
        ``strength`` (the BM25 over the query's IDF sum, comparable between tables)."""

        kind: str
        bm25: float
        score: float
        strength: float

    class SummaryMatch(SummaryRow):
        """A session summary the keyword search matched (the keys of :class:`ObservationMatch`)."""

        kind: str
        bm25: float
        score: float
        strength: float

    class PromptMatch(PromptRow):
        """A prompt the keyword search matched (the keys of :class:`ObservationMatch`)."""

        kind: str
        bm25: float
        score: float
        strength: float

    class ListedObservation(ObservationRow):
        """An observation listed without words (no score)."""

        kind: str
        score: None

    class TimelineItemRow(TypedDict):
        """An observation, prompt or summary around a timeline's anchor (a prompt's text and a summary's
        first field as ``title``; ``type`` None but for observations)."""

        kind: str
        id: int
        created_at: int
        type: str | None
        title: str | None
        session: str | None
        agent: str
        tokens: int | None
        uid: str
        machine: str | None
        invalidated: str | None
