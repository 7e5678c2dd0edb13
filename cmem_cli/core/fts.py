"""Keyword search helpers: make code identifiers findable and turn any user text into a safe FTS5 query.

FTS5's unicode61 tokenizer already splits ``snake_case_name`` and ``src/auth/jwt.ts`` at the punctuation,
but not ``getObservationsByIds``. ``search_terms`` adds the camelCase parts at write time, and queries are
rebuilt from word tokens only, each quoted, so no input (quotes, parentheses, ``*``, ``-``, ``:``, ``NEAR``,
an empty string) can make the FTS query fail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"\w+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

# Words that carry no meaning in a search box; dropped only when something else remains.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "me",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "on",
        "once",
        "only",
        "or",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
    ]
)


def camel_parts(word: str) -> list[str]:
    """``getObservationsByIds`` -> ``['get', 'Observations', 'By', 'Ids']``; [] when nothing to split."""
    parts = _CAMEL.findall(word)
    return parts if len(parts) > 1 else []


def search_terms(texts: Iterable[str | None]) -> str:
    """Extra tokens for the FTS index: camelCase parts of every identifier in ``texts``."""
    extra: list[str] = []
    seen: set[str] = set()
    for text in texts:
        if not text:
            continue
        for word in _WORD.findall(text):
            if word.islower() or word.isupper() and word.isalpha():
                continue  # nothing to split (the common case: skip the regex)
            for part in camel_parts(word):
                lowered = part.lower()
                if lowered not in seen:
                    seen.add(lowered)
                    extra.append(lowered)
    return " ".join(extra)


def query_tokens(query: str) -> list[str]:
    """Lower-cased search tokens of ``query``: words, camelCase parts, stopwords dropped when possible."""
    tokens: list[str] = []
    for word in _WORD.findall(query):
        for piece in [word, *camel_parts(word)]:
            for token in _WORD.findall(piece.replace("_", " ")):
                lowered = token.lower()
                if lowered not in tokens:
                    tokens.append(lowered)
    meaningful = [t for t in tokens if t not in STOPWORDS]
    return meaningful or tokens


def fts_query(query: str, *, require_all: bool = False) -> str | None:
    """A safe FTS5 MATCH expression, or None when the query has no searchable word.

    Terms are OR-ed by default so natural-language questions still match (BM25 ranks documents that
    contain more of the terms first); ``require_all`` AND-s them instead.
    """
    tokens = query_tokens(query)
    if not tokens:
        return None
    joiner = " AND " if require_all else " OR "
    return joiner.join('"' + t.replace('"', '""') + '"' for t in tokens)


_PIECE = re.compile(r"[^\W_]+", re.UNICODE)  # what FTS5's unicode61 keeps as tokens: "_" and "." split
# One identifier: snake_case, a dotted or ::-path, a call, camelCase ("max_age", "os.path", "run()", "parseArgs")
_SYMBOL = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::)\w+)*(?:\(\))?")


def symbol(query: str) -> str | None:
    """The identifier a query names, when it is one and nothing else (``max_age``, ``os.path``, ``run()``,
    ``parseArgs``): a word with ``_``, ``.``, ``::``, ``()`` or an inner capital."""
    text = query.strip()
    if not _SYMBOL.fullmatch(text):
        return None
    coded = any(mark in text for mark in ("_", ".", "::", "()")) or any(c.isupper() for c in text[1:])
    return text if coded and any(c.isalpha() for c in text) else None


def exact_phrase(query: str) -> str | None:
    """An FTS5 phrase for a query that is said exactly, or None: an error message or a phrase whose small
    words carry its meaning ("no such table", which keyword search reduces to "table"), a symbol
    (:func:`symbol`), or words the user put in double quotes. A record holding it verbatim is the one asked
    for. Plain words ("parser comments") are left to ranking."""
    text = query.strip()
    pieces = _PIECE.findall(text)
    if not pieces:
        return None
    quoted = len(text) > 2 and text[0] == text[-1] == '"'
    said = symbol(text) is not None or (
        len(pieces) > 1 and (quoted or any(p.lower() in STOPWORDS for p in pieces))
    )
    return '"' + " ".join(pieces) + '"' if said else None
