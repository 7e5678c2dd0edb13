"""Words that split the memories searched, left out of what the embedder sees of a query.

A small embedding model weighs a person's name heavily: "What did Melanie see at the council meeting for
adoption?" lands nearest to whatever else Melanie did, not to the council meeting. In a conversation between
two people each name is in about half of the memories, so it tells little about which memory is meant
(BM25 gives it next to no weight there: its IDF is about zero), yet it decides the vector list. So a query
word found in a large share of the chunks searched (the scope the filters leave) is left out of the query's
embedding; keyword search still matches it, and the filters still say whose memories are searched.

A word in nearly every chunk is kept: it tells nothing either, but it shapes how every memory of the scope
reads (the diary's own author, named in each entry), so leaving it out only lowers every cosine alike, and
with them the evidence the cut-off reads. docs/retrieval.md has the measurements.
"""

from __future__ import annotations

import re

from cmem_cli.core.fts import STOPWORDS, query_tokens
from cmem_index import retrieve
from cmem_index.retrieve import DocFilters
from cmem_index.store import IndexStore

SPLIT_FROM = 0.2  # a query word in at least this share of the chunks searched...
SPLIT_UNTIL = 0.9  # ...and in fewer than this share is left out of the query's embedding
MIN_CHUNKS = 20  # in a smaller scope a share says little: nothing is left out
COUNT_UP_TO = 5000  # a word in more chunks of the whole index is not counted within a scope (about 1 µs
# a chunk): it stays in the embedding, as it did before this rule

_WORD = re.compile(r"\w+(?:['\u2019]s\b)?")


def splitting_words(store: IndexStore, query: str, filters: DocFilters) -> set[str]:
    """The query's words (lower-cased) held by SPLIT_FROM to SPLIT_UNTIL of the chunks the filters leave."""
    terms = store.retrieval.query_terms(query_tokens(query))
    stems = terms.terms
    if not stems:
        return set()
    total = retrieve.scope_chunks(store, filters)
    if total < MIN_CHUNKS:
        return set()
    everywhere = terms.counts
    # a word too rare in the whole index cannot reach the share in the scope: no scope count for it
    common = [token for token, stem in stems.items() if everywhere.get(stem, 0) >= SPLIT_FROM * total]
    out: set[str] = set()
    for token in common:
        held = everywhere[stems[token]]
        if filters.active:
            if held > COUNT_UP_TO:  # counting it within the scope would cost more than a search
                continue
            held = retrieve.scope_chunks(store, filters, token)
        if SPLIT_FROM * total <= held < SPLIT_UNTIL * total:
            out.add(token)
    return out


def without_words(query: str, words: set[str]) -> str:
    """``query`` without these words (and their possessive 's); unchanged when nothing else would remain.
    Line breaks stay: a multi-line query's last line is embedded on its own as well."""
    if not words:
        return query

    def keep(match: re.Match[str]) -> str:
        word = re.match(r"\w+", match.group(0))
        return "" if word and word.group(0).lower() in words else match.group(0)

    lines = [re.sub(r"[ \t]{2,}", " ", _WORD.sub(keep, line)).strip() for line in query.split("\n")]
    rest = "\n".join(lines)
    return rest if any(token not in STOPWORDS for token in query_tokens(rest)) else query
