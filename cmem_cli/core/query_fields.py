"""How each field of a search (:class:`cmem_cli.core.query.Query`) meets people: one table.

The filters' rows are made from their one declaration (:data:`cmem_cli.core.filters.FILTERS`, which
`timeline`, `view` and MCP's ``timeline`` read too); the rows here are search's own options.

``Query``'s constructor declares the fields (names, defaults, checks); this table says, per field, how a
front end offers it: `cmem search`'s option (``cmem_cli.cli.options`` builds the option table's entries from
it, and from that the typer app, the fast parser, help, completions, the man page and docs/cli.md) and the
MCP ``search`` tool's argument (``cmem_cli.mcp.server`` builds the tool's signature, hence its input schema,
from it). A field added to ``Query`` without a row here fails ``tests/test_query_fields.py``; a row names
its value's type and little else, so no front end restates a default.
"""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string (QueryField: a fifth of a millisecond of every `cmem search`); here they are plain objects.

from typing import Any, NamedTuple

from cmem_cli.core.fields import MODES, ORDERS
from cmem_cli.core.filters import FILTERS, Filter

SAME = ...  # an MCP default that is the Query's own


class QueryField(NamedTuple):
    """One field of :class:`~cmem_cli.core.query.Query`: `cmem search`'s option and MCP ``search``'s
    argument. The default is the Query's (its signature), except where ``mcp_default`` says otherwise."""

    name: str  # the Query's field
    help: str  # `cmem search --help`'s text, and MCP's description unless ``mcp_help`` gives one
    value: type = str  # one value's type: str, int, float or bool (a list field takes several)
    flags: tuple[str, ...] = ()  # `cmem search`'s flags; none: its positional argument
    param: str | None = None  # the name `cmem search`'s body takes it by, when not the field's own
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    off: str | None = None  # the flag that sets a bool flag to False (--no-rerank)
    mcp: str | None = None  # MCP's argument name, when not the field's own
    mcp_help: str | None = None
    mcp_default: Any = SAME
    mcp_range: tuple[int, int] | None = None  # MCP's bounds for a number (a model sends anything)

    @property
    def param_name(self) -> str:
        return self.param or self.name

    @property
    def mcp_name(self) -> str:
        return self.mcp or self.name

    @property
    def description(self) -> str:
        return self.mcp_help or self.help


def filter_field(f: Filter) -> QueryField:
    """A filter's row, from its one declaration (:data:`cmem_cli.core.filters.FILTERS`)."""
    return QueryField(
        f.name,
        f.help,
        flags=f.flags,
        param=f.param,
        metavar=f.metavar,
        choices=f.choices,
        mcp_help=f.mcp_help,
    )


FILTER_FIELDS: tuple[QueryField, ...] = tuple(filter_field(f) for f in FILTERS)

# In `cmem search --help`'s order. The query's words first (a positional argument; MCP calls it "query").
QUERY_FIELDS: tuple[QueryField, ...] = (
    QueryField(
        "text",
        "Words to search for; omit to list by filters.",
        param="query",
        metavar="QUERY",
        mcp="query",
        mcp_help="Words to match (keywords; with an index, also by meaning). Omit to list by the filters.",
    ),
    *FILTER_FIELDS,  # the filters: their one declaration (core/filters.py)
    QueryField(
        "limit",
        "Maximum rows (0: every hit).",
        int,
        flags=("--limit", "-n"),
        mcp_help="Maximum rows (1-200).",
        mcp_default=10,
        mcp_range=(1, 200),
    ),
    QueryField("offset", "Skip this many rows.", int, flags=("--offset",), mcp_range=(0, 100_000)),
    QueryField(
        "order", "Row order.", flags=("--order",), choices=ORDERS, mcp_help=f"Row order: {', '.join(ORDERS)}."
    ),
    QueryField(
        "mode",
        "auto (hybrid when the index has vectors, else keyword), keyword, vector or hybrid.",
        flags=("--mode",),
        choices=MODES,
    ),
    QueryField(
        "rerank",
        "Rerank the top 20 with the reranker model (default: when one is configured).",
        bool,
        flags=("--rerank",),
        off="--no-rerank",
    ),
    QueryField(
        "min_score",
        "Drop hits scoring below this (0..1; default: calibrated, see docs/retrieval.md; 0 keeps all).",
        float,
        flags=("--min-score",),
        mcp_help="Drop hits scoring below this (0..1; default: a calibrated cut-off; 0 keeps all).",
    ),
    QueryField(
        "collections",
        "Only this collection (repeatable; 'memories' is cmem's own).",
        flags=("--collection", "-c"),
        param="collection",
        mcp_help="Only these collections of indexed markdown ('memories' is cmem's own).",
    ),
    QueryField(
        "explain",
        "Show each signal's rank and score (reply#N: the reply to the question in row N), each row's "
        "place after each stage (stages in --json) and, on stderr, what each stage did.",
        bool,
        flags=("--explain",),
        mcp_help="Add each row's signals (rank and score per list) and its place after each stage.",
    ),
    QueryField(
        "branch",
        "Only memories recorded on this git branch; 'all' also stops weighing memories of branches "
        "not merged into HEAD below this branch's.",
        flags=("--branch",),
        metavar="NAME|all",
        mcp_help="Only memories recorded on this git branch; 'all': also those of unmerged branches "
        "without ranking them last (the default does).",
    ),
    QueryField(
        "team",
        "Search the team database this home joined (`cmem sync init postgresql://...`): every member's "
        "memories, with the machine that wrote each.",
        bool,
        flags=("--team",),
        mcp_help="Search the team database this home joined (every member's memories) instead of this "
        "home; ids are this home's where it holds the memory, else uids.",
    ),
)

BY_NAME: dict[str, QueryField] = {field.name: field for field in QUERY_FIELDS}


def is_list(field: QueryField) -> bool:
    """Whether the field takes several values (a repeatable option, a list argument)."""
    from cmem_cli.core.query import LIST_FIELDS

    return field.name in LIST_FIELDS


def default(field: QueryField) -> Any:
    """The field's default: the Query's own (its signature), None for a list and for the words."""
    from cmem_cli.core.query import DEFAULTS

    return DEFAULTS.get(field.name)


def query_arguments(given: dict[str, Any], *, mcp: bool = False) -> dict[str, Any]:
    """Take the Query's fields out of ``given`` (a front end's arguments: `cmem search`'s under
    :attr:`QueryField.param_name`, with ``mcp`` the MCP tool's under :attr:`QueryField.mcp_name`) and
    return them under the Query's own names, ready for ``Query(**...)``."""
    fields: dict[str, Any] = {}
    for field in QUERY_FIELDS:
        key = field.mcp_name if mcp else field.param_name
        if key in given:
            fields[field.name] = given.pop(key)
    return fields
