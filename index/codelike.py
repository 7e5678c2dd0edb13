"""Telling source code from prose, for how far hybrid search believes keyword matches in it.

A question in words ("python check if file exists") shares its words with code by accident: code repeats a
small vocabulary (``file``, ``path``, ``list``, ``value``) as identifiers in every function, so BM25 over code
ranks on common words, and the embedding model is the better judge. On two code sets of different kinds
(CoSQA's web questions, docstring sentences against Python's own library) hybrid search gained when the
keyword list counted less for such questions. An identifier in the question (``max_age``, ``os.path``,
``parseArgs``, ``run()``) is the opposite case: matched exactly, it is the strongest evidence there is.
docs/retrieval.md has the measurements.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cmem_cli.core.fts import camel_parts

# A line of code: indented as a block, opening a block or ending a statement, or assigning; and short (one
# long line is a paragraph, however many colons it holds). Markdown headings and comments do not count.
_CODE_LINE = re.compile(r"^(?:\s{4,}|\t)\S|[:{;]\s*$|\s=\s")
CODE_LINE_CHARS = 160
CODE_LINE_SHARE = 0.5  # of a text's lines: code. Four prose sets: at most 0.2% of chunks; two code sets: 98%+
_IDENTIFIER = re.compile(r"\w_\w|[a-z][A-Z]|[A-Za-z_]\.[A-Za-z_]|\w\(")


def is_code(text: str) -> bool:
    """Whether a chunk of text reads as source code: at least half its lines look like code.

    A memory that mentions ``cmem_cli/core/config.py`` or ``max_age`` in a sentence is prose; a function,
    or a note that is mostly a pasted snippet, is code.
    """
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        return False
    code = sum(1 for line in lines if len(line) <= CODE_LINE_CHARS and _CODE_LINE.search(line))
    return code >= CODE_LINE_SHARE * len(lines)


def code_share(texts: Iterable[str]) -> float:
    """The share of ``texts`` that are code (0 for none)."""
    flags = [is_code(text) for text in texts]
    return sum(flags) / len(flags) if flags else 0.0


def names_identifier(query: str) -> bool:
    """Whether the query names an identifier (snake_case, camelCase, a dotted name or a call)."""
    return _IDENTIFIER.search(query) is not None


_ONE_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifier_words(title: str) -> str | None:
    """A title that is one identifier, as words: ``is_iterable_but_not_string`` -> ``is iterable but not
    string``, ``parseArgs`` -> ``parse args``; None for anything else (a sentence, a plain word)."""
    name = title.strip()
    if not _ONE_IDENTIFIER.fullmatch(name):
        return None
    words = [
        part.lower() for piece in name.replace("_", " ").split() for part in camel_parts(piece) or [piece]
    ]
    spelled = " ".join(words)
    return spelled if spelled != name.lower() else None


__all__ = [
    "CODE_LINE_CHARS",
    "CODE_LINE_SHARE",
    "code_share",
    "identifier_words",
    "is_code",
    "names_identifier",
]
