"""`cmem search --team`: the team database's memories, by Postgres full text and pgvector neighbours.

Two ranked lists, fused by the function that fuses local search (:func:`cmem_index.fusion.fuse`), with
the same calibrated cut-off:

- **keyword**: rows whose ``tsvector`` matches any of the query's words (English stemming), scored as a
  BM25 without term-frequency saturation: the summed IDF of the query words a row contains (IDF counted
  on the server, ``ln((N - n + 0.5) / (n + 0.5))`` as the local index counts it), times one plus its
  ``ts_rank`` (title words weigh most). The list's scale is the query's summed IDF, as locally: a row
  with every word scores ``1 - 1/e`` before its rank lifts it.
- **vector**: nearest neighbours by cosine among the vectors of *this* home's model only (its
  fingerprint), through that model's HNSW index; the query is embedded here, as local search embeds it.

Rows are JSON-ready like local search rows, with ``machine`` added (who wrote it) and ``id`` the local id
when this home has the memory too, else its uid.
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import ModelError, UsageError
from cmem_cli.core.timeutil import to_iso
from cmem_cli.team import server

if TYPE_CHECKING:
    from cmem_cli.api import Memory, Query, SearchPage
    from cmem_cli.core.filters import FilterFields

DF_CAP = 50_000  # a word in more rows than this is common: counting further changes its IDF very little
MIN_DEPTH = 50

_OBS_SELECT = (
    "SELECT 'observation' AS kind, o.uid, o.type, o.title, o.subtitle, o.project, o.session, o.agent, o.machine, "
    "o.key, o.created_at, (length(o.title) + length(coalesce(o.subtitle, '')) + length(coalesce(o.narrative, '')) "
    "+ length(o.facts::text)) / 4 + 40 AS tokens"
)
_SUMMARY_SELECT = (
    "SELECT 'summary' AS kind, o.uid, 'summary' AS type, "
    "left(coalesce(o.request, o.completed, o.learned, o.investigated, o.next_steps, o.notes, ''), 200) AS title, "
    "NULL AS subtitle, o.project, o.session, o.agent, o.machine, NULL AS key, o.created_at, "
    "length(coalesce(o.request, '') || coalesce(o.investigated, '') || coalesce(o.learned, '') || "
    "coalesce(o.completed, '') || coalesce(o.next_steps, '') || coalesce(o.notes, '')) / 4 + 1 AS tokens"
)


def team_search(memory: Memory, ask: Query) -> SearchPage:
    """``ask`` over ``memory``'s team database: its filters, paging, order, mode, cut-off and ``explain``
    (``collections``, ``rerank`` and ``branch`` are this home's own)."""
    from cmem_cli.core.pages import SearchPage
    from cmem_cli.team.teamsync import remote

    query, limit, offset, order, mode, min_score, explain = (
        ask.text, ask.limit, ask.offset, ask.order, ask.mode, ask.min_score, ask.explain
    )  # fmt: skip
    filters = ask.filter_fields()
    settings = remote(memory.reader)
    if settings is None:
        raise UsageError("this home has no team database; run `cmem sync init postgresql://...` first")
    url = settings["url"]
    notes: list[str] = []
    window = limit + offset if limit else None
    depth = max(window or 0, MIN_DEPTH) if window else ALL
    scope = _Scope(filters)
    conn = server.connect(url)
    try:
        with server.translated(url):
            if not query or not query.strip():
                rows = _listing(conn, scope, depth + 1, order, offset)
                more = len(rows) > (window or ALL) - offset
                rows = rows[: (window - offset) if window else None]
                listed = _rows_out(memory, rows, explain)
                return SearchPage(listed, "list", notes, offset + len(rows) + more, capped=more)
            from cmem_index.fusion import KEYWORD, VECTOR, Signal

            lists: dict[str, list[tuple[str, float]]] = {}
            signals: dict[str, Any] = {}
            found: dict[str, dict[str, Any]] = {}
            used = "keyword"
            vector = _query_vector(memory, conn, query, mode, notes)
            if mode != "vector":
                lists[KEYWORD], idf_sum = _keyword(conn, query, scope, depth, found)
                signals[KEYWORD] = Signal(KEYWORD, idf_sum or None)
            if vector is not None:
                lists[VECTOR] = _vector(conn, vector, scope, depth, found)
                signals[VECTOR] = Signal(VECTOR)
                used = "vector" if mode == "vector" else "hybrid"
            capped = any(len(items) >= depth for items in lists.values())
            fused = _fuse(conn, query, scope, lists, signals, used, min_score)
    finally:
        conn.close()
    rows = []
    for hit in fused:
        row = {**found[hit.key], "score": round(hit.score, 4)}
        if explain:
            row["signals"] = {
                name: {"rank": s.rank, "score": round(s.raw, 6), "norm": round(s.norm, 4)}
                for name, s in hit.signals.items()
            }
        rows.append(row)
    if order != "relevance":
        rows.sort(key=lambda r: (r["created_at"], r["uid"]), reverse=order == "newest")
    total = len(rows)
    capped = capped and total >= depth  # a list cut at the depth, not the cut-off's end: more may exist
    page = rows[offset:window]
    return SearchPage(_rows_out(memory, page, explain), used, notes, total, capped)


ALL = 100_000  # the depth of "every hit" (--all): far above a team's use, bounded for the server


class _Scope:
    """The search filters as SQL over a team table aliased ``o`` (named parameters, prefix ``f_``)."""

    def __init__(self, filters: FilterFields):
        self.filters = filters
        self.with_summaries = not (filters.types or filters.concepts or filters.files)
        self.observations, self.params = self._sql(observations=True)
        self.summaries, _ = self._sql(observations=False)

    def _sql(self, *, observations: bool) -> tuple[str, dict[str, Any]]:
        f = self.filters
        clauses: list[str] = []
        params: dict[str, Any] = {}
        for name in ("project", "agent", "session"):
            if getattr(f, name) is not None:
                clauses.append(f"o.{name} = %(f_{name})s")
                params[f"f_{name}"] = getattr(f, name)
        if f.since is not None:
            clauses.append("o.created_at >= %(f_since)s")
            params["f_since"] = int(f.since)
        if f.until is not None:
            clauses.append("o.created_at <= %(f_until)s")
            params["f_until"] = int(f.until)
        if observations:
            if f.types:
                clauses.append("o.type = ANY(%(f_types)s)")
                params["f_types"] = list(f.types)
            for i, concept in enumerate(f.concepts):
                clauses.append(
                    f"EXISTS (SELECT 1 FROM jsonb_array_elements_text(o.concepts) c WHERE lower(c) = lower(%(f_c{i})s))"
                )
                params[f"f_c{i}"] = concept
            for i, path in enumerate(f.files):
                escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                clauses.append(
                    "EXISTS (SELECT 1 FROM jsonb_array_elements_text(o.files_read || o.files_modified) p "
                    f"WHERE p = %(f_p{i})s OR p LIKE %(f_ps{i})s OR p LIKE %(f_pd{i})s)"
                )
                params.update(
                    {f"f_p{i}": path, f"f_ps{i}": "%/" + escaped, f"f_pd{i}": escaped.rstrip("/") + "/%"}
                )
        return " AND ".join(clauses) or "true", params


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
        f"WHERE o.search @@ %(q)s::tsquery AND {scope.observations} ORDER BY rank DESC LIMIT %(depth)s"
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
        f"WHERE v.kind = 'observation' AND v.fingerprint = '{fingerprint}' AND {scope.observations} "
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
    memory: Memory, conn: Any, query: str, mode: str, notes: list[str]
) -> tuple[str, int, list[float], float] | None:
    """(fingerprint, dim, query vector, its length) with this home's model; None: keyword search only."""
    if mode == "keyword":
        return None
    from cmem_index.loading import load_embedder

    embedder, why = load_embedder(memory.config)
    if embedder is None:
        if mode == "vector":
            raise ModelError(why or "no embedding model")
        if mode == "hybrid":
            notes.append(f"keyword search only: {why}")
        return None
    from cmem_cli.team.vectors import check_fingerprint

    fingerprint = check_fingerprint(embedder.fingerprint)
    if not conn.execute("SELECT 1 FROM cmem_models WHERE fingerprint = %s", (fingerprint,)).fetchone():
        if mode != "auto":
            notes.append("no memory on the team database has a vector from this home's embedding model")
        return None
    from cmem_index.search import embed_search_query, query_vector_scale

    packed = embed_search_query(embedder, query)
    return fingerprint, int(embedder.dim), list(array("f", packed)), query_vector_scale(packed)


