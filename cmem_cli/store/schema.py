"""The store's schema, as named migrations (``cmem_cli.core.migrations``): append new ones, never edit one.

Design notes (claude-mem's flaws fixed): one text session id, INTEGER epoch milliseconds for every time,
file paths and concepts in their own indexed tables, contentless FTS5 tables kept in sync by triggers.
``search_terms`` holds what the tokenizer cannot derive by itself (camelCase parts, file paths, the date as
words), computed in Python at write time, so any SQLite client can still write rows consistently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmem_cli.core.fields import LINK_TYPES, OBSERVATION_TYPES, SESSION_STATUSES
from cmem_cli.core.migrations import Migrations
from cmem_cli.core.timeutil import MAX_MS, ms_date_words

if TYPE_CHECKING:
    import apsw


FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


V1 = f"""
CREATE TABLE sessions (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL UNIQUE,
    agent            TEXT NOT NULL,
    project          TEXT NOT NULL,
    label            TEXT,
    status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN {_in(SESSION_STATUSES)}),
    prompt_counter   INTEGER NOT NULL DEFAULT 0,
    started_at       INTEGER NOT NULL,
    completed_at     INTEGER,
    last_activity_at INTEGER NOT NULL,
    goal             TEXT,
    outcome          TEXT,
    next_steps       TEXT
);
CREATE INDEX sessions_project ON sessions (project, started_at);

CREATE TABLE observations (
    id                INTEGER PRIMARY KEY,
    uid               TEXT NOT NULL UNIQUE,
    type              TEXT NOT NULL CHECK (type IN {_in(OBSERVATION_TYPES)}),
    title             TEXT NOT NULL CHECK (length(title) > 0),
    subtitle          TEXT,
    narrative         TEXT,
    facts             TEXT NOT NULL DEFAULT '[]',
    concepts          TEXT NOT NULL DEFAULT '[]',
    files_read        TEXT NOT NULL DEFAULT '[]',
    files_modified    TEXT NOT NULL DEFAULT '[]',
    tools_used        TEXT NOT NULL DEFAULT '[]',
    project           TEXT NOT NULL,
    session           TEXT,
    agent             TEXT NOT NULL,
    prompt_number     INTEGER,
    key               TEXT,
    confidence        REAL,
    retrieval_count   INTEGER NOT NULL DEFAULT 0,
    last_retrieved_at INTEGER,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    tokens            INTEGER NOT NULL DEFAULT 0,
    path              TEXT,
    search_terms      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX observations_created ON observations (created_at);
CREATE INDEX observations_project_created ON observations (project, created_at);
CREATE INDEX observations_session_created ON observations (session, created_at);
CREATE INDEX observations_type_created ON observations (type, created_at);
CREATE INDEX observations_agent_created ON observations (agent, created_at);
CREATE UNIQUE INDEX observations_project_key ON observations (project, key) WHERE key IS NOT NULL;

CREATE TABLE observation_files (
    observation_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    kind           TEXT NOT NULL CHECK (kind IN ('read', 'modified')),
    path           TEXT NOT NULL,
    PRIMARY KEY (observation_id, kind, path)
) WITHOUT ROWID;
CREATE INDEX observation_files_path ON observation_files (path);

CREATE TABLE observation_concepts (
    observation_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    concept        TEXT NOT NULL,
    PRIMARY KEY (observation_id, concept)
) WITHOUT ROWID;
CREATE INDEX observation_concepts_concept ON observation_concepts (concept);

CREATE TABLE observation_links (
    from_id    INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    to_id      INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    type       TEXT NOT NULL CHECK (type IN {_in(LINK_TYPES)}),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (from_id, to_id, type)
) WITHOUT ROWID;
CREATE INDEX observation_links_to ON observation_links (to_id);

CREATE TABLE user_prompts (
    id            INTEGER PRIMARY KEY,
    uid           TEXT NOT NULL UNIQUE,
    session       TEXT NOT NULL,
    prompt_number INTEGER NOT NULL,
    text          TEXT NOT NULL,
    project       TEXT NOT NULL,
    agent         TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    UNIQUE (session, prompt_number)
);
CREATE INDEX user_prompts_project_created ON user_prompts (project, created_at);

CREATE TABLE session_summaries (
    id           INTEGER PRIMARY KEY,
    uid          TEXT NOT NULL UNIQUE,
    session      TEXT NOT NULL,
    project      TEXT NOT NULL,
    agent        TEXT NOT NULL,
    request      TEXT,
    investigated TEXT,
    learned      TEXT,
    completed    TEXT,
    next_steps   TEXT,
    notes        TEXT,
    created_at   INTEGER NOT NULL,
    path         TEXT
);
CREATE INDEX session_summaries_project_created ON session_summaries (project, created_at);
CREATE INDEX session_summaries_session ON session_summaries (session, created_at);

CREATE VIRTUAL TABLE observations_fts USING fts5 (
    title, subtitle, narrative, facts, concepts, search_terms,
    content='', contentless_delete=1, tokenize='{FTS_TOKENIZER}'
);
CREATE TRIGGER observations_fts_insert AFTER INSERT ON observations BEGIN
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts, search_terms)
    VALUES (new.id, new.title, new.subtitle, new.narrative, new.facts, new.concepts, new.search_terms);
