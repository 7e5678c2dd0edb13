"""The IDF that FTS5's bm25() gives a query's terms, from a full-text table's own counts.

A BM25 score grows with the IDF of the terms it matched, and the IDF depends on the table: a term in every
row of a small table gets FTS5's floor (1e-6), so the one prompt in a fresh home scores 0.000002 for its
own words while an observation in a table of thousands scores 5. Divided by the query's IDF sum in its own
table, each hit's BM25 becomes its *strength*: how much of the query it matched (about 1 for every term
once), on one scale for tables of any size. The index's keyword calibration reads the same sum
(``cmem_index.retrieve.query_idf``).
"""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string, in every process that imports this module (every search); here they are plain objects.

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

IDF_FLOOR = 1e-6  # FTS5's: a term in more than half the rows would have a negative IDF
K1 = 1.2  # FTS5's bm25() constant: a phrase scores below its IDF times (K1 + 1), whatever its frequency
HEAD_FROM = 20_000  # summed rows of the query's terms below which ranking every match is already cheap
HEAD_TERMS = 6  # past this many terms the pairs expression (n(n-1)/2 clauses) costs more than it saves
# Past this share of the matching rows holding two terms or more, the head is nearly every match: matching
# the pairs costs more than ranking the few rows it leaves out (10,000 rows: share 0.51 even, 0.79 1.6x).
HEAD_SHARE = 0.5


def bm25_idf(rows: int, rows_with_term: int) -> float:
    """FTS5's IDF of a term held by ``rows_with_term`` of ``rows`` rows."""
    return max(IDF_FLOOR, math.log((rows - rows_with_term + 0.5) / (rows_with_term + 0.5)))


def idf_sum(rows: int, counts: Mapping[str, int], stems: Iterable[str]) -> float:
    """The summed IDF of ``stems`` (absent ones count 0 rows); exact whatever the order (``math.fsum``:
    a plain sum in set order differed in the last bit between processes and swapped tied hits)."""
    rows = max([rows, *counts.values()])  # counts read apart from the total: never let them exceed it
    return math.fsum(bm25_idf(rows, counts.get(stem, 0)) for stem in stems)


def table_rows(conn: Any, table: str) -> int:
    """The rows FTS5 table ``table`` holds, from its own averages record (what its bm25() divides by): no
    scan, where ``count(*)`` of a million rows takes 7 ms."""
    found = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchall()
    return rows_of_averages(found[0][0] if found else None)


def rows_of_averages(block: bytes | None) -> int:
    """The row count an FTS5 table's averages record (``block`` of its ``_data`` row 1) starts with."""
    return _varint(block) if block else 0


def _varint(blob: bytes) -> int:
    """SQLite's variable-length integer at the start of ``blob`` (7 bits a byte, the ninth byte all 8)."""
    value = 0
    for place, byte in enumerate(blob[:9]):
        if place == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value


class QueryTerms(NamedTuple):
    """A query's terms in one FTS5 table, read once for every use in a search (counting the rows that hold
    a common term walks its postings: 2-3 ms a term at a million rows)."""

    terms: dict[str, str]  # each token's term (the first, for a token FTS5 makes a phrase of several)
    phrases: bool  # some token is a phrase of several terms
    counts: dict[str, int]  # rows holding each term (terms no row holds are left out)
    rows: int  # rows of the table
    tokens: tuple[str, ...] = ()  # the tokens asked for, in order: the phrases of the query's MATCH

    def idf_sum(self) -> float:
        return idf_sum(self.rows, self.counts, set(self.terms.values()))


def all_held_at_floor(query: QueryTerms) -> bool:
    """Whether the table holds some of ``query``'s terms and gives each of them the IDF floor."""
    held = [term for term in set(query.terms.values()) if term in query.counts]
    rows = max([query.rows, *query.counts.values()])
    return bool(held) and all(bm25_idf(rows, query.counts[term]) <= IDF_FLOOR for term in held)


def with_row_of_its_own(query: QueryTerms) -> QueryTerms:
    """``query``'s terms as the table holds them once the query itself is one of its rows (a prompt read
    against the prompts table before it is recorded): one more row, holding each of its terms."""
    counts = dict(query.counts)
    for term in set(query.terms.values()):
        counts[term] = counts.get(term, 0) + 1
    return query._replace(counts=counts, rows=query.rows + 1)


