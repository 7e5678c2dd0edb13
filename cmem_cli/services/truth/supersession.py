"""Supersession: which memories a newer one replaced, and what the read paths do about it.

A ``supersedes`` link from NEW to OLD (``cmem add --supersedes OLD``, JSON ``supersedes``, MCP ``remember``,
``cmem link NEW supersedes OLD``) says OLD is no longer true. Nothing is deleted: OLD keeps its text and
stays findable, but every row of it carries ``superseded_by`` (the newest direct successor's id), search
ranks the successor just above it, and the session briefing leaves it out. The links are the one source of
truth (they travel in the export files and through sync), so this module only reads them: one indexed
query for the rows a command shows.

Supersession that is only inferred (a newer memory states an update of the same subject) is weaker and
lives in :mod:`cmem_cli.services.truth.updates`; its rows carry ``possibly_superseded_by`` instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from cmem_cli.store.repository import Store
from cmem_cli.store.supersession import SUPERSEDES as SUPERSEDES  # the services' callers name it from here
from cmem_cli.store.supersession import ObservationText

if TYPE_CHECKING:
    from cmem_cli.core.hit_types import HitRow
    from cmem_cli.store.filters import Filters
    from cmem_cli.store.row_types import ObservationRow

MAX_CHAIN = 20  # successors followed from one row (a chain of replacements; cycles stop earlier)
# The rows the stages read and mark: a search's hits (cmem_cli.core.hit_types), a window's or a briefing's
# items. Each stage hands back the rows it was given, of the same type.
R = TypeVar("R", bound=Mapping[str, Any])


def _marked(row: Mapping[str, Any]) -> MutableMapping[str, Any]:
    """``row`` to write the stages' keys into (every row a stage takes is a dict at run time)."""
    return cast("MutableMapping[str, Any]", row)


class Links(Protocol):
    """What the supersession stages read about the rows a search found, by the rows' ``id``: this home's
    store (:class:`StoreLinks`, ids are integers) or the team database (ids are uids). One set of stages,
    any source of rows."""

    def successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        """Each of ``ids`` a newer memory superseded -> that successor (the newest one when several did)."""
        ...

    def passing(self, ids: set[Any], filters: Filters) -> dict[Any, HitRow]:
        """The search rows of those of ``ids`` that ``filters`` keep (a successor brought into a search)."""
        ...

    def stated_texts(self, ids: list[Any]) -> list[ObservationText]:
        """What these observations state, and when (what an inferred update compares)."""
        ...

    def inferred_successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        """Each of ``ids`` a newer memory probably replaced (inferred when it was recorded) -> that memory."""
        ...

    def likely_successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        """Each of ``ids`` a newer memory likely replaced, not marked (it ranks below it) -> that memory."""
        ...


class StoreLinks:
    """:class:`Links` over this home's store; ``make_row`` shapes a stored row as a search row."""

    __slots__ = ("store", "make_row")

    def __init__(self, store: Store, make_row: Any = None) -> None:
        self.store, self.make_row = store, make_row

    def successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        return self.store.supersession.newest_successors(ids)

    def passing(self, ids: set[Any], filters: Filters) -> dict[Any, HitRow]:
        stored = _passing(self.store, ids, filters)
        if self.make_row:
            return {i: self.make_row(row) for i, row in stored.items()}
        return cast("dict[Any, HitRow]", stored)  # the stored rows, which a search's stages extend

    def stated_texts(self, ids: list[Any]) -> list[ObservationText]:
        return self.store.supersession.stated_texts(ids)

    def inferred_successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        return self.store.supersession.newest_inferred(ids)

    def likely_successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        return self.store.supersession.likely_successors(ids)


def _links(source: Store | Links) -> Links:
    return StoreLinks(source) if isinstance(source, Store) else source


def successors(store: Store | Links, obs_ids: Iterable[Any]) -> dict[Any, Any]:
    """Each of ``obs_ids`` that a newer memory superseded -> that successor's id (the newest one when
    several superseded it)."""
    return _links(store).successors(obs_ids)


def annotate(store: Store | Links, rows: list[R]) -> dict[Any, Any]:
    """Give every row ``superseded_by`` (None unless it is an observation a newer one replaced) and
    ``possibly_superseded_by`` (:func:`annotate_inferred`); returns the replaced ids -> successor ids it
    found."""
    found = successors(store, (r["id"] for r in rows if r.get("kind", "observation") == "observation"))
    for row in rows:
        is_observation = row.get("kind", "observation") == "observation"
        _marked(row)["superseded_by"] = found.get(row["id"]) if is_observation else None
    annotate_inferred(store, rows)
    return found


