"""`cmem search --team`: the team database as a search's source, by Postgres full text and pgvector.

:class:`TeamSource` is a :class:`cmem_cli.services.search_pipeline.Source`: it retrieves, and the search service runs
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
from cmem_cli.team import server

if TYPE_CHECKING:
    from cmem_cli.core.query import Query
    from cmem_cli.services.anchor_files import Anchor
    from cmem_cli.services.search_pipeline import Filters, Reader, Retrieved
    from cmem_cli.store.supersession import ObservationText

DF_CAP = 50_000  # a word in more rows than this is common: counting further changes its IDF very little

_OBS_SELECT = (
    "SELECT 'observation' AS kind, o.uid, o.type, o.title, o.subtitle, o.project, o.session, o.agent, o.machine, "
    "o.key, o.created_at, (length(o.title) + length(coalesce(o.subtitle, '')) + length(coalesce(o.narrative, '')) "
    "+ length(o.facts::text)) / 4 + 40 AS tokens"
)
_SUMMARY_SELECT = (
    "SELECT 'summary' AS kind, o.uid, 'summary' AS type, "
    "left(coalesce(o.request, o.completed, o.learned, o.investigated, o.next_steps, o.notes, ''), 200) AS title, "
    "NULL AS subtitle, o.project, o.session, o.agent, o.machine, NULL AS key, o.created_at, "
    "(length(coalesce(o.request, '') || coalesce(o.investigated, '') || coalesce(o.learned, '') || "
    "coalesce(o.completed, '') || coalesce(o.next_steps, '') || coalesce(o.notes, '')) + 3) / 4 AS tokens"
)


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
    """The team database as a :class:`cmem_cli.services.search_pipeline.Source` (ids are uids)."""

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

    def listing(self, filters: Filters, *, limit: int, offset: int, order: str) -> list[dict[str, Any]]:
        scope = _Scope(filters)
        direction = "ASC" if order == "oldest" else "DESC"
        sql = (
            f"{_OBS_SELECT} FROM cmem_observations o WHERE {scope.observations}{_valid(self.conn)} "
            f"ORDER BY o.created_at {direction}, o.uid {direction} LIMIT %(limit)s OFFSET %(offset)s"
        )
        params = {"limit": min(limit, ALL + 1), "offset": offset, **scope.params}
        return [_row(r) for r in _dicts(self.conn.execute(sql, params))]

    def retrieve(self, ask: Query, filters: Filters, depth: int, trace: Any) -> Retrieved:
        from cmem_cli.services.search_pipeline import Retrieved, signals_json
        from cmem_index.fusion import KEYWORD, VECTOR, Signal
        from cmem_index.hybrid import Candidates, cut_off, fusion

        query, mode, conn = ask.text or "", ask.mode, self.conn
        depth = min(depth, ALL)
        scope = _Scope(filters)
        notes: list[str] = []
        found: dict[str, dict[str, Any]] = {}
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
        rows = []
        for hit in kept:
            row = {**_row(found[hit.key]), "score": round(hit.score, 4)}
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
        sql = (
            "SELECT q.uid AS question, (SELECT o.uid FROM cmem_observations o WHERE o.session = q.session "
            "AND (o.created_at > q.created_at OR (o.created_at = q.created_at AND o.uid > q.uid)) "
            f"AND {scope.observations}{_valid(self.conn)} ORDER BY o.created_at, o.uid LIMIT 1) AS reply "
            "FROM cmem_observations q WHERE q.uid = ANY(%(uids)s) AND q.session IS NOT NULL "
            "AND strpos(q.title, '?') > 0 AND coalesce(q.narrative, '') = '' AND q.facts = '[]'::jsonb"
        )
        rows = self.conn.execute(sql, {"uids": list(obs_ids), **scope.params}).fetchall()
        return {question: reply for question, reply in rows if reply is not None}

    def successors(self, ids: Iterable[Any]) -> dict[Any, Any]:
        uids = sorted({str(i) for i in ids})
        if not uids:
            return {}
        rows = self.conn.execute(
            "SELECT l.to_uid, l.from_uid FROM cmem_links l JOIN cmem_observations n ON n.uid = l.from_uid "
            "WHERE l.type = 'supersedes' AND l.to_uid = ANY(%s) ORDER BY n.created_at, n.uid",
            (uids,),
        ).fetchall()
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

    def passing(self, ids: set[Any], filters: Filters) -> dict[Any, dict[str, Any]]:
        scope = _Scope(filters)
        sql = (
            f"{_OBS_SELECT} FROM cmem_observations o "
            f"WHERE o.uid = ANY(%(uids)s) AND {scope.observations}{_valid(self.conn)}"
        )
        rows = _dicts(self.conn.execute(sql, {"uids": sorted(str(i) for i in ids), **scope.params}))
        return {r["uid"]: _row(r) for r in rows}

    def stated_texts(self, ids: list[Any]) -> list[ObservationText]:
        from cmem_cli.store.supersession import ObservationText

        rows = self.conn.execute(
            "SELECT uid, title, coalesce(subtitle, ''), coalesce(narrative, ''), facts, created_at "
            "FROM cmem_observations WHERE uid = ANY(%s)",
            ([str(i) for i in ids],),
        ).fetchall()
        return [
            ObservationText(u, t, s, n, [str(f) for f in facts or []], c) for u, t, s, n, facts, c in rows
        ]

    def anchors(self, obs_ids: list[Any]) -> dict[Any, Anchor]:
        from cmem_cli.services.anchor_files import from_exported

        if not obs_ids:
            return {}
        rows = self.conn.execute(
            "SELECT uid, anchor FROM cmem_observations WHERE uid = ANY(%s) AND anchor IS NOT NULL",
            ([str(i) for i in obs_ids],),
        ).fetchall()
        read = {uid: from_exported(anchor) for uid, anchor in rows}
        return {uid: anchor for uid, anchor in read.items() if anchor is not None}

    def shown(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """This home's ids where it holds the memory (rows and the ids they point to), else uids."""
        store = self.reader.store
        uids = {r["uid"] for r in rows if r["kind"] == "observation"}
        uids |= {r[k] for r in rows for k in ("superseded_by", "possibly_superseded_by") if r.get(k)}
        local = store.observations.by_uids(sorted(uids))
        for row in rows:
            mine = (
                local.get(row["uid"]) if row["kind"] == "observation" else store.summaries.by_uid(row["uid"])
            )
            if mine is not None:
                row["id"] = mine["id"] if row["kind"] == "observation" else f"S{mine['id']}"
                row["path"] = mine.get("path")
                if mine.get("tokens"):  # what `get` prints here (the server's is a rough estimate)
                    row["tokens"] = mine["tokens"]
            for field in ("superseded_by", "possibly_superseded_by"):
                if row.get(field) in local:
                    row[field] = local[row[field]]["id"]
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
    conn: Any, query: str, scope: _Scope, depth: int, found: dict[str, dict[str, Any]]
) -> tuple[list[tuple[str, float]], float]:
    lexemes = [
        row[0]
        for row in conn.execute("SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))", (query,))
    ]
    if not lexemes:
        return [], 0.0
    terms = [_tsquery_term(lexeme) for lexeme in lexemes]
    frequency = conn.execute(
        "SELECT t, (SELECT count(*) FROM (SELECT 1 FROM cmem_observations o WHERE o.search @@ t::tsquery "
        f"LIMIT {DF_CAP}) s) FROM unnest(%s::text[]) AS t",
        (terms,),
    ).fetchall()
    total = max([_row_count(conn), *(int(n) for _, n in frequency)])
    idf = {t: max(1e-6, math.log((total - n + 0.5) / (n + 0.5))) for t, n in frequency}
    idf_sum = math.fsum(idf.values())
    matched = "ARRAY(SELECT o.search @@ t::tsquery FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i)"
    rank = "ts_rank(o.search, %(q)s::tsquery, 32)"
    parts = [
        f"{_OBS_SELECT}, {rank} AS rank, {matched} AS matched FROM cmem_observations o "
        f"WHERE o.search @@ %(q)s::tsquery AND {scope.observations}{_valid(conn)} ORDER BY rank DESC LIMIT %(depth)s"
    ]
    if scope.with_summaries:
        parts.append(
            f"{_SUMMARY_SELECT}, {rank} AS rank, {matched} AS matched FROM cmem_summaries o "
            f"WHERE o.search @@ %(q)s::tsquery AND {scope.summaries} ORDER BY rank DESC LIMIT %(depth)s"
        )
    params = {"q": " | ".join(terms), "terms": terms, "depth": depth, **scope.params}
    scored = []
    for row in _dicts(conn.execute(" UNION ALL ".join(f"({part})" for part in parts), params)):
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
    found: dict[str, dict[str, Any]],
) -> list[tuple[str, float]]:
    fingerprint, dim, values, scale = vector
    distance = f"v.embedding::vector({dim}) <=> %(qv)s::vector({dim})"
    parts = [
        f"{_OBS_SELECT}, {distance} AS distance FROM cmem_vectors v JOIN cmem_observations o ON o.uid = v.uid "
        f"WHERE v.kind = 'observation' AND v.fingerprint = '{fingerprint}' AND {scope.observations}{_valid(conn)} "
        f"ORDER BY {distance} LIMIT %(depth)s"
    ]
    if scope.with_summaries:
        parts.append(
            f"{_SUMMARY_SELECT}, {distance} AS distance FROM cmem_vectors v JOIN cmem_summaries o ON o.uid = v.uid "
            f"WHERE v.kind = 'summary' AND v.fingerprint = '{fingerprint}' AND {scope.summaries} "
            f"ORDER BY {distance} LIMIT %(depth)s"
        )
    params = {"qv": "[" + ",".join(repr(float(x)) for x in values) + "]", "depth": depth, **scope.params}
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")  # filtered rows must not empty the list
        conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(depth, 1000))}")
        rows = _dicts(conn.execute(" UNION ALL ".join(f"({part})" for part in parts), params))
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
    if not conn.execute("SELECT 1 FROM cmem_models WHERE fingerprint = %s", (fingerprint,)).fetchone():
        if mode != "auto":
            notes.append("no memory on the team database has a vector from this home's embedding model")
        return None, None
    from cmem_index.hybrid import embed_search_query, query_vector_scale

    packed = embed_search_query(embedder, query)
    vector = fingerprint, int(embedder.dim), list(array("f", packed)), query_vector_scale(packed)
    return vector, embedder.count_tokens


