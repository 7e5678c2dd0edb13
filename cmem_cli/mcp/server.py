"""`cmem mcp`: cmem's memory as a Model Context Protocol server over stdio, on :mod:`cmem_cli.api`.

Agents without shell hooks (Claude Desktop, Cursor, other MCP clients) get the same three retrieval layers
as the CLI (``search`` -> ``timeline`` -> ``get``), plus ``remember`` and the session-start ``context``.
Every result carries compact text for the model and the same data as structured content; observations are
named by ``cmem://observation/<uid>`` and readable as MCP resources under that URI.

Nothing listens on a port: the client starts this process and talks over its stdin and stdout. The store
opens on the first call, and the index, numpy and llama.cpp only when a search needs them.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field, Strict

from cmem_cli import __version__
from cmem_cli.api import Hit, Memory, Query
from cmem_cli.core.config import Config, named_project
from cmem_cli.core.errors import CmemError, InvalidInput, NotFound
from cmem_cli.core.marks import title_marks
from cmem_cli.core.query_fields import QUERY_FIELDS, SAME, QueryField, default, is_list, query_arguments
from cmem_cli.core.results import URI_PREFIX, as_dict, citation_uri
from cmem_cli.core.text import escape_control

INSTRUCTIONS = """\
cmem is this user's durable memory of past coding sessions: decisions, bugfixes, discoveries, with ids.
Retrieve cheapest first, and only what you need:
1. `search` gives compact rows (id, date, type, title, ~tokens that `get` would cost). Start here.
2. `timeline` around a promising id shows what happened before and after it.
3. `get` the few ids worth reading in full (it costs the tokens the rows announced).
Record what you decide, fix or discover with `remember` (the why is what later sessions lack).
When a fact you recorded changes, name the memory it replaces (`supersedes`) or reuse the fact's `key`;
`remember` lists the `candidates` it may replace: confirm the right one.
`context` gives the session-start briefing for a project; `projects` lists the projects memory holds.
Cite a memory by its `cmem://observation/<uid>`."""

SEARCH_DESCRIPTION = """\
Step 1 of 3: find past observations (and session summaries, prompts, indexed notes) matching a query.
Returns one compact row per hit: id, date, type, title, project, score and ~tokens (the cost of `get` on it).
Scan titles first; then call `timeline` around an id to see its context, and `get` only the ids worth
reading. No query lists recent observations by the filters. Dates: ISO (2025-01-31) or relative (7d, 2w)."""
TIMELINE_DESCRIPTION = """\
Step 2 of 3: what happened around one observation, in time order, within its project; the anchor is
marked `>>`. Give an `anchor` id from `search` (12, S3 for a summary, P7 for a prompt) or a `query` whose
best match becomes the anchor. Cheap: titles and token costs only. Then `get` the ids that matter."""
GET_DESCRIPTION = """\
Step 3 of 3: full records (narrative, facts, files, links) for the given ids, from `search` or `timeline`.
Costs about the ~tokens those rows showed per id, so fetch only what you will use. Counts as a retrieval
(frequently used memories rank higher later)."""
REMEMBER_DESCRIPTION = """\
Store an observation so later sessions know it: a decision and its reason, a bugfix and its cause, a
non-obvious discovery. Title: one line that will make sense in a search list. Facts: short, self-contained
statements. With `key`, replaces the project's earlier observation with the same key (a living note).
With `supersedes`, names earlier memories this one replaces: they stay findable, marked superseded_by it.
When a fact changed, say which memory it replaces (`supersedes`) or keep one `key` for it. The reply lists
`candidates`: earlier memories this one may replace; confirm the right one (`cmem link NEW supersedes OLD`).
Text inside <private>...</private> and secrets are stripped before storage. Returns the new id and URI."""
CONTEXT_DESCRIPTION = """\
The session-start briefing for a project: the last session's summary and next steps, then the most useful
recent observations as one line each (id, date, type, title, ~tokens), within a token budget. Call it once
at the start of a task; drill down with `timeline` and `get`."""
INVALIDATE_DESCRIPTION = """\
Say a memory no longer holds (a decision reversed, a fact that turned out wrong), with a short reason. It
is kept, not deleted: search, context and the briefing leave it out, `get` still shows it marked
invalidated. Prefer `remember` with `supersedes` when a newer memory states what holds now. `restore` undoes."""
RESTORE_DESCRIPTION = """\
Undo `invalidate`: the memory comes back whole, in search, context and the briefing again."""
PROJECTS_DESCRIPTION = """\
The projects memory holds, most recently active first, with how many observations each has and when the
last was recorded. Use a name as `project` for `search`, `context` and `remember`."""

# The briefing's last line, in this server's terms: an MCP client may have no shell to run `cmem` in.
MCP_REMINDER = (
    "Drill down with the cmem tools: `search` (index), `timeline` (what happened around an id), "
    "`get` (full details of the ids worth reading)."
)

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


def _listed(value: object) -> object:
    """A plain string where a list is expected is a list of one (models often send ``"bugfix"``)."""
    return [value] if isinstance(value, str) else value


# What the schema says is exactly what a tool takes: a list of texts or one text (a list of one), and
# numbers and flags as JSON numbers and booleans only (pydantic's lax mode would also take true for 1 and
# "3" for 3, which the schema forbids). The string in the union is for the schema: _listed has made it a list.
Strings = Annotated[list[str] | str | None, BeforeValidator(_listed)]
Int = Annotated[int, Strict()]
Bool = Annotated[bool, Strict()]
STRICT = {int: Int, float: Annotated[float, Strict()], bool: Bool}
Facts = Annotated[Strings, Field(description="Short, self-contained statements, one per item.")]
Tags = Annotated[Strings, Field(description="Concepts to tag it with (a word or two each).")]
FilesRead = Annotated[Strings, Field(description="Paths of the files read.")]
FilesModified = Annotated[Strings, Field(description="Paths of the files modified.")]
Subtitle = Annotated[str | None, Field(description="One more line under the title.")]
Narrative = Annotated[str | None, Field(description="The why and how, in a few sentences.")]
Around = Annotated[Int, Field(ge=0, le=100, description="Items to show on that side of the anchor (0-100).")]
ProjectToWrite = Annotated[
    str | None,
    Field(description="Default: the server's git repository's name; required outside one (see `projects`)."),
]
Project = Annotated[str | None, Field(description="Only this project (default: every project).")]
AllProjects = Annotated[
    Bool, Field(description="Search every project, also when the server runs inside a git repository.")
]
ScopedProject = Annotated[
    str | None,
    Field(description="Default: the server's git repository's project; every project outside one."),
]
Ref = Annotated[
    Int | str | None,
    Field(description="An id from search: 12 (or the observation's uid, or a unique uid prefix), S3 (summary) "
          "or P7 (prompt)."),
]  # fmt: skip
Ids = Annotated[
    list[Int | str],
    Field(
        min_length=1,
        max_length=50,
        description="Ids from search or timeline: 12 (or a uid or unique uid prefix), S3, P7, doc:docid.",
    ),  # fmt: skip
]
ObsType = Annotated[
    str,
    Field(description="decision, bugfix, feature, refactor, discovery, change, error, insight or question."),
]
Key = Annotated[str | None, Field(description="A stable name; remembering the same key again replaces it.")]
Supersedes = Annotated[
    list[Int] | None,
    Field(
        max_length=50, description="Ids of memories this one replaces (they stay, marked superseded_by it)."
    ),
]
Budget = Annotated[Int, Field(ge=50, le=20_000, description="Token budget for the whole briefing.")]


class CmemMCPServer(MCPServer):
    """MCPServer whose tool errors are one line: argument validation reports the first bad field only."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:  # a bug: one line on the server's stderr, the traceback on demand
            cause = exc.__cause__
            print(f"cmem: mcp tool {name} failed: {type(cause).__name__}: {cause}", file=sys.stderr)
            if os.environ.get("CMEM_DEBUG") == "1":
                traceback.print_exception(cause, file=sys.stderr)
            raise ToolError(f"{name} failed inside cmem (details on the server's stderr)") from None
        except ToolError as exc:
            raise ToolError(_one_line(exc)) from exc.__cause__


