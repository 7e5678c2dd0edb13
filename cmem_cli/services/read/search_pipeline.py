"""The three read layers — search (cheap index), timeline (context), get (full details) — as functions.

Commands render what these return; tests call them directly. Rows are typed per kind
(:mod:`cmem_cli.core.hit_types`), plain dicts at run time that the page prints as its JSON.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from cmem_cli.core.config import Config
from cmem_cli.core.errors import InvalidInput, NotFound
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.ids import UID_TAIL
from cmem_cli.core.pages import SearchPage
from cmem_cli.core.query import ORDERS, Query
from cmem_cli.core.summary_title import summary_title
from cmem_cli.core.text import estimate_tokens
from cmem_cli.core.timeutil import to_iso
from cmem_cli.services.truth import supersession
from cmem_cli.services.truth.supersession import Links, StoreLinks
from cmem_cli.store.filters import Filters as Filters
from cmem_cli.store.repository import Store
from cmem_cli.store.supersession import ObservationText

if TYPE_CHECKING:
    from cmem_cli.core.hit_types import (
        DocumentHit,
        HitRow,
        ObservationHit,
        PromptHit,
        SignalJson,
        SummaryHit,
        TimelineJson,
        TimelineRow,
    )
    from cmem_cli.store.anchors import Anchor
    from cmem_index.fusion import SignalScore
    from cmem_index.hybrid import IndexHit

K = TypeVar("K", bound=Hashable)


class Reader(Protocol):
    """What a search reads: the home's config (for the index) and its store. The write service and the
    API's store-only reader both are one."""

    @property
    def config(self) -> Config: ...

    @property
    def store(self) -> Store: ...


STORE_SIGNAL = "store"
ALL = 1_000_000  # the depth of "every hit" (``limit`` 0)
MEMORIES = "memories"  # cmem's own export tree as a collection (cmem_index.collections.MEMORIES)
# Patterns compiled where used (re caches them): only a command given a reference reads one.
_REF = r"^(?P<prefix>[SsPp]?)(?P<num>\d+)$"
_DOCID = r"^(?:#|doc:)(?P<docid>[0-9a-fA-F]{6})$"


def observation_row(row: Mapping[str, Any], score: float | None = None) -> ObservationHit:
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
        "machine": row.get("machine"),
        "key": row.get("key"),
        "created_at": to_iso(row["created_at"]),
        "score": score,
        "tokens": row.get("tokens") or 0,
        "path": row.get("path"),
        "invalidated": row.get("invalidated"),
    }


def summary_tokens(row: Mapping[str, Any]) -> int:
    return estimate_tokens("".join(row.get(f) or "" for f in SUMMARY_FIELDS))


def summary_row(row: Mapping[str, Any], score: float | None = None) -> SummaryHit:
    return {
        "id": f"S{row['id']}", "uid": row["uid"], "kind": "summary", "type": "summary",
        "title": summary_title(row), "subtitle": None, "project": row["project"], "session": row["session"],
        "agent": row["agent"], "machine": row.get("machine"), "key": None,
        "created_at": to_iso(row["created_at"]), "score": score, "tokens": summary_tokens(row),
        "path": row.get("path"),
    }  # fmt: skip


def prompt_row(row: Mapping[str, Any], score: float | None = None) -> PromptHit:
    return {
        "id": f"P{row['id']}", "uid": row["uid"], "kind": "prompt", "type": "prompt",
        "title": " ".join(row["text"].split())[:200], "subtitle": None, "project": row["project"],
        "session": row["session"], "agent": row["agent"], "machine": row.get("machine"), "key": None,
        "created_at": to_iso(row["created_at"]), "score": score, "tokens": estimate_tokens(row["text"]),
        "path": None, "prompt_number": row["prompt_number"],
    }  # fmt: skip


def check_paging(order: str, limit: int, offset: int) -> None:
    """The ordering and paging options every search layer takes."""
    if order not in ORDERS:
        raise InvalidInput(f"unknown order {order!r} (expected one of: {', '.join(ORDERS)})")
    if limit < 0 or offset < 0:
        raise InvalidInput("--limit and --offset must not be negative")


def filters_of(query: Query, store: Store | None = None) -> Filters:
    """The store's filters of ``query`` (types checked when it was made, dates parsed here). With ``store``,
    a project covers its repository's older names too (``folded``: worktree folders recorded under their own
    names before projects were keyed by repository, which `cmem projects` shows as ``same_as`` it)."""
    filters = Filters(**query.filter_fields().fields())
    if store is not None and filters.project is not None:
        filters.folded = store.projects.older_names(filters.project)
    return filters