def _keyword_exists(conn: Any, query: str, scope: _Scope) -> bool:
    """Does any word of the query occur in a memory the filters keep? (The cut-off of a vector search.)"""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM cmem_observations o WHERE o.search @@ plainto_tsquery('english', %(q)s) "
        f"AND {scope.observations}{_valid(conn)})",
        {"q": " ".join(query.split()), **scope.params},
    ).fetchone()
    return bool(row and row[0])


def _valid(conn: Any) -> str:
    """The condition that leaves out invalidated memories (`cmem invalidate`), on a server that has the
    column (a server no home of this cmem migrated yet has none invalidated)."""
    return " AND o.invalidated IS NULL" if server.present(conn, ("invalidated",)) else ""


# -- rows -------------------------------------------------------------------------------------------------
def _row(row: dict[str, Any]) -> dict[str, Any]:
    """A team row as a search row (keyed by its uid until the page is shown), with ``machine``."""
    return {
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


def _row_count(conn: Any) -> int:
    """Rows in the observations table: the planner's estimate once analysed (free at a million rows),
    counted while the table is small and not yet analysed."""
    estimate = conn.execute(
        "SELECT reltuples::bigint FROM pg_class WHERE oid = 'cmem_observations'::regclass"
    ).fetchone()
    if estimate and estimate[0] and estimate[0] > 0:
        return int(estimate[0])
    return int(conn.execute("SELECT count(*) FROM cmem_observations").fetchone()[0])


def _tsquery_term(lexeme: str) -> str:
    """One lexeme as a tsquery operand, quoted (a lexeme may hold any character)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _dicts(cursor: Any) -> list[dict[str, Any]]:
    names = [d.name for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


__all__ = ["TeamSource", "team_source"]
