"""The options of cmem's hot commands, each declared once (after tobi/qmd's ``src/cli/options.ts``).

This table drives both command-line parsers: the typer-free one that hooks and scripts hit constantly
(``cmem_cli.cli.fast``) and the typer app (``cmem_cli.cli.build`` turns each entry into a typer parameter),
and through the typer app the help text, the completions, the man page and docs/cli.md. The options every
command shares (``--project``, ``--json``, ``--format``...) are declared here too and reused by the other
command modules. No typer import here: the fast path reads this table on every call, and builds only the
command it runs: `cmem search`'s options come from the Query's table (``cmem_cli.core.query_fields``), which
`add`, `get`, `context` and `timeline` do not load.
"""

# No ``from __future__ import annotations``: typing.NamedTuple compiles each field's annotation when it is a
# string (Opt and Command: a fifth of a millisecond of every `cmem search`); here they are plain objects.

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any, NamedTuple

from cmem_cli.core.fields import (
    MACHINE_FLAGS,
    MACHINE_HELP,
    OBSERVATION_TYPES,
    PROJECT_FLAGS,
    SCOPED_PROJECT_HELP,
)

FORMATS = ("table", "plain", "json", "ndjson", "csv", "ids", "md")


class Opt(NamedTuple):
    """One option or positional argument, as the command body receives it (``name``)."""

    name: str
    flags: tuple[str, ...] = ()  # no flags: a positional argument
    help: str = ""
    type: type = str  # str, int, float or bool (a flag)
    default: Any = None
    multiple: bool = False  # a repeatable option; for an argument, all remaining words
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    required: bool = False
    off: str | None = None  # the flag that sets a bool flag to False (--no-rerank)

    @property
    def is_argument(self) -> bool:
        return not self.flags


class Command(NamedTuple):
    name: str
    help: str
    body: str  # "module:function": the typer-free function both parsers call
    options: tuple[Opt, ...]


# -- shared options ------------------------------------------------------------------------------------
HOME = Opt(
    "home", ("--home",), "Data directory (default: $CMEM_HOME, else $XDG_DATA_HOME/cmem).", metavar="DIR"
)
PROJECT = Opt("project", PROJECT_FLAGS, "Project name.", metavar="NAME")
# What a read covers when it names no project (the Query's ``project``, as its table offers it to search).
SCOPED_PROJECT = PROJECT._replace(help=SCOPED_PROJECT_HELP)
ALL_PROJECTS = Opt(
    "all_projects", ("--all-projects",), "Every project, also inside a git repository.", bool, False
)
AGENT = Opt("agent", ("--agent",), "Agent name.", metavar="NAME")
SESSION = Opt("session", ("--session",), "Session id or a unique prefix of one.", metavar="ID")
# The Query's ``machine`` (search's from its table), for the reads that take it without that table
MACHINE = Opt("machine", MACHINE_FLAGS, MACHINE_HELP, metavar="NAME")
JSON = Opt("as_json", ("--json",), "Output JSON.", bool, False)
FORMAT = Opt(
    "fmt",
    ("--format", "-f"),
    "Output format. Default: table on a terminal, plain (tab-separated) when piped.",
    choices=FORMATS,
)


# -- search's options: one per field of the Query, from its table (`cmem view` takes the filters too) --------
def query_option(name: str) -> Opt:
    """`cmem search`'s option for the Query field ``name`` (cmem_cli.core.query_fields says how it looks)."""
    from cmem_cli.core.query_fields import BY_NAME, default, is_list

    field = BY_NAME[name]
    many = is_list(field)
    return Opt(
        field.param_name,
        field.flags,
        field.help,
        field.value,
        None if many else default(field),
        multiple=many,
        choices=field.choices,
        metavar=field.metavar,
        off=field.off,
    )


def filter_options(
    helps: Mapping[str, str] | None = None, *, after_project: tuple[Opt, ...] = ()
) -> list[Opt]:
    """Every filter's option, from its one declaration (:data:`cmem_cli.core.filters.FILTERS`), in its
    order: what `timeline` and `view` take (search's come through the Query's table). ``helps``: a
    command's own help for some; ``after_project``: options placed after --project (--all-projects)."""
    from cmem_cli.core.filters import FILTERS

    options: list[Opt] = []
    for f in FILTERS:
        help_text = (helps or {}).get(f.name, f.help)
        options.append(Opt(f.param or f.name, f.flags, help_text, str, None, f.many, f.choices, f.metavar))
        if f.name == "project":
            options += after_project
    return options