def query_terms(conn: Any, table: str, tokenizer: str, tokens: Sequence[str]) -> QueryTerms:
    """``tokens`` as FTS5 table ``table`` (with ``tokenizer``: its ``tokenize=`` text) holds them, with the
    rows that hold each term. ``conn`` is an apsw connection."""
    import apsw

    name, *args = tokenizer.split()
    tokenize = conn.fts5_tokenizer(name, args)
    terms: dict[str, str] = {}
    phrases = False
    for token in tokens:
        pieces = tokenize(token.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
        if pieces:
            terms[token] = pieces[0][2]
            phrases = phrases or len(pieces) > 1
    found = term_counts(conn, table, set(terms.values()))
    counts = {t: n for t, n in found.items() if n}
    return QueryTerms(terms, phrases, counts, table_rows(conn, table), tuple(tokens))


Ranked = list[tuple[int, float]]


class Head(NamedTuple):
    """A narrower match to rank first. ``where`` (with ``params``) keeps the rows of the full-text table that
    hold two or more of the query's terms, or ``match`` replaces the query's MATCH with one that keeps the
    rows holding every term; a row either leaves out scores at most ``bound``."""

    where: str
    params: list[Any]
    bound: float
    match: str | None = None  # the same phrases in the same order AND-ed: each row's bm25() is unchanged


def head(table: str, query: QueryTerms) -> Head | None:
    """The rows of ``table`` that could rank first for the query's tokens OR-ed, or None when narrowing
    cannot help.

    FTS5 scores every row that holds any term and has no top-k shortcut: three common words match a fifth
    of a million rows and ranking them costs 0.1-0.2 s. A row that holds a single term scores below that
    term's IDF times (K1 + 1), however often it holds it (times how many query tokens share the term); the
    rows that hold two terms or more are a tenth as many. Ranked among themselves, when the last of the page
    scores above every single-term bound, no row left out could have entered it (:func:`ranked_head`), and
    the page is the one ranking every match gives, scores included. None: one term, a token FTS5 makes a
    phrase of, too many terms, or matches so few that ranking them all costs nothing."""
    if query.phrases or not 2 <= len(query.terms) <= HEAD_TERMS:
        return None
    shared = Counter(query.terms.values())  # each token is a phrase bm25() counts, even of one term
    spelled = {term: token for token, term in reversed(query.terms.items())}  # a stem is not its own stem
    present = sorted(term for term in shared if term in query.counts)
    if len(present) < 2 or sum(query.counts.values()) < HEAD_FROM:
        return None
    rows = max([query.rows, *query.counts.values()])
    if several_share([query.counts[t] / rows for t in present]) >= HEAD_SHARE:
        return every_term(query, shared, present, rows)
    bound = max(shared[t] * bm25_idf(rows, query.counts[t]) * (K1 + 1) for t in present)
    pairs = " OR ".join(
        f"({_quoted(spelled[a])} AND {_quoted(spelled[b])})" for a, b in itertools.combinations(present, 2)
    )
    where = f"+{table}.rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
    return Head(where, [pairs], bound * 1.001)  # a hair above: FTS5 sums in another order


def every_term(query: QueryTerms, shared: Counter[str], present: list[str], rows: int) -> Head | None:
    """The rows holding every term of the query, as a head of their own, or None where they are most of
    the matches too (or a token is missing from the table: the AND would match nothing).

    Where most matches hold two terms (three words each in 70% of the rows), the pairs head is nearly
    every match, but a third of them hold all three. The head's MATCH AND-s the query's own phrases in
    their order, so FTS5 scores each row as the OR-ed query does; a row it leaves out lacks some term
    and scores at most the others' bounds summed."""
    if len(present) < 3 or len(query.tokens) != len(query.terms) or len(present) != len(shared):
        return None
    shares = [query.counts[t] / rows for t in present]
    if math.prod(shares) / (1 - math.prod(1 - p for p in shares)) >= HEAD_SHARE:
        return None
    bounds = {t: shared[t] * bm25_idf(rows, query.counts[t]) * (K1 + 1) for t in present}
    bound = math.fsum(bounds.values()) - min(bounds.values())
    match = " AND ".join(_quoted(token) for token in query.tokens)
    return Head("", [], bound * 1.001, match)  # a hair above: FTS5 sums in another order


def narrowed(match: str, narrow: Head | None) -> tuple[str, str, list[Any]]:
    """The MATCH expression, the clause to add (`` AND ...``) and its parameters that rank ``narrow``'s rows
    of the query ``match`` (every match when None)."""
    if narrow is None:
        return match, "", []
    if narrow.match is not None:
        return narrow.match, "", []
    return match, f" AND {narrow.where}", narrow.params


def proven(ranked: Ranked, narrow: Head) -> Ranked:
    """The best rows of ``narrow``'s ranking (best first) that no row outside it can outscore: the first
    rows of the ranking of every match, in its order."""
    return list(itertools.takewhile(lambda row: -row[1] > narrow.bound, ranked))


def several_share(shares: Sequence[float]) -> float:
    """Of the rows holding any of the terms, the share that holds two or more, were the terms independent
    (each held by ``shares[i]`` of the rows): close to the real share on the corpora measured."""
    none = math.prod(1 - p for p in shares)
    one = sum(p * math.prod(1 - q for j, q in enumerate(shares) if j != i) for i, p in enumerate(shares))
    return (1 - none - one) / (1 - none) if none < 1 else 0.0


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def ranked_head(
    rank: Callable[[Head | None], Ranked],
    want: int,
    narrow: Head | None,
    enough: Callable[[Ranked], bool] | None = None,
) -> Ranked:
    """``rank`` (the caller's query: (rowid, FTS5 rank) pairs best first, at most ``want``, within ``narrow``
    when given) run on the narrow head first, and again over every match when the head cannot prove its
    page: fewer than ``want`` rows, or a last row that a row left out could outscore. ``enough``: a caller
    that may need fewer rows than it asks for (a document's several chunks) takes the head's first rows
    it does prove (:func:`proven`) when they are enough for it."""
    if narrow is not None:
        ranked = rank(narrow)
        if len(ranked) >= want and -ranked[want - 1][1] > narrow.bound:
            return ranked
        if enough is not None and enough(first := proven(ranked, narrow)):
            return first
    return rank(None)


def term_counts(conn: Any, table: str, terms: set[str]) -> dict[str, int]:
    """How many rows of FTS5 table ``table`` hold each term (FTS5's own statistics, no scan)."""
    if not terms:
        return {}
    vocab = f"temp.{table}_vocab"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab(main, {table}, row)")
    marks = ",".join("?" * len(terms))
    return {
        term: int(count)
        for term, count in conn.execute(
            f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", sorted(terms)
        )
    }