def keyword_search(
    store: Store,
    query: str | None,
    filters: Filters,
    *,
    limit: int = 20,
    offset: int = 0,
    order: str = "relevance",
) -> list[HitRow]:
    """Keyword layer: observations, summaries and prompts matching ``query``; listing when no query."""
    check_paging(order, limit, offset)
    if not query or not query.strip():
        rows = store.listing.observations(
            filters, limit=limit, offset=offset, order="oldest" if order == "oldest" else "newest"
        )
        listed: list[HitRow] = [observation_row(r) for r in rows]
        supersession.annotate(store, listed)
        return listed
    window = limit + offset
    # Summaries and prompts are searched by relevance: ordered by date, every match must be read.
    depth = window if order == "relevance" else ALL
    hits: list[HitRow] = [
        observation_row(r, r["score"])
        for r in store.search.observations(query, filters, limit=window, order=order)
    ]
    hits += [summary_row(r, r["score"]) for r in store.search.summaries(query, filters, limit=depth)]
    hits += [prompt_row(r, r["score"]) for r in store.search.prompts(query, filters, limit=depth)]
    if order == "relevance":
        hits.sort(key=lambda h: -(h["score"] or 0))
    else:
        hits.sort(key=lambda h: h["created_at"] or "", reverse=order == "newest")
    page = hits[offset:window]
    for hit in page:  # full precision was needed to order; rows show four decimals
        hit["score"] = round(hit["score"], 4) if hit["score"] is not None else None
    supersession.annotate(store, page)
    return page


MIN_UID_PREFIX = 6
_UID_PREFIX = rf"(?i)^[0-9A-HJKMNP-TV-Z]{{{MIN_UID_PREFIX},26}}$"


def resolve_observation(store: Store, ref: int | str) -> int:
    """The id of the observation ``ref`` names: its integer id (``12``), its uid (the one id that is the
    same on every machine), a unique prefix of the uid of at least six characters, or the uid's last 8
    characters as its file name shows them (``...-7zk3qw9m.md``), in any case.

    The one resolver behind every command and tool that takes an observation (edit, forget, link, MCP;
    get and timeline through :func:`resolve_ref`). Digits alone are an id; an ambiguous prefix is an
    error listing the candidates, as a session prefix is; an exact uid always wins. A summary's uid is
    refused by name."""
    if isinstance(ref, int) and not isinstance(ref, bool):
        return ref
    text = str(ref).strip()
    if text.isascii() and text.isdigit():
        number = int(text)
        if _maybe_tail(text) and store.observations.find(number) is None:
            return _tail_or(store, text, ("observation", number), summaries=False)[1]
        return number
    if not re.match(_UID_PREFIX, text):
        raise InvalidInput(
            f"not an observation id: {text!r} (expected a number, a uid, or a uid prefix of at least "
            f"{MIN_UID_PREFIX} characters)"
        )
    return resolve_uid(store, text, summaries=False)[1]


def resolve_uid(store: Store, text: str, *, summaries: bool) -> tuple[str, int]:
    """(kind, id) of the observation (or, with ``summaries``, session summary) whose uid is ``text``,
    starts with it, or ends with it as a file name shows it. NotFound when none does; InvalidInput when
    several do (naming them), or when it names a summary and ``summaries`` is off."""
    wanted = text.strip().upper()
    found = store.observations.uid_matches(wanted)
    exact = [c for c in found if c[2] == wanted]
    usable = [c for c in exact or found if summaries or c[0] == "observation"]
    if not usable and (exact or found):
        number = (exact or found)[0][1]
        raise InvalidInput(f"{text} is the uid of summary S{number}, not of an observation")
    what = "observation or summary" if summaries else "observation"
    if not usable:
        if len(wanted) == 26:
            raise NotFound(f"no {what} with uid {text}")
        ends = " or ends" if _maybe_tail(wanted) else ""
        raise NotFound(f"no {what} uid starts{ends} with {text}")
    if len(usable) > 1:
        shown = ", ".join(uid for _, _, uid in usable[:3]) + (", ..." if len(usable) > 3 else "")
        raise InvalidInput(f"uid prefix {text!r} is ambiguous: {shown}")
    kind, number, _ = usable[0]
    return kind, number


