"""The team database: connecting (psycopg 3, loaded only here), its schema as named migrations, errors.

Every table is prefixed ``cmem_`` so the team's memory can live in a database (or schema) that holds
other things. Revisions come from one sequence and are taken only under a transaction-scoped advisory
lock (:data:`WRITE_LOCK`), so they are committed in the order they were taken: a home that has pulled
everything up to revision N never misses a row later committed with a smaller one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from cmem_cli.core.errors import SyncError, UsageError
from cmem_cli.team import repository
from cmem_cli.team.url import mask

CONNECT_TIMEOUT = 5  # seconds; a stopped server fails fast, the next sync retries
WRITE_LOCK = 0x636D656D  # "cmem": pg_advisory_xact_lock key held by every transaction that takes revisions
CHANNEL = "cmem_team"  # NOTIFY channel: payload is the last revision a push committed

MIGRATIONS: list[tuple[str, str]] = [
    (
        "m001_initial",
        """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SEQUENCE cmem_rev;
CREATE TABLE cmem_observations (
    uid            text PRIMARY KEY,
    rev            bigint NOT NULL,
    type           text NOT NULL,
    title          text NOT NULL,
    subtitle       text,
    narrative      text,
    facts          jsonb NOT NULL DEFAULT '[]',
    concepts       jsonb NOT NULL DEFAULT '[]',
    files_read     jsonb NOT NULL DEFAULT '[]',
    files_modified jsonb NOT NULL DEFAULT '[]',
    tools_used     jsonb NOT NULL DEFAULT '[]',
    project        text NOT NULL,
    session        text,
    agent          text NOT NULL,
    machine        text NOT NULL,
    prompt_number  integer,
    key            text,
    confidence     double precision,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL,
    search         tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A')
        || setweight(to_tsvector('english', coalesce(subtitle, '')), 'B')
        || setweight(jsonb_to_tsvector('english', concepts, '["string"]'), 'B')
        || setweight(jsonb_to_tsvector('english', facts, '["string"]'), 'C')
        || setweight(to_tsvector('english', coalesce(narrative, '')), 'D')
    ) STORED
);
CREATE UNIQUE INDEX cmem_observations_rev ON cmem_observations (rev);
CREATE INDEX cmem_observations_project_rev ON cmem_observations (project, rev);
CREATE INDEX cmem_observations_created ON cmem_observations (created_at);
CREATE INDEX cmem_observations_search ON cmem_observations USING gin (search);

CREATE TABLE cmem_links (
    from_uid text NOT NULL REFERENCES cmem_observations (uid) ON DELETE CASCADE,
    to_uid   text NOT NULL,
    type     text NOT NULL,
    PRIMARY KEY (from_uid, to_uid, type)
);
CREATE INDEX cmem_links_to ON cmem_links (to_uid);

CREATE TABLE cmem_summaries (
    uid          text PRIMARY KEY,
    rev          bigint NOT NULL,
    session      text NOT NULL,
    project      text NOT NULL,
    agent        text NOT NULL,
    machine      text NOT NULL,
    request      text,
    investigated text,
    learned      text,
    completed    text,
    next_steps   text,
    notes        text,
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL,
    search       tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(request, '')), 'A')
        || setweight(to_tsvector('english', coalesce(learned, '') || ' ' || coalesce(completed, '')), 'B')
        || setweight(to_tsvector('english', coalesce(investigated, '') || ' ' || coalesce(next_steps, '')
                                 || ' ' || coalesce(notes, '')), 'D')
    ) STORED
);
CREATE UNIQUE INDEX cmem_summaries_rev ON cmem_summaries (rev);
CREATE INDEX cmem_summaries_project_rev ON cmem_summaries (project, rev);
CREATE INDEX cmem_summaries_search ON cmem_summaries USING gin (search);