def _fuse(
    conn: Any,
    query: str,
    scope: _Scope,
    lists: dict[str, list[tuple[str, float]]],
    signals: dict[str, Any],
    used: str,
    min_score: float | None,
) -> list[Any]:
    """Fused hits above the cut-off, as local search fuses and cuts (``cmem_index.fusion``)."""
    from cmem_index.fusion import KEYWORD, VECTOR, default_cutoff, fuse, stands_out

    fused = fuse(lists, signals)
    if min_score is None:
        min_score = default_cutoff(used)
        words_matched = bool(lists.get(KEYWORD))
        if used == "vector":
            words_matched = bool(_keyword_exists(conn, query, scope))
        if not words_matched and lists.get(VECTOR):
            bar = stands_out([raw for _, raw in lists[VECTOR]])
            fused = [f for f in fused if VECTOR in f.signals and f.signals[VECTOR].raw >= bar]
    return [f for f in fused if f.score >= min_score]


def _keyword_exists(conn: Any, query: str, scope: _Scope) -> bool:
    """Does any word of the query occur in a memory the filters keep? (The cut-off of a vector search.)"""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM cmem_observations o WHERE o.search @@ plainto_tsquery('english', %(q)s) "
        f"AND {scope.observations})",
        {"q": " ".join(query.split()), **scope.params},
    ).fetchone()
    return bool(row and row[0])