def _maybe_tail(text: str) -> bool:
    """Could ``text`` be the uid tail a file name ends with? (8 characters of a uid's alphabet.)"""
    return len(text) == UID_TAIL and bool(re.match(_UID_PREFIX, text))


def _tail_or(store: Store, text: str, parsed: tuple[str, int], *, summaries: bool) -> tuple[str, int]:
    """A tail that reads as an id (``12345678``, ``S1234567``: about one uid in 10,000) and names no
    record as one: the record whose uid it ends (or begins), else ``parsed`` (whose lookup then says
    what is missing)."""
    try:
        return resolve_uid(store, text, summaries=summaries)
    except NotFound:
        return parsed


GET_FORMS = (
    "a number or a uid, S<n> for a summary, P<n> for a prompt, doc:<docid> for a document, or "
    "PATH[:LINE[:COUNT]]"
)
TIMELINE_FORMS = "an observation's number or uid, S<n> for a summary or P<n> for a prompt"


def resolve_ref(store: Store, ref: str, forms: str = GET_FORMS) -> tuple[str, int]:
    """:func:`parse_ref`, and a uid, a unique uid prefix or a file name's uid tail names an observation or
    a session summary (:func:`resolve_uid`)."""
    text = ref.strip()
    if re.match(_REF, text):
        kind, number = parse_ref(text, forms)
        if _maybe_tail(text) and not _exists(store, kind, number):
            return _tail_or(store, text, (kind, number), summaries=True)
        return kind, number
    if re.match(_UID_PREFIX, text):
        return resolve_uid(store, text, summaries=True)
    return parse_ref(text, forms)


def _exists(store: Store, kind: str, number: int) -> bool:
    try:
        {"observation": store.observations.get, "summary": store.summaries.get, "prompt": store.prompts.get}[
            kind
        ](number)
    except NotFound:
        return False
    return True


def parse_ref(ref: str, forms: str = GET_FORMS) -> tuple[str, int]:
    """``12`` -> observation 12; ``S3`` -> summary 3; ``P7`` -> prompt 7. ``forms`` is what the caller
    takes, for the error message (`cmem get` takes documents and paths too)."""
    match = re.match(_REF, ref.strip())
    if not match:
        raise InvalidInput(f"not an id: {ref!r} (expected {forms})")
    prefix = match.group("prefix").upper()
    kind = {"S": "summary", "P": "prompt"}.get(prefix, "observation")
    return kind, int(match.group("num"))


def timeline(
    store: Store, ref: str, *, before: int = 5, after: int = 5, filters: Filters | None = None
) -> TimelineJson:
    """Items around an anchor in the anchor's project, oldest first, the anchor marked (``filters``: only
    what they keep, besides the anchor; their project is the anchor's)."""
    if before < 0 or after < 0:
        raise InvalidInput("--before and --after must not be negative")
    if re.match(_DOCID, ref.strip()):
        raise InvalidInput(f"{ref} is a document: documents have no timeline (`cmem get {ref}` shows it)")
    kind, number = resolve_ref(store, ref, TIMELINE_FORMS)
    anchor: Mapping[str, Any]
    if kind == "observation":
        anchor = store.observations.get(number)
    elif kind == "summary":
        anchor = store.summaries.get(number)
    else:
        anchor = store.prompts.get(number)
    items = store.listing.timeline_around(
        anchor["project"], anchor["created_at"], (kind, number), before=before, after=after, filters=filters
    )
    rows: list[TimelineRow] = []
    for item in items:
        ident: int | str = (
            item["id"]
            if item["kind"] == "observation"
            else (("S" if item["kind"] == "summary" else "P") + str(item["id"]))
        )
        title = item["title"] if item["kind"] != "summary" else summary_title({"request": item["title"]})
        rows.append({
            "id": ident, "uid": item["uid"], "kind": item["kind"],
            "type": item["type"] or item["kind"], "title": " ".join(str(title).split())[:200],
            "project": anchor["project"], "session": item["session"], "agent": item["agent"],
            "machine": item["machine"], "created_at": to_iso(item["created_at"]), "tokens": item["tokens"] or 0,
            "anchor": item["kind"] == kind and item["id"] == number, "invalidated": item["invalidated"],
        })  # fmt: skip
    supersession.annotate(store, rows)
    from cmem_cli.services.truth.anchor_notes import annotate

    return {"anchor": ref, "project": anchor["project"], "items": annotate(store, rows)}


def resolve_query_anchor(store: Store, query: str, filters: Filters) -> str:
    hits = keyword_search(store, query, filters, limit=1)
    if not hits:
        raise NotFound(f"nothing matches {query!r}")
    return str(hits[0]["id"])


