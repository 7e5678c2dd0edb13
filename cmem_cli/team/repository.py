"""The team database's SQL, by what cmem asks of it: one module to read for what a pull, a push, a restore
check, the vectors, `cmem watch`, the schema's upkeep and `cmem search --team` send to PostgreSQL (the merge
logic and the ranking beside them hold none).

Each function takes the open psycopg connection. What stays elsewhere: the schema itself (the migrations'
DDL, ``server.MIGRATIONS``) and the search filters' WHERE clauses (``source._TeamSql``, one dialect of
:mod:`cmem_cli.core.filters`), which the search functions here take as text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

# Who the server is (``restore.identity``): its cluster, timeline, database, table and cmem's epoch.
IDENTITY = (
    "SELECT system_identifier::text FROM pg_control_system()",
    "SELECT timeline_id::text FROM pg_control_checkpoint()",
    "SELECT oid::text FROM pg_database WHERE datname = current_database()",
    "SELECT 'cmem_observations'::regclass::oid::text",
    "SELECT value FROM cmem_meta WHERE key = 'epoch'",
)


def _scope(projects: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
    """The clause that keeps a read to ``projects`` (none: every project)."""
    return (" AND project = ANY(%s)", (list(projects),)) if projects else ("", ())


# -- pulling ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def snapshot(conn: Any) -> Iterator[None]:
    """One read-only REPEATABLE READ transaction: every read in it sees the same server."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def has_log(conn: Any) -> bool:
    """Does the server keep the conflict log (``cmem_conflicts``, server migration m005)?"""
    return bool(conn.execute("SELECT to_regclass('cmem_conflicts')").fetchone()[0])


def top_revision(conn: Any, tables: Sequence[str]) -> int:
    """The highest revision any of ``tables`` holds (0 when empty)."""
    row = conn.execute(
        "SELECT greatest(" + ", ".join(f"(SELECT max(rev) FROM {table})" for table in tables) + ", 0)"
    ).fetchone()
    return int(row[0])


def rows_between(
    conn: Any, table: str, columns: str, after: int, upto: int, projects: Sequence[str], limit: int
) -> list[dict[str, Any]]:
    """The rows of ``table`` with a revision in (``after``, ``upto``], oldest first, ``limit`` at most."""
    scope, params = _scope(projects)
    cur = conn.execute(
        f"SELECT rev, {columns} FROM {table} WHERE rev > %s AND rev <= %s{scope} ORDER BY rev LIMIT %s",
        (after, upto, *params, limit),
    )
    names = [d.name for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def conflicts_between(conn: Any, after: int, upto: int, projects: Sequence[str]) -> list[tuple[Any, ...]]:
    """The conflicts logged in (``after``, ``upto``]: (uid, copy_uid, other_uid, resolution, fields)."""
    scope, params = _scope(projects)
    return list(
        conn.execute(
            "SELECT uid, copy_uid, other_uid, resolution, fields FROM cmem_conflicts "
            f"WHERE rev > %s AND rev <= %s{scope} ORDER BY rev",
            (after, upto, *params),
        ).fetchall()
    )


def links_touching(conn: Any, uids: Sequence[str]) -> list[tuple[str, str, str]]:
    """Every link from or to one of ``uids``: (from_uid, to_uid, type)."""
    cur = conn.execute(
        "SELECT from_uid, to_uid, type FROM cmem_links WHERE from_uid = ANY(%s) OR to_uid = ANY(%s)",
        (list(uids), list(uids)),
    )
    return [(str(a), str(b), str(t)) for a, b, t in cur.fetchall()]


# -- a restored server --------------------------------------------------------------------------------------
def identity_parts(conn: Any) -> list[str]:
    """The parts of :data:`IDENTITY`; one a role may not read is empty."""
    parts = []
    for sql in IDENTITY:
        value = ""
        with contextlib.suppress(Exception):  # autocommit: a refused statement spoils nothing
            row = conn.execute(sql).fetchone()
            value = str(row[0]) if row else ""
        parts.append(value)
    return parts


def new_epoch(conn: Any, write_lock: int) -> None:
    """Give the server a new epoch under the write lock (a role that may not is left as it was)."""
    with contextlib.suppress(Exception), conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (write_lock,))
        conn.execute(
            "UPDATE cmem_meta SET value = md5(random()::text || clock_timestamp()::text) WHERE key = 'epoch'"
        )


