"""The API's result types: named tuples, read like records; ``to_json()`` (or :func:`as_dict`) makes JSON.

In the kernel so that the services, the API and every front end name the same types. Defining them costs
about a millisecond, so the hot commands do not: the lists they return (:mod:`cmem_cli.core.pages`) build
an item only when it is read. ``from_json`` makes one from the JSON row of the same thing (rows carry
more keys than a type declares; the rest are left out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.hit_types import HitRow, SignalJson, TimelineRow

_T = TypeVar("_T")


def _pick(cls: type[_T], row: Mapping[str, Any]) -> _T:
    """``cls`` from the fields of ``row`` it declares."""
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    return cls(**{name: row[name] for name in fields if name in row})


class Link(NamedTuple):
    """A typed link between two observations, as seen from one of them."""

    type: str
    id: int
    uid: str
    title: str

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Link:
        return _pick(cls, row)

    def to_json(self) -> dict[str, Any]:
        return as_dict(self)  # type: ignore[no-any-return]


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
    behind: list[str] | None = None  # cited files this checkout lacks the memory's commit for (not stale)
    machine: str | None = None  # the machine that wrote it (None: written before cmem recorded it)
    author: str | None = None  # the person, where known (CMEM_AUTHOR or git's user.email)
    drifted: list[str] | None = None  # cited files where some of its lines changed, most still hold
    invalidated: str | None = None  # why someone said it no longer holds (`cmem invalidate`); None: valid
    possibly_superseded_by: int | None = (
        None  # a newer memory that probably replaced it (inferred when written)
    )

    @property
    def uri(self) -> str:
        return citation_uri(self.uid)

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Observation:
        links = [Link.from_json(link) for link in row.get("links") or []]
        linked_from = [Link.from_json(link) for link in row.get("linked_from") or []]
        return _pick(cls, {**row, "links": links, "linked_from": linked_from})

    def to_json(self) -> dict[str, Any]:
        return as_dict(self)  # type: ignore[no-any-return]


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
    machine: str | None = None  # the machine that wrote it (None: not recorded)
    author: str | None = None

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Summary:
        return _pick(cls, row)

    def to_json(self) -> dict[str, Any]:
        return as_dict(self)  # type: ignore[no-any-return]


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
    machine: str | None = None  # the machine that wrote it (None: not recorded)
    author: str | None = None

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Prompt:
        return _pick(cls, row)

    def to_json(self) -> dict[str, Any]:
        return as_dict(self)  # type: ignore[no-any-return]


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

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Document:
        return _pick(cls, row)

    def to_json(self) -> dict[str, Any]:
        return as_dict(self)  # type: ignore[no-any-return]


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
    signals: dict[str, SignalJson] | None = None  # with explain: each ranked list's view of the hit
    stages: dict[str, int] | None = None  # with explain: the row's place after each stage of the search
    stale: list[str] | None = None  # cited files changed or vanished since; None: nothing anchored
    branch: str | None = None  # the git branch the memory was recorded on
    superseded_by: int | str | None = None  # a newer memory replaced this one (an explicit link)
    possibly_superseded_by: int | str | None = None  # a newer hit states an update of what this one says
    machine: str | None = None  # the machine that wrote it (None: not recorded)
    behind: list[str] | None = None  # cited files this checkout lacks the memory's commit for (not stale)
    drifted: list[str] | None = None  # cited files where some of its lines changed, most still hold
    invalidated: str | None = None  # why someone said it no longer holds (`cmem invalidate`); None: valid

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Hit:
        return _pick(cls, row)

    def to_json(self) -> HitRow:
        """The search row of this hit (what `cmem search --json` prints of it)."""
        return as_dict(self)  # type: ignore[no-any-return]


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
    behind: list[str] | None = None
    machine: str | None = None  # the machine that wrote it
    drifted: list[str] | None = None
    invalidated: str | None = None

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> TimelineItem:
        return _pick(cls, row)

    def to_json(self) -> TimelineRow:
        return as_dict(self)  # type: ignore[no-any-return]


class Session(NamedTuple):
    """A session; times are ISO-8601 strings."""

    session_id: str  # the fields in the order `cmem session show --json` prints them (the table's)
    agent: str
    project: str
    label: str | None
    status: str
    prompt_counter: int
    started_at: str
    completed_at: str | None
    last_activity_at: str
    goal: str | None
    outcome: str | None
    next_steps: str | None
    observations: int | None = None
    machine: str | None = None  # the machine it ran on (its first prompt's or memory's; None: not recorded)
    prompts: list[dict[str, Any]] | None = None  # number, text, created_at (``Memory.session`` only)
    summaries: list[str] | None = None  # the ids of its summaries (``Memory.session`` only)

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Session:
        return _pick(cls, row)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = as_dict(self)
        for detail in ("prompts", "summaries"):  # a listed session carries neither
            if data[detail] is None:
                del data[detail]
        return data


class ReplacementCandidate(NamedTuple):
    """An older memory a new one may replace (docs/truth.md, "Caught when written"): ``inferred`` when the
    match was confident enough to mark it maybe replaced; ``confirm`` is the command that says it did."""

    id: int
    title: str
    score: float
    inferred: bool
    why: str
    confirm: str

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> ReplacementCandidate:
        return _pick(cls, row)

    def to_json(self) -> dict[str, Any]:
        return as_dict(self)  # type: ignore[no-any-return]


class Briefing(NamedTuple):
    """The session-start briefing: ``text`` never exceeds ``budget`` tokens (``tokens`` is its estimate)."""

    project: str
    budget: int
    tokens: int
    last_session: dict[str, Any] | None
    observations: list[dict[str, Any]]
    activity: list[dict[str, Any]]  # what the hooks captured, one entry per session and kind (reads...)
    text: str  # last, as in `cmem context --json`: ``as_dict`` of a Briefing is what the CLI prints

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Briefing:
        return _pick(cls, row)

    def to_json(self) -> dict[str, Any]:
        return as_dict(self)  # type: ignore[no-any-return]


Record = Observation | Summary | Prompt | Document
URI_PREFIX = "cmem://observation/"


def citation_uri(uid: str) -> str:
    """A stable name for an observation: its uid never changes, unlike its id after a re-import."""
    return URI_PREFIX + uid


def record(row: Mapping[str, Any]) -> Record:
    """The typed full record of a `cmem get --json` row, by its ``kind``."""
    kind = row["kind"]
    if kind == "observation":
        return Observation.from_json(row)
    if kind == "summary":
        return Summary.from_json(row)
    return Prompt.from_json(row) if kind == "prompt" else Document.from_json(row)


def as_dict(value: Any) -> Any:
    """JSON-ready form of a result: NamedTuples become dicts, recursively (``_asdict`` is shallow); a page
    or list of results (:mod:`cmem_cli.core.pages`) its ``to_json()``."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {name: as_dict(item) for name, item in value._asdict().items()}
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list):
        return [as_dict(item) for item in value]
    if isinstance(value, dict):
        return {name: as_dict(item) for name, item in value.items()}
    return value