CREATE TABLE cmem_tombstones (
    kind       text NOT NULL,
    uid        text NOT NULL,
    rev        bigint NOT NULL,
    project    text NOT NULL,
    machine    text NOT NULL,
    deleted_at bigint NOT NULL,
    PRIMARY KEY (kind, uid)
);
CREATE UNIQUE INDEX cmem_tombstones_rev ON cmem_tombstones (rev);
CREATE INDEX cmem_tombstones_project_rev ON cmem_tombstones (project, rev);

-- One vector per memory and embedding model (its fingerprint): homes with different models never
-- compare each other's vectors. Each model gets its own HNSW index (partial, with the model's dimension).
CREATE TABLE cmem_vectors (
    kind        text NOT NULL,
    uid         text NOT NULL,
    fingerprint text NOT NULL,
    embedding   vector NOT NULL,
    PRIMARY KEY (kind, uid, fingerprint)
);
CREATE TABLE cmem_models (
    fingerprint text PRIMARY KEY,
    dim         integer NOT NULL,
    name        text NOT NULL
);
""",
    ),
    (
        "m002_sessions_prompts",
        """
-- One row per session id (two machines' versions are merged, never copied), and the prompts people
-- typed, by uid: both scrubbed on the machine that wrote them, as everything else.
CREATE TABLE cmem_sessions (
    session_id       text PRIMARY KEY,
    rev              bigint NOT NULL,
    agent            text NOT NULL,
    project          text NOT NULL,
    label            text,
    status           text NOT NULL,
    prompt_counter   integer NOT NULL DEFAULT 0,
    started_at       bigint NOT NULL,
    completed_at     bigint,
    last_activity_at bigint NOT NULL,
    goal             text,
    outcome          text,
    next_steps       text,
    machine          text NOT NULL
);
CREATE UNIQUE INDEX cmem_sessions_rev ON cmem_sessions (rev);
CREATE INDEX cmem_sessions_project_rev ON cmem_sessions (project, rev);

CREATE TABLE cmem_prompts (
    uid           text PRIMARY KEY,
    rev           bigint NOT NULL,
    session       text NOT NULL,
    prompt_number integer NOT NULL,
    text          text NOT NULL,
    project       text NOT NULL,
    agent         text NOT NULL,
    machine       text NOT NULL,
    created_at    bigint NOT NULL
);
CREATE UNIQUE INDEX cmem_prompts_rev ON cmem_prompts (rev);
CREATE INDEX cmem_prompts_project_rev ON cmem_prompts (project, rev);
CREATE INDEX cmem_prompts_session ON cmem_prompts (session, prompt_number);
""",
    ),
    (
        "m003_observation_anchors",
        """
-- An observation's code anchor as its export file states it: the repository by its name on every
-- machine (its origin without credentials), branch, commit, blob ids by repository-relative path, and
-- when; never a folder of the machine that recorded it. NULL: not anchored (or no name for its repository).
ALTER TABLE cmem_observations ADD COLUMN anchor jsonb;
""",
    ),
    (
        "m004_identity",
        """
-- Who this server is, for the homes that sync with it: a value that a restore (a pg_dump reload, a
-- point-in-time recovery) brings back as it was at the backup, and that the first home to notice the
-- restore replaces, so that every other home notices too (cmem_cli.team.restore).
CREATE TABLE cmem_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO cmem_meta (key, value) VALUES ('epoch', md5(random()::text || clock_timestamp()::text));
""",
    ),
    (
        "m005_conflicts",
        """
-- What a push settled between two machines' versions of a memory (the merge rule of
-- cmem_cli.services.inbound.reconcile.rule): the memory kept, its conflict copy or the other memory, which fields,
-- and how. Every other home is told at its next pull, as the home that settled it was told at its push.
CREATE TABLE cmem_conflicts (
    rev        bigint PRIMARY KEY,
    kind       text NOT NULL,
    uid        text NOT NULL,
    copy_uid   text,
    other_uid  text,
    resolution text NOT NULL,
    fields     jsonb NOT NULL DEFAULT '[]',
    project    text NOT NULL,
    machine    text NOT NULL
);
CREATE INDEX cmem_conflicts_project_rev ON cmem_conflicts (project, rev);
""",
    ),
    (
        "m006_authors",
        """
