"""Reading one markdown file for the index: front matter apart from the body, a title, and a search context.

Front matter is metadata, not prose: it is never part of a chunk's text (QMD embeds it, and a bare YAML block
then outranks real content). Its title, and for cmem observations the type, project and concepts, become
the chunk's *context*, indexed as a separate, weighted keyword column. The embedder sees the title and the
concepts as the document title, not the type and project: those are the same for most of a project's
memories, and in a vector they add a direction every memory shares instead of meaning.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from cmem_cli.core.timeutil import date_words

if TYPE_CHECKING:
    from collections.abc import Mapping

CMEM_KINDS = ("observation", "summary")
_FRONT_MATTER = re.compile(
    r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)(?:\r?\n)?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M
)
_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)[ \t#]*$", re.M)
_SUMMARY_TITLE_FIELDS = ("request", "completed", "learned")


@dataclass
class ParsedDocument:
    """A markdown file split into metadata and body; ``body_line`` is the file line where the body starts."""

    body: str
    body_line: int
    title: str
    context: str  # what the embedding model sees as the title: title (concepts)
    keyword_context: str  # the weighted keyword column: title (type, project; concepts)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def capture(self) -> bool:
        """A hook's record of one tool call (``tools_used`` set on an observation): its title says what
        happened ("Edited src/app.py", "Ran pytest (failed)"); its body is the diff or output."""
        tools = self.meta.get("tools_used")
        return self.kind == "observation" and isinstance(tools, list) and bool(tools)

    @property
    def kind(self) -> str | None:
        """``observation`` / ``summary`` for cmem's own files, else None (a plain collection document)."""
        kind = self.meta.get("cmem")
        return kind if kind in CMEM_KINDS else None


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def short_docid(collection: str, path: str) -> str:
    """A stable 6-hex-digit handle for a document, like QMD's ``#abc123``."""
    return hashlib.blake2b(f"{collection}\0{path}".encode(), digest_size=3).hexdigest()


def parse_markdown(text: str, relpath: str) -> ParsedDocument:
    """Split front matter from the body and derive title and context; broken YAML is treated as body."""
    meta: dict[str, Any] = {}
    body, body_line = text, 1
    match = _FRONT_MATTER.match(text)
    if match:
        # A delimited block is metadata even when its YAML is broken (an unquoted "title: a: b" is common
        # in hand-written notes): read it leniently rather than index it as text.
        loaded = _load_yaml(match.group(1))
        meta = loaded if loaded is not None else _lenient(match.group(1))
        body = text[match.end() :]
        body_line = 1 + text.count("\n", 0, match.end())
    title = _title(meta, body, relpath)
    return ParsedDocument(
        body=body,
        body_line=body_line,
        title=title,
        context=_context(meta, title, with_filters=False),
        keyword_context=_context(meta, title),
        meta=meta,
    )


def _load_yaml(block: str) -> dict[str, Any] | None:
    """The block's mapping, or None when it is broken or unsafe (then read leniently): the same limits as
    the export reader (no anchors, bounded depth and numbers, dates in range)."""
    from cmem_cli.core.frontmatter import FrontMatterError, check_values, fast_front_matter, load_yaml

    try:
        data = fast_front_matter(block)  # as cmem writes it: no YAML parser
        if data is None:
            data = load_yaml(block)
        else:
            check_values(data)
    except FrontMatterError:
        return None
    if data is None:
        return {}
    return data if isinstance(data, dict) else None


def _lenient(block: str) -> dict[str, Any]:
    """``key: value`` lines of a front matter block that is not valid YAML (values kept as text)."""
    meta: dict[str, Any] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "-", "#")):
            meta[key.strip()] = value.strip().strip('"').strip("'") or None
    return meta


def _title(meta: Mapping[str, Any], body: str, relpath: str) -> str:
    value = meta.get("title")
    if isinstance(value, str | int | float) and str(value).strip():
        return _one_line(str(value))
    if meta.get("cmem") == "summary":
        for name in _SUMMARY_TITLE_FIELDS:
            if isinstance(meta.get(name), str) and meta[name].strip():
                return _one_line(meta[name])
    heading = _H1.search(body)
    if heading:
        return _one_line(heading.group(1))
    return PurePosixPath(relpath).stem


def _context(meta: Mapping[str, Any], title: str, *, with_filters: bool = True) -> str:
    """``title (type, project, 27 June 2023; concept, concept)`` for observations (without type, project
    and date unless ``with_filters``), the title alone otherwise (and its date, with ``with_filters``)."""
    when = _date_words(meta) if with_filters else None
    if meta.get("cmem") not in CMEM_KINDS:
        return f"{title} ({when})" if when else title
    details = [str(meta[name]) for name in ("type", "project") if with_filters and meta.get(name)]
    if when:
        details.append(when)
    concepts = [str(c) for c in as_list(meta.get("concepts"))]
    inner = ", ".join(details)
    if concepts:
        inner = f"{inner}; {', '.join(concepts)}" if inner else ", ".join(concepts)
    return f"{title} ({inner})" if inner else title


def _date_words(meta: Mapping[str, Any]) -> str | None:
    """The document's date (``created_at``, else ``date``) as words (``27 June 2023``), or None.

    The date is the one the file states, not converted to another time zone (see
    :func:`cmem_cli.core.timeutil.date_words`).
    """
    value = meta.get("created_at") if meta.get("created_at") is not None else meta.get("date")
    if isinstance(value, str):
        value = _iso_datetime(value)
    if not isinstance(value, date):  # a datetime is a date too
        return None
    return date_words(value)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [v for v in value if v is not None and str(v).strip()]
    return [value] if str(value).strip() else []


def as_text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def as_epoch_ms(value: Any) -> int | None:
    """YAML gives datetimes, dates or strings for ``created_at``; all become UTC epoch milliseconds."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return int(dt.timestamp() * 1000)
    if isinstance(value, date):
        return int(datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp() * 1000)
    if isinstance(value, str):
        parsed = _iso_datetime(value)
        return as_epoch_ms(parsed) if parsed is not None else None
    return None


def _iso_datetime(text: str) -> datetime | None:
    """An ISO 8601 date or time stamp (a trailing ``Z`` is UTC), as written; None when it is not one."""
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
