"""The metadata filters every search layer takes, declared once, and compiled to SQL per backend.

A search's filters (:meth:`cmem_cli.core.query.Query.filter_fields`) are one :class:`FilterFields`. Three
backends filter different tables on the same fields with the same meaning: the store
(``cmem_cli.store``'s ``Filters``, SQLite over ``cmem.db``), the index (``cmem_index.retrieve.DocFilters``,
SQLite over ``index.db``) and the team database (``cmem_cli.team.source``, PostgreSQL). Each gives a
:class:`SqlDialect`: how it binds a value and how it spells the filters whose tables differ (types,
concepts, files, branch); :meth:`FilterFields.clauses` walks the filter set once for all of them, so a
filter added here is a method every backend must answer. Imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FILTER_FIELDS = (
    "project", "types", "concepts", "files", "agent", "session", "machine", "branch", "since", "until", "folded"
)  # fmt: skip
EXACT_FIELDS = (
    "agent",
    "session",
    "machine",
)  # one column each, matched exactly (the project: one of its names)
OBSERVATION_FIELDS = ("types", "concepts", "files", "branch")  # what only an observation has


class FilterFields:
    """``project``/``agent``/``session``/``machine`` match exactly; ``since``/``until`` are inclusive epoch
    milliseconds; ``types`` matches any; every concept must be present; ``files`` matches a path exactly, by
    suffix after ``/`` or as a directory; ``branch``: recorded on that git branch. ``folded``: older names of
    ``project``'s repository, whose rows the project covers too (the store's ``projects.older_names``; only
    with ``project``)."""

    def __init__(
        self,
        project: str | None = None,
        types: list[str] | None = None,
        concepts: list[str] | None = None,
        files: list[str] | None = None,
        agent: str | None = None,
        session: str | None = None,
        machine: str | None = None,
        branch: str | None = None,
        since: int | None = None,
        until: int | None = None,
        folded: list[str] | tuple[str, ...] | None = None,
    ):
        self.project, self.agent, self.session, self.machine = project, agent, session, machine
        self.folded = tuple(folded or ())
        self.types, self.concepts, self.files = list(types or []), list(concepts or []), list(files or [])
        self.branch = branch
        self.since, self.until = since, until

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FILTER_FIELDS}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    @property
    def observation_only(self) -> bool:
        """Type, concept, file and branch filters only make sense for observations."""
        return bool(self.types or self.concepts or self.files or self.branch)

    def clauses(self, dialect: SqlDialect, *, observations: bool = True) -> list[str]:
        """The SQL conditions of every filter that is set, in ``dialect`` (which collects the values it
        binds). Without ``observations`` (a summary's or a prompt's table) the observation-only filters
        are left out."""
        out: list[str] = []
        if self.project is not None:
            out.append(dialect.project((self.project, *self.folded)))
        for name in EXACT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out.append(dialect.equals(name, value))
        if self.since is not None:
            out.append(dialect.since(int(self.since)))
        if self.until is not None:
            out.append(dialect.until(int(self.until)))
        if observations:
            if self.types:
                out.append(dialect.types(self.types))
            out += [dialect.concept(concept) for concept in self.concepts]
            out += [dialect.file(path) for path in self.files]
            if self.branch is not None:
                out.append(dialect.branch(self.branch))
        return [clause for clause in out if clause]


class SqlDialect:
    """How one backend spells each filter over its table aliased ``alias``; the values bound go to
    ``params`` (a list for ``?`` placeholders, by :meth:`bind`). The shared spellings are here; a backend
    answers what its tables hold differently. An empty string: this backend cannot filter on that (the
    search drops such rows after retrieval)."""

    def __init__(self, alias: str):
        self.alias = alias
        self.params: list[Any] = []

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return "?"

    def equals(self, name: str, value: str) -> str:
        return f"{self.alias}.{name} = {self.bind(value)}"

    def project(self, names: tuple[str, ...]) -> str:
        """The project is one of ``names`` (the project and its repository's older names)."""
        if len(names) == 1:
            return self.equals("project", names[0])
        return f"{self.alias}.project IN ({', '.join(self.bind(name) for name in names)})"

    def since(self, ms: int) -> str:
        return f"{self.alias}.created_at >= {self.bind(ms)}"

    def until(self, ms: int) -> str:
        return f"{self.alias}.created_at <= {self.bind(ms)}"

    def types(self, values: list[str]) -> str:
        return f"{self.alias}.type IN ({', '.join(self.bind(value) for value in values)})"

    def concept(self, value: str) -> str:
        raise NotImplementedError

    def file(self, path: str) -> str:
        raise NotImplementedError

    def branch(self, name: str) -> str:
        raise NotImplementedError

    def path_match(self, column: str, path: str) -> str:
        """``column`` is ``path``, ends with ``/path``, or lies under the directory ``path``."""
        return file_path_match(column, path, self.bind)


def file_path_match(column: str, path: str, bind: Callable[[Any], str]) -> str:
    """``column`` is ``path``, ends with ``/path``, or lies under the directory ``path`` (LIKE's wildcards
    in ``path`` taken literally; the same SQL in SQLite and PostgreSQL)."""
    escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    exact, suffix, folder = bind(path), bind("%/" + escaped), bind(escaped.rstrip("/") + "/%")
    return f"({column} = {exact} OR {column} LIKE {suffix} ESCAPE '\\' OR {column} LIKE {folder} ESCAPE '\\')"