# -- hybrid search over the store and the index -----------------------------------------------------------


def check_collections(config: Config, names: list[str]) -> list[str]:
    """The named collections, or NotFound for a name that is not one (a typo must not widen a search)."""
    from cmem_index.collections import load_collections

    known = {c.name for c in load_collections(config)}
    for name in names:
        if name not in known:
            raise NotFound(f"no collection named {name!r} (known: {', '.join(sorted(known))})")
    return list(dict.fromkeys(names))


def signals_json(signals: Mapping[str, SignalScore]) -> dict[str, SignalJson]:
    out: dict[str, SignalJson] = {}
    for name, s in signals.items():
        out[name] = {"rank": s.rank, "score": round(s.raw, 6), "norm": round(s.norm, 4)}
        if s.whole is not None:  # the vector list was searched with words left out
            out[name]["whole"] = round(s.whole, 6)
    return out


def document_row(hit: IndexHit) -> DocumentHit:
    """A row for a collection document (a user's notes or docs) found by the index."""
    return {
        "id": f"doc:{hit.docid}" if hit.docid else hit.key, "uid": None, "kind": "document", "type": "document",
        "title": hit.title or hit.path, "subtitle": hit.snippet, "project": hit.collection, "session": None,
        "agent": None, "machine": None, "key": None, "created_at": to_iso(hit.created_at) if hit.created_at else None,
        "score": hit.score, "tokens": None, "path": f"{hit.collection}:{hit.path}", "line": hit.line,
    }  # fmt: skip


class Retrieved(NamedTuple):
    """What a source's retrievers found for a query, fused and cut off: ``rows`` best first (search rows
    with their ``score``; ``signals`` and ``stages`` with ``explain``), ``hits`` how many fused hits they
    came from (a hit whose row is gone is left out), ``mode`` the search actually run, ``notes`` for
    stderr, ``total`` the hits above the cut-off, ``capped`` a list was cut at its depth."""

    rows: list[HitRow]
    hits: int
    mode: str
    notes: list[str]
    total: int
    capped: bool


class Source(Links, Protocol):
    """Where a search's rows come from, and what every stage after retrieval reads about them, by the rows'
    ``id``: this home (:class:`HomeSource`: the store's keyword search fused with the index) or the team
    database (``cmem_cli.team.source.TeamSource``, whose rows are keyed by uid until :meth:`shown`). The
    stages themselves (replies, order, branches, successors and inferred supersession, anchors, the page)
    are :func:`search`'s, one pipeline for every source."""

    @property
    def store(self) -> Store:
        """This home's store: git's answers and the cited files' hashes are kept there."""
        ...

    def check(self, ask: Query) -> None:
        """Refuse (UsageError, NotFound) what this source cannot search, before anything runs."""
        ...

    def listing(self, filters: Filters, *, limit: int, offset: int, order: str) -> list[HitRow]:
        """No words: the observations ``filters`` keep, by date (``order`` oldest, else newest)."""
        ...

    def retrieve(self, ask: Query, filters: Filters, depth: int, trace: Any) -> Retrieved:
        """The query's hits, each list ``depth`` deep (:data:`ALL`: every hit), fused and cut off."""
        ...

    def replies(self, obs_ids: list[Any], filters: Filters) -> dict[Any, Any]:
        """Each bare question among ``obs_ids`` -> the next observation of its session ``filters`` keep."""
        ...

    def anchors(self, obs_ids: list[Any]) -> dict[Any, Anchor]:
        """The code anchors of these observations (those without one left out)."""
        ...

    def shown(self, rows: list[HitRow]) -> list[HitRow]:
        """The page as it is handed out: ids (and the ids rows point to) this home's commands take."""
        ...


