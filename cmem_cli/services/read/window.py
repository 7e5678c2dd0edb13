"""A window of memory: observations, prompts and summaries of a time span with their sessions and links.

This is what `cmem view` draws: more than a search page (every record in full, the sessions they belong to,
the links among them and to records outside the window) and bounded the same way, so that the cost follows
what is shown. When more observations match than ``limit``, the newest ``limit`` are kept and the window
starts at the oldest one kept, so that prompts and summaries cover the same span as the observations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.timeutil import to_iso
from cmem_cli.services.read.search_pipeline import observation_row, prompt_row, summary_row
from cmem_cli.store.filters import Filters
from cmem_cli.store.repository import Store

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cmem_cli.store.row_types import LinkRow

COUNT_BOUND = 100_000  # count matches up to here; past it the page says "more than 100,000"
OBSERVATION_DETAIL = (
    "narrative", "facts", "concepts", "files_read", "files_modified", "tools_used", "prompt_number",
    "confidence", "updated_at", "retrieval_count", "last_retrieved_at",
)  # fmt: skip
SESSION_FIELDS = ("agent", "project", "label", "status", "goal", "outcome", "next_steps")


def window(
    store: Store, export_dir: Any, filters: Filters, query: str | None, *, limit: int, cwd: str | None = None
) -> dict[str, Any]:
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

    items = anchor_notes.annotate(store, [_observation(row, export_dir) for row in found], cwd=cwd)
    behind = branches.unmerged(store, [item["id"] for item in items if item["branch"]], cwd=cwd)
    for item in items:
        item["unmerged"] = item["id"] in behind
    items += [{**prompt_row(row), "text": row["text"], "author": row.get("author")} for row in prompts]
    items += [_summary(row, export_dir) for row in summaries]
    items.sort(key=_newest_first, reverse=True)

    shown = {row["id"] for row in found}
    links = store.window.links_touching(shown)
    others = {
        row["id"]: {**row, "created_at": to_iso(row["created_at"])}
        for row in store.window.observation_heads(
            {end for link in links for end in (link["from_id"], link["to_id"])} - shown
        )
    }
    _mark_replaced([item for item in items if item["kind"] == "observation"], links, others)
    _mark_possibly_replaced(store, [item for item in items if item["kind"] == "observation"], filters, query)
    session_ids = {item["session"] for item in items if item.get("session")}
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
    observations: list[dict[str, Any]],
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
    store: Store, observations: list[dict[str, Any]], filters: Filters, query: str | None
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


def _observation(row: Mapping[str, Any], export_dir: Any) -> dict[str, Any]:
    """The observation in full: its search row (whatever fields that carries) and every detail."""
    item = cast("dict[str, Any]", observation_row(row))  # a search row widened with the details
    for name in OBSERVATION_DETAIL:
        item[name] = row.get(name)
    item["author"] = row.get("author")  # the person, where known: the details panel shows it
    item["updated_at"] = to_iso(item["updated_at"]) if item["updated_at"] != row["created_at"] else None
    item["last_retrieved_at"] = to_iso(item["last_retrieved_at"])
    if item.get("path"):
        item["path"] = str(export_dir / item["path"])
    return item


def _summary(row: Mapping[str, Any], export_dir: Any) -> dict[str, Any]:
    item = {
        **summary_row(row),
        **{name: row.get(name) for name in SUMMARY_FIELDS},
        "author": row.get("author"),
    }
    if item.get("path"):
        item["path"] = str(export_dir / item["path"])
    return item


def _session(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {name: row.get(name) for name in SESSION_FIELDS}
    out["started_at"] = to_iso(row.get("started_at"))
    out["completed_at"] = to_iso(row.get("completed_at"))
    return out
