"""What a `cmem view` page covers: search's filters, with a default window, and how to say it in words.

With no filters a page shows the last 30 days of the default scope (inside a git repository its project,
elsewhere every project: :meth:`cmem_cli.api.Memory.default_scope`, which the command asks), which is what a
person reviewing their agents' recent work wants; ``--all-projects`` drops the project, a ``--session``
shows that session whole, and ``--until`` alone shows the 30 days before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from cmem_cli.core.errors import UsageError
from cmem_cli.core.timeutil import parse_time, to_iso

if TYPE_CHECKING:
    from cmem_cli.api import Query

DEFAULT_DAYS = 30
MAX_LIMIT = 100_000
DAY_MS = 86_400_000


class Scope(NamedTuple):
    """The filters of one page, defaults applied: :meth:`cmem_cli.api.Memory.window`'s arguments."""

    query: str | None
    project: str | None
    types: list[str]
    concepts: list[str]
    files: list[str]
    agent: str | None
    session: str | None
    since: str | None
    until: str | None
    limit: int

    def as_query(self) -> Query:
        """The words and filters as the :class:`~cmem_cli.api.Query` :meth:`Memory.window` takes."""
        from cmem_cli.api import Query

        return Query(
            self.query, project=self.project, type=self.types, concept=self.concepts, file=self.files,
            agent=self.agent, session=self.session, since=self.since, until=self.until,
        )  # fmt: skip

    @property
    def title(self) -> str:
        if self.session:
            return f"session {self.session}"
        return self.project or "all projects"

    def describe(self, since_iso: str | None) -> str:
        """The filters in words, for the page's header (``since_iso``: where the window really starts)."""
        parts = [f"project {self.project}" if self.project else "all projects"]
        if self.session:
            parts.append(f"session {self.session}")
        if since_iso:
            parts.append(f"from {_minute(since_iso)} UTC")
        if self.until:
            parts.append(f"until {_minute(to_iso(_until_ms(self.until)) or self.until)} UTC")
        if self.types:
            parts.append("type " + ", ".join(self.types))
        if self.concepts:
            parts.append("concept " + ", ".join(self.concepts))
        if self.files:
            parts.append("file " + ", ".join(self.files))
        if self.agent:
            parts.append(f"agent {self.agent}")
        if self.query:
            parts.append(f"matching \u201c{self.query}\u201d")
        return " \u00b7 ".join(parts)


def _minute(iso: str) -> str:
    return iso[:16].replace("T", " ")


def _until_ms(until: str) -> int:
    ms = parse_time(until)
    return ms + DAY_MS - 1 if len(until.strip()) == 10 else ms  # a bare date includes that day, as search


def resolve(
    query: str | None = None,
    *,
    project: str | None = None,
    all_projects: bool = False,
    types: list[str] | None = None,
    concepts: list[str] | None = None,
    files: list[str] | None = None,
    agent: str | None = None,
    session: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int,
) -> Scope:
    """The page's filters from the command line's, with the default window filled in."""
    if project and all_projects:
        raise UsageError("give --project or --all-projects, not both")
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}, got {limit}")
    if since is None and not session:
        end = _until_ms(until) if until else None
        since = to_iso(max(0, end - DEFAULT_DAYS * DAY_MS)) if end is not None else f"{DEFAULT_DAYS}d"
    return Scope(
        query=query if query and query.strip() else None, project=project, types=list(types or []),
        concepts=list(concepts or []), files=list(files or []), agent=agent, session=session, since=since,
        until=until, limit=limit,
    )  # fmt: skip