# -- vectors ----------------------------------------------------------------------------------------------
def store_vectors(conn: Any, fingerprint: str, rows: Sequence[tuple[str, str, Any]]) -> None:
    """Insert or replace the (kind, uid, vector) rows of one model."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO cmem_vectors (kind, uid, fingerprint, embedding) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (kind, uid, fingerprint) DO UPDATE SET embedding = excluded.embedding",
            [(kind, uid, fingerprint, vector) for kind, uid, vector in rows],
        )


def add_model(conn: Any, fingerprint: str, dim: int, name: str) -> bool:
    """Record a model; True when it is new here (its index is then to be made)."""
    inserted = conn.execute(
        "INSERT INTO cmem_models (fingerprint, dim, name) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING "
        "RETURNING fingerprint",
        (fingerprint, int(dim), name[:200]),
    ).fetchone()
    return inserted is not None


def add_model_index(conn: Any, index: str, fingerprint: str, dim: int) -> None:
    """The HNSW index of one model's vectors (``fingerprint`` checked by the caller: it is SQL text)."""
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {index} ON cmem_vectors USING hnsw "
        f"((embedding::vector({int(dim)})) vector_cosine_ops) WHERE fingerprint = '{fingerprint}'"
    )


# -- live --------------------------------------------------------------------------------------------------
def listen(conn: Any, channel: str) -> None:
    """Be told (NOTIFY on ``channel``) when another home pushes."""
    conn.execute(f"LISTEN {channel}")


# -- pushing (cmem_cli.team.push: every statement below runs in its one transaction under the write lock) --
def _dicts(cursor: Any) -> list[dict[str, Any]]:
    names = [d.name for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def take_write_lock(conn: Any, lock: int) -> None:
    """The server's write lock, held until the transaction ends (one pushing home at a time)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))


def notify(conn: Any, channel: str, rev: int) -> None:
    """Tell the homes listening on ``channel`` that revisions up to ``rev`` were pushed."""
    conn.execute("SELECT pg_notify(%s, %s)", (channel, str(rev)))


def next_revisions(conn: Any, count: int) -> list[int]:
    """``count`` new revisions, in order, in one round trip."""
    rows = conn.execute("SELECT nextval('cmem_rev') FROM generate_series(1, %s)", (count,))
    return [int(r[0]) for r in rows.fetchall()]


def log_conflicts(conn: Any, rows: Sequence[tuple[Any, ...]]) -> None:
    """Log conflicts: (rev, kind, uid, copy_uid, other_uid, resolution, fields, project, machine)."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO cmem_conflicts (rev, kind, uid, copy_uid, other_uid, resolution, fields, "
            "project, machine) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            rows,
        )