-- The person who wrote each memory, summary and prompt, where known (CMEM_AUTHOR or git's user.email), as
-- git sync's files carry it: without it a home that pulled a memory knew the machine and not the person.
ALTER TABLE cmem_observations ADD COLUMN IF NOT EXISTS author text;
ALTER TABLE cmem_summaries ADD COLUMN IF NOT EXISTS author text;
ALTER TABLE cmem_prompts ADD COLUMN IF NOT EXISTS author text;
""",
    ),
    (
        "m007_invalidated",
        """
-- A memory someone said no longer holds (`cmem invalidate`): the reason; NULL while it is valid. Kept, not
-- deleted: every home leaves it out of search, context and the briefing until `cmem restore` clears it.
ALTER TABLE cmem_observations ADD COLUMN IF NOT EXISTS invalidated text;
""",
    ),
    (
        "m008_last_editor",
        """
-- Who changed a memory last (the machine, the person), apart from who wrote it (machine, author): a
-- teammate's edit or link no longer looks like the teammate's memory on the homes that pull it.
ALTER TABLE cmem_observations ADD COLUMN IF NOT EXISTS edited_on text;
ALTER TABLE cmem_observations ADD COLUMN IF NOT EXISTS edited_by text;
""",
    ),
    (
        "m009_paths",
        """
-- The file name a memory's writer gave it (relative to the export tree): a home that pulls the memory
-- names its file the same, whenever it pulls it (a name made from the title would follow later edits).
ALTER TABLE cmem_observations ADD COLUMN IF NOT EXISTS path text;
""",
    ),
]


class ReadOnly(SyncError):
    """The server refused a write: this role may not write cmem's tables (what is queued stays queued).
    ``read_only``: the role may not create in the schema either (a reader, not a writer awaiting grants)."""

    def __init__(self, message: str, *, read_only: bool = True):
        super().__init__(message)
        self.read_only = read_only


def psycopg() -> Any:
    """The driver, imported on first use; a one-line hint when the `postgres` extra is not installed.

    Its logger is kept quiet: a connection closed under an interrupted sync would otherwise print a
    driver warning (Python's last-resort handler) before cmem's one-line error."""
    try:
        import psycopg as driver
    except ImportError:
        raise UsageError("team memory on PostgreSQL needs psycopg: pip install 'cmem[postgres]'") from None
    import logging

    quiet = logging.getLogger("psycopg")
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
    return driver


def reason(exc: BaseException, *secrets: str | None) -> str:
    """A driver error as one masked line (libpq's messages may quote the connection string)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return mask(text, *secrets)


# What libpq says when the server refused who connects (SQLSTATE class 28 is not always attached to an
# error raised while connecting, so its words are read too).
_AUTHENTICATION = (
    "authentication failed",
    "no password supplied",
    "password is required",
    "no pg_hba.conf entry",
)


def _refused_login(exc: BaseException) -> bool:
    code = getattr(exc, "sqlstate", None) or ""
    text = str(exc).lower()
    unknown_role = 'role "' in text and "does not exist" in text
    return code.startswith("28") or unknown_role or any(words in text for words in _AUTHENTICATION)


@contextlib.contextmanager
def translated(url: str, password: str | None = None, conn: Any = None) -> Iterator[None]:
    """Driver errors become SyncError (exit 9) naming the masked URL, in one line, saying what happened:
    the server cannot be reached, refused the login, or refused a write (:class:`ReadOnly`)."""
    driver = psycopg()
    try:
        yield
    except driver.OperationalError as exc:
        if _refused_login(exc):
            raise SyncError(f"team database {url}: authentication failed: {reason(exc, password)}") from None
        raise SyncError(f"team database {url} is unreachable: {reason(exc, password)}") from None
    except driver.errors.InsufficientPrivilege as exc:
        writer = _may_create(conn)
        raise ReadOnly(
            f"team database {url}: {reason(exc, password)} ({_no_privilege(writer)})", read_only=not writer
        ) from None
    except driver.Error as exc:
        raise SyncError(f"team database {url}: {reason(exc, password)}") from None


def may_write(conn: Any) -> bool:
    """May this role insert into or update the memories' table (a grant of the table or of a column of
    it)? True when the server cannot say: the push then finds out."""
    try:
        row = repository.write_granted(conn)
    except psycopg().Error:
        return True
    return bool(row is None or row[0])


def _may_create(conn: Any) -> bool:
    """May this role create in the schema (a writer of docs/team.md, whatever its grants of the tables)?"""
    writer = False
    if conn is not None:
        with contextlib.suppress(Exception):
            row = repository.create_granted(conn)
            writer = bool(row and row[0])
    return writer


def _no_privilege(writer: bool) -> str:
    """Why a write was refused, as far as the server says: a role that may create in the schema (a writer,
    docs/team.md) lacks only the grants of cmem's tables, which their owner gives; another is read-only."""
    if writer:
        return (
            "this role may write the schema but has not been granted cmem's tables yet: their owner, the "
            "member who joined first, runs the GRANT of docs/team.md; what is queued here stays queued"
        )
    return "a read-only role can pull and search, not push; what is queued here stays queued"


def connect(url: str, password: str | None = None, *, autocommit: bool = True) -> Any:
    """A connection to the team database; libpq finds the password unless one is given for this run.

    Autocommit: every transaction is an explicit ``conn.transaction()`` block, so none is left open."""
    driver = psycopg()
    extra = {"password": password} if password else {}
    with translated(url, password):
        return driver.connect(
            url, connect_timeout=CONNECT_TIMEOUT, application_name="cmem", autocommit=autocommit, **extra
        )


def migrate(conn: Any) -> list[str]:
    """Create or bring the schema up to date (one transaction, under the write lock); returns what ran."""
    ran: list[str] = []
    with conn.transaction():
        repository.take_write_lock(conn, WRITE_LOCK)
        done = repository.applied_migrations(conn, create=True)
        for name, sql in MIGRATIONS:
            if name not in done:
                repository.apply_migration(conn, name, sql)
                ran.append(name)
    return ran


def is_migrated(conn: Any) -> bool:
    if not repository.has_migrations(conn):
        return False
    done = repository.applied_migrations(conn)
    return all(name in done for name, _ in MIGRATIONS)


def present(conn: Any, columns: tuple[str, ...] | list[str]) -> list[str]:
    """``columns`` as this server has them: without ``author`` on a schema from before m006_authors, or
    ``invalidated``, ``edited_on``, ``edited_by`` and ``path`` from before the migrations that add them, that
    this role may not migrate (a reader, or a writer before the tables' owner synced with this cmem), so it
    pulls and pushes as before, without them. Asked once per connection."""
    has = getattr(conn, "_cmem_optional", None)
    if has is None:
        has = repository.observation_columns_among(conn, OPTIONAL_COLUMNS)
        conn._cmem_optional = has
    return [c for c in columns if c not in OPTIONAL_COLUMNS or c in has]


# Columns later migrations added: a reader may meet a server without them.
OPTIONAL_COLUMNS = ("author", "invalidated", "edited_on", "edited_by", "path")


def readable(conn: Any) -> bool:
    """May this role read cmem's memories (whatever else it may not do)?"""
    try:
        repository.try_read_observations(conn)
    except Exception:
        return False
    return True


def with_retries(action: Callable[[], Any], attempts: int = 3) -> Any:
    """Run ``action`` again when the server reports a serialization failure or deadlock."""
    driver = psycopg()
    for attempt in range(attempts):
        try:
            return action()
        except (driver.errors.SerializationFailure, driver.errors.DeadlockDetected):
            if attempt == attempts - 1:
                raise
    return None
