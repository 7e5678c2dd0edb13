"""What recall at the moment of need reads (``store.recall``): which rows the hooks recorded rather than a
person or the agent wrote, and the notes tied to a file (citing it, or written in a session that changed it).

Pure data access; :mod:`cmem_cli.services.read.recall` decides what clears the bar. A hook runs these on every
prompt and file read, so each is one indexed lookup bounded by a limit, and a prompt's keyword evidence
takes three statements (:meth:`RecallRows.keyword_evidence`): its terms counted once for the three
full-text tables, the summaries and prompts read together, only the columns recall weighs or shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cmem_cli.core.batches import batches
from cmem_cli.store.projects import FOLDED_SQL
from cmem_cli.store.rows import MAX_ROWID, Repository, decoded
from cmem_cli.store.schema import FTS_TOKENIZER

if TYPE_CHECKING:
    from cmem_cli.core.bm25 import QueryTerms

# An observation the hooks made from a tool call carries the tool's name; a note written with `cmem add`,
# the API or MCP names none (its author may pass --tool, rarely).
_CAPTURED = "tools_used <> '[]'"
_AUTHORED = "tools_used = '[]'"
_NOTE_COLUMNS = "o.id, o.uid, o.type, o.title, o.created_at, o.tokens, o.session, o.project"
# What prompt recall weighs and shows of a note or a keyword hit: the fields its clauses and code names are
# read in (facts and concepts decoded), the marks' ``invalidated``, and ``tools_used`` (decoded), which
# tells the hooks' records from the notes. A rule that reads more adds it here.
HIT_COLUMNS = f"{_NOTE_COLUMNS}, o.subtitle, o.narrative, o.facts, o.concepts, o.invalidated, o.tools_used"
# Keyword search's BM25 column weights (cmem_cli.store.keyword.OBS_WEIGHTS: title, subtitle, narrative,
# facts, concepts, search_terms), so that a hit's strength is the one a search gives it.
OBS_WEIGHTS = (10.0, 4.0, 1.0, 2.0, 3.0, 1.0)
OBS_BM25 = f"bm25(observations_fts, {', '.join(map(str, OBS_WEIGHTS))})"
OBS_FTS = "observations_fts"
# The side tables a prompt's session is found by: (kind, full-text table, table, the request's column).
SIDE_TABLES = (
    ("summary", "summaries_fts", "session_summaries", "request"),
    ("prompt", "prompts_fts", "user_prompts", "text"),
)
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

    def keyword_evidence(
        self, prompt: str, projects: Sequence[str], *, hits: int, sides: int, pending: bool = False
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The prompt's keyword evidence in ``projects`` (a project and its older names): the observations
        matching its telling words (:meth:`_telling`), best first, at most ``hits`` (``HIT_COLUMNS``,
        ``kind`` and ``strength``); and the summaries, then the prompts, matching its words, at most
        ``sides`` of each (``kind``, ``session``, ``strength`` and the summary's ``request`` or the
        prompt's ``text``). Hits, order and strengths are those ``store.search.observations``,
        ``.summaries`` and ``.prompts`` give with the project's filter (``pending`` as there); the
        summaries and prompts are read in one statement, then the terms counted once for all three."""
        from cmem_cli.core import bm25
        from cmem_cli.core.fts import fts_query, query_tokens

        tokens = query_tokens(prompt)
        if not tokens:
            return [], []
        in_project = "= ?" if len(projects) == 1 else f"IN ({', '.join('?' * len(projects))})"
        statement = " UNION ALL ".join(
            f"SELECT * FROM (SELECT {n} AS side, t.session, t.{said} AS said, bm25({fts}) AS rank "
            f"FROM {fts} CROSS JOIN {table} t ON t.id = {fts}.rowid WHERE {fts} MATCH ? "
            f"AND t.project {in_project} ORDER BY rank LIMIT ?)"
            for n, (_, fts, table, said) in enumerate(SIDE_TABLES)
        )
        rows = self.db.rows(
            statement, [v for _ in SIDE_TABLES for v in (fts_query(prompt), *projects, sides)]
        )
        matched = [side[1] for n, side in enumerate(SIDE_TABLES) if any(row[0] == n for row in rows)]
        terms, phrased = self._terms(tokens, (OBS_FTS, *matched))  # a table without a hit needs none
        words = self._telling(tokens, terms[OBS_FTS])
        found = self._observation_hits(query_tokens(" ".join(words)), terms[OBS_FTS], phrased, projects, hits)
        scales: list[float] = []
        for kind, fts, _, _ in SIDE_TABLES:
            held = terms.get(fts)
            if held is not None and kind == "prompt" and pending and bm25.all_held_at_floor(held):
                held = bm25.with_row_of_its_own(held)  # as its table will once the prompt is recorded
            scales.append(held.idf_sum() if held is not None else 0.0)
        side = []
        for n, session, said, rank in rows:
            strength = -rank
            kind, _, _, column = SIDE_TABLES[n]
            side.append(
                {"kind": kind, "session": session, column: said,
                 "strength": strength / scales[n] if scales[n] else 0.0}
            )  # fmt: skip
        return found, side

    def _terms(self, tokens: list[str], tables: Sequence[str]) -> tuple[dict[str, QueryTerms], set[str]]:
        """``tokens`` as each full-text table of ``tables`` holds them, what
        :func:`cmem_cli.core.bm25.query_terms` reads for each, in one statement (the tables share the
        tokenizer, so a token is the same term in each; only the counts differ); and the tokens FTS5 makes a
        phrase of several terms of."""
        import apsw

        from cmem_cli.core.bm25 import QueryTerms, rows_of_averages

        name, *args = FTS_TOKENIZER.split()
        tokenize: Any = self.db.conn.fts5_tokenizer(name, args)  # as cmem_cli.core.bm25.query_terms uses it
        mapped: dict[str, str] = {}
        phrased: set[str] = set()
        for token in tokens:
            pieces = tokenize(token.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
            if pieces:
                mapped[token] = pieces[0][2]
                if len(pieces) > 1:
                    phrased.add(token)
        wanted = sorted(set(mapped.values()))
        self.db.execute(
            "".join(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{t}_vocab USING fts5vocab(main, {t}, row);"
                for t in tables
            )
        )
        parts = [f"SELECT {n}, NULL, block FROM {t}_data WHERE id = 1" for n, t in enumerate(tables)]
        if wanted:
            marks = ",".join("?" * len(wanted))
            parts += [
                f"SELECT {n}, term, doc FROM temp.{t}_vocab WHERE term IN ({marks})"
                for n, t in enumerate(tables)
            ]
        counts: list[dict[str, int]] = [{} for _ in tables]
        sizes = [0 for _ in tables]
        for n, term, value in self.db.rows(" UNION ALL ".join(parts), [w for _ in tables for w in wanted]):
            if term is None:
                sizes[n] = rows_of_averages(value)
            elif value:
                counts[n][term] = int(value)
        phrases = bool(phrased)
        found = {t: QueryTerms(mapped, phrases, counts[n], sizes[n]) for n, t in enumerate(tables)}
        return found, phrased

    @staticmethod
    def _telling(tokens: list[str], terms: QueryTerms) -> list[str]:
        """``tokens`` less those more than half the observations hold (``terms``: their counts): BM25 gives
        such a word no weight (its IDF is FTS5's floor), yet matching it ranks every row that holds it (all
        of them, for a word every memory of a store says). The scores of what is left are the same. A store
        of fewer than ``SMALL_STORE`` observations keeps every word: there, most words are in half the rows."""
        if terms.rows < SMALL_STORE:
            return tokens
        half = terms.rows / 2
        return [t for t in tokens if t not in terms.terms or terms.counts.get(terms.terms[t], 0) <= half]

    def _observation_hits(
        self, words: list[str], held: QueryTerms, phrased: set[str], projects: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        """The page ``store.search.observations(" ".join(words), Filters(project=..., folded=...))`` gives
        (the same statement, the same narrow head first), as ``HIT_COLUMNS`` rows with ``strength``;
        ``held``: the counts of a set of tokens that holds ``words``, ``phrased`` those of them FTS5 makes
        a phrase of."""
        from cmem_cli.core import bm25

        if not words:
            return []
        mapped = {t: held.terms[t] for t in words if t in held.terms}
        terms = bm25.QueryTerms(
            mapped,
            any(t in phrased for t in mapped),
            {t: n for t, n in held.counts.items() if t in mapped.values()},
            held.rows,
        )
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in words)
        in_project = "= ?" if len(projects) == 1 else f"IN ({', '.join('?' * len(projects))})"

        def page(narrow: bm25.Head | None) -> bm25.Ranked:
            also, more = (f" AND {narrow.where}", narrow.params) if narrow else ("", [])
            sql = (
                f"SELECT o.id, {OBS_BM25} AS rank FROM {OBS_FTS} CROSS JOIN observations o "
                f"ON o.id = {OBS_FTS}.rowid WHERE {OBS_FTS} MATCH ?{also} AND o.project {in_project} "
                f"AND {OBS_FTS}.rowid BETWEEN 0 AND {MAX_ROWID} ORDER BY rank LIMIT ? OFFSET 0"
            )
            return self.db.rows(sql, [match, *more, *projects, limit])

        ranked = bm25.ranked_head(page, limit, bm25.head(OBS_FTS, terms))
        if not ranked:
            return []
        rows: dict[int, dict[str, Any]] = {}
        for chunk, marks in batches([obs_id for obs_id, _ in ranked]):
            for row in self.db.query(
                f"SELECT {HIT_COLUMNS} FROM observations o WHERE o.id IN ({marks})", chunk
            ):
                rows[row["id"]] = decoded(row)
        scale = terms.idf_sum() * max(OBS_WEIGHTS)
        found = []
        for obs_id, rank in ranked:
            hit = rows.get(obs_id)
            if hit is not None:
                hit["kind"] = "observation"
                strength = -rank
                hit["strength"] = strength / scale if scale else 0.0
                found.append(hit)
        return found

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
            f"SELECT {HIT_COLUMNS} FROM observations o WHERE o.session IN ({marks}) AND o.{_AUTHORED} "
            f"AND {_NOT_REPLACED} "
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