def current_first(
    store: Links,
    rows: list[R],
    filters: Filters,
    *,
    query: str | None,
    explain: bool = False,
    bring_in: bool = True,
) -> list[R]:
    """Search rows as the read paths show them: each marked ``superseded_by``; with ``query`` (a search
    in relevance order) each replaced memory's successor ranked just above it (``bring_in``: also when the
    query did not find it). ``store``: where the rows came from (:class:`Links`)."""
    annotate(store, rows)
    hinted = {
        r["id"]: r["possibly_superseded_by"] for r in rows if r.get("possibly_superseded_by") is not None
    }
    if query is None:
        return rows
    rows = successor_first(store, rows, filters, explain=explain, bring_in=bring_in, hinted=hinted)
    rows = _inferred_first(store, rows, query)
    current = [r["id"] for r in rows if r.get("kind", "observation") == "observation" and r.get("superseded_by") is None
               and r.get("possibly_superseded_by") is None]  # fmt: skip
    likely = store.likely_successors(current) if current else {}
    return newer_above(rows, likely) if likely else rows


def annotate_inferred(store: Store | Links, rows: list[R]) -> dict[Any, Any]:
    """Give every row ``possibly_superseded_by``: the newer memory that probably replaced it, as inferred
    when that one was recorded (:mod:`cmem_cli.services.truth.candidates`); None for a row an explicit link
    replaced (``superseded_by`` says more) and for the rest. Returns the replaced ids -> successors."""
    ids = [
        r["id"]
        for r in rows
        if r.get("kind", "observation") == "observation" and r.get("superseded_by") is None
    ]
    found = _links(store).inferred_successors(ids) if ids else {}
    for row in rows:
        is_observation = row.get("kind", "observation") == "observation"
        _marked(row)["possibly_superseded_by"] = (
            found.get(row["id"]) if is_observation and row.get("superseded_by") is None else None
        )
    return found


def _inferred_first(store: Links, rows: list[R], query: str) -> list[R]:
    """Mark rows a newer hit seems to update (:mod:`cmem_cli.services.truth.updates`) and rank that hit first."""
    found = inferred(store, rows, query)
    if not found:
        return rows
    for row in rows:
        if row.get("kind") == "observation" and row["id"] in found:
            _marked(row)["possibly_superseded_by"] = found[row["id"]]
    return newer_above(rows, found)


def inferred(store: Store | Links, rows: list[R], query: str) -> dict[Any, Any]:
    """Older observation id -> the newer one that seems to update it, among the first rows (relevance
    order) of a search for ``query`` that no explicit link replaced (:func:`cmem_cli.services.truth.updates.infer`)."""
    from cmem_cli.services.truth import updates

    head = [
        r for r in rows[: updates.HEAD] if r.get("kind") == "observation" and r.get("superseded_by") is None
    ]
    if len(head) < 2:
        return {}
    stored = _links(store).stated_texts([r["id"] for r in head])
    texts = {r.id: "\n".join(_text_parts(r)) for r in stored}
    when = {r.id: r.created_at for r in stored}
    return updates.infer(head, texts, when, query)


def _text_parts(row: ObservationText) -> list[str]:
    # a title cut from the narrative's start (an imported message) would be read twice
    parts = [row.narrative] if row.narrative.startswith(row.title) else [row.title, row.narrative]
    return [p for p in (*parts, row.subtitle, *row.facts) if p]


def newer_above(rows: list[R], pairs: dict[Any, Any]) -> list[R]:
    """``rows`` with each newer row (``pairs``: older id -> newer id) moved just above its older row when it
    ranked below it; every row once, the rest in order."""
    position = {r["id"]: i for i, r in enumerate(rows) if r.get("kind") == "observation"}
    lead: dict[int, list[int]] = {}
    for old, new in pairs.items():
        if old in position and new in position and position[new] > position[old]:
            lead.setdefault(old, []).append(new)
    if not lead:
        return rows
    moved = {new for news in lead.values() for new in news}
    by_id = {r["id"]: r for r in rows if r.get("kind") == "observation"}
    out: list[R] = []
    placed: set[int] = set()
    for row in rows:
        obs_id = row["id"] if row.get("kind") == "observation" else None
        if obs_id in moved and obs_id in placed:
            continue
        for new in sorted(lead.get(obs_id, []), key=lambda i: position[i]) if obs_id is not None else []:
            if new not in placed:
                out.append(by_id[new])
                placed.add(new)
        if obs_id is not None and obs_id in placed:
            continue
        out.append(row)
        if obs_id is not None:
            placed.add(obs_id)
    return out


