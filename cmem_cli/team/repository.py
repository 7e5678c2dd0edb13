"""The team database's SQL, by what cmem asks of it: one module to read for what a pull, a restore check,
the vectors and `cmem watch` send to PostgreSQL (the merge logic beside them holds none).

Each function takes the open psycopg connection. The push ladder's statements, the schema's migrations
(``server``) and the team search (``source``) still hold their own SQL: they move here next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

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
