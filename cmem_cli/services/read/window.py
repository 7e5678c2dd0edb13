"""A window of memory: observations, prompts and summaries of a time span with their sessions and links.

This is what `cmem view` draws: more than a search page (every record in full, the sessions they belong to,
the links among them and to records outside the window) and bounded the same way, so that the cost follows
what is shown. When more observations match than ``limit``, the newest ``limit`` are kept and the window
starts at the oldest one kept, so that prompts and summaries cover the same span as the observations.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.timeutil import to_iso
from cmem_cli.services.read.details import prompt_record, summary_record
from cmem_cli.services.read.search_pipeline import observation_row
from cmem_cli.store.filters import Filters
from cmem_cli.store.repository import Store

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Literal, TypeAlias, TypedDict

    from cmem_cli.services.read.record_types import PromptRecord, SummaryRecord
    from cmem_cli.store.row_types import LinkRow

    class WindowObservation(TypedDict):
        """An observation in full: its search row's keys, every detail (times as ISO strings), what the
        stages mark and ``unmerged``."""

        id: int
        uid: str
        kind: Literal["observation"]
        type: str
        title: str
        subtitle: str | None
        project: str
        session: str | None
        agent: str
        machine: str | None
        key: str | None
        created_at: str | None
        score: None
        tokens: int
        path: str | None
        invalidated: str | None
        narrative: str | None
        facts: list[str]
        concepts: list[str]
        files_read: list[str]
        files_modified: list[str]
        tools_used: list[str]
        prompt_number: int | None
        confidence: float | None
        updated_at: str | None
        retrieval_count: int
        last_retrieved_at: str | None
        author: str | None
        stale: list[str] | None
        drifted: list[str] | None
        behind: list[str] | None
        branch: str | None
        unmerged: bool
        superseded_by: int | None
        possibly_superseded_by: int | None

    WindowItem: TypeAlias = WindowObservation | PromptRecord | SummaryRecord

    class WindowSession(TypedDict):
        """A session the window's items belong to (times as ISO strings)."""

        agent: str | None
        project: str | None
        label: str | None
        status: str | None
        goal: str | None
        outcome: str | None
        next_steps: str | None
        started_at: str | None
        completed_at: str | None

    WindowLink = TypedDict("WindowLink", {"from": int, "to": int, "type": str})

    class WindowHead(TypedDict):
        """An observation at a link's far end, outside the window."""

        id: int
        uid: str
        type: str
        title: str
        project: str
        created_at: str | None

    class WindowCounts(TypedDict):
        """How many observations the window shows and how many match (``total``: a lower bound when
        ``total_bounded``)."""

        shown: int
        total: int
        total_bounded: bool
        capped: bool

    class WindowJson(TypedDict):
        """What `cmem view` draws (:func:`window`)."""

        items: list[WindowItem]
        sessions: dict[str, WindowSession]
        links: list[WindowLink]
        others: dict[int, WindowHead]
        observations: WindowCounts
        since: str | None
        until: str | None


COUNT_BOUND = 100_000  # count matches up to here; past it the page says "more than 100,000"
OBSERVATION_DETAIL = (
    "narrative", "facts", "concepts", "files_read", "files_modified", "tools_used", "prompt_number",
    "confidence", "updated_at", "retrieval_count", "last_retrieved_at",
)  # fmt: skip
SESSION_FIELDS = ("agent", "project", "label", "status", "goal", "outcome", "next_steps")


def window(
    store: Store, export_dir: Any, filters: Filters, query: str | None, *, limit: int, cwd: str | None = None
) -> WindowJson:
    """The records of the window, newest first, at most ``limit`` observations (and as many prompts and
    summaries), with ``sessions``, ``links`` among and from them, ``others`` (the far ends of links that
    are not in the window) and ``observations``: how many are shown, how many match (``total``, a lower
    bound when ``total_bounded``) and whether the page is ``capped``. Observations carry ``stale`` and
    ``branch`` as every read path gives them (docs/truth.md), ``unmerged`` True when their branch's work is
    not in the HEAD of the git work tree at ``cwd``, ``superseded_by`` and, with a ``query``,
    ``possibly_superseded_by``."""
    from cmem_cli.services.truth import anchor_notes, branches

    found = store.window.observations(filters, query, limit=limit + 1)
    capped = len(found) > limit
    found = found[:limit]
    span = filters
    if capped and found:  # prompts and summaries over the span the kept observations cover
        span = Filters(**{**filters.fields(), "since": found[-1]["created_at"]})
    prompts = store.window.prompts(span, query, limit=limit)
    summaries = store.window.summaries(span, query, limit=limit)

    observations = anchor_notes.annotate(store, [_observation(row, export_dir) for row in found], cwd=cwd)
    behind = branches.unmerged(store, [o["id"] for o in observations if o["branch"]], cwd=cwd)
    for observation in observations:
        observation["unmerged"] = observation["id"] in behind
    items: list[WindowItem] = [*observations]
    items += [prompt_record(row) for row in prompts]
    items += [_summary(row, export_dir) for row in summaries]
    items.sort(key=_newest_first, reverse=True)

    shown = {row["id"] for row in found}
    links = store.window.links_touching(shown)
    others: dict[int, WindowHead] = {
        row["id"]: {**row, "created_at": to_iso(row["created_at"])}
        for row in store.window.observation_heads(
            {end for link in links for end in (link["from_id"], link["to_id"])} - shown
        )
    }
    _mark_replaced(observations, links, others)
    _mark_possibly_replaced(store, observations, filters, query)
    session_ids = {session for item in items if (session := item.get("session"))}
    total = len(found)
    if capped:
        total = store.window.count_observations(filters, query, bound=COUNT_BOUND)
    return {
        "items": items,
        "sessions": {row["session_id"]: _session(row) for row in store.window.sessions(session_ids)},
        "links": [{"from": link["from_id"], "to": link["to_id"], "type": link["type"]} for link in links],
        "others": others,
        "observations": {
            "shown": len(found),
            "total": total,
            "total_bounded": total >= COUNT_BOUND,
            "capped": capped,
        },
        "since": to_iso(span.since),
        "until": to_iso(filters.until),
    }


