"""`cmem search --team`: the team database as a search's source, by Postgres full text and pgvector.

:class:`TeamSource` is a :class:`cmem_cli.services.read.search_pipeline.Source`: it retrieves, and the search service runs
every stage after retrieval on its rows as on this home's (replies, branches, successors and inferred
supersession from the team's links, anchors and stale files from the team's anchors, the page). Its two
ranked lists are fused and cut off by the index's own stages (:func:`cmem_index.hybrid.fusion`,
:func:`cmem_index.hybrid.cut_off`):

- **keyword**: rows whose ``tsvector`` matches any of the query's words (English stemming), scored as a
  BM25 without term-frequency saturation: the summed IDF of the query words a row contains (IDF counted
  on the server, ``ln((N - n + 0.5) / (n + 0.5))`` as the local index counts it), times one plus its
  ``ts_rank`` (title words weigh most). The list's scale is the query's summed IDF, as locally: a row
  with every word scores ``1 - 1/e`` before its rank lifts it.
- **vector**: nearest neighbours by cosine among the vectors of *this* home's model only (its
  fingerprint), through that model's HNSW index; the query is embedded here, as local search embeds it.

Rows are keyed by uid while the stages run; the page shows this home's id where it holds the memory (so
`cmem get` takes it), else the uid, and ``machine``: who wrote it.
"""

from __future__ import annotations

import contextlib
import math
from array import array
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import ModelError, UsageError
from cmem_cli.core.filters import SqlDialect
from cmem_cli.core.timeutil import to_iso
from cmem_cli.team import repository, server

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.hit_types import HitRow
    from cmem_cli.core.query import Query
    from cmem_cli.services.read.search_pipeline import Filters, Reader, Retrieved
    from cmem_cli.services.truth.anchor_files import Anchor
    from cmem_cli.store.supersession import ObservationText

DF_CAP = 50_000  # a word in more rows than this is common: counting further changes its IDF very little

ALL = 100_000  # the depth of "every hit" (--all): far above a team's use, bounded for the server


@contextlib.contextmanager
def team_source(reader: Reader) -> Iterator[TeamSource]:
    """The team database this home joined, as a search source, connected for one search; UsageError when
    the home joined none, SyncError (exit 9) when the server cannot be reached."""
    from cmem_cli.team.teamsync import remote

    settings = remote(reader)
    if settings is None:
        raise UsageError("this home has no team database; run `cmem sync init postgresql://...` first")
    url = settings["url"]
    conn = server.connect(url)
    try:
        with server.translated(url):
            yield TeamSource(reader, conn)
    finally:
        conn.close()