def _listing(conn: Any, scope: _Scope, limit: int, order: str, offset: int) -> list[dict[str, Any]]:
    direction = "ASC" if order == "oldest" else "DESC"
    sql = (
        f"{_OBS_SELECT}, NULL::real AS score FROM cmem_observations o WHERE {scope.observations} "
        f"ORDER BY o.created_at {direction}, o.uid {direction} LIMIT %(limit)s OFFSET %(offset)s"
    )
    return _dicts(conn.execute(sql, {"limit": limit, "offset": offset, **scope.params}))


# -- rows -------------------------------------------------------------------------------------------------
def _rows_out(memory: Memory, rows: list[dict[str, Any]], explain: bool) -> list[dict[str, Any]]:
    """Rows as local search prints them, plus ``machine``; ``id`` is the local id where this home has the
    memory (so `cmem get` takes it), else the uid."""
    store = memory.reader.store
    local = store.observations_by_uids([r["uid"] for r in rows if r["kind"] == "observation"])
    out = []
    for row in rows:
        mine = local.get(row["uid"]) if row["kind"] == "observation" else store.summary_by_uid(row["uid"])
        ident: Any = row["uid"]
        if mine is not None:
            ident = mine["id"] if row["kind"] == "observation" else f"S{mine['id']}"
        item = {
            "id": ident,
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
            "score": row.get("score"),
            "tokens": int(row.get("tokens") or 0),
            "path": mine.get("path") if mine is not None else None,
        }
        if explain and "signals" in row:
            item["signals"] = row["signals"]
        out.append(item)
    return out


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


__all__ = ["team_search"]
