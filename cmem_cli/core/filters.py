"""The metadata filters every reader takes, declared once, and compiled to SQL per backend.

:data:`FILTERS` is the one declaration of each filter: its name (the :class:`~cmem_cli.core.query.Query`'s
field), its value's type, its help and how it compiles. Every reader takes its filters from it: `cmem
search`'s, `cmem timeline`'s and `cmem view`'s options (``cmem_cli.cli.options``), the MCP ``search`` and
``timeline`` tools' arguments (through ``cmem_cli.core.query_fields``), the API's ``Query`` (a test keeps its
signature in step) and the page header of `cmem view`.

A search's filters (:meth:`cmem_cli.core.query.Query.filter_fields`) are one :class:`FilterFields`. Three
backends filter different tables on the same fields with the same meaning: the store
(``cmem_cli.store``'s ``Filters``, SQLite over ``cmem.db``), the index (``cmem_index.retrieve.DocFilters``,
SQLite over ``index.db``) and the team database (``cmem_cli.team.source``, PostgreSQL). Each gives a
:class:`SqlDialect`: how it binds a value and how it spells the filters whose tables differ (types,
concepts, files, branch). :meth:`FilterFields.clauses` walks the table once for all of them: a filter on a
column every table holds (``sql="equals"``) needs no dialect code; one spelled differently names the
dialect method each backend answers. Imports nothing heavy.
"""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string; here they are plain objects.

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from cmem_cli.core.fields import (
    MACHINE_FLAGS,
    MACHINE_HELP,
    OBSERVATION_TYPES,
    PROJECT_FLAGS,
    SCOPED_PROJECT_HELP,
)


class Filter(NamedTuple):
    """One filter, as every reader offers it and every backend compiles it."""

    name: str  # the Query's field, and the MCP argument
    help: str  # the command line's help, and MCP's description unless ``mcp_help`` gives one
    flags: tuple[str, ...]  # the command line's flags
    # the SqlDialect method that compiles it ("equals": the column ``name`` matches exactly)
    sql: str = "equals"
    many: bool = False  # takes several values (a repeatable option, a list argument)
    attr: str | None = None  # FilterFields' attribute, when not the name (a list's plural)
    param: str | None = None  # the name a command's body takes it by, when not the name
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    mcp_help: str | None = None
    observations: bool = False  # only an observation has it (summaries and prompts never match)
    indexed: bool = True  # the index's documents hold it; False: the search checks it on the store's rows

    def misses(self, row: Mapping[str, Any], value: Any) -> bool:
        """Whether a search row fails this filter, checked on the row itself: for a filter the index
        cannot apply (``indexed`` False), matched exactly (``sql="equals"``)."""
        return not self.indexed and self.sql == "equals" and value is not None and row.get(self.name) != value

    @property
    def field(self) -> str:
        return self.attr or self.name


# The filters, in `cmem search --help`'s order. A new one: a row here, a parameter of Query.__init__ (its
# typed signature) and a test; a dialect method only where a backend names its column otherwise
# (``indexed=False`` when the index keeps none). docs/architecture.md, "Filters, declared once", walks one.
FILTERS: tuple[Filter, ...] = (
    Filter(
        "project",
        SCOPED_PROJECT_HELP,
        PROJECT_FLAGS,
        sql="project",
        metavar="NAME",
        mcp_help="Only this project (default: the server's git repository's project, every project outside one).",
    ),
    Filter(
        "type",
        "Only this type (repeatable).",
        ("--type",),
        sql="types",
        many=True,
        attr="types",
        param="obs_type",
        choices=OBSERVATION_TYPES,
        mcp_help=f"Only these types: {', '.join(OBSERVATION_TYPES)}.",
        observations=True,
    ),
    Filter(
        "concept",
        "Only with this concept (repeatable).",
        ("--concept",),
        sql="concept",
        many=True,
        attr="concepts",
        mcp_help="Only observations tagged with all of these concepts.",
        observations=True,
    ),
    Filter(
        "file",
        "Only touching this file path, suffix or directory (repeatable).",
        ("--file",),
        sql="file",
        many=True,
        attr="files",
        metavar="PATH",
        mcp_help="Only observations that read or modified these paths (a path, a suffix or a directory).",
        observations=True,
    ),
    Filter("agent", "Only what this agent recorded.", ("--agent",), metavar="NAME"),
    Filter(
        "machine",
        MACHINE_HELP,
        MACHINE_FLAGS,
        metavar="NAME",
        mcp_help="Only what was written on this machine (rows name each one's machine).",
    ),
    Filter(
        "session",
        "Session id or a unique prefix of one.",
        ("--session",),
        metavar="ID",
        mcp_help="Only this session (its whole id).",
    ),
    Filter(
        "since",
        "ISO date/time or age (7d, 2w, 12h).",
        ("--since",),
        sql="since",
        mcp_help="Only from then on: an ISO date or time (2025-01-31), or an age (7d, 2w, 12h).",
    ),
    Filter(
        "until",
        "ISO date/time or age.",
        ("--until",),
        sql="until",
        mcp_help="Only until then (a bare date includes that day): ISO date or time, or an age (7d, 2w).",
    ),
)
BY_NAME: dict[str, Filter] = {f.name: f for f in FILTERS}
# FilterFields' attributes: the table's, then the two a search sets itself (the branch; older project names)
FILTER_FIELDS = (*(f.field for f in FILTERS), "branch", "folded")