def _one_line(exc: ToolError) -> str:
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "arguments"
        return f"invalid argument {where}: {first['msg']}"
    return " ".join(str(exc).split())


class Tools:
    """The tool bodies over one :class:`Memory`, opened on the first call and used by one call at a time
    (the SDK runs synchronous tools in worker threads)."""

    def __init__(self, config: Config):
        self.config = config
        self._memory: Memory | None = None
        self._lock = threading.Lock()

    @contextmanager
    def memory(self) -> Iterator[Memory]:
        with self._lock:
            if self._memory is None:
                self._memory = Memory(config=self.config)
            try:
                yield self._memory
            except CmemError as exc:
                raise ToolError(exc.message) from None

    def close(self) -> None:
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None

    def search(self, all_projects: bool = False, **arguments: Any) -> CallToolResult:
        """The ``search`` tool: ``arguments`` are the Query's fields under their MCP names (its table,
        :mod:`cmem_cli.core.query_fields`; :func:`search_signature` is what the client sees)."""
        fields = query_arguments(arguments, mcp=True)
        with self.memory() as memory:
            fields["project"], scope_note = _scope(memory, fields.get("project"), all_projects)
            hits = memory.search(Query(**fields))
        rows = [_hit_json(hit) for hit in hits]
        lines = [_row_line(row) for row in rows] or ["no matches"]
        notes = [scope_note, *hits.notes] if scope_note else hits.notes
        if scope_note:
            lines.append(escape_control(scope_note))
        structured = {"mode": hits.mode, "notes": notes, "hits": rows}
        return _result("\n".join(lines), structured)

    def timeline(
        self,
        anchor: Ref = None,
        query: str | None = None,
        before: int = 5,
        after: int = 5,
        **arguments: Any,
    ) -> CallToolResult:
        """The ``timeline`` tool: ``arguments`` are the filters (one table, :data:`cmem_cli.core.filters.FILTERS`;
        :func:`timeline_signature` is what the client sees)."""
        fields = query_arguments(arguments, mcp=True)
        with self.memory() as memory:
            result = memory.timeline(anchor, query=query, before=before, after=after, **fields)
        items = [_with_uri(as_dict(item)) for item in result.items]
        lines = [("> " if item["anchor"] else "  ") + _row_line(item) for item in items]
        structured = {"anchor": result.anchor, "project": result.project, "items": items}
        return _result("\n".join(lines), structured)

    def get(self, ids: Ids) -> CallToolResult:
        from cmem_cli.api import markdown

        with self.memory() as memory:
            records = memory.get(*ids)
        dicts = [_with_uri(as_dict(record)) for record in records]
        text = "\n\n".join(escape_control(markdown(d), keep_newlines=True) for d in dicts)
        return _result(text, {"records": dicts})

    def remember(
        self,
        title: Annotated[str, Field(description="One line that will make sense in a search list.")],
        type: ObsType = "discovery",
        subtitle: Subtitle = None,
        narrative: Narrative = None,
        facts: Facts = None,
        concepts: Tags = None,
        files_read: FilesRead = None,
        files_modified: FilesModified = None,
        project: ProjectToWrite = None,
        key: Key = None,
        supersedes: Supersedes = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        with self.memory() as memory:
            obs = memory.add(
                title, type=type, subtitle=subtitle, narrative=narrative, facts=facts, concepts=concepts,
                files_read=files_read, files_modified=files_modified, project=self._project(memory, project),
                key=key, supersedes=supersedes, agent=client_agent(ctx),
            )  # fmt: skip
            found = [] if supersedes else [c.to_json() for c in memory.candidates(obs.id)]
        row = {"id": obs.id, "uid": obs.uid, "uri": obs.uri, "project": obs.project, "tokens": obs.tokens,
               "candidates": found}  # fmt: skip
        text = f"remembered #{obs.id} in {escape_control(obs.project)} ({obs.uri})"
        for c in found:
            marked = " (marked maybe replaced)" if c["inferred"] else ""
            text += (f"\nmay replace #{c['id']} {escape_control(' '.join(c['title'].split()))[:100]}{marked}; "
                     f"if it does, remember with supersedes=[{c['id']}] or run `{c['confirm']}`")  # fmt: skip
        return _result(text, row)

    def context(
        self,
        project: ScopedProject = None,
        budget: Budget = 1500,
        all_projects: AllProjects = False,
    ) -> CallToolResult:
        with self.memory() as memory:
            project, scope_note = _scope(memory, project, all_projects)
            briefing = memory.context(
                project, all_projects=project is None, budget=budget, reminder=MCP_REMINDER
            )
        structured = as_dict(briefing)
        if scope_note:
            structured["notes"] = [scope_note]
        for row in structured["observations"]:
            _with_uri(row)
        return _result(escape_control(briefing.text, keep_newlines=True), structured)

    def invalidate(
        self,
        id: Annotated[Int | str, Field(description="The memory's id (or uid) from `search` or `get`.")],
        reason: Annotated[str | None, Field(description="Why it no longer holds, in a few words.")] = None,
    ) -> CallToolResult:
        with self.memory() as memory:
            obs = memory.invalidate(id, reason=reason)
        row = {"id": obs.id, "uid": obs.uid, "uri": obs.uri, "invalidated": obs.invalidated}
        return _result(f"invalidated #{obs.id}: {escape_control(obs.invalidated or '')}", row)

    def restore(
        self, id: Annotated[Int | str, Field(description="The invalidated memory's id (or uid).")]
    ) -> CallToolResult:
        with self.memory() as memory:
            obs = memory.restore(id)
        row = {"id": obs.id, "uid": obs.uid, "uri": obs.uri, "invalidated": obs.invalidated}
        return _result(f"restored #{obs.id}", row)

    def projects(self) -> CallToolResult:
        with self.memory() as memory:
            rows = memory.projects()
        lines = [
            f"{row['project']}: {row['observations']} observations, last {(row['last'] or '')[:10]}"
            for row in rows
        ]
        return _result(escape_control("\n".join(lines) or "no projects yet"), {"projects": rows})

    @staticmethod
    def _project(memory: Memory, project: str | None) -> str:
        """The project a write is for: the one given, else the server's repository's. A
        desktop client starts the server in `/`, where no repository names one: then the caller must."""
        if project:
            return project
        if named_project():  # $CMEM_PROJECT, or a folder that names one: the repository's, if it is in one
            return memory.project_here(claim=True)
        known = ", ".join(row["project"] for row in memory.projects()) or "none yet"
        raise InvalidInput(
            f"no project: the server runs outside a git repository; pass project (known: {known})"
        )

    def read_observation(self, uid: str) -> str:
        """The resource ``cmem://observation/<uid>``: the observation as its markdown file reads."""
        from cmem_cli.api import markdown

        try:
            with self._lock:
                if self._memory is None:
                    self._memory = Memory(config=self.config)
                found = self._memory.find(uid)
                record = self._memory.get(found.id)[0]
        except (NotFound, InvalidInput) as exc:  # -32602: the MCP revision the SDK speaks
            raise ResourceNotFoundError(exc.message) from None
        return markdown(record)


def _argument(field: QueryField) -> inspect.Parameter:
    """The MCP ``search`` tool's argument for one Query field: its type, bounds, description and default
    (the Query's unless the table gives MCP its own)."""
    value = field.mcp_default if field.mcp_default is not SAME else default(field)
    hint: Any = STRICT.get(field.value, field.value)
    if is_list(field):
        hint = Strings
    elif value is None:
        hint = hint | None
    bounds = {"ge": field.mcp_range[0], "le": field.mcp_range[1]} if field.mcp_range else {}
    description = field.description
    if field.choices and not is_list(field):
        description = f"{description.rstrip('.')}: {', '.join(field.choices)}."
    annotation = Annotated[hint, Field(description=description, **bounds)]
    return inspect.Parameter(
        field.mcp_name, inspect.Parameter.KEYWORD_ONLY, default=value, annotation=annotation
    )


def search_signature() -> inspect.Signature:
    """What the ``search`` tool takes: every Query field (its table, in order), with ``all_projects``
    after ``project``. The SDK reads a tool's input schema from its signature."""
    params: list[inspect.Parameter] = []
    for field in QUERY_FIELDS:
        params.append(_argument(field))
        if field.name == "project":
            params.append(
                inspect.Parameter(
                    "all_projects", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=AllProjects
                )
            )
    return inspect.Signature(params)


def timeline_signature() -> inspect.Signature:
    """What the ``timeline`` tool takes: the anchor or a query, how many items around it, then every filter
    (the one table, in order; the project scopes the query's hit, the others keep the items they match)."""
    from cmem_cli.core.filters import FILTERS
    from cmem_cli.core.query_fields import filter_field

    keyword = inspect.Parameter.KEYWORD_ONLY
    query = Annotated[str | None, Field(description="Instead of an anchor: its best keyword match.")]
    params = [
        inspect.Parameter("anchor", keyword, default=None, annotation=Ref),
        inspect.Parameter("query", keyword, default=None, annotation=query),
        inspect.Parameter("before", keyword, default=5, annotation=Around),
        inspect.Parameter("after", keyword, default=5, annotation=Around),
    ]
    for f in FILTERS:
        if f.name == "project":
            params.append(inspect.Parameter("project", keyword, default=None, annotation=Project))
        else:
            params.append(_argument(filter_field(f)))
    return inspect.Signature(params)


def _scope(memory: Memory, project: str | None, all_projects: bool) -> tuple[str | None, str | None]:
    """The project a read covers (None: every project) and, when the call named neither ``project`` nor
    ``all_projects``, the note saying which default it took (the server's git repository's project,
    elsewhere every project)."""
    if project and all_projects:
        raise ToolError("give project or all_projects, not both")
    if project or all_projects:
        return project or None, None
    default, why = memory.default_scope()
    if why is None:  # $CMEM_PROJECT: named by the user
        return default, None
    if default is None:
        return None, f"scope: all projects ({why}); pass project for one"
    return default, f"scope: project {default} ({why}); all_projects=true for every project"


def client_agent(ctx: Context | None) -> str:
    """Who remembers: ``$CMEM_AGENT`` when set, else the client's name from its MCP ``initialize``
    (``clientInfo.name``: "claude-code", "cursor-vscode"...), else ``mcp``. The session is never guessed:
    ``$CMEM_SESSION`` when the client's configuration sets it, else none."""
    named = os.environ.get("CMEM_AGENT")
    if named:
        return named
    try:
        params = ctx.session.client_params if ctx is not None else None
    except (AttributeError, LookupError, ValueError):  # called outside a request (a test, a script)
        params = None
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    agent = _AGENT_CHARS.sub("-", str(name).lower()).strip("-.")[:40]
    return agent or "mcp"


_AGENT_CHARS = re.compile(r"[^a-z0-9._/-]+")


def _hit_json(hit: Hit) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": hit.id, "uid": hit.uid, "kind": hit.kind, "type": hit.type, "title": hit.title,
        "project": hit.project, "created_at": hit.created_at, "score": hit.score, "tokens": hit.tokens,
        "stale": hit.stale, "drifted": hit.drifted, "behind": hit.behind, "branch": hit.branch, "machine": hit.machine,
        "superseded_by": hit.superseded_by, "possibly_superseded_by": hit.possibly_superseded_by,
    }  # fmt: skip
    if hit.kind == "document":
        row["path"], row["line"] = hit.path, hit.line
    if hit.signals is not None or hit.stages is not None:  # asked for with explain
        row["signals"], row["stages"] = hit.signals, hit.stages
    return _with_uri(row)


