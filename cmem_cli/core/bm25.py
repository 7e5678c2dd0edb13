"""The IDF that FTS5's bm25() gives a query's terms, from a full-text table's own counts.

A BM25 score grows with the IDF of the terms it matched, and the IDF depends on the table: a term in every
row of a small table gets FTS5's floor (1e-6), so the one prompt in a fresh home scores 0.000002 for its
own words while an observation in a table of thousands scores 5. Divided by the query's IDF sum in its own
table, each hit's BM25 becomes its *strength*: how much of the query it matched (about 1 for every term
once), on one scale for tables of any size. The index's keyword calibration reads the same sum
(``cmem_index.retrieve.query_idf``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

IDF_FLOOR = 1e-6  # FTS5's: a term in more than half the rows would have a negative IDF


def bm25_idf(rows: int, rows_with_term: int) -> float:
    """FTS5's IDF of a term held by ``rows_with_term`` of ``rows`` rows."""
    return max(IDF_FLOOR, math.log((rows - rows_with_term + 0.5) / (rows_with_term + 0.5)))


def idf_sum(rows: int, counts: Mapping[str, int], stems: Iterable[str]) -> float:
    """The summed IDF of ``stems`` (absent ones count 0 rows); exact whatever the order (``math.fsum``:
    a plain sum in set order differed in the last bit between processes and swapped tied hits)."""
    rows = max([rows, *counts.values()])  # counts read apart from the total: never let them exceed it
    return math.fsum(bm25_idf(rows, counts.get(stem, 0)) for stem in stems)


def stems(conn: Any, tokenizer: str, tokens: Sequence[str]) -> dict[str, str]:
    """Each token's term as an FTS5 table with ``tokenizer`` (its ``tokenize=`` text) stores it; tokens the
    tokenizer drops are left out. ``conn`` is an apsw connection."""
    import apsw

    name, *args = tokenizer.split()
    tokenize = conn.fts5_tokenizer(name, args)
    found: dict[str, str] = {}
    for token in tokens:
        for item in tokenize(token.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None):
            found.setdefault(token, item[2])
    return found


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