def search(
    memory: Reader,
    ask: Query,
    filters: Filters | None = None,
    *,
    trace: Any = None,
    source: Source | None = None,
) -> SearchPage:
    """The first layer: rows, the mode actually used, notes for stderr and how many rows there are in all.

    ``source`` retrieves (default: this home, :class:`HomeSource`; the team database is another
    :class:`Source`); every stage after retrieval runs here, the same for every source. With no query it
    lists observations by the filters. The options are :class:`~cmem_cli.core.query.Query`'s. ``branch``:
    see :func:`cmem_cli.services.truth.branches.by_branch`; every row carries ``stale``, ``branch`` and
    ``superseded_by``. ``filters``, when given, replace the query's (a benchmark replays scopes it saved
    already parsed). ``trace`` (a ``cmem_index.trace.Trace``) is filled with what each stage did, for a
    caller that reads it (the benchmarks); with ``explain`` each row also carries its place after each
    stage (``stages``) and the notes say what each stage did.
    """
    from cmem_cli.services.truth import anchor_notes, branches

    source = HomeSource(memory) if source is None else source
    source.check(ask)
    query, limit, offset, order, branch, explain = (
        ask.text, ask.limit, ask.offset, ask.order, ask.branch, ask.explain
    )  # fmt: skip
    store = source.store
    filters = filters_of(ask, store) if filters is None else filters
    if branch is not None and branch != branches.ALL_BRANCHES:
        filters.branch = branch
    if not query or not query.strip():
        listed = valid(source.listing(filters, limit=(limit or ALL) + 1, offset=offset, order=order))
        more = len(listed) > (limit or ALL)  # one row past the page says more exist without counting them all
        listed = listed[: limit or ALL]
        supersession.annotate(source, listed)
        listed = anchor_notes.annotate(store, listed, anchors=source.anchors(_observation_ids(listed)))
        return SearchPage(source.shown(listed), "list", [], offset + len(listed) + more, capped=more)
    window = limit + offset if limit else None
    # Ordered by date, the page is the newest (oldest) of every match, not of the most relevant few; a branch
    # filter leaves out index hits after fusion (the index knows no branch), so it takes every hit too.
    depth = max(window, 50) if window and order == "relevance" and filters.branch is None else ALL
    if explain and trace is None:
        from cmem_index.trace import Trace

        trace = Trace()
    found = source.retrieve(ask, filters, depth, trace)
    rows = valid(found.rows)
    if order == "relevance":
        if isinstance(source, HomeSource):  # the store's full-text index holds this home's records only
            rows = phrase_first(store, rows, query)
            _placed(rows, "phrase", trace, explain)
        rows = with_replies(
            source, rows, filters, head=min(window or REPLY_HEAD, REPLY_HEAD), explain=explain
        )
        if isinstance(source, HomeSource):  # which rows the hooks recorded is this home's store's to say
            rows = notes_first(store, rows)
            _placed(rows, "notes", trace, explain)
    else:
        rows.sort(key=lambda r: r["created_at"] or "", reverse=order == "newest")
    _placed(rows, "replies" if order == "relevance" else order, trace, explain)
    rows, anchored = branches.by_branch(store, rows, branch, demote=order == "relevance", read=source.anchors)
    _placed(rows, "branches", trace, explain)
    shown = len(rows)
    rows = supersession.current_first(
        source, rows, filters, query=query if order == "relevance" else None, explain=explain,
        bring_in=branch in (None, branches.ALL_BRANCHES),
    )  # fmt: skip
    rows = valid(rows)  # a successor brought in may have been invalidated
    _placed(rows, "successors", trace, explain)
    if order == "relevance":
        scored_in_order(rows, explain=explain)
    notes = found.notes + ([f"explain: {line}" for line in trace.summary()] if explain else [])
    # less what the source no longer has, plus the successors brought in
    total = max(found.total - (found.hits - shown), shown) + len(rows) - shown
    if len(rows) != shown:  # successors brought in: their anchors were not read with the others
        anchored = {**anchored, **source.anchors([i for i in _observation_ids(rows) if i not in anchored])}
    page = anchor_notes.annotate(store, rows[offset:window], anchors=anchored)
    return SearchPage(source.shown(page), found.mode, notes, total, found.capped)


def valid(rows: list[HitRow]) -> list[HitRow]:
    """``rows`` less the memories someone invalidated (`cmem invalidate`): kept, but no search shows them."""
    return [row for row in rows if row.get("invalidated") is None]