class TeamSource:
    """The team database as a :class:`cmem_cli.services.read.search_pipeline.Source` (ids are uids)."""

    def __init__(self, reader: Reader, conn: Any) -> None:
        self.reader, self.conn = reader, conn

    @property
    def store(self) -> Any:
        return self.reader.store

    def check(self, ask: Query) -> None:
        if ask.collections:
            raise UsageError("--collection searches this home's index; it does not combine with --team")
        if ask.rerank:
            raise UsageError(
                "--rerank does not combine with --team (the team database is searched as it ranks)"
            )

    def listing(self, filters: Filters, *, limit: int, offset: int, order: str) -> list[HitRow]:
        scope = _Scope(filters)
        direction = "ASC" if order == "oldest" else "DESC"
        params = {"limit": min(limit, ALL + 1), "offset": offset, **scope.params}
        where = f"{scope.observations}{_valid(self.conn)}"
        return [_row(r) for r in repository.listing(self.conn, where, direction, params)]

    def retrieve(self, ask: Query, filters: Filters, depth: int, trace: Any) -> Retrieved:
        from cmem_cli.services.read.search_pipeline import Retrieved, signals_json
        from cmem_index.fusion import KEYWORD, VECTOR, Signal
        from cmem_index.hybrid import Candidates, cut_off, fusion

        query, mode, conn = ask.text or "", ask.mode, self.conn
        depth = min(depth, ALL)
        scope = _Scope(filters)
        notes: list[str] = []
        found: dict[str, Mapping[str, Any]] = {}
        candidates = Candidates()
        vector, count_pieces = _query_vector(self.reader, conn, query, mode, notes)
        if mode != "vector":
            candidates.lists[KEYWORD], idf_sum = _keyword(conn, query, scope, depth, found)
            candidates.signals[KEYWORD] = Signal(KEYWORD, idf_sum or None)
        if vector is not None:
            candidates.lists[VECTOR] = _vector(conn, vector, scope, depth, found)
            candidates.signals[VECTOR] = Signal(VECTOR)
            candidates.mode = "vector" if mode == "vector" else "hybrid"
        candidates.capped = any(len(items) >= depth for items in candidates.lists.values())
        candidates.words_matched = bool(candidates.lists.get(KEYWORD))
        if ask.min_score is None and mode == "vector":
            candidates.words_matched = _keyword_exists(conn, query, scope)
        if trace is not None:
            trace.record("candidates", depth=depth, **{k: len(v) for k, v in candidates.lists.items()})
        kept, _ = cut_off(fusion(candidates, trace), candidates, query, ask.min_score, count_pieces, trace)
        rows: list[HitRow] = []
        for hit in kept:
            row = _row(found[hit.key])
            row["score"] = round(hit.score, 4)
            if ask.explain:
                row["signals"] = signals_json(hit.signals)
                row["stages"] = dict(trace.places.get(hit.key, {})) if trace is not None else {}
            rows.append(row)
        # more may exist only where a list was cut at the depth and the cut-off kept that many, not at its end
        capped = candidates.capped and len(rows) >= depth
        return Retrieved(rows, len(rows), candidates.mode, notes, len(rows), capped)

    def replies(self, obs_ids: list[Any], filters: Filters) -> dict[Any, Any]:
        if not obs_ids:
            return {}
        scope = _Scope(filters)
        where = f"{scope.observations}{_valid(self.conn)}"
        rows = repository.replies(self.conn, where, {"uids": list(obs_ids), **scope.params})
        return {question: reply for question, reply in rows if reply is not None}

    def successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        uids = sorted({str(i) for i in ids})
        if not uids:
            return {}
        rows = repository.supersedes_links(self.conn, uids)
        return {old: new for old, new in rows}  # newest last: it wins

    def inferred_successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        """Replacements inferred on this home when a memory was recorded (the team database does not
        carry them), for the team rows this home holds too; by uid."""
        store = self.reader.store
        local = store.observations.by_uids(sorted({str(i) for i in ids}))
        if not local:
            return {}
        found = store.supersession.newest_inferred(row["id"] for row in local.values())
        if not found:
            return {}
        uid_of = {row["id"]: uid for uid, row in local.items()}
        return {
            uid_of[old]: store.observations.get(new)["uid"] for old, new in found.items() if old in uid_of
        }

    def likely_successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        """Unmarked likely replacements order this home's own rows only."""
        return {}

    def passing(self, ids: set[Any], filters: Filters) -> dict[Any, HitRow]:
        scope = _Scope(filters)
        where = f"{scope.observations}{_valid(self.conn)}"
        rows = repository.kept_of(self.conn, where, {"uids": sorted(str(i) for i in ids), **scope.params})
        return {r["uid"]: _row(r) for r in rows}

    def stated_texts(self, ids: list[Any]) -> list[ObservationText]:
        from cmem_cli.store.supersession import ObservationText

        rows = repository.stated_texts(self.conn, [str(i) for i in ids])
        return [
            ObservationText(u, t, s, n, [str(f) for f in facts or []], c) for u, t, s, n, facts, c in rows
        ]

    def anchors(self, obs_ids: list[Any]) -> dict[Any, Anchor]:
        from cmem_cli.services.truth.anchor_files import from_exported

        if not obs_ids:
            return {}
        rows = repository.anchors_of(self.conn, [str(i) for i in obs_ids])
        read = {uid: from_exported(anchor) for uid, anchor in rows}
        return {uid: anchor for uid, anchor in read.items() if anchor is not None}

    def shown(self, rows: list[HitRow]) -> list[HitRow]:
        """This home's ids where it holds the memory (rows and the ids they point to), else uids."""
        store = self.reader.store
        uids = {str(r["uid"]) for r in rows if r["kind"] == "observation"}  # a team row's uid is its key
        for r in rows:
            uids |= {str(to) for to in (r.get("superseded_by"), r.get("possibly_superseded_by")) if to}
        local = store.observations.by_uids(sorted(uids))
        for row in rows:
            uid = str(row["uid"])
            mine: Mapping[str, Any] | None = (
                local.get(uid) if row["kind"] == "observation" else store.summaries.by_uid(uid)
            )
            if mine is not None:
                row["id"] = mine["id"] if row["kind"] == "observation" else f"S{mine['id']}"
                row["path"] = mine.get("path")
                if mine.get("tokens"):  # what `get` prints here (the server's is a rough estimate)
                    row["tokens"] = mine["tokens"]
            if (to := row.get("superseded_by")) in local:
                row["superseded_by"] = local[str(to)]["id"]
            if (to := row.get("possibly_superseded_by")) in local:
                row["possibly_superseded_by"] = local[str(to)]["id"]
        return rows