ALL_HITS = Opt("all_hits", ("--all",), "Every hit above the cut-off (same as -n 0).", bool, False)
ENVELOPE = Opt(
    "envelope",
    ("--envelope",),
    "Print one JSON object instead of the bare list of rows: mode, notes (what the notes on stderr "
    "say: the scope used, an index behind the store), total, capped and hits, as MCP's search "
    "returns them. Implies --json.",
    bool,
    False,
)


def _search_options() -> tuple[Opt, ...]:
    """Every Query field in its table's order, with the two options that only steer them: --all-projects
    (the project's default scope) after --project, --all (-n 0) after --explain; then the output's."""
    from cmem_cli.core.query_fields import QUERY_FIELDS

    options: list[Opt] = []
    for field in QUERY_FIELDS:
        options.append(query_option(field.name))
        if field.name == "project":
            options.append(ALL_PROJECTS)
        elif field.name == "explain":
            options.append(ALL_HITS)
    return (*options, JSON, ENVELOPE, FORMAT)


# -- the fast-path commands ----------------------------------------------------------------------------
@cache
def search_command() -> Command:
    """`cmem search`, built when a parser needs it (its options are the Query's table)."""
    return Command(
        "search",
        "Search memories and documents: one compact row per hit (id, date, type, title, project, token cost).\n\n"
        'Exit status 10 when nothing matches; "showing N of M" on stderr when more hits exist than shown.\n\n'
        "Inside a git repository it searches that repository's project (every worktree and clone of it), "
        "elsewhere every project; --project or --all-projects choose, and without them a note on stderr says "
        "which scope was used.",
        "cmem_cli.cli.read_bodies:search",
        _search_options(),
    )


@cache
def timeline_command() -> Command:
    """`cmem timeline`, built when a parser needs it (its filters are the one filter table's)."""
    return Command(
        "timeline",
        "What happened around one observation: prompts, observations and summaries in time order.\n\n"
        "--query searches the default scope as `cmem search` does (inside a git repository its project, "
        "elsewhere every project). The filters keep the items around the anchor they match (the anchor "
        "is always shown), and --query's hit among them.",
        "cmem_cli.cli.read_bodies:timeline",
        (
            Opt(
                "ref",
                help="Anchor: observation id, uid or unique uid prefix, S<n> summary or P<n> prompt.",
                metavar="ID",
            ),
            Opt("query", ("--query", "-q"), "Use the best search hit as anchor."),
            Opt("before", ("--before", "-b"), "Items before the anchor.", int, 5),
            Opt("after", ("--after", "-a"), "Items after the anchor.", int, 5),
            *filter_options(
                {"project": "--query searches only this project (default: as `cmem search`)."},
                after_project=(
                    ALL_PROJECTS._replace(
                        help="--query searches every project, also inside a git repository."
                    ),
                ),
            ),
            JSON,
            FORMAT,
        ),
    )


GET = Command(
    "get",
    "Full details of observations; counts as a retrieval.",
    "cmem_cli.cli.read_bodies:get",
    (
        Opt(
            "refs",
            help="Observation ids, uids or unique uid prefixes (S<n> summaries, P<n> prompts, doc:<docid>).",
            multiple=True,
            required=True,
            metavar="ID...",
        ),
        Opt("links", ("--links",), "Also show linked observations (one hop).", bool, False),
        Opt(
            "path_only",
            ("--path",),
            "Print only each record's file path (absolute), one per line.",
            bool,
            False,
        ),
        JSON,
        FORMAT._replace(
            help="md (default), json, ndjson or plain.", choices=("md", "json", "ndjson", "plain")
        ),
    ),
)