END;
CREATE TRIGGER observations_fts_delete AFTER DELETE ON observations BEGIN
    DELETE FROM observations_fts WHERE rowid = old.id;
END;
CREATE TRIGGER observations_fts_update AFTER UPDATE OF title, subtitle, narrative, facts, concepts, search_terms
ON observations BEGIN
    DELETE FROM observations_fts WHERE rowid = old.id;
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts, search_terms)
    VALUES (new.id, new.title, new.subtitle, new.narrative, new.facts, new.concepts, new.search_terms);
END;

CREATE VIRTUAL TABLE summaries_fts USING fts5 (
    request, investigated, learned, completed, next_steps, notes,
    content='', contentless_delete=1, tokenize='{FTS_TOKENIZER}'
);
CREATE TRIGGER summaries_fts_insert AFTER INSERT ON session_summaries BEGIN
    INSERT INTO summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES (new.id, new.request, new.investigated, new.learned, new.completed, new.next_steps, new.notes);
END;
CREATE TRIGGER summaries_fts_delete AFTER DELETE ON session_summaries BEGIN
    DELETE FROM summaries_fts WHERE rowid = old.id;
END;

CREATE VIRTUAL TABLE prompts_fts USING fts5 (
    text, content='', contentless_delete=1, tokenize='{FTS_TOKENIZER}'
);
CREATE TRIGGER prompts_fts_insert AFTER INSERT ON user_prompts BEGIN
    INSERT INTO prompts_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER prompts_fts_delete AFTER DELETE ON user_prompts BEGIN
    DELETE FROM prompts_fts WHERE rowid = old.id;
END;
"""


MIGRATIONS = Migrations("store")


@MIGRATIONS
def m001_initial(conn: apsw.Connection) -> None:
    conn.execute(V1)


# What cmem last wrote to each export file (a content hash): a file that differs was edited by a person
# (adopt it), and after a crash it tells a committed write from one to roll back (see export/journal.py).
V2 = """
CREATE TABLE export_files (
    path     TEXT PRIMARY KEY,
    hash     TEXT NOT NULL,
    size     INTEGER,  -- with mtime_ns: the file's stat when cmem wrote it; equal means unchanged, unread
    mtime_ns INTEGER
) WITHOUT ROWID;
"""


@MIGRATIONS
def m002_export_files(conn: apsw.Connection) -> None:
    conn.execute(V2)


@MIGRATIONS
def m003_date_search_terms(conn: apsw.Connection) -> None:
    """Observations written before dates joined the search terms get theirs (the FTS trigger reindexes)."""
    # a time outside what cmem writes (another SQLite client's row) gets no date words rather than failing
    rows = list(
        conn.execute("SELECT id, created_at FROM observations WHERE created_at BETWEEN 0 AND ?", (MAX_MS,))
    )
    conn.executemany(
        "UPDATE observations SET search_terms = search_terms || ' ' || ? WHERE id = ?",
        [(ms_date_words(created_at), obs_id) for obs_id, created_at in rows],
    )


# Code anchors (cmem_cli.store.anchors): the repository, branch, commit and blob hashes of the files an
# observation cited when it was recorded or last verified; and the stat cache of files' blob hashes.
V4_ANCHORS = """
CREATE TABLE observation_anchors (
    observation_id INTEGER PRIMARY KEY REFERENCES observations (id) ON DELETE CASCADE,
    repo        TEXT,     -- the repository's name on every machine: its origin URL, normalised (NULL: none)
    root        TEXT,     -- its top-level folder on this machine (NULL: recorded on another machine)
    branch      TEXT,     -- NULL: a detached HEAD
    commit_id   TEXT,     -- HEAD when recorded (NULL: no commit yet)
    files       TEXT NOT NULL DEFAULT '{}',  -- JSON: repository-relative path -> git blob id
    anchored_at INTEGER NOT NULL,
    verified_at INTEGER
);
CREATE INDEX observation_anchors_repo ON observation_anchors (repo);
CREATE INDEX observation_anchors_branch ON observation_anchors (branch);