class _Scope:
    """The search filters as SQL over a team table aliased ``o`` (named parameters, prefix ``f_``)."""

    def __init__(self, filters: Filters):
        self.filters = filters
        self.with_summaries = not filters.observation_only
        self.observations, self.params = self._sql(observations=True)
        self.summaries, _ = self._sql(observations=False)

    def _sql(self, *, observations: bool) -> tuple[str, dict[str, Any]]:
        dialect = _TeamSql("o")
        return " AND ".join(self.filters.clauses(dialect, observations=observations)) or "true", dialect.named


class _TeamSql(SqlDialect):
    """The filters in PostgreSQL over a team table aliased ``o``: named parameters (``f_0``, ``f_1``...),
    concepts and files in JSON arrays, the branch in the anchor."""

    def __init__(self, alias: str):
        super().__init__(alias)
        self.named: dict[str, Any] = {}

    def bind(self, value: Any) -> str:
        name = f"f_{len(self.named)}"
        self.named[name] = value
        return f"%({name})s"

    def types(self, values: list[str]) -> str:
        return f"{self.alias}.type = ANY({self.bind(list(values))})"

    def concept(self, value: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM jsonb_array_elements_text({self.alias}.concepts) c "
            f"WHERE lower(c) = lower({self.bind(value)}))"
        )

    def file(self, path: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM jsonb_array_elements_text({self.alias}.files_read || {self.alias}.files_modified) p "
            f"WHERE {self.path_match('p', path)})"
        )

    def branch(self, name: str) -> str:
        return f"{self.alias}.anchor->>'branch' = {self.bind(name)}"


# -- the two lists ---------------------------------------------------------------------------------------
def _keyword(
    conn: Any, query: str, scope: _Scope, depth: int, found: dict[str, Mapping[str, Any]]
) -> tuple[list[tuple[str, float]], float]:
    lexemes = repository.lexemes(conn, query)
    if not lexemes:
        return [], 0.0
    terms = [_tsquery_term(lexeme) for lexeme in lexemes]
    frequency = repository.document_frequencies(conn, terms, DF_CAP)
    total = max([repository.observation_count(conn), *(int(n) for _, n in frequency)])
    idf = {t: max(1e-6, math.log((total - n + 0.5) / (n + 0.5))) for t, n in frequency}
    idf_sum = math.fsum(idf.values())
    params = {"q": " | ".join(terms), "terms": terms, "depth": depth, **scope.params}
    summaries = scope.summaries if scope.with_summaries else None
    scored = []
    for row in repository.keyword_hits(conn, f"{scope.observations}{_valid(conn)}", summaries, params):
        coverage = math.fsum(idf[t] for t, hit in zip(terms, row.pop("matched"), strict=True) if hit)
        key = f"{row['kind']}:{row['uid']}"
        found.setdefault(key, row)
        scored.append((key, coverage * (1.0 + float(row.pop("rank")))))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:depth], idf_sum