KIND_ORDER = {
    "prompt": 0,
    "observation": 1,
    "summary": 2,
}  # at one instant: the prompt, its work, the summary


def _newest_first(item: Mapping[str, Any]) -> tuple[str, int, int]:
    """Time, then kind, then number, to be sorted in reverse: newest first, a summary above the work of
    the same instant and the work above its prompt."""
    return (item["created_at"], KIND_ORDER[item["kind"]], int(str(item["id"]).lstrip("SP")))


def _mark_replaced(
    observations: list[WindowObservation],
    links: Sequence[LinkRow],
    others: Mapping[int, Mapping[str, Any]],
) -> None:
    """Give each observation ``superseded_by``: the newest observation linked to it as ``supersedes``
    (`cmem link NEW supersedes OLD`), else None. The links were read for the page anyway; the rule is the
    read paths' (issue 24: the newest direct successor)."""
    created = {o["id"]: o["created_at"] for o in observations}
    created.update({obs_id: head["created_at"] for obs_id, head in others.items()})
    newest: dict[int, int] = {}
    for link in links:
        if link["type"] != "supersedes" or link["to_id"] not in created:
            continue
        old, new = link["to_id"], link["from_id"]
        if old not in newest or (created[new], new) > (created[newest[old]], newest[old]):
            newest[old] = new
    for observation in observations:
        observation["superseded_by"] = newest.get(observation["id"])


def _mark_possibly_replaced(
    store: Store, observations: list[WindowObservation], filters: Filters, query: str | None
) -> None:
    """Give each observation ``possibly_superseded_by``: a newer memory that probably replaced it, as
    inferred when that one was recorded (:mod:`cmem_cli.services.truth.candidates`); else, with a ``query``, what
    search would infer for it (a newer memory among the query's first keyword hits states an update of
    what it says; docs/truth.md); else None. The search rule judges a search's first rows about what was
    asked, so a page without a query infers nothing more."""
    from cmem_cli.services.truth import supersession, updates

    found: dict[int, int] = {}
    if observations:
        found.update(store.supersession.newest_inferred(o["id"] for o in observations))
    if query and observations:
        head = [observation_row(row) for row in store.search.observations(query, filters, limit=updates.HEAD)]
        supersession.annotate(store, head)
        found = {**supersession.inferred(store, head, query), **found}
    for observation in observations:
        observation["possibly_superseded_by"] = (
            found.get(observation["id"]) if observation.get("superseded_by") is None else None
        )


def _observation(row: Mapping[str, Any], export_dir: Any) -> WindowObservation:
    """The observation in full: its search row (whatever fields that carries) and every detail."""
    hit = observation_row(row)
    widened = cast("MutableMapping[str, Any]", hit)  # the search row widened with the details, in their order
    for name in OBSERVATION_DETAIL:
        widened[name] = row.get(name)
    item = cast("WindowObservation", hit)
    item["author"] = row.get("author")  # the person, where known: the details panel shows it
    item["updated_at"] = to_iso(row.get("updated_at")) if row.get("updated_at") != row["created_at"] else None
    item["last_retrieved_at"] = to_iso(row.get("last_retrieved_at"))
    if item.get("path"):
        item["path"] = str(export_dir / item["path"])
    return item


def _summary(row: Mapping[str, Any], export_dir: Any) -> SummaryRecord:
    item = summary_record(row)
    if item.get("path"):
        item["path"] = str(export_dir / item["path"])
    return item


def _session(row: Mapping[str, Any]) -> WindowSession:
    out = {name: row.get(name) for name in SESSION_FIELDS}
    out["started_at"] = to_iso(row.get("started_at"))
    out["completed_at"] = to_iso(row.get("completed_at"))
    return cast("WindowSession", out)