def rows_for_update(conn: Any, table: str, names: str, uids: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of ``table`` with these uids (``names``: their columns besides uid and rev), locked."""
    return _dicts(
        conn.execute(f"SELECT uid, rev, {names} FROM {table} WHERE uid = ANY(%s) FOR UPDATE", (uids,))
    )


def links_from(conn: Any, uids: Sequence[str]) -> list[dict[str, Any]]:
    """The links from these observations: from_uid, to_uid, type."""
    return _dicts(
        conn.execute("SELECT from_uid, to_uid, type FROM cmem_links WHERE from_uid = ANY(%s)", (uids,))
    )


def tombstones(conn: Any, kind: str, uids: Sequence[str]) -> dict[str, int]:
    """uid -> when it was forgotten, for those of ``uids`` that have a tombstone."""
    return dict(
        conn.execute(
            "SELECT uid, deleted_at FROM cmem_tombstones WHERE kind = %s AND uid = ANY(%s)", (kind, uids)
        ).fetchall()
    )


def drop_tombstone(conn: Any, kind: str, uid: str) -> None:
    """An edit beat a forget: the memory is back."""
    conn.execute("DELETE FROM cmem_tombstones WHERE kind = %s AND uid = %s", (kind, uid))


def exists(conn: Any, table: str, uid: str) -> bool:
    return conn.execute(f"SELECT 1 FROM {table} WHERE uid = %s", (uid,)).fetchone() is not None


def tombstone(
    conn: Any, table: str, kind: str, uid: str, *, rev: int, project: str, machine: str, at: int
) -> None:
    """Forget a memory on the server: its row and vectors deleted, a tombstone left (every home forgets)."""
    conn.execute(f"DELETE FROM {table} WHERE uid = %s", (uid,))
    conn.execute("DELETE FROM cmem_vectors WHERE kind = %s AND uid = %s", (kind, uid))
    conn.execute(
        "INSERT INTO cmem_tombstones (kind, uid, rev, project, machine, deleted_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (kind, uid) DO UPDATE SET rev = excluded.rev, "
        "project = excluded.project, machine = excluded.machine, deleted_at = excluded.deleted_at",
        (kind, uid, rev, project, machine, at),
    )


def write_observations(
    conn: Any,
    columns: Sequence[str],
    inserts: Sequence[dict[str, Any]],
    updates: Sequence[dict[str, Any]],
    links: Sequence[tuple[str, str, str]],
) -> None:
    """A batch's observations (new and changed) and the links of both, a statement for each kind
    (pipelined by psycopg); a changed one's links are replaced."""
    with conn.cursor() as cur:
        if inserts:
            names, marks = ", ".join(columns), ", ".join(f"%({c})s" for c in columns)
            cur.executemany(f"INSERT INTO cmem_observations ({names}) VALUES ({marks})", inserts)
        if updates:
            # a merged row or a conflict copy knows no file name: the one the server has stays
            sets = ", ".join(
                f"{c} = coalesce(%({c})s, {c})" if c == "path" else f"{c} = %({c})s"
                for c in columns
                if c != "uid"
            )
            cur.executemany(f"UPDATE cmem_observations SET {sets} WHERE uid = %(uid)s", updates)
            cur.execute("DELETE FROM cmem_links WHERE from_uid = ANY(%s)", ([p["uid"] for p in updates],))
        if links:
            cur.executemany("INSERT INTO cmem_links (from_uid, to_uid, type) VALUES (%s, %s, %s)", links)


def write_summary(conn: Any, columns: Sequence[str], params: Mapping[str, Any], *, insert: bool) -> None:
    if insert:
        names = ", ".join(columns)
        marks = ", ".join(f"%({c})s" for c in columns)
        conn.execute(f"INSERT INTO cmem_summaries ({names}) VALUES ({marks})", params)
    else:
        sets = ", ".join(f"{c} = %({c})s" for c in columns if c != "uid")
        conn.execute(f"UPDATE cmem_summaries SET {sets} WHERE uid = %(uid)s", params)


def sessions_for_update(conn: Any, columns: Sequence[str], ids: Sequence[str]) -> list[dict[str, Any]]:
    """The sessions with these ids (rev and ``columns``), locked."""
    return _dicts(
        conn.execute(
            f"SELECT rev, {', '.join(columns)} FROM cmem_sessions WHERE session_id = ANY(%s) FOR UPDATE",
            (ids,),
        )
    )


def write_session(conn: Any, columns: Sequence[str], params: Mapping[str, Any], *, insert: bool) -> None:
    if insert:
        names, marks = ", ".join(columns), ", ".join(f"%({c})s" for c in columns)
        conn.execute(f"INSERT INTO cmem_sessions ({names}) VALUES ({marks})", params)
    else:
        sets = ", ".join(f"{c} = %({c})s" for c in columns if c != "session_id")
        conn.execute(f"UPDATE cmem_sessions SET {sets} WHERE session_id = %(session_id)s", params)


def prompt_revisions(conn: Any, uids: Sequence[str]) -> dict[str, int]:
    """uid -> revision of those of ``uids`` the server has."""
    return dict(conn.execute("SELECT uid, rev FROM cmem_prompts WHERE uid = ANY(%s)", (uids,)).fetchall())


def insert_prompts(conn: Any, columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    names, marks = ", ".join(columns), ", ".join(f"%({c})s" for c in columns)
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO cmem_prompts ({names}) VALUES ({marks})", rows)


# -- the schema and this role's rights (cmem_cli.team.server) ------------------------------------------------
def write_granted(conn: Any) -> Any:
    """The row saying whether this role may insert into and update the memories' table."""
    return conn.execute(
        "SELECT has_any_column_privilege('cmem_observations', 'INSERT') "
        "AND has_any_column_privilege('cmem_observations', 'UPDATE')"
    ).fetchone()


def create_granted(conn: Any) -> Any:
    """The row saying whether this role may create in the schema."""
    return conn.execute("SELECT has_schema_privilege(current_schema(), 'CREATE')").fetchone()


def applied_migrations(conn: Any, *, create: bool = False) -> set[str]:
    """The names of the migrations this server ran (``create``: make their table first if missing)."""
    if create:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS cmem_migrations (name text PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
    return {row[0] for row in conn.execute("SELECT name FROM cmem_migrations")}


def apply_migration(conn: Any, name: str, sql: str) -> None:
    conn.execute(sql)
    conn.execute("INSERT INTO cmem_migrations (name) VALUES (%s)", (name,))


def has_migrations(conn: Any) -> bool:
    """Has cmem's schema been made here at all?"""
    row = conn.execute("SELECT to_regclass('cmem_migrations') IS NOT NULL").fetchone()
    return bool(row and row[0])


def observation_columns_among(conn: Any, names: Sequence[str]) -> set[str]:
    """Which of ``names`` (cmem's own column names: they are SQL text) the memories' table has."""
    quoted = ", ".join(f"'{name}'" for name in names)
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        f"AND table_name = 'cmem_observations' AND column_name IN ({quoted})"
    ).fetchall()
    return {str(row[0]) for row in rows}


def try_read_observations(conn: Any) -> None:
    """Raises when this role may not read the memories' table."""
    conn.execute("SELECT 1 FROM cmem_observations LIMIT 0")


# -- searching (cmem_cli.team.source: its filters, a table aliased ``o``, come as WHERE clauses) -------------
OBS_SELECT = (
    "SELECT 'observation' AS kind, o.uid, o.type, o.title, o.subtitle, o.project, o.session, o.agent, o.machine, "
    "o.key, o.created_at, (length(o.title) + length(coalesce(o.subtitle, '')) + length(coalesce(o.narrative, '')) "
    "+ length(o.facts::text)) / 4 + 40 AS tokens"
)
SUMMARY_SELECT = (
    "SELECT 'summary' AS kind, o.uid, 'summary' AS type, "
    "left(coalesce(o.request, o.completed, o.learned, o.investigated, o.next_steps, o.notes, ''), 200) AS title, "
    "NULL AS subtitle, o.project, o.session, o.agent, o.machine, NULL AS key, o.created_at, "
    "(length(coalesce(o.request, '') || coalesce(o.investigated, '') || coalesce(o.learned, '') || "
    "coalesce(o.completed, '') || coalesce(o.next_steps, '') || coalesce(o.notes, '')) + 3) / 4 AS tokens"
)


def listing(conn: Any, where: str, direction: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Observations the filters keep, by time (``direction`` ASC or DESC), ``limit`` and ``offset`` in params."""
    sql = (
        f"{OBS_SELECT} FROM cmem_observations o WHERE {where} "
        f"ORDER BY o.created_at {direction}, o.uid {direction} LIMIT %(limit)s OFFSET %(offset)s"
    )
    return _dicts(conn.execute(sql, params))


def replies(conn: Any, where: str, params: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(question, reply): for each of the ``uids`` that asks a bare question, the session's next row kept."""
    sql = (
        "SELECT q.uid AS question, (SELECT o.uid FROM cmem_observations o WHERE o.session = q.session "
        "AND (o.created_at > q.created_at OR (o.created_at = q.created_at AND o.uid > q.uid)) "
        f"AND {where} ORDER BY o.created_at, o.uid LIMIT 1) AS reply "
        "FROM cmem_observations q WHERE q.uid = ANY(%(uids)s) AND q.session IS NOT NULL "
        "AND strpos(q.title, '?') > 0 AND coalesce(q.narrative, '') = '' AND q.facts = '[]'::jsonb"
    )
    return list(conn.execute(sql, params).fetchall())


def supersedes_links(conn: Any, uids: Sequence[str]) -> list[tuple[str, str]]:
    """(old, new) of each supersedes link to one of ``uids``, the newest successor last."""
    return list(
        conn.execute(
            "SELECT l.to_uid, l.from_uid FROM cmem_links l JOIN cmem_observations n ON n.uid = l.from_uid "
            "WHERE l.type = 'supersedes' AND l.to_uid = ANY(%s) ORDER BY n.created_at, n.uid",
            (uids,),
        ).fetchall()
    )


def kept_of(conn: Any, where: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The observations among ``uids`` (in params) that the filters keep."""
    return _dicts(
        conn.execute(f"{OBS_SELECT} FROM cmem_observations o WHERE o.uid = ANY(%(uids)s) AND {where}", params)
    )


def stated_texts(conn: Any, uids: Sequence[str]) -> list[tuple[Any, ...]]:
    """(uid, title, subtitle, narrative, facts, created_at) of these observations."""
    return list(
        conn.execute(
            "SELECT uid, title, coalesce(subtitle, ''), coalesce(narrative, ''), facts, created_at "
            "FROM cmem_observations WHERE uid = ANY(%s)",
            (uids,),
        ).fetchall()
    )


def anchors_of(conn: Any, uids: Sequence[str]) -> list[tuple[str, Any]]:
    """(uid, anchor) of these observations that have an anchor."""
    return list(
        conn.execute(
            "SELECT uid, anchor FROM cmem_observations WHERE uid = ANY(%s) AND anchor IS NOT NULL", (uids,)
        ).fetchall()
    )


def lexemes(conn: Any, query: str) -> list[str]:
    """The query's words as the server stems them (English)."""
    return [
        row[0]
        for row in conn.execute("SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))", (query,))
    ]


def document_frequencies(conn: Any, terms: Sequence[str], cap: int) -> list[tuple[str, int]]:
    """(term, how many observations hold it, counted up to ``cap``) for each tsquery term."""
    return list(
        conn.execute(
            "SELECT t, (SELECT count(*) FROM (SELECT 1 FROM cmem_observations o WHERE o.search @@ t::tsquery "
            f"LIMIT {int(cap)}) s) FROM unnest(%s::text[]) AS t",
            (list(terms),),
        ).fetchall()
    )


def keyword_hits(
    conn: Any, observations: str, summaries: str | None, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Rows matching ``q`` (a tsquery in params) that the WHERE clauses keep (summaries: None leaves them
    out), best ``ts_rank`` first, ``depth`` of each at most; ``matched`` says which of ``terms`` each holds."""
    matched = "ARRAY(SELECT o.search @@ t::tsquery FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i)"
    rank = "ts_rank(o.search, %(q)s::tsquery, 32)"
    parts = [
        f"{OBS_SELECT}, {rank} AS rank, {matched} AS matched FROM cmem_observations o "
        f"WHERE o.search @@ %(q)s::tsquery AND {observations} ORDER BY rank DESC LIMIT %(depth)s"
    ]
    if summaries is not None:
        parts.append(
            f"{SUMMARY_SELECT}, {rank} AS rank, {matched} AS matched FROM cmem_summaries o "
            f"WHERE o.search @@ %(q)s::tsquery AND {summaries} ORDER BY rank DESC LIMIT %(depth)s"
        )
    return _dicts(conn.execute(" UNION ALL ".join(f"({part})" for part in parts), params))


def nearest(
    conn: Any, fingerprint: str, dim: int, observations: str, summaries: str | None, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The rows nearest the query vector ``qv`` (in params) among one model's vectors (``fingerprint``
    checked by the caller: it is SQL text), ``depth`` of each at most, with their cosine ``distance``."""
    depth = int(params["depth"])
    distance = f"v.embedding::vector({dim}) <=> %(qv)s::vector({dim})"
    parts = [
        f"{OBS_SELECT}, {distance} AS distance FROM cmem_vectors v JOIN cmem_observations o ON o.uid = v.uid "
        f"WHERE v.kind = 'observation' AND v.fingerprint = '{fingerprint}' AND {observations} "
        f"ORDER BY {distance} LIMIT %(depth)s"
    ]
    if summaries is not None:
        parts.append(
            f"{SUMMARY_SELECT}, {distance} AS distance FROM cmem_vectors v JOIN cmem_summaries o ON o.uid = v.uid "
            f"WHERE v.kind = 'summary' AND v.fingerprint = '{fingerprint}' AND {summaries} "
            f"ORDER BY {distance} LIMIT %(depth)s"
        )
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")  # filtered rows must not empty the list
        conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(depth, 1000))}")
        return _dicts(conn.execute(" UNION ALL ".join(f"({part})" for part in parts), params))


def has_model(conn: Any, fingerprint: str) -> bool:
    """Does any vector on the server come from this model?"""
    return (
        conn.execute("SELECT 1 FROM cmem_models WHERE fingerprint = %s", (fingerprint,)).fetchone()
        is not None
    )


def any_word_in(conn: Any, where: str, params: Mapping[str, Any]) -> bool:
    """Does any word of ``q`` (in params) occur in an observation the WHERE clause keeps?"""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM cmem_observations o WHERE o.search @@ plainto_tsquery('english', %(q)s) "
        f"AND {where})",
        params,
    ).fetchone()
    return bool(row and row[0])


def observation_count(conn: Any) -> int:
    """Rows in the observations table: the planner's estimate once analysed (free at a million rows),
    counted while the table is small and not yet analysed."""
    estimate = conn.execute(
        "SELECT reltuples::bigint FROM pg_class WHERE oid = 'cmem_observations'::regclass"
    ).fetchone()
    if estimate and estimate[0] and estimate[0] > 0:
        return int(estimate[0])
    return int(conn.execute("SELECT count(*) FROM cmem_observations").fetchone()[0])