CREATE TABLE file_blobs (
    path     TEXT PRIMARY KEY,  -- absolute, on this machine
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    blob     TEXT NOT NULL,
    seen_ns  INTEGER NOT NULL
) WITHOUT ROWID;
"""


@MIGRATIONS
def m004_observation_anchors(conn: apsw.Connection) -> None:
    conn.execute(V4_ANCHORS)


# What git answered about commits of anchored memories: reachable from a HEAD commit or not. Search weighs
# memories of unmerged branches lower; asking git costs a process, so the answer is kept until HEAD moves
# (cmem_cli.services.truth.anchor_record, anchor_check, branches). ``git_dir``: the work tree's git folder on this machine (its own for a
# linked worktree, whose HEAD is its own).
V5_GIT_REACH = """
CREATE TABLE git_reach (
    git_dir   TEXT NOT NULL,
    head      TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    merged    INTEGER NOT NULL,  -- 1: reachable from head, or not in the repository when asked
    packs_ns  INTEGER,           -- merged, not a loose object when asked: objects/pack's time then
    PRIMARY KEY (git_dir, head, commit_id)
) WITHOUT ROWID;
"""


@MIGRATIONS
def m005_git_reach(conn: apsw.Connection) -> None:
    conn.execute(V5_GIT_REACH)


# The uids of memories forgotten on this machine, so that a stray copy of a forgotten memory's file (an
# editor's backup, a duplicate) is reported instead of adopted back as if it were new.
V6_FORGOTTEN = """
CREATE TABLE forgotten (
    uid          TEXT PRIMARY KEY,
    forgotten_at INTEGER NOT NULL
) WITHOUT ROWID;
"""


@MIGRATIONS
def m006_forgotten(conn: apsw.Connection) -> None:
    conn.execute(V6_FORGOTTEN)


# Small facts about this store that are no record (``sync.last_adopted``: the last git commit whose
# changes sync adopted, written in the same transaction as the adoption, so a sync killed after `git merge`
# adopts the arrivals next time), and links whose target this store does not hold yet (a file that
# arrived naming a uid that has not): kept, and written back into the file as they came, instead of
# dropped, so the loss is never pushed to every other machine; they become links when the target arrives.
V7_SYNC_STATE = f"""
CREATE TABLE state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE pending_links (
    from_id    INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    to_uid     TEXT NOT NULL,
    type       TEXT NOT NULL CHECK (type IN {_in(LINK_TYPES)}),
    title      TEXT,
    href       TEXT,
    UNIQUE (from_id, to_uid, type)
);
CREATE INDEX pending_links_to ON pending_links (to_uid);
"""


@MIGRATIONS
def m007_sync_state(conn: apsw.Connection) -> None:
    conn.execute(V7_SYNC_STATE)


# When a summary's text last changed (epoch ms; its creation until then). Summaries were write-once; since
# hand edits of their files are adopted and a team database carries them, "the later edit wins" needs it.
V8_SUMMARY_UPDATED = """
ALTER TABLE session_summaries ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
UPDATE session_summaries SET updated_at = created_at;
"""


@MIGRATIONS
def m008_summary_updated_at(conn: apsw.Connection) -> None:
    conn.execute(V8_SUMMARY_UPDATED)


# A file name ends with its uid's last 8 characters (UID_TAIL): `cmem get 7zk3qw9m` looks them up, and so
# does every 8-character ref in case it is one. Without an index that read every uid (80 ms at a million).
V9_UID_TAILS = """
CREATE INDEX observations_uid_tail ON observations (substr(uid, -8));
CREATE INDEX session_summaries_uid_tail ON session_summaries (substr(uid, -8));
"""


@MIGRATIONS
def m009_uid_tails(conn: apsw.Connection) -> None:
    conn.execute(V9_UID_TAILS)


# The numbers of deleted observations and summaries, so that none is given out again: SQLite gives a new
# row the largest id plus one, so forgetting the newest memory handed its number to the next, and a
# script's `cmem get 12` then read another memory. Triggers retire a number whatever deletes the row; the
# store numbers new rows past the largest retired one and never restores a file's id onto a retired one.
V10_RETIRED_IDS = """
CREATE TABLE retired_ids (
    kind TEXT NOT NULL CHECK (kind IN ('observation', 'summary')),
    id   INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE TRIGGER observations_retire_id AFTER DELETE ON observations BEGIN
    INSERT OR IGNORE INTO retired_ids (kind, id) VALUES ('observation', old.id);
END;
CREATE TRIGGER session_summaries_retire_id AFTER DELETE ON session_summaries BEGIN
    INSERT OR IGNORE INTO retired_ids (kind, id) VALUES ('summary', old.id);
END;
"""


@MIGRATIONS
def m010_retired_ids(conn: apsw.Connection) -> None:
    conn.execute(V10_RETIRED_IDS)


@MIGRATIONS
def m011_project_keys(conn: apsw.Connection) -> None:
    """Projects keyed by repository (:mod:`cmem_cli.store.projects`): the table, and the existing projects
    mapped to their repositories where their anchored memories tell."""
    from cmem_cli.store.projects import migrate

    migrate(conn)


# What a memory is about inside each cited file (cmem_cli.core.regions): hashes of the region's normalised
# lines, its enclosing definitions and where they were, per repository-relative path, so that an edit
# elsewhere in the file leaves the memory true. And git's answers a check of anchors needs beyond
# reachability (is a commit in HEAD's history, or missing from the clone: "behind"; which files were renamed
# since a commit), kept while HEAD stays where it was.
V12_ANCHOR_REGIONS = """
ALTER TABLE observation_anchors ADD COLUMN regions TEXT NOT NULL DEFAULT '{}';

CREATE TABLE git_answers (
    git_dir  TEXT NOT NULL,
    head     TEXT NOT NULL,
    question TEXT NOT NULL,  -- 'history:<commit>' or 'renames:<commit>:<index stat>'
    answer   TEXT NOT NULL,
    packs_ns INTEGER,        -- an answer that a fetch may change (a missing commit): objects/pack's time
    PRIMARY KEY (git_dir, head, question)
) WITHOUT ROWID;
"""


@MIGRATIONS
def m012_anchor_regions(conn: apsw.Connection) -> None:
    conn.execute(V12_ANCHOR_REGIONS)


# Who wrote each memory, summary and prompt: the machine (its name on a team database, CMEM_MACHINE or its
# host name) and, where known, the person (CMEM_AUTHOR or git's user.email); NULL for what was written
# before cmem recorded it. An index on the machine answers "does this store hold more than one machine's
# memories?" (min and max) without a scan, and serves ``--machine``.
V13_AUTHORSHIP = """
ALTER TABLE observations ADD COLUMN machine TEXT;
ALTER TABLE observations ADD COLUMN author TEXT;
ALTER TABLE session_summaries ADD COLUMN machine TEXT;
ALTER TABLE session_summaries ADD COLUMN author TEXT;
ALTER TABLE user_prompts ADD COLUMN machine TEXT;
ALTER TABLE user_prompts ADD COLUMN author TEXT;
CREATE INDEX observations_machine ON observations (machine);
"""


@MIGRATIONS
def m013_authorship(conn: apsw.Connection) -> None:
    conn.execute(V13_AUTHORSHIP)


# A memory someone said no longer holds (`cmem invalidate`): the reason, NULL while it is valid. It is kept,
# not deleted: search, context and the briefing leave it out, `get` shows it marked, `cmem restore` clears it.
V14_INVALIDATED = "ALTER TABLE observations ADD COLUMN invalidated TEXT;"


@MIGRATIONS
def m014_invalidated(conn: apsw.Connection) -> None:
    conn.execute(V14_INVALIDATED)


# Who changed a memory last, apart from who wrote it: the machine and the person of the latest edit or link
# (a teammate marking a memory superseded), NULL while nobody but its writer changed it.
V15_LAST_EDITOR = """
ALTER TABLE observations ADD COLUMN edited_on TEXT;
ALTER TABLE observations ADD COLUMN edited_by TEXT;
"""


@MIGRATIONS
def m015_last_editor(conn: apsw.Connection) -> None:
    conn.execute(V15_LAST_EDITOR)


# Replacements inferred when a memory was recorded (cmem_cli.services.truth.candidates): the new memory states a
# change of what an older one of its project or session said (``marked``), or was reported as a candidate
# for it with the change stated and the same subject (not marked: ranked below it). A hint, not a link: it is not written into
# the files (a machine that adopts them infers its own), and a confirmed ``supersedes`` link outranks it.
V16_INFERRED_SUPERSESSIONS = """
CREATE TABLE inferred_supersessions (
    from_id    INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    to_id      INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    score      REAL NOT NULL,
    marked     INTEGER NOT NULL DEFAULT 1,  -- 1: shown as maybe replaced; 0: only ranked below it
    created_at INTEGER NOT NULL,
    PRIMARY KEY (to_id, from_id)
) WITHOUT ROWID;
CREATE INDEX inferred_supersessions_from ON inferred_supersessions (from_id);
"""


@MIGRATIONS
def m016_inferred_supersessions(conn: apsw.Connection) -> None:
    conn.execute(V16_INFERRED_SUPERSESSIONS)