def successor_first(
    store: Links,
    rows: list[R],
    filters: Filters,
    *,
    explain: bool = False,
    bring_in: bool = True,
    hinted: dict[Any, Any] | None = None,
) -> list[R]:
    """``rows`` (best first, annotated) with each replaced observation's successor just above it
    (``hinted``: replacements inferred when recorded, old id -> new id, ranked the same way).

    A successor that was a hit further down moves up; one that was no hit is brought in when it passes
    the search's ``filters`` (a person searching the old wording should meet the current one), as the
    source's row (:meth:`Links.passing`) with the replaced row's score. The chain is followed: when B replaced
    A and C replaced B, a search that finds A shows C, B, A. Every row appears once; a cycle of links
    stops where it closes.
    """
    replaced = {r["id"]: r["superseded_by"] for r in rows if r.get("superseded_by") is not None}
    for old, new in (hinted or {}).items():
        replaced.setdefault(old, new)
    if not replaced:
        return rows
    by_id = {r["id"]: r for r in rows if r.get("kind", "observation") == "observation"}
    chains: dict[int, list[int]] = {}
    known = dict(replaced)
    for old in replaced:
        chain: list[int] = []
        current = old
        while current in known and len(chain) < MAX_CHAIN:
            nxt = known[current]
            if nxt == old or nxt in chain:
                break
            chain.append(nxt)
            if nxt not in known:
                known.update(
                    successors(store, [nxt]) or (_links(store).inferred_successors([nxt]) if hinted else {})
                )
            current = nxt
        chains[old] = chain
    wanted = {i for chain in chains.values() for i in chain} - set(by_id)
    fetched = store.passing(wanted, filters) if bring_in and wanted else {}
    out: list[R] = []
    placed: set[int] = set()
    for row in rows:
        obs_id = row["id"] if row.get("kind", "observation") == "observation" else None
        if obs_id is not None and obs_id in placed:
            continue
        for successor in reversed(chains.get(obs_id, []) if obs_id is not None else []):
            if successor in placed:
                continue
            if successor in by_id:
                out.append(by_id[successor])
            elif successor in fetched:
                brought = fetched[successor].copy()
                brought["score"] = row.get("score")
                brought["superseded_by"] = known.get(successor)
                brought.setdefault("possibly_superseded_by", None)
                if explain:
                    brought["signals"] = {"successor": {"rank": len(out) + 2, "score": row.get("score"),
                                                        "norm": row.get("score")}}  # fmt: skip
                out.append(cast("R", brought))  # an observation's row, as the source makes its rows
            else:
                continue
            placed.add(successor)
        out.append(row)
        if obs_id is not None:
            placed.add(obs_id)
    return out


def _passing(store: Store, obs_ids: set[int], filters: Filters) -> dict[int, ObservationRow]:
    """The stored rows of ``obs_ids`` that match ``filters`` (type, project, dates...)."""
    if not obs_ids:
        return {}
    return {
        obs_id: store.observations.get(obs_id) for obs_id in store.supersession.ids_passing(obs_ids, filters)
    }


def would_cycle(store: Store, new_id: int, old_id: int) -> bool:
    """Whether ``new_id`` superseding ``old_id`` would close a loop: ``old_id`` already replaced
    ``new_id``, directly or down a chain of replacements."""
    seen: set[int] = set()
    frontier = {new_id}
    while frontier and len(seen) < 10_000:
        found = successors_all(store, frontier)
        if old_id in found:
            return True
        seen |= frontier
        frontier = found - seen
    return False


class BrokenLoop:
    """A ``supersedes`` link that arrived and closed a loop, and how the loop was broken: ``note`` for the
    caller's report, ``rewrite`` the memory whose file must be written again (its link went; None when the
    arriving link itself was refused)."""

    __slots__ = ("note", "rewrite")

    def __init__(self, note: str, rewrite: int | None):
        self.note, self.rewrite = note, rewrite


def add_arrived_link(store: Store, from_id: int, to_id: int, link_type: str) -> BrokenLoop | None:
    """Add a link that arrived (a hand-edited or synced file, a team row) inside the caller's transaction.

    A ``supersedes`` link that closes a loop would leave every memory of the loop replaced and out of the
    briefing. Locally such a link is refused (``Memory._add_link``); what arrives cannot be refused, so
    the loop is broken where every machine breaks it, whatever order the links came in: the link of the
    loop's oldest memory (by creation, then uid) goes, as an older memory cannot have replaced a newer one
    in the same chain. Returns how it was broken, None when nothing closed a loop."""
    if link_type != SUPERSEDES:
        store.links.add(from_id, to_id, link_type)
        return None
    chain = _chain(store, from_id, to_id)
    if chain is None:
        store.links.add(from_id, to_id, link_type)
        return None
    loop = {from_id: to_id, **chain}  # each memory of the loop -> the one it supersedes
    rows = {i: store.observations.get(i) for i in loop}
    oldest = min(loop, key=lambda i: (rows[i]["created_at"], rows[i]["uid"]))
    note = (
        f"supersedes loop of {len(loop)} memories broken: #{oldest} no longer supersedes #{loop[oldest]} "
        "(the oldest memory of the loop)"
    )
    if oldest == from_id:
        return BrokenLoop(note, None)
    store.links.remove(oldest, loop[oldest], SUPERSEDES)
    store.links.add(from_id, to_id, SUPERSEDES)
    return BrokenLoop(note, oldest)