def filter_arguments(given: dict[str, Any]) -> dict[str, Any]:
    """Take the filters out of ``given`` (a command body's arguments, under :attr:`Filter.param` where it
    has one) and return them under the Query's names, ready for ``Query(**...)``."""
    return {f.name: given.pop(f.param or f.name, None) for f in FILTERS}


class FilterFields:
    """``project``/``agent``/``session``/``machine`` match exactly; ``since``/``until`` are inclusive epoch
    milliseconds; ``types`` matches any; every concept must be present; ``files`` matches a path exactly, by
    suffix after ``/`` or as a directory; ``branch``: recorded on that git branch. ``folded``: older names of
    ``project``'s repository, whose rows the project covers too (the store's ``projects.older_names``; only
    with ``project``). Takes every filter of :data:`FILTERS` by keyword (a list filter by its plural)."""

    project: str | None
    types: list[str]
    concepts: list[str]
    files: list[str]
    agent: str | None
    session: str | None
    machine: str | None
    since: int | None
    until: int | None
    branch: str | None
    folded: tuple[str, ...]

    def __init__(self, **given: Any):
        unknown = set(given) - set(FILTER_FIELDS)
        if unknown:
            raise TypeError(f"unknown filter {sorted(unknown)[0]!r}")
        for f in FILTERS:
            value = given.get(f.field)
            setattr(self, f.field, list(value or []) if f.many else value)
        self.branch = given.get("branch")
        self.folded = tuple(given.get("folded") or ())

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FILTER_FIELDS}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    @property
    def observation_only(self) -> bool:
        """Type, concept, file and branch filters only make sense for observations."""
        return bool(self.branch) or any(getattr(self, f.field) for f in FILTERS if f.observations)

    def clauses(self, dialect: "SqlDialect", *, observations: bool = True) -> list[str]:
        """The SQL conditions of every filter that is set, in ``dialect`` (which collects the values it
        binds). Without ``observations`` (a summary's or a prompt's table) the observation-only filters
        are left out."""
        out: list[str] = []
        for f in FILTERS:
            value = getattr(self, f.field)
            if value is None or value == [] or (f.observations and not observations) or dialect.lacks(f):
                continue
            if f.sql == "equals":
                out.append(dialect.equals(f.name, value))
            elif f.sql == "project":
                out.append(dialect.project((value, *self.folded)))
            elif f.many and f.sql != "types":  # one clause per value: every one must match
                out += [getattr(dialect, f.sql)(one) for one in value]
            else:
                out.append(getattr(dialect, f.sql)(value))
        if observations and self.branch is not None:
            out.append(dialect.branch(self.branch))
        return [clause for clause in out if clause]

    def misses(self, row: Mapping[str, Any]) -> bool:
        """Whether a row the index found fails a filter the index cannot apply (:attr:`Filter.indexed`)."""
        return any(f.misses(row, getattr(self, f.field)) for f in FILTERS)


class SqlDialect:
    """How one backend spells each filter (each :attr:`Filter.sql` of the table names one of these methods) over its table aliased ``alias``; the values bound go to
    ``params`` (a list for ``?`` placeholders, by :meth:`bind`). The shared spellings are here; a backend
    answers what its tables hold differently. An empty string: this backend cannot filter on that (the
    search drops such rows after retrieval)."""

    def __init__(self, alias: str):
        self.alias = alias
        self.params: list[Any] = []

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return "?"

    def lacks(self, f: Filter) -> bool:
        """This backend's tables do not hold ``f`` (the index: :attr:`Filter.indexed`); the clause is left out."""
        return False

    def equals(self, name: str, value: str) -> str:
        return f"{self.alias}.{name} = {self.bind(value)}"

    def project(self, names: tuple[str, ...]) -> str:
        """The project is one of ``names`` (the project and its repository's older names)."""
        if len(names) == 1:
            return self.equals("project", names[0])
        return f"{self.alias}.project IN ({', '.join(self.bind(name) for name in names)})"

    def since(self, ms: int) -> str:
        return f"{self.alias}.created_at >= {self.bind(int(ms))}"

    def until(self, ms: int) -> str:
        return f"{self.alias}.created_at <= {self.bind(int(ms))}"

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