ADD = Command(
    "add",
    "Record an observation (or bulk-import JSON records); prints the new id(s), one per line.\n\n"
    "A memory that may replace an older one (the same subject, stated as a change) is reported on stderr with "
    "the command that confirms it; a confident match is marked maybe replaced at once.\n\n"
    "Every observation, prompt and summary states who wrote it: the machine (CMEM_MACHINE, else machine = "
    '"..." in the config file, else this home\'s name on its team database, else the host name) and the '
    'person (CMEM_AUTHOR, else author = "..." in the config file, else git\'s global user.email).',
    "cmem_cli.cli.write_bodies:add",
    (
        Opt("title_text", help="Title (the same as --title).", metavar="TITLE"),
        Opt("title", ("--title", "-t"), "Title (required unless --json)."),
        Opt("obs_type", ("--type",), "Observation type.", default="change", choices=OBSERVATION_TYPES),
        Opt("subtitle", ("--subtitle",), "One-line subtitle."),
        Opt("narrative", ("--narrative",), "Longer text (markdown)."),
        Opt("fact", ("--fact",), "A fact (repeatable).", multiple=True),
        Opt("concept", ("--concept",), "A concept/tag (repeatable).", multiple=True),
        Opt("read", ("--read",), "A file that was read (repeatable).", multiple=True, metavar="PATH"),
        Opt(
            "modified",
            ("--modified",),
            "A file that was modified (repeatable).",
            multiple=True,
            metavar="PATH",
        ),
        Opt(
            "lines",
            ("--lines",),
            "The lines the memory is about in its one cited file (or cite PATH:START-END): it goes stale "
            "when they change, not when other lines do.",
            metavar="START-END",
        ),
        Opt("tool", ("--tool",), "A tool that was used (repeatable).", multiple=True),
        PROJECT,
        SESSION,
        AGENT,
        Opt("key", ("--key",), "Keyed memory: replaces the project's observation with the same key."),
        Opt("confidence", ("--confidence",), "0..1.", float),
        Opt("link", ("--link",), "TYPE:ID link, e.g. related:12 (repeatable).", multiple=True),
        Opt(
            "supersedes",
            ("--supersedes",),
            "The memory this one replaces (repeatable); it stays, marked superseded_by this one.",
            multiple=True,
            metavar="ID",
        ),
        Opt(
            "json_source",
            ("--json",),
            "Read one JSON object, an array, or NDJSON from FILE ('-' for stdin).",
            metavar="FILE",
        ),
        Opt(
            "output",
            ("--format",),
            "ids (default): the new id(s), one per line; json: one JSON object per record, with the "
            "memories it may replace (candidates) and the command that confirms each. An import of more "
            "than 50 records is compared with what it may replace only with json.",
            default="ids",
            choices=("ids", "json"),
        ),
    ),
)

CONTEXT = Command(
    "context",
    "What an agent should see at session start: last summary, useful recent observations, how to drill down."
    "\n\nInside a git repository, for its project; elsewhere, for every project.",
    "cmem_cli.cli.read_bodies:context",
    (
        SCOPED_PROJECT,
        ALL_PROJECTS,
        Opt(
            "budget",
            ("--budget",),
            "Token budget for the whole text (at least 1).",
            int,
            1500,
            metavar="TOKENS",
        ),
        JSON,
    ),
)


# -- `cmem view`: not a fast-path command (nothing calls it in a loop), declared here to share the filters
@cache
def view_command() -> Command:
    """`cmem view`, built when the typer app registers it (its filters are the Query's table)."""
    return Command(
        "view",
        "Write a timeline of what agents remembered as one self-contained HTML page, and open it.\n\n"
        "The page needs no server and makes no request: its data, script and style are inside it. By default it "
        "shows the last 30 days of the current git repository's project (elsewhere: of every project), at most "
        "--limit observations (the newest), and is "
        "written to <home>/view/ (mode 0600); the path is printed on stdout. See docs/view.md.",
        "cmem_cli.cli.commands.view:view",
        (
            query_option("text")._replace(
                help="Only records with these words (as keyword search matches them)."
            ),
            *filter_options(
                {
                    "session": "Only this session, whole (no default window); an id or a unique prefix.",
                    "since": "ISO date/time or age (7d, 2w, 12h); default 30 days before --until or now.",
                },
                after_project=(ALL_PROJECTS,),
            ),
            Opt(
                "limit",
                ("--limit", "-n"),
                "Most observations on the page (the newest); the page says when more match.",
                int,
                2000,
            ),
            Opt(
                "output",
                ("--output", "-o"),
                "Write the page here ('-' for stdout) instead of <home>/view/NAME.html.",
                metavar="FILE",
            ),
            Opt(
                "open_page",
                ("--open",),
                "Open the page in the default browser (default: when stdout is a terminal).",
                bool,
                off="--no-open",
            ),
            JSON._replace(help="Print what the page holds (path, counts, window) as JSON."),
        ),
    )


class _Commands(Mapping[str, Command]):
    """The fast-path commands by name, each built when first asked for: a line of `cmem add` or `cmem
    context` never builds search's options (nor loads the Query's table)."""

    def __init__(self, commands: dict[str, Callable[[], Command]]) -> None:
        self._commands = commands

    def __getitem__(self, name: str) -> Command:
        return self._commands[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


def _declared(command: Command) -> Callable[[], Command]:
    return lambda: command


FAST_COMMANDS: Mapping[str, Command] = _Commands(
    {
        "search": search_command,
        "timeline": timeline_command,
        "get": _declared(GET),
        "add": _declared(ADD),
        "context": _declared(CONTEXT),
    }
)
ROOT_OPTIONS = (HOME,)