def held_loops(store: Store) -> list[list[int]]:
    """The ``supersedes`` loops the store holds (each as the memories around it, from its smallest id),
    one per loop found; a store that took loops before arrivals broke them (`cmem doctor` reports them)."""
    graph: dict[int, list[int]] = {}
    for new, old in store.supersession.all_superseding_links():
        graph.setdefault(new, []).append(old)
    found: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    done: set[int] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[int] = [start]
        on_path = {start: 0}
        stack = [iter(graph.get(start, []))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:  # every way on from the path's end explored
                node = path.pop()
                del on_path[node]
                done.add(node)
                stack.pop()
                continue
            if nxt in on_path:
                loop = path[on_path[nxt] :]
                turn = loop.index(min(loop))
                key = tuple(loop[turn:] + loop[:turn])
                if key not in seen:
                    seen.add(key)
                    found.append(list(key))
            elif nxt not in done:
                on_path[nxt] = len(path)
                path.append(nxt)
                stack.append(iter(graph.get(nxt, [])))
    return found


def break_held_loops(store: Store) -> list[BrokenLoop]:
    """Break every loop the store holds, inside the caller's transaction, by the rule arrivals follow
    (:func:`add_arrived_link`): the link of each loop's oldest memory goes. The caller writes the files
    of the memories returned as ``rewrite`` again."""
    broken: list[BrokenLoop] = []
    for _ in range(1_000):
        loops = held_loops(store)
        if not loops:
            break
        loop = loops[0]
        rows = {i: store.observations.get(i) for i in loop}
        oldest = min(loop, key=lambda i: (rows[i]["created_at"], rows[i]["uid"]))
        replaced = loop[(loop.index(oldest) + 1) % len(loop)]
        store.links.remove(oldest, replaced, SUPERSEDES)
        broken.append(
            BrokenLoop(
                f"supersedes loop of {len(loop)} memories broken: #{oldest} no longer supersedes #{replaced} "
                "(the oldest memory of the loop)",
                oldest,
            )
        )
    return broken


def _chain(store: Store, from_id: int, to_id: int) -> dict[int, int] | None:
    """The links by which ``to_id`` already supersedes ``from_id`` (each memory -> the one it supersedes,
    shortest chain), or None when it does not."""
    replaced: dict[int, int] = {}  # a superseder found -> the memory it supersedes, toward from_id
    frontier = {from_id}
    while frontier and len(replaced) < 10_000:
        found = [
            (new, old) for new, old in store.supersession.superseding_links(frontier) if new not in replaced
        ]
        for new, old in found:
            replaced.setdefault(new, old)
        if to_id in replaced:
            chain, node = {}, to_id
            while node != from_id:
                chain[node] = replaced[node]
                node = replaced[node]
            return chain
        frontier = {new for new, _ in found} - {from_id}
    return None


def successors_all(store: Store, obs_ids: set[int]) -> set[int]:
    """Every memory that directly supersedes one of ``obs_ids``."""
    return store.supersession.superseders(obs_ids)


def inherit_retrievals(store: Store, new_id: int, old_id: int) -> None:
    """The successor takes over how often the replaced memory was used (``get``): the count says the
    subject matters, and the replaced memory will no longer be what people read. Inside the caller's
    transaction; the replaced memory keeps its own count."""
    store.supersession.inherit_retrievals(new_id, old_id)


def notice(record: Mapping[str, Any]) -> str:
    """The line `cmem get` puts above a replaced memory: which one replaced it, and its title."""
    successor = record["superseded_by"]
    title = next(
        (link["title"] for link in record.get("linked_from") or []
         if link["type"] == SUPERSEDES and link["id"] == successor),
        None,
    )  # fmt: skip
    named = f" ({' '.join(str(title).split())[:120]})".replace("-->", "->") if title else ""
    return f"<!-- superseded by #{successor}{named}: `cmem get {successor}` for the current memory -->\n"