def _observation_ids(rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [r["id"] for r in rows if r.get("kind") == "observation"]


class HomeSource(StoreLinks):
    """This home as a search's :class:`Source`: keyword hits from the store (fresh the moment a write
    commits, covering prompts and summaries) fused with the index's BM25 and vector hits over cmem's export
    tree and the user's collections (``cmem_index.hybrid.hybrid``). Without an index everything still
    works from the store alone. An unknown collection is NotFound."""

    __slots__ = ("memory", "collections")

    def __init__(self, memory: Reader) -> None:
        super().__init__(memory.store, observation_row)
        self.memory = memory
        self.collections: list[str] | None = None

    def check(self, ask: Query) -> None:
        if ask.collections:
            self.collections = check_collections(self.memory.config, list(ask.collections))

    def listing(self, filters: Filters, *, limit: int, offset: int, order: str) -> list[HitRow]:
        if self.collections and MEMORIES not in self.collections:
            return []
        rows = self.store.listing.observations(
            filters, limit=limit, offset=offset, order="oldest" if order == "oldest" else "newest"
        )
        return [observation_row(r) for r in rows]

    def replies(self, obs_ids: list[Any], filters: Filters) -> dict[Any, Any]:
        return self.store.listing.replies(obs_ids, filters)

    def anchors(self, obs_ids: list[Any]) -> dict[Any, Anchor]:
        return self.store.anchors.for_ids(obs_ids) if obs_ids else {}

    def shown(self, rows: list[HitRow]) -> list[HitRow]:
        return rows

    def retrieve(self, ask: Query, filters: Filters, depth: int, trace: Any) -> Retrieved:
        query, collections, explain, store = ask.text or "", self.collections, ask.explain, self.store
        with_store = not collections or MEMORIES in collections
        # The store's keyword ranking runs beside the index's (SQLite lets go of Python): fusion waits for it.
        from cmem_cli.core.background import Background

        pending = Background(lambda: _store_hits(store, query, filters, depth, with_store, not collections))

        from cmem_index.hybrid import hybrid

        try:
            results = hybrid(
                self.memory.config,
                query,
                mode=ask.mode,
                limit=None if depth == ALL else depth,
                filters=filters,
                collections=collections,
                rerank=ask.rerank,
                extra_lists=lambda: {STORE_SIGNAL: pending.result().ranked},
                min_score=ask.min_score,
                trace=trace,
                fresh=lambda recent: _fresh(store, pending.result(), filters, recent and with_store),
            )
        finally:
            pending.wait()
        if results.behind:
            from cmem_index import refresh

            if refresh.enabled(self.memory.config):
                refresh.start(self.memory.config)  # detached; a pass already running sees the backlog itself
        store_hits = pending.result()
        by_key, store_capped = store_hits.by_key, store_hits.capped
        missing = [
            h.uid for h in results if h.kind == "observation" and h.uid and f"obs:{h.uid}" not in by_key
        ]
        found = store.observations.by_uids(missing)
        rows: list[HitRow] = []
        for hit in results:
            row = by_key.get(hit.key)
            if row is None and hit.kind == "observation" and hit.uid in found:
                row = observation_row(found[hit.uid])
            elif row is None and hit.kind == "summary" and hit.path:
                row = _summary_by_path(store, hit.path)
            elif row is None and hit.kind == "document":
                row = document_row(hit)
            if row is None:
                continue  # in the index but no longer in the store (deleted since the last index run)
            if filters.machine is not None and row.get("machine") != filters.machine:
                continue  # an index built before it kept machines filters on none: its hits are kept by their rows
            if filters.misses(row):
                continue  # a filter the index keeps no column for (core/filters.py): checked on the row
            row = row.copy()
            row["score"] = round(hit.score, 4)
            if hit.line is not None and row["kind"] == "document":
                row["line"] = hit.line
            if explain:
                row["signals"] = signals_json(hit.signals)
                row["stages"] = dict(trace.places.get(hit.key, {}))
            rows.append(row)
        return Retrieved(
            rows, len(results), results.mode, results.notes, results.total, results.capped or store_capped
        )


RECENT = 16  # the store's newest memories a search hands the index, which may not hold them yet


def _fresh(store: Store, hits: StoreHits, filters: Filters, recent: bool) -> list[tuple[str, str | None]]:
    """The store's memories the index may not hold yet, with their export files, best first: its keyword
    hits, then (``recent``: a search with vectors) its ``RECENT`` newest under the filters, which a
    question may match by meaning alone."""
    out = [(key, hits.by_key[key].get("path")) for key, _ in hits.ranked if key.startswith("obs:")]
    if recent:
        rows = store.listing.observations(filters, limit=RECENT, order="newest")
        out += [(f"obs:{row['uid']}", row.get("path")) for row in rows]
    return out


class StoreHits(NamedTuple):
    """The store's keyword hits for a search: each key's row, the keys by strength, and whether a list was
    cut at the search's depth."""

    by_key: dict[str, HitRow]
    ranked: list[tuple[str, float]]
    capped: bool


def _store_hits(
    store: Store, query: str, filters: Filters, depth: int, memories: bool, prompts_too: bool
) -> StoreHits:
    """Observations and summaries (``memories``: cmem's own collection is searched) and prompts (not files
    of any collection: ``prompts_too`` when no collection is named), keyed as the index keys them."""
    observations = store.search.observations(query, filters, limit=depth) if memories else []
    summaries = store.search.summaries(query, filters, limit=depth) if memories else []
    prompts = store.search.prompts(query, filters, limit=depth) if prompts_too else []
    by_key: dict[str, HitRow] = {}
    ranked: list[tuple[str, float]] = []
    for observation in observations:
        by_key[f"obs:{observation['uid']}"] = observation_row(observation)
        ranked.append((f"obs:{observation['uid']}", observation["strength"]))
    for summary in summaries:
        key = f"doc:memories:{summary['path']}" if summary.get("path") else f"summary:{summary['id']}"
        by_key[key] = summary_row(summary)
        ranked.append((key, summary["strength"]))
    for prompt in prompts:
        by_key[f"prompt:{prompt['id']}"] = prompt_row(prompt)
        ranked.append((f"prompt:{prompt['id']}", prompt["strength"]))
    ranked.sort(key=lambda item: -item[1])
    capped = any(len(found) >= depth for found in (observations, summaries, prompts))
    return StoreHits(by_key, ranked, capped)


def _placed(rows: list[HitRow], stage: str, trace: Any, explain: bool) -> None:
    """A stage of the service (replies, branches, successors) in the trace: how many rows it moved, and
    with ``explain`` each row's place after it (a row it brought in has no earlier place)."""
    if trace is None:
        return
    moved = 0
    for place, row in enumerate(rows, 1):
        stages = row.get("stages") or {}
        moved += bool(stages) and list(stages.values())[-1] != place
        if explain:
            row["stages"] = {**stages, stage: place}
    trace.record(stage, rows=len(rows), **({"moved": moved} if explain else {}))


def scored_in_order(rows: list[HitRow], *, explain: bool = False) -> None:
    """Make each row's printed score the one that put it where it is: no row shows more than the row above.

    What ranks hybrid hits is each list's standardised scores (``cmem_index.fusion``), then a question's
    reply before it, the reranker's head, other branches weighed lower, a replaced memory's successor just above it; the calibrated evidence each hit has (what
    ``--min-score`` and the cut-off read) can be higher for a row ranked lower. A row shows the lower of its
    evidence and the score of the row above, so the column reads in order and never claims more than the
    hit's evidence; every shown score is still above the cut-off. With ``explain`` each row also carries
    its own ``evidence``."""
    ceiling = math.inf
    for row in rows:
        score = row.get("score")
        if score is None:
            continue
        if explain:
            row["evidence"] = score
        ceiling = min(score, ceiling)
        row["score"] = ceiling


def phrase_first(store: Store, rows: list[HitRow], query: str) -> list[HitRow]:
    """The observations that hold the query verbatim first, in their order, when the query is said exactly
    (an error message, a symbol, words in quotes: :func:`cmem_cli.core.fts.exact_phrase`).

    Keyword search drops the small words of "no such table" and weighs "table" as any other match, and
    the vectors find what sounds alike; the record that holds the words in that order is the one asked
    for, however its scores came out. A symbol (``max_age``) is looked for as written, and as its words in
    order ("max age") only when no record writes it. One query on the store's full-text index for the
    hits' ids (and, for a symbol, the text of those that hold its words)."""
    from cmem_cli.core.fts import exact_phrase, symbol

    phrase = exact_phrase(query)
    if phrase is None:
        return rows
    held = store.search.holding_phrase(phrase, _home_observation_ids(rows))
    named = symbol(query)
    if named is not None and held:
        written = {t.id for t in store.supersession.stated_texts(held) if named in "\n".join(_stated(t))}
        held = written or held
    if not held:
        return rows
    first = [r for r in rows if r["kind"] == "observation" and r["id"] in held]
    return first + [r for r in rows if not (r["kind"] == "observation" and r["id"] in held)]


def _home_observation_ids(rows: list[HitRow]) -> list[int]:
    """The observations' ids among ``rows``: this home's integers (a team search's rows carry uids, and the
    stages that read this home's full-text index skip them)."""
    return [r["id"] for r in rows if r["kind"] == "observation" and isinstance(r["id"], int)]


def _stated(text: ObservationText) -> list[str]:
    return [text.title, text.subtitle, text.narrative, *text.facts]


NOTES_HEAD = 100  # the rows whose sessions' notes are weighed against their automatic records


def notes_first(store: Store, rows: list[HitRow]) -> list[HitRow]:
    """What the agent or a person wrote ranks above what the hooks recorded about the same session.

    A session's automatic rows (its summary, its prompts, the hooks' tool records but failures, which hold
    the exact error) restate the request in
    the request's words, so they match a question about it better than the note the agent wrote with the
    answer (a decision, a bug's cause), which says what came of it. When a note and such rows of its
    session are both hits, the note takes the place (and the score) of the first of them that ranked above
    it; the others keep their order, one place down. Rows of other sessions keep their places. Only the first
    :data:`NOTES_HEAD` rows are weighed."""
    head = rows[:NOTES_HEAD]
    observed = [
        r["id"] for r in head if r["kind"] == "observation" and isinstance(r["id"], int) and r.get("session")
    ]
    captured = store.recall.captured(observed) if observed else set()
    automatic = {
        id(r)
        for r in head
        if r.get("session")
        and (r["kind"] in ("summary", "prompt") or r["kind"] == "observation" and r["id"] in captured)
    }
    if not automatic:
        return rows
    out = list(head)
    for row in head:
        if row["kind"] != "observation" or id(row) in automatic or not row.get("session"):
            continue
        at = next(i for i, r in enumerate(out) if r is row)
        above = next(
            (
                i
                for i, other in enumerate(out[:at])
                if id(other) in automatic and other.get("session") == row["session"]
            ),
            None,
        )
        if above is not None:  # standing in for its session, it shows the evidence of the row it passed
            score = max(row.get("score") or 0.0, out[above].get("score") or 0.0)
            moved = out.pop(at).copy()
            moved["score"] = score
            out.insert(above, moved)
    return out + rows[NOTES_HEAD:]


REPLY_HEAD = 100  # the rows whose questions bring their replies along


def with_replies(
    source: Source, rows: list[HitRow], filters: Filters, *, head: int, explain: bool = False
) -> list[HitRow]:
    """Each bare question among the first ``head`` rows preceded by its reply, when the reply is a hit too.

    In a conversation kept turn by turn, the turn that matches a question best is often the same question
    asked in the chat ("Which team did you sign with?"); the answer is the reply after it (the next
    observation of its session), which shares few words with the question, and the question itself holds
    no information. So when the reply was found as well, however far down, it moves up to just before the
    question, keeping its own score. A reply that is no hit of its own (nothing of the query in it, by
    words or meaning) is not brought in. Only an observation that is nothing but a question (a title with a
    question mark, no narrative or facts) in a session counts. docs/retrieval.md has the measurements.
    """
    asking = [r["id"] for r in rows[:head] if r["kind"] == "observation" and "?" in (r["title"] or "")]
    found = {r["id"]: r for r in rows if r["kind"] == "observation"}
    replies = {q: r for q, r in source.replies(asking, filters).items() if r in found}
    if not replies:
        return rows
    keys = [(r["kind"], r["id"]) for r in rows]
    by_key = dict(zip(keys, rows, strict=True))
    order = replies_first(keys, {("observation", q): ("observation", r) for q, r in replies.items()})
    out = [by_key[key] for key in order]
    if explain:  # a moved reply is marked with its question's row, the next one
        question_of = {reply: question for question, reply in replies.items()}
        for rank, (row, nxt) in enumerate(zip(out, out[1:], strict=False), 1):
            if row["kind"] == nxt["kind"] == "observation" and question_of.get(row["id"]) == nxt["id"]:
                mark: SignalJson = {"rank": rank + 1, "score": nxt["score"], "norm": nxt["score"]}
                marked = row.copy()
                marked["signals"] = {**(row.get("signals") or {}), "reply": mark}
                out[rank - 1] = marked
    return out


def replies_first(keys: Sequence[K], replies: Mapping[K, K]) -> list[K]:
    """``keys`` with each question's reply (``replies``: question -> reply) moved to just before the
    question, when the reply is among ``keys``; every key once. The benchmark replays this order."""
    present = set(keys)
    out: list[K] = []
    placed: set[K] = set()
    for key in keys:
        if key in placed:
            continue
        reply = replies.get(key)
        if reply is not None and reply in present and reply not in placed:
            out.append(reply)
            placed.add(reply)
        out.append(key)
        placed.add(key)
    return out


def _summary_by_path(store: Store, path: str) -> SummaryHit | None:
    row = store.summaries.by_path(path)
    return summary_row(row) if row else None
