"""The API's result types: named tuples, cheap to import, read like records; :func:`as_dict` makes JSON.

Kept apart from :mod:`cmem_cli.api` so that a front end can name the types without opening anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


class Link(NamedTuple):
    """A typed link between two observations, as seen from one of them."""

    type: str
    id: int
    uid: str
    title: str


class Observation(NamedTuple):
    """One observation in full (what `cmem get --json` prints). Times are ISO-8601 strings."""

    id: int
    uid: str
    type: str
    title: str
    project: str
    agent: str
    created_at: str
    facts: list[str]
    concepts: list[str]
    files_read: list[str]
    files_modified: list[str]
    tools_used: list[str]
    links: list[Link]
    linked_from: list[Link]
    subtitle: str | None = None
    narrative: str | None = None
    session: str | None = None
    key: str | None = None
    confidence: float | None = None
    prompt_number: int | None = None
    updated_at: str | None = None
    tokens: int = 0
    path: str | None = None
    retrieval_count: int = 0
    last_retrieved_at: str | None = None
    kind: str = "observation"
    stale: list[str] | None = None  # cited files changed or vanished since (docs/truth.md); None: no anchor
    branch: str | None = None  # the git branch it was recorded on
    anchor: dict[str, Any] | None = None  # repository, commit, times and each cited file's state
    superseded_by: int | None = None  # the id of the newer memory that replaced this one

    @property
    def uri(self) -> str:
        return citation_uri(self.uid)


class Summary(NamedTuple):
    """A session summary (id ``S<n>``)."""

    id: str
    uid: str
    session: str
    project: str
    agent: str
    created_at: str
    title: str
    request: str | None = None
    investigated: str | None = None
    learned: str | None = None
    completed: str | None = None
    next_steps: str | None = None
    notes: str | None = None
    tokens: int = 0
    path: str | None = None
    kind: str = "summary"


class Prompt(NamedTuple):
    """A user prompt (id ``P<n>``), numbered within its session."""

    id: str
    uid: str
    session: str
    prompt_number: int
    text: str
    project: str
    agent: str
    created_at: str
    tokens: int = 0
    kind: str = "prompt"


class Document(NamedTuple):
    """A passage of a collection document (a user's notes or docs), id ``doc:<docid>``."""

    id: str
    collection: str
    path: str
    file: str
    text: str
    line: int | None = None
    count: int | None = None  # type: ignore[assignment]  # the lines asked for, shadowing tuple.count
    kind: str = "document"


class Hit(NamedTuple):
    """One compact search row: enough to decide whether ``get`` is worth its ``tokens``."""

    id: int | str
    kind: str
    type: str
    title: str
    project: str | None
    created_at: str | None
    score: float | None
    tokens: int | None
    uid: str | None = None
    subtitle: str | None = None
    session: str | None = None
    agent: str | None = None
    key: str | None = None
    path: str | None = None
    line: int | None = None
    prompt_number: int | None = None
    signals: dict[str, Any] | None = None
    stale: list[str] | None = None  # cited files changed or vanished since; None: nothing anchored
    branch: str | None = None  # the git branch the memory was recorded on
    superseded_by: int | None = None  # a newer memory replaced this one (an explicit link)
    possibly_superseded_by: int | None = None  # a newer hit states an update of what this one says


class Hits(list[Hit]):
    """Search hits, best first, plus how they were found: ``mode`` (keyword, vector, hybrid or list) and
    ``notes`` (why a layer was skipped, e.g. no index yet)."""

    def __init__(self, hits: Iterable[Hit], mode: str, notes: Sequence[str]):
        super().__init__(hits)
        self.mode = mode
        self.notes = list(notes)


class TimelineItem(NamedTuple):
    id: int | str
    kind: str
    type: str
    title: str
    project: str
    created_at: str
    tokens: int
    anchor: bool
    uid: str | None = None
    session: str | None = None
    agent: str | None = None
    stale: list[str] | None = None
    branch: str | None = None
    superseded_by: int | None = None


class Timeline(NamedTuple):
    """What happened around ``anchor`` in its project, oldest first; the anchor's item has ``anchor=True``."""

    anchor: str
    project: str
    items: list[TimelineItem]


class Session(NamedTuple):
    session_id: str
    agent: str
    project: str
    status: str
    started_at: str
    last_activity_at: str
    prompt_counter: int = 0
    label: str | None = None
    goal: str | None = None
    outcome: str | None = None
    next_steps: str | None = None
    completed_at: str | None = None
    observations: int | None = None


class Briefing(NamedTuple):
    """The session-start briefing: ``text`` never exceeds ``budget`` tokens (``tokens`` is its estimate)."""

    project: str
    budget: int
    tokens: int
    last_session: dict[str, Any] | None
    observations: list[dict[str, Any]]
    activity: list[dict[str, Any]]  # what the hooks captured, one entry per session and kind (reads...)
    text: str  # last, as in `cmem context --json`: ``as_dict`` of a Briefing is what the CLI prints


Record = Observation | Summary | Prompt | Document
URI_PREFIX = "cmem://observation/"


def citation_uri(uid: str) -> str:
    """A stable name for an observation: its uid never changes, unlike its id after a re-import."""
    return URI_PREFIX + uid


def as_dict(value: Any) -> Any:
    """JSON-ready form of a result: NamedTuples become dicts, recursively (``_asdict`` is shallow)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {name: as_dict(item) for name, item in value._asdict().items()}
    if isinstance(value, list):
        return [as_dict(item) for item in value]
    if isinstance(value, dict):
        return {name: as_dict(item) for name, item in value.items()}
    return value
