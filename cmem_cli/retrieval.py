"""The three read layers — search (cheap index), timeline (context), get (full details) — as functions.

Commands render what these return; tests call them directly. Rows are JSON-ready dicts.
"""

from __future__ import annotations

import re
from typing import Any

from cmem_cli.errors import InvalidInput, NotFound
from cmem_cli.store import SUMMARY_TEXT_FIELDS, Filters, Store, estimate_tokens
from cmem_cli.timeutil import to_iso

ORDERS = ("relevance", "newest", "oldest")
_REF = re.compile(r"^(?P<prefix>[SsPp#]?)(?P<num>\d+)$")


def observation_row(row: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """The compact, JSON-ready row of the search and timeline layers."""
    return {
        "id": row["id"],
        "uid": row["uid"],
        "kind": "observation",
        "type": row["type"],
        "title": row["title"],
        "subtitle": row.get("subtitle"),
        "project": row["project"],
        "session": row.get("session"),
        "agent": row["agent"],
        "key": row.get("key"),
        "created_at": to_iso(row["created_at"]),
        "score": score,
        "tokens": row.get("tokens") or 0,
        "path": row.get("path"),
    }


def summary_title(row: dict[str, Any]) -> str:
    text = row.get("request") or row.get("completed") or row.get("learned") or "Session summary"
    return "Session summary: " + " ".join(text.split())[:120]


def summary_tokens(row: dict[str, Any]) -> int:
    return estimate_tokens("".join(row.get(f) or "" for f in SUMMARY_TEXT_FIELDS))


def summary_row(row: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    return {
        "id": f"S{row['id']}", "uid": row["uid"], "kind": "summary", "type": "summary",
        "title": summary_title(row), "subtitle": None, "project": row["project"], "session": row["session"],
        "agent": row["agent"], "key": None, "created_at": to_iso(row["created_at"]),
        "score": score, "tokens": summary_tokens(row),
        "path": row.get("path"),
    }  # fmt: skip


def prompt_row(row: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    return {
        "id": f"P{row['id']}", "uid": row["uid"], "kind": "prompt", "type": "prompt",
        "title": " ".join(row["text"].split())[:200], "subtitle": None, "project": row["project"],
        "session": row["session"], "agent": row["agent"], "key": None, "created_at": to_iso(row["created_at"]),
        "score": score, "tokens": estimate_tokens(row["text"]),
        "path": None, "prompt_number": row["prompt_number"],
    }  # fmt: skip


def keyword_search(
    store: Store,
    query: str | None,
    filters: Filters,
    *,
    limit: int = 20,
    offset: int = 0,
    order: str = "relevance",
) -> list[dict[str, Any]]:
    """Keyword layer: observations, summaries and prompts matching ``query``; listing when no query."""
    if order not in ORDERS:
        raise InvalidInput(f"unknown order {order!r} (expected one of: {', '.join(ORDERS)})")
    if limit < 0 or offset < 0:
        raise InvalidInput("--limit and --offset must not be negative")
    if not query or not query.strip():
        rows = store.list_observations(
            filters, limit=limit, offset=offset, order="oldest" if order == "oldest" else "newest"
        )
        return [observation_row(r) for r in rows]
    window = limit + offset
    hits = [
        observation_row(r, r["score"])
        for r in store.search_observations(query, filters, limit=window, order=order)
    ]
    hits += [summary_row(r, r["score"]) for r in store.search_summaries(query, filters, limit=window)]
    hits += [prompt_row(r, r["score"]) for r in store.search_prompts(query, filters, limit=window)]
    if order == "relevance":
        hits.sort(key=lambda h: -(h["score"] or 0))
    else:
        hits.sort(key=lambda h: h["created_at"], reverse=order == "newest")
    page = hits[offset:window]
    for hit in page:  # full precision was needed to order; rows show four decimals
        hit["score"] = round(hit["score"], 4) if hit["score"] is not None else None
    return page


def parse_ref(ref: str) -> tuple[str, int]:
    """``12`` or ``#12`` -> observation 12; ``S3`` -> summary 3; ``P7`` -> prompt 7."""
    match = _REF.match(ref.strip())
    if not match:
        raise InvalidInput(f"not an id: {ref!r} (expected a number, S<n> for a summary or P<n> for a prompt)")
    prefix = match.group("prefix").upper()
    kind = {"S": "summary", "P": "prompt"}.get(prefix, "observation")
    return kind, int(match.group("num"))


def timeline(store: Store, ref: str, *, before: int = 5, after: int = 5) -> dict[str, Any]:
    """Items around an anchor in the anchor's project, oldest first, the anchor marked."""
    if before < 0 or after < 0:
        raise InvalidInput("--before and --after must not be negative")
    kind, number = parse_ref(ref)
    if kind == "observation":
        anchor = store.get_observation(number)
    elif kind == "summary":
        anchor = store.get_summary(number)
    else:
        anchor = store.get_prompt(number)
    items = store.timeline_around(
        anchor["project"], anchor["created_at"], (kind, number), before=before, after=after
    )
    rows = []
    for item in items:
        ident: int | str = (
            item["id"]
            if item["kind"] == "observation"
            else (("S" if item["kind"] == "summary" else "P") + str(item["id"]))
        )
        title = item["title"] if item["kind"] != "summary" else "Session summary: " + item["title"]
        rows.append({
            "id": ident, "uid": item["uid"], "kind": item["kind"],
            "type": item["type"] or item["kind"], "title": " ".join(str(title).split())[:200],
            "project": anchor["project"], "session": item["session"], "agent": item["agent"],
            "created_at": to_iso(item["created_at"]), "tokens": item["tokens"] or 0,
            "anchor": item["kind"] == kind and item["id"] == number,
        })  # fmt: skip
    return {"anchor": ref, "project": anchor["project"], "items": rows}


def resolve_query_anchor(store: Store, query: str, filters: Filters) -> str:
    hits = keyword_search(store, query, filters, limit=1)
    if not hits:
        raise NotFound(f"nothing matches {query!r}")
    return str(hits[0]["id"])
