"""The metadata filters every search layer takes, and the SQL both the store and the index build from them.

The store (``cmem_cli.store.repository.Filters``) and the index (``cmem_index.retrieve.DocFilters``) filter different tables,
but on the same fields with the same meaning; this module holds what they share, and imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

FILTER_FIELDS = ("project", "types", "concepts", "files", "agent", "session", "since", "until", "folded")


class FilterFields:
    """``project``/``agent``/``session`` match exactly; ``since``/``until`` are inclusive epoch milliseconds;
    ``types`` matches any; every concept must be present; ``files`` matches a path exactly, by suffix after
    ``/`` or as a directory. ``folded``: older names of ``project``'s repository, whose rows the project
    covers too (the store's ``projects.older_names``; only with ``project``)."""

    def __init__(
        self,
        project: str | None = None,
        types: list[str] | None = None,
        concepts: list[str] | None = None,
        files: list[str] | None = None,
        agent: str | None = None,
        session: str | None = None,
        since: int | None = None,
        until: int | None = None,
        folded: list[str] | tuple[str, ...] | None = None,
    ):
        self.project, self.agent, self.session = project, agent, session
        self.folded = tuple(folded or ())
        self.types, self.concepts, self.files = list(types or []), list(concepts or []), list(files or [])
        self.since, self.until = since, until

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FILTER_FIELDS}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def scalar_clauses(self, alias: str) -> tuple[list[str], list[Any]]:
        """SQL conditions for project, agent, session and the time window on table ``alias``."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.project is not None:
            names = (self.project, *self.folded)
            clauses.append(project_clause(f"{alias}.project", len(names)))
            params.extend(names)
        for name in ("agent", "session"):
            value = getattr(self, name)
            if value is not None:
                clauses.append(f"{alias}.{name} = ?")
                params.append(value)
        if self.since is not None:
            clauses.append(f"{alias}.created_at >= ?")
            params.append(int(self.since))
        if self.until is not None:
            clauses.append(f"{alias}.created_at <= ?")
            params.append(int(self.until))
        return clauses, params


def project_clause(column: str, count: int) -> str:
    """``column`` is one of ``count`` project names (``= ?`` for one)."""
    return f"{column} = ?" if count == 1 else f"{column} IN ({', '.join('?' * count)})"


def file_path_match(column: str, path: str) -> tuple[str, list[str]]:
    """``column`` is ``path``, ends with ``/path``, or lies under the directory ``path``."""
    escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    condition = f"({column} = ? OR {column} LIKE ? ESCAPE '\\' OR {column} LIKE ? ESCAPE '\\')"
    return condition, [path, "%/" + escaped, escaped.rstrip("/") + "/%"]
