"""What a `cmem view` page covers: search's filters, with a default window, and how to say it in words.

With no filters a page shows the last 30 days of the default scope (inside a git repository its project,
elsewhere every project: :meth:`cmem_cli.api.Memory.default_scope`, which the command asks), which is what a
person reviewing their agents' recent work wants; ``--all-projects`` drops the project, a ``--session``
shows that session whole, and ``--until`` alone shows the 30 days before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.core.errors import UsageError
from cmem_cli.core.timeutil import parse_time, to_iso

if TYPE_CHECKING:
    from cmem_cli.api import Query

DEFAULT_DAYS = 30
MAX_LIMIT = 100_000
DAY_MS = 86_400_000


class Scope(NamedTuple):
    """The filters of one page, defaults applied: :meth:`cmem_cli.api.Memory.window`'s arguments. The
    words and filters are a :class:`~cmem_cli.api.Query` (the one filter set every search takes)."""

    query: Query
    limit: int

    @property
    def title(self) -> str:
        if self.query.session:
            return f"session {self.query.session}"
        return self.query.project or "all projects"

    def describe(self, since_iso: str | None) -> str:
        """The filters in words, for the page's header (``since_iso``: where the window really starts);
        every filter of the one table (:data:`cmem_cli.core.filters.FILTERS`) that is set is named."""
        from cmem_cli.core.filters import FILTERS

        q = self.query
        parts = [f"project {q.project}" if q.project else "all projects"]
        if q.session:
            parts.append(f"session {q.session}")
        if since_iso:
            parts.append(f"from {_minute(since_iso)} UTC")
        if q.until:
            parts.append(f"until {_minute(to_iso(_until_ms(q.until)) or q.until)} UTC")
        for f in FILTERS:
            value = getattr(q, f.name)
            if f.name not in _SAID and value:
                parts.append(f"{f.name} " + (", ".join(value) if f.many else str(value)))
        if q.text:
            parts.append(f"matching \u201c{q.text}\u201d")
        return " \u00b7 ".join(parts)


_SAID = ("project", "session", "since", "until")  # said first, in their own words


def _minute(iso: str) -> str:
    return iso[:16].replace("T", " ")


def _until_ms(until: str) -> int:
    ms = parse_time(until)
    return ms + DAY_MS - 1 if len(until.strip()) == 10 else ms  # a bare date includes that day, as search


def resolve(query: Query, *, all_projects: bool = False, limit: int) -> Scope:
    """The page's filters from the command line's (a Query), with the default window filled in."""
    from cmem_cli.api import Query
    from cmem_cli.core.filters import FILTERS

    if query.project and all_projects:
        raise UsageError("give --project or --all-projects, not both")
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}, got {limit}")
    since = query.since
    if since is None and not query.session:
        end = _until_ms(query.until) if query.until else None
        since = to_iso(max(0, end - DEFAULT_DAYS * DAY_MS)) if end is not None else f"{DEFAULT_DAYS}d"
    words = query.text if query.text and query.text.strip() else None
    kept: dict[str, Any] = {
        f.name: getattr(query, f.name) for f in FILTERS
    }  # every filter: none is left behind
    return Scope(Query(words, **{**kept, "since": since}), limit)
