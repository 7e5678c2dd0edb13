"""What recall at the moment of need reads (``store.recall``): which rows the hooks recorded rather than a
person or the agent wrote, and the notes tied to a file (citing it, or written in a session that changed it).

Pure data access; :mod:`cmem_cli.services.read.recall` decides what clears the bar. A hook runs these on every
prompt and file read, so each is one indexed lookup bounded by a limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cmem_cli.core.batches import batches
from cmem_cli.store.projects import FOLDED_SQL
from cmem_cli.store.rows import Repository, decoded
from cmem_cli.store.schema import FTS_TOKENIZER

# An observation the hooks made from a tool call carries the tool's name; a note written with `cmem add`,
# the API or MCP names none (its author may pass --tool, rarely).
_CAPTURED = "tools_used <> '[]'"
_AUTHORED = "tools_used = '[]'"
_NOTE_COLUMNS = "o.id, o.uid, o.type, o.title, o.created_at, o.tokens, o.session, o.project"
# Below this many observations a word held by most of them is still evidence: it is all a small store has
# (one note's words are in every row of a store of one), and a prompt word the store lacks keeps the match weak.
SMALL_STORE = 20
_NOT_REPLACED = (
    "NOT EXISTS (SELECT 1 FROM observation_links l WHERE l.to_id = o.id AND l.type = 'supersedes')"
)


class RecallRows(Repository):
    """The rows prompt and file recall read, and which search hits were recorded by the hooks."""

    def captured(self, obs_ids: Iterable[int]) -> set[int]:
        """Which of ``obs_ids`` the hooks recorded from a tool call (a session's automatic record), failures
        left out: an error holds the exact message, which no note restates."""
        found: set[int] = set()
        for batch, marks in batches(list(obs_ids)):
            sql = f"SELECT id FROM observations WHERE id IN ({marks}) AND {_CAPTURED} AND type <> 'error'"
            found.update(row[0] for row in self.db.rows(sql, tuple(batch)))
        return found

    def telling_words(self, text: str) -> str:
        """``text``'s search words less those more than half the observations hold: BM25 gives such a word
        no weight (its IDF is FTS5's floor), yet matching it ranks every row that holds it (all of them,
        for a word every memory of a store says). The scores of what is left are the same. A store of fewer
        than ``SMALL_STORE`` observations keeps every word: there, most words are in half the rows."""
        from cmem_cli.core import bm25
        from cmem_cli.core.fts import query_tokens

        tokens = query_tokens(text)
        terms = bm25.query_terms(self.db.conn, "observations_fts", FTS_TOKENIZER, tokens)
        if terms.rows < SMALL_STORE:
            return " ".join(tokens)
        half = terms.rows / 2
        kept = [t for t in tokens if t not in terms.terms or terms.counts.get(terms.terms[t], 0) <= half]
        return " ".join(kept)

    def rare(self, words: set[str], share: float) -> set[str]:
        """Those of ``words`` (stems, as :meth:`stemmer` gives them) that at most ``share`` of the
        observations hold."""
        from cmem_cli.core import bm25

        counts = bm25.term_counts(self.db.conn, "observations_fts", words)
        rows = max([bm25.table_rows(self.db.conn, "observations_fts"), *counts.values()])
        return {w for w in words if counts.get(w, 0) <= share * rows}

    def stemmer(self) -> Callable[[str], set[str]]:
        """A text's distinct search words as the full-text index stems them (``numbered`` and ``numbers``
        are one), stopwords and fragments of fewer than three letters (``today's`` gives ``s``) left out."""
        import apsw

        from cmem_cli.core.fts import query_tokens

        name, *args = FTS_TOKENIZER.split()
        tokenize = self.db.conn.fts5_tokenizer(name, args)

        def stems(text: str) -> set[str]:
            raw = " ".join(query_tokens(text)).encode("utf-8")
            pieces: Iterable[Any] = tokenize(raw, apsw.FTS5_TOKENIZE_QUERY, None)  # (start, end, term, ...)
            return {piece[2] for piece in pieces if len(piece[2]) >= 3}

        return stems

    def recall_keys(self, session: str) -> list[str]:
        """The capture-log keys recall left in ``session`` (``recall:``, ``recall-file:``, ``recall-changed:``,
        ``recall-told:``), oldest first; none before capture made its table."""
        from cmem_cli.core.errors import DatabaseCorrupt

        try:
            rows = self.db.rows(
                "SELECT key FROM agent_captures WHERE session = ? AND key >= ? AND key < ? ORDER BY created_at, key",
                (session, "recall", "recall\U0010ffff"),
            )
        except DatabaseCorrupt as exc:
            if "no such table: agent_captures" in exc.message:
                return []
            raise
        return [row[0] for row in rows]

    def replacements(self, obs_ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """Each of ``obs_ids`` -> (the newest memory a ``supersedes`` link says replaced it, the newest one
        inferred to have, marked when it was recorded): what :func:`cmem_cli.services.truth.supersession.annotate`
        reads (``newest_successors``, ``newest_inferred``), in one statement."""
        newest = "ORDER BY n.created_at DESC, n.id DESC LIMIT 1"
        found: dict[int, tuple[int | None, int | None]] = {}
        for batch, marks in batches(sorted({int(i) for i in obs_ids})):
            sql = (
                "SELECT o.id, (SELECT l.from_id FROM observation_links l JOIN observations n ON n.id = l.from_id "
                f"WHERE l.type = 'supersedes' AND l.to_id = o.id {newest}), (SELECT i.from_id FROM "
                "inferred_supersessions i JOIN observations n ON n.id = i.from_id WHERE i.to_id = o.id AND "
                f"i.marked = 1 {newest}) FROM observations o WHERE o.id IN ({marks})"
            )
            found.update((row[0], (row[1], row[2])) for row in self.db.rows(sql, tuple(batch)))
        return found

    def anchored(self, obs_ids: Iterable[int]) -> set[int]:
        """Which of ``obs_ids`` are anchored to files in git (have a row in ``observation_anchors``)."""
        found: set[int] = set()
        for batch, marks in batches(list(obs_ids)):
            sql = f"SELECT observation_id FROM observation_anchors WHERE observation_id IN ({marks})"
            found.update(row[0] for row in self.db.rows(sql, tuple(batch)))
        return found

    def notes_on_file(self, project: str, path: str, *, limit: int) -> list[dict[str, Any]]:
        """Notes (not hook records) of ``project`` that are current (no memory replaced them) and are tied
        to ``path`` (repository-relative): they cite it, their session changed it, or their session read
        it. Each row carries ``cites`` (1 when the note names the file itself) and ``changed`` (1 when its
        session changed the file); a row with neither only read it, and carries its ``narrative``, for the
        caller to check it is about the file. Newest first."""
        sessions = (
            "SELECT t.session FROM observation_files f JOIN observations t ON t.id = f.observation_id "
            "WHERE f.path = :path AND t.session IS NOT NULL"
        )
        # The rows tied to the file are found from the file (its citations, its sessions' rows), not by
        # reading every row of the project: a project of 10,000 memories is some 1,700 pages.
        tied = (
            "SELECT observation_id FROM observation_files WHERE path = :path UNION "
            f"SELECT s.id FROM observations s WHERE s.session IN ({sessions})"
        )
        rows = self.db.query(
            f"SELECT {_NOTE_COLUMNS}, o.narrative, EXISTS (SELECT 1 FROM observation_files f "
            "WHERE f.observation_id = o.id AND f.path = :path) AS cites, "
            f"o.session IN ({sessions} AND f.kind = 'modified') AS changed FROM observations o "
            f"WHERE o.id IN ({tied}) AND +o.project {FOLDED_SQL.replace('?', ':project')} AND o.{_AUTHORED} "
            f"AND {_NOT_REPLACED} ORDER BY o.created_at DESC, o.id DESC LIMIT :limit",
            {"project": project, "path": path, "limit": limit},
        )
        return [decoded(row) for row in rows]

    def notes_of_sessions(self, sessions: Iterable[str], *, limit: int) -> list[dict[str, Any]]:
        """The current notes (not hook records) written in ``sessions``, newest first."""
        wanted = list(dict.fromkeys(sessions))
        if not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        rows = self.db.query(
            f"SELECT o.* FROM observations o WHERE o.session IN ({marks}) AND o.{_AUTHORED} AND {_NOT_REPLACED} "
            "ORDER BY o.created_at DESC, o.id DESC LIMIT ?",
            (*wanted, limit),
        )
        return [decoded(row) for row in rows]

    def cited_paths(self, project: str, *, limit: int) -> list[str]:
        """The files the newest current notes of ``project`` cite, newest first, each once."""
        rows = self.db.rows(
            "SELECT f.path FROM observations o JOIN observation_files f ON f.observation_id = o.id "
            f"WHERE o.project {FOLDED_SQL} AND o.{_AUTHORED} AND {_NOT_REPLACED} "
            "ORDER BY o.created_at DESC, o.id DESC LIMIT ?",
            (project, project, limit * 4),
        )
        return list(dict.fromkeys(row[0] for row in rows))[:limit]