def _with_uri(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("kind", "observation") == "observation" and row.get("uid"):
        row["uri"] = citation_uri(row["uid"])
    return row


def _row_line(row: dict[str, Any]) -> str:
    """``12 2025-01-31 decision Title [project] ~76t``: the same cells as `cmem search`'s plain output."""
    cost = f" ~{row['tokens']}t" if row.get("tokens") is not None else ""
    where = f" [{row['project']}]" if row.get("project") else ""
    date = (row.get("created_at") or "")[:10]
    title = title_marks(row) + str(row["title"])
    return escape_control(f"{row['id']} {date} {row['type']} {title}{where}{cost}")


def _result(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def build_server(config: Config) -> tuple[CmemMCPServer, Tools]:
    """The server with cmem's tools and the observation resource template registered."""
    tools = Tools(config)
    server = CmemMCPServer(
        name="cmem", title="cmem memory", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    def search(**arguments: Any) -> CallToolResult:
        return tools.search(**arguments)

    search.__signature__ = search_signature()  # type: ignore[attr-defined]

    def timeline(**arguments: Any) -> CallToolResult:
        return tools.timeline(**arguments)

    timeline.__signature__ = timeline_signature()  # type: ignore[attr-defined]
    registered: list[tuple[Callable[..., Any], str, ToolAnnotations]] = [
        (search, SEARCH_DESCRIPTION, READ_ONLY),
        (timeline, TIMELINE_DESCRIPTION, READ_ONLY),
        (tools.get, GET_DESCRIPTION, READ_ONLY),
        (tools.remember, REMEMBER_DESCRIPTION, WRITE),
        (tools.invalidate, INVALIDATE_DESCRIPTION, WRITE),
        (tools.restore, RESTORE_DESCRIPTION, WRITE),
        (tools.context, CONTEXT_DESCRIPTION, READ_ONLY),
        (tools.projects, PROJECTS_DESCRIPTION, READ_ONLY),
    ]
    for fn, description, hints in registered:
        server.add_tool(fn, description=description, annotations=hints, structured_output=False)
    server.resource(
        URI_PREFIX + "{uid}",
        name="observation",
        description="One cmem observation in full (front matter and body), by its stable uid.",
        mime_type="text/markdown",
    )(tools.read_observation)
    return server, tools


def serve(config: Config) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin: the SDK's server alone (``CMEM_MCP_FRONT=off``;
    `cmem mcp` itself starts with :mod:`cmem_cli.mcp.front`, which answers the handshake first)."""
    server, tools = build_server(config)
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        tools.close()
    return 0