def _vector(
    conn: Any,
    vector: tuple[str, int, list[float], float],
    scope: _Scope,
    depth: int,
    found: dict[str, Mapping[str, Any]],
) -> list[tuple[str, float]]:
    fingerprint, dim, values, scale = vector
    params = {"qv": "[" + ",".join(repr(float(x)) for x in values) + "]", "depth": depth, **scope.params}
    summaries = scope.summaries if scope.with_summaries else None
    rows = repository.nearest(
        conn, fingerprint, dim, f"{scope.observations}{_valid(conn)}", summaries, params
    )
    scored = []
    for row in rows:
        key = f"{row['kind']}:{row['uid']}"
        found.setdefault(key, row)
        scored.append((key, (1.0 - float(row.pop("distance"))) * scale))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:depth]


def _query_vector(
    reader: Reader, conn: Any, query: str, mode: str, notes: list[str]
) -> tuple[tuple[str, int, list[float], float] | None, Any]:
    """(fingerprint, dim, query vector, its length) with this home's model, and the model's token counter
    (what the cut-off asks); (None, None): keyword search only."""
    if mode == "keyword":
        return None, None
    from cmem_index.loading import load_embedder

    embedder, why = load_embedder(reader.config)
    if embedder is None:
        if mode == "vector":
            raise ModelError(why or "no embedding model")
        if mode == "hybrid":
            notes.append(f"keyword search only: {why}")
        return None, None
    from cmem_cli.team.vectors import check_fingerprint

    fingerprint = check_fingerprint(embedder.fingerprint)
    if not repository.has_model(conn, fingerprint):
        if mode != "auto":
            notes.append("no memory on the team database has a vector from this home's embedding model")
        return None, None
    from cmem_index.hybrid import embed_search_query, query_vector_scale

    packed = embed_search_query(embedder, query)
    vector = fingerprint, int(embedder.dim), list(array("f", packed)), query_vector_scale(packed)
    return vector, embedder.count_tokens


def _keyword_exists(conn: Any, query: str, scope: _Scope) -> bool:
    """Does any word of the query occur in a memory the filters keep? (The cut-off of a vector search.)"""
    params = {"q": " ".join(query.split()), **scope.params}
    return repository.any_word_in(conn, f"{scope.observations}{_valid(conn)}", params)


def _valid(conn: Any) -> str:
    """The condition that leaves out invalidated memories (`cmem invalidate`), on a server that has the
    column (a server no home of this cmem migrated yet has none invalidated)."""
    return " AND o.invalidated IS NULL" if server.present(conn, ("invalidated",)) else ""


# -- rows -------------------------------------------------------------------------------------------------
def _row(row: Mapping[str, Any]) -> HitRow:
    """A team row as a search row (keyed by its uid until the page is shown), with ``machine``."""
    out: HitRow = {
        "id": row["uid"],
        "uid": row["uid"],
        "kind": row["kind"],
        "type": row["type"],
        "title": " ".join((row["title"] or "").split())[:200] or "(untitled)",
        "subtitle": row.get("subtitle"),
        "project": row["project"],
        "session": row.get("session"),
        "agent": row["agent"],
        "machine": row["machine"],
        "key": row.get("key"),
        "created_at": to_iso(row["created_at"]),
        "score": None,
        "tokens": int(row.get("tokens") or 0),
        "path": None,
        "invalidated": None,  # the team search leaves invalidated memories out (:func:`_valid`)
    }
    return out


def _tsquery_term(lexeme: str) -> str:
    """One lexeme as a tsquery operand, quoted (a lexeme may hold any character)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


__all__ = ["TeamSource", "team_source"]
