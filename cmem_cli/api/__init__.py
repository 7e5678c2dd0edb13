"""cmem as a Python library: one object over the store, the write service, retrieval and the briefing.

    from cmem_cli.api import Memory

    with Memory() as memory:              # the home the CLI would use ($CMEM_HOME, config file, XDG)
        obs = memory.add("Pin apsw to 3.45", type="decision", facts=["3.46 broke the tokenizer"])
        for hit in memory.search("apsw"):
            print(hit.id, hit.title, hit.tokens)

Every method validates as the CLI does (same limits, privacy stripping, redaction), returns one typed result
per concept (named tuples, and lists of them that keep the JSON they came from: ``to_json()`` is what the
CLI prints) and raises typed errors (:class:`CmemError` and subclasses; exit codes are the CLI's business).
A search is a :class:`Query`. Nothing is printed. Front ends (the CLI, MCP, capture through
:attr:`Memory.recorder`, view, sync) stand on this module rather than on the services, and reach the search
index, its collections and models through :attr:`Memory.index` rather than the index package.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from cmem_cli.core.config import Config, default_agent, default_session, load_config
from cmem_cli.core.errors import (
    CmemError,
    DatabaseBusy,
    DatabaseCorrupt,
    InvalidInput,
    InvalidRecord,
    ModelError,
    NotFound,
    StorageError,
    UsageError,
)
from cmem_cli.core.query import Query

if TYPE_CHECKING:
    from cmem_cli.api.index import Index, Models
    from cmem_cli.api.recorder import Recorder
    from cmem_cli.core.hit_types import ObservationHit
    from cmem_cli.core.json_types import CandidateJson, ProjectJson, RebuildJson, SessionJson, StatsJson
    from cmem_cli.core.pages import Row, Rows, SearchPage, Timeline
    from cmem_cli.core.results import (
        Briefing,
        Document,
        Hit,
        Link,
        Observation,
        Prompt,
        Record,
        ReplacementCandidate,
        Session,
        Summary,
        TimelineItem,
        as_dict,
        citation_uri,
    )
    from cmem_cli.core.sync_report import RemoteStatus, SyncReport
    from cmem_cli.remote import Remote
    from cmem_cli.services.inbound.adopt import AdoptReport
    from cmem_cli.services.read.recall import Recall
    from cmem_cli.services.read.search_pipeline import Reader
    from cmem_cli.services.read.window import WindowJson
    from cmem_cli.services.truth.anchor_record import Verified
    from cmem_cli.services.upkeep.doctor_report import DoctorReport
    from cmem_cli.services.write.service import WriteService
    from cmem_cli.store.repository import Store
    from cmem_cli.store.row_types import SessionRow
    from cmem_index.collections import Collection
    from cmem_index.importer import ImportResult
    from cmem_index.indexer import IndexReport
    from cmem_index.watcher import Watcher

# The result types load on first use (module ``__getattr__`` below): the CLI's hot path (`cmem search`,
# `cmem add`) reads JSON rows and never builds a named tuple, so it does not pay for defining them.
_RESULTS = frozenset(
    ["as_dict", "citation_uri", "Observation", "Hit", "Link", "TimelineItem", "Summary", "Prompt",
     "Document", "Session", "Briefing", "Record", "ReplacementCandidate"]
)  # fmt: skip
_PAGES = frozenset(["Rows", "SearchPage", "Timeline"])
# What ``Memory.index`` returns (its face, the models' face, a pass's report, a collection, the watcher, an
# imported checkpoint), each from the module that defines it, loaded when asked for as the rest.
_INDEX_TYPES = {
    "Index": "cmem_cli.api.index",
    "Models": "cmem_cli.api.index",
    "IndexReport": "cmem_index.indexer",
    "Collection": "cmem_index.collections",
    "Watcher": "cmem_index.watcher",
    "ImportResult": "cmem_index.importer",
    "SyncReport": "cmem_cli.core.sync_report",
    "RemoteStatus": "cmem_cli.core.sync_report",
    "Remote": "cmem_cli.remote",
    "DoctorReport": "cmem_cli.services.upkeep.doctor_report",
}


def __getattr__(name: str) -> object:
    if name in _RESULTS:
        from cmem_cli.core import results

        return getattr(results, name)
    if name in _PAGES:
        from cmem_cli.core import pages

        return getattr(pages, name)
    if name in _INDEX_TYPES:
        import importlib

        return getattr(importlib.import_module(_INDEX_TYPES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Memory", "Query", "as_dict", "citation_uri", "Observation", "Hit", "Link", "TimelineItem", "Timeline",
    "Summary", "Prompt", "Document", "Session", "Briefing", "Record", "Rows", "SearchPage", "markdown",
    "scrub", "scrub_record", "strip_private", "excluded_project", "CmemError", "InvalidRecord", "NotFound",
    "InvalidInput", "UsageError", "DatabaseBusy", "DatabaseCorrupt", "StorageError", "ModelError",
    "Index", "Models", "IndexReport", "Collection", "Watcher", "ImportResult", "SyncReport", "Remote",
    "RemoteStatus", "DoctorReport",
]  # fmt: skip

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _taking(
    make: Callable[_P, Query],
) -> Callable[[Callable[[Memory, Query], _R]], Callable[Concatenate[Memory, _P], _R]]:
    """A method that takes a :class:`Query` takes the Query's own arguments too, so the search options are
    declared once (by ``Query.__init__``) and checked by the type checker for every caller:
    ``m.search("apsw", limit=5)`` is ``m.search(Query("apsw", limit=5))``, and ``m.search(query)`` passes a
    built one as it is."""

    def decorate(method: Callable[[Memory, Query], _R]) -> Callable[Concatenate[Memory, _P], _R]:
        @functools.wraps(method)
        def call(self: Memory, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            return method(self, make(*args, **kwargs))

        return call

    return decorate


_asks = _taking(Query)


def _session(row: SessionRow) -> Session:
    from cmem_cli.core.results import Session

    return Session.from_json(_session_json(row))


def _session_json(row: SessionRow) -> SessionJson:
    """A session row as JSON: times in ISO-8601, without the internal row id (its other keys, a listing's
    counts among them, kept in their order)."""
    from cmem_cli.core.timeutil import to_iso

    out: dict[str, Any] = dict(row)
    out.pop("id", None)
    for key in ("started_at", "completed_at", "last_activity_at"):
        out[key] = to_iso(out.get(key))
    return cast("SessionJson", out)


def _strings(name: str, values: object) -> list[str]:
    """``values`` as a list of strings; anything else (a bare string would become a list of characters) is
    :class:`InvalidInput` naming the field."""
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidInput(f"{name} must be a list of strings, not {type(values).__name__}")
    out = list(values)
    if not all(isinstance(value, str) for value in out):
        raise InvalidInput(f"{name} must be a list of strings")
    return out


class Memory:
    """A cmem home opened for reading and writing. Use it as a context manager, or call :meth:`close`.

    ``home`` is resolved as ``cmem --home`` is: ``None`` means ``$CMEM_HOME``, the config file, else
    ``$XDG_DATA_HOME/cmem``. The database opens on first use, so creating a Memory costs almost nothing.
    """

    def __init__(self, home: str | Path | None = None, *, config: Config | None = None):
        self.config = config or load_config(None if home is None else str(home))
        self._service: WriteService | None = None
        self._reader: _StoreReader | None = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        service, reader = self._service, self._reader
        self._service = self._reader = None
        for opened in (service, reader):
            if opened is not None:
                opened.close()

    @property
    def service(self) -> WriteService:
        """The write service (:class:`cmem_cli.services.write.service.WriteService`) behind this object, opened on first use."""
        if self._service is None:
            from cmem_cli.services.write.service import WriteService

            self._service = WriteService.open(self.config)
        return self._service

    @property
    def reader(self) -> Reader:
        """What the read methods need (``.config`` and ``.store``): the write service if it is open, else
        the store alone. Opening the store alone skips the exporter and the privacy filter, which a
        `cmem search` run many times a minute by hooks and scripts should not pay for."""
        if self._service is not None:
            return self._service
        if self._reader is None:
            self._reader = _StoreReader.open(self.config)
        return self._reader

    # -- projects ------------------------------------------------------------------------------------------
    def project_here(self, cwd: str | Path | None = None, *, claim: bool = False) -> str:
        """The project work in ``cwd`` (default: the current directory) files under: ``$CMEM_PROJECT``, else
        its git repository's project (every worktree and clone of one repository shares it; see
        :mod:`cmem_cli.core.repo_identity`), else the folder's name (``default`` in `/`). With ``claim`` a
        repository new to this home records its name (a write, once), as a write's default does."""
        return self._named_project(cwd, claim=claim) or "default"

    def _named_project(self, cwd: str | Path | None, *, claim: bool) -> str | None:
        import os

        return os.environ.get("CMEM_PROJECT") or self.project_of(_cwd(cwd), claim=claim)

    def project_of(self, directory: str | Path, *, claim: bool = False) -> str | None:
        """The project of work done in ``directory`` whatever ``$CMEM_PROJECT`` says (a transcript names
        where its session ran): its git repository's project, else the folder's name; None for `/`."""
        from cmem_cli.core.repo_identity import repository_identity

        identity = repository_identity(directory)
        if identity is None:
            return Path(directory).name or None
        store = self.service.store if claim else self.reader.store
        return store.projects.name_for(identity, claim=claim)

    def default_scope(self, cwd: str | Path | None = None) -> tuple[str | None, str | None]:
        """The project a read that names none covers, and why: ``$CMEM_PROJECT`` (the reason is then None:
        the user named it); inside a git repository, that repository's project; elsewhere (a home folder,
        cron, an MCP client started in `/`) every project (None). The reason is a few words for a front
        end's note (``this git repository``)."""
        import os

        from cmem_cli.core.repo_identity import repository_identity

        named = os.environ.get("CMEM_PROJECT")
        if named:
            return named, None
        identity = repository_identity(_cwd(cwd))
        if identity is None:
            return None, "not inside a git repository"
        return self.reader.store.projects.name_for(identity, claim=False), "this git repository"

    def _defaults(
        self, project: str | None, agent: str | None, session: str | None, cwd: str | Path | None
    ) -> dict[str, str | None]:
        """Project, agent and session as the CLI defaults them (the repository's project, $CMEM_AGENT,
        $CMEM_SESSION)."""
        return {
            "project": project or self.project_here(cwd, claim=True),
            "agent": agent or default_agent(),
            "session": session or default_session(),
        }

    # -- writing -------------------------------------------------------------------------------------------
    def add(
        self,
        title: str,
        *,
        type: str = "change",
        subtitle: str | None = None,
        narrative: str | None = None,
        facts: Iterable[str] | None = None,
        concepts: Iterable[str] | None = None,
        files_read: Iterable[str] | None = None,
        files_modified: Iterable[str] | None = None,
        tools_used: Iterable[str] | None = None,
        project: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        key: str | None = None,
        confidence: float | None = None,
        links: Iterable[str] | None = None,
        cwd: str | Path | None = None,
        supersedes: int | str | Sequence[int | str] | None = None,
    ) -> Observation:
        """Record one observation (with ``key``: replace the project's observation with that key).

        ``links`` are ``"TYPE:ID"`` strings as for ``cmem add --link``; ``supersedes`` names the memory (or
        memories, by id or uid) this one replaces, as ``cmem add --supersedes`` does. Project, agent and
        session default as the CLI's do (the git repository's name, ``$CMEM_AGENT``, ``$CMEM_SESSION``).
        Files are anchored in their git work tree (docs/truth.md); relative paths are resolved against
        ``cwd`` (default: the current directory)."""
        record = {
            "type": type, "title": title, "subtitle": subtitle, "narrative": narrative,
            "facts": _strings("facts", facts), "concepts": _strings("concepts", concepts),
            "files_read": _strings("files_read", files_read),
            "files_modified": _strings("files_modified", files_modified),
            "tools_used": _strings("tools_used", tools_used), "key": key, "confidence": confidence,
            "links": _strings("links", links),
            "supersedes": list(supersedes) if isinstance(supersedes, list | tuple) else supersedes,
        }  # fmt: skip
        defaults = self._defaults(project, agent, session, cwd)
        row = self.service.records.add_observation(record, defaults, cwd=_cwd(cwd), candidates=True)
        return self._observation(int(row["id"]))

    def add_many(
        self,
        records: Sequence[dict[str, Any]],
        *,
        project: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        cwd: str | Path | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        report: list[list[CandidateJson]] | None = None,
    ) -> list[int]:
        """Record several observations (dicts in the JSON record format) in one transaction: all or none.

        Every record is validated before anything is written; the first invalid one raises
        :class:`InvalidRecord` (an :class:`InvalidInput`) carrying its position. Returns the new ids.
        Files are anchored as :meth:`add` anchors them. ``progress(phase, done, total)`` hears how far
        checking (``prepare``) and writing (``write``) have come. ``report``, a list, receives each new
        record's replacement candidates (:meth:`candidates`), in order; without it, only an import of at
        most 50 records is compared with what it may replace (a larger one is history brought in)."""
        service = self.service
        defaults = self._defaults(project, agent, session, cwd)
        prepared = []
        for index, record in enumerate(records):
            try:
                prepared.append(service.records.prepare(record, defaults))
            except InvalidInput as exc:
                raise InvalidRecord(index, exc.message) from None
            if progress is not None and index % 1000 == 999:
                progress("prepare", index + 1, len(records))
        rows = service.records.add_observations(
            prepared, cwd=_cwd(cwd), progress=progress, candidates=True if report is not None else None
        )
        if report is not None:  # what each new record may replace, as `cmem add --format json` tells it
            report.extend(list(row.get("candidates") or []) for row in rows)
        return [int(row["id"]) for row in rows]

    def edit(
        self,
        id: int | str,
        *,
        add_facts: Iterable[str] | None = None,
        cwd: str | Path | None = None,
        **changes: object,
    ) -> Observation:
        """Change fields (the names of :meth:`add`'s parameters; ``None`` clears an optional one).

        ``links`` adds links; ``add_facts`` appends to the facts (after ``facts``, if given, replaced them);
        the others replace the field's value. The markdown file is rewritten. Files the edit cites anew
        are anchored in git (relative paths resolved against ``cwd``, default the current directory);
        those it no longer cites leave the anchor; the others keep what they were anchored to."""
        obs_id = self._write_id(id)
        appended = _strings("add_facts", add_facts)
        if appended:
            current = (
                _strings("facts", changes["facts"]) if "facts" in changes else self.observation(obs_id).facts
            )
            changes["facts"] = [*current, *appended]
        if not changes:
            raise InvalidInput("nothing to change")
        if "type" in changes and changes["type"] is None:
            raise InvalidInput("field 'type' cannot be cleared")
        for name in ("facts", "concepts", "files_read", "files_modified", "tools_used", "links"):
            if name in changes:
                changes[name] = _strings(name, changes[name])
        row = self.service.records.edit_observation(obs_id, changes, cwd=_cwd(cwd))
        return self._observation(row["id"])

    def forget(self, *ids: int | str) -> list[int]:
        """Delete observations and their files; returns the ids deleted. Observations linking to them are
        re-exported without the link."""
        if not ids:
            raise InvalidInput("no observation ids given")
        from cmem_cli.core.briefing_cache import drop

        forgotten = self.service.records.forget([self._write_id(i) for i in ids])
        drop(self.config.home)  # the SessionStart briefing kept may show one of them
        return forgotten

    def invalidate(self, id: int | str, *, reason: str | None = None) -> Observation:
        """Say an observation no longer holds (``cmem invalidate``): it is kept, and its file and the team
        database say so, but search, context and the briefing leave it out; :meth:`get` shows it with
        ``invalidated`` (the reason). :meth:`restore` undoes it."""
        if reason is not None and not isinstance(reason, str):
            raise InvalidInput("reason must be a string")
        row = self.service.records.invalidate(self._write_id(id), reason)
        return self._observation(row["id"])

    def restore(self, id: int | str) -> Observation:
        """Undo :meth:`invalidate`: the observation comes back whole, current again."""
        row = self.service.records.restore(self._write_id(id))
        return self._observation(row["id"])

    def link(self, from_id: int | str, type: str, to_id: int | str, *, remove: bool = False) -> Observation:
        """Link two observations (``link(14, "caused_by", 9)``) or, with ``remove``, unlink them."""
        row = self.service.records.link(self._write_id(from_id), self._write_id(to_id), type, remove=remove)
        return self._observation(row["id"])

    def candidates(self, id: int | str) -> list[ReplacementCandidate]:
        """The older memories observation ``id`` may replace, best first (at most 3): what :meth:`add`
        compared it with when it was recorded (the same subject in its project or session, stated as a
        change); ``inferred`` ones are marked maybe replaced. Confirm one with
        ``link(id, "supersedes", candidate.id)``."""
        from cmem_cli.core.results import ReplacementCandidate
        from cmem_cli.services.truth import candidates

        store = self.reader.store
        row = store.observations.get(self.resolve_id(id))
        found = candidates.find(store, row, infer=False)
        return [ReplacementCandidate.from_json(c.as_dict(int(row["id"]))) for c in found]

    def observation(self, id: int | str) -> Observation:
        """Observation ``id`` without counting a retrieval (:meth:`get` counts one); :class:`NotFound` if
        there is none."""
        return self._observation(self.resolve_id(id))

    def resolve_id(self, ref: int | str) -> int:
        """The id of the observation ``ref`` names: an id, a uid (the same on every machine) or a unique uid
        prefix of six or more characters; :class:`NotFound` if none, :class:`InvalidInput` (listing the
        candidates) if the prefix is ambiguous. Every method that takes an observation resolves through it."""
        return self._resolve_on(self.reader.store, ref)

    def _write_id(self, ref: int | str) -> int:
        """:meth:`resolve_id` on the write connection (a write method opens it anyway)."""
        return self._resolve_on(self.service.store, ref)

    @staticmethod
    def _resolve_on(store: Store, ref: int | str) -> int:
        from cmem_cli.services.read.search_pipeline import resolve_observation

        if isinstance(ref, bool) or not isinstance(ref, int | str):
            raise InvalidInput(f"not an observation id: {ref!r}")
        return resolve_observation(store, ref)

    def _observation(self, obs_id: int) -> Observation:
        """The stored observation without counting a retrieval (writes return what they stored)."""
        from cmem_cli.core.results import Observation
        from cmem_cli.services.read.details import observation_record

        reader = self.reader
        return Observation.from_json(observation_record(reader, reader.store.observations.get(obs_id)))

    # -- the three retrieval layers ------------------------------------------------------------------------
    @_asks
    def search(self, query: Query) -> SearchPage:
        """First layer: compact hits, best first (``cmem search``). No words list observations by the filters.

        Takes a :class:`Query`, or :class:`Query`'s arguments (``search("apsw", project="demo", limit=5)``):
        ``mode`` auto uses the index when it is there and falls back to the store's keyword search otherwise
        (see ``notes``); ``min_score`` None is the calibrated evidence cut-off; ``limit`` 0 returns every hit;
        ``branch`` None weighs memories of git branches not merged into the current HEAD below this line's
        (not last), ``"all"`` does not, a name keeps only the memories recorded on that branch (docs/truth.md). Returns a
        :class:`SearchPage`: typed :class:`Hit` items plus ``mode``, ``notes``, ``total`` (a lower bound when
        ``capped``) and ``to_json()``, the rows `cmem search --json` prints (paths relative). ``team``
        searches the team database this home joined (:class:`UsageError` if none) through the same stages:
        its rows carry ``superseded_by``, ``stale``, ``branch`` and ``machine`` as this home's do, ``id``
        being this home's id where it holds the memory, else the uid."""
        from cmem_cli.services.read.search_pipeline import search as run_search

        if query.team:
            from cmem_cli.team.source import team_source

            with team_source(self.reader) as source:
                return run_search(self.reader, query, source=source)
        return run_search(self.reader, query)

    def several_machines(self) -> bool:
        """Does this home hold memories written on more than one machine (git sync, a team database)?
        Tables show whose each row is then."""
        return self.reader.store.stats.several_machines()

    def window(
        self, query: Query | str | None = None, *, limit: int = 2000, cwd: str | Path | None = None
    ) -> WindowJson:
        """Everything recorded in a span of time, in full, newest first: what `cmem view` draws.

        The words and filters are ``query``'s (a :class:`Query`; words match as keyword search matches them,
        no vectors; its paging and ranking options do not apply). At most ``limit`` observations (the newest)
        and as many prompts and summaries of the span they cover;
        the JSON-ready dict has ``items`` (observations, prompts and summaries with every field and the
        absolute ``path`` of their file), ``sessions`` (by id), ``links`` (``from``, ``to``, ``type``: every
        link from or to a shown observation), ``others`` (the far ends of those links that are not shown, by
        id), ``observations`` (``shown``, ``total``, ``total_bounded``, ``capped``), ``since`` and
        ``until``. An observation's ``updated_at`` is None unless it changed after it was made; it carries
        ``stale`` and ``branch`` as search rows do, ``unmerged`` (recorded on a branch whose work the
        HEAD of the git work tree at ``cwd``, default the current directory, has not merged),
        ``superseded_by``, and ``possibly_superseded_by`` (what search infers for ``query``'s words; None without
        one). Nothing is counted as a retrieval."""
        from cmem_cli.services.read.search_pipeline import filters_of
        from cmem_cli.services.read.window import window

        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        query = query if isinstance(query, Query) else Query(query)
        reader = self.reader
        return window(
            reader.store,
            Path(reader.config.export_dir),
            filters_of(query, reader.store),
            query.text,
            limit=limit,
            cwd=_cwd(cwd),
        )

    def timeline(
        self,
        anchor: int | str | None = None,
        *,
        query: str | None = None,
        before: int = 5,
        after: int = 5,
        **filters: Any,
    ) -> Timeline:
        """Second layer: items around ``anchor`` (an id, ``S<n>`` or ``P<n>``) or around the best keyword
        match for ``query``, in time order: a :class:`Timeline` (``anchor``, ``project``, typed ``items``;
        ``to_json()`` is what `cmem timeline --json` prints). ``filters``: any of the Query's filters
        (``project``, ``machine``, ``type``...: :data:`cmem_cli.core.filters.FILTERS`); ``project`` scopes
        ``query``'s hit, the others keep the items they match (the anchor is always shown) and the hit."""
        from cmem_cli.core.filters import BY_NAME
        from cmem_cli.services.read.search_pipeline import filters_of, resolve_query_anchor
        from cmem_cli.services.read.search_pipeline import timeline as build_timeline

        unknown = sorted(set(filters) - set(BY_NAME))
        if unknown:
            raise TypeError(f"timeline() got an unexpected keyword argument {unknown[0]!r}")
        if (anchor is None) == (query is None):
            raise InvalidInput("give an anchor id or a query, not both")
        store = self.reader.store
        scoped = filters_of(Query(None, **filters), store)
        ref = resolve_query_anchor(store, query, scoped) if query is not None else str(anchor)
        around = type(scoped)(**{**scoped.fields(), "project": None, "folded": ()})  # the anchor's project
        from cmem_cli.core.pages import Timeline

        return Timeline(build_timeline(store, ref, before=before, after=after, filters=around))

    def verify(self, *ids: int | str, cwd: str | Path | None = None) -> list[Verified]:
        """Re-anchor observations to their cited files as they are now and record when (`cmem verify`):
        say they still hold. Each result has ``id``, ``verified`` and, when not verified, ``reason`` (no
        git work tree holds the files, or the repository is not on this machine). An observation that was
        never anchored is anchored to its files resolved against ``cwd`` (default: the current directory).
        :class:`NotFound` for an unknown id, before anything changes."""
        from cmem_cli.services.truth.anchor_record import verify

        if not ids:
            raise InvalidInput("no observation ids given")
        return verify(self.service, [self._write_id(i) for i in ids], cwd=_cwd(cwd))

    def stale(self, *, project: str | None = None) -> list[ObservationHit]:
        """Observations whose cited files changed or vanished since they were anchored (`cmem verify
        --stale`), oldest first: search rows with ``stale`` and ``branch``."""
        from cmem_cli.services.truth.stale import stale_rows

        return stale_rows(self.reader.store, project=project)

    def resolve_session(self, session_id: str) -> str | None:
        """The full id of the session ``session_id`` names (itself, or a unique prefix), None if none does.

        The one place a prefix is read: every other method takes a session id exactly, as a program passes
        it (``run-1`` is never ``run-10``). A front end resolves the ids people type here first."""
        return self.reader.store.sessions.resolve(session_id) if session_id else None

    def session_status(self, session_id: str) -> str | None:
        """The status (active, completed, ...) of session ``session_id``, None if there is none. Cheaper
        than :meth:`session`, which also counts its observations."""
        try:
            return str(self.reader.store.sessions.get(session_id)["status"])
        except NotFound:
            return None

    def get(self, *ids: int | str, links: bool = False, absolute_paths: bool = False) -> Rows[Record]:
        """Third layer: full records for ids (``12``, ``S3``, ``P7``, ``doc:docid``, ``PATH[:LINE[:COUNT]]``).

        Counts a retrieval of each observation, as ``cmem get`` does. With ``links``, also the observations
        linked to or from them (one hop). Typed items (:class:`Observation`, :class:`Summary`,
        :class:`Prompt`, :class:`Document`); ``to_json()`` is what `cmem get --json` prints. With
        ``absolute_paths`` each ``path`` is the file on this machine (as the CLI prints it) rather than
        relative to the export folder or its collection."""
        from cmem_cli.core.pages import records
        from cmem_cli.services.read.details import fetch_details, with_absolute_paths

        if not ids:
            raise InvalidInput("no ids given")
        reader = self.reader
        rows = fetch_details(reader, [str(i) for i in ids], follow_links=links)
        if absolute_paths:
            rows = [with_absolute_paths(reader.config, r) for r in rows]
        return records(rows)

    def find(self, uid: str) -> Observation:
        """The observation with this uid (the stable name in ``cmem://observation/<uid>``), without counting a
        retrieval; :class:`NotFound` if there is none."""
        if not isinstance(uid, str):
            raise InvalidInput(f"not a uid: {uid!r}")
        row = self.service.store.observations.by_uid(uid.strip().upper())
        if row is None:
            raise NotFound(f"no observation with uid {uid}")
        return self._observation(row["id"])

    def context(
        self,
        project: str | None = None,
        *,
        all_projects: bool = False,
        budget: int = 1500,
        reminder: str | None = None,
    ) -> Briefing:
        """The session-start briefing for ``project``; without one, for the :meth:`default_scope` (the
        current git repository's project, else every project), or with ``all_projects`` for every project.

        ``reminder`` replaces the closing line that tells how to drill down (by default: the CLI commands)."""
        from cmem_cli.core.results import Briefing
        from cmem_cli.services.read.briefing import REMINDER, build_context

        if budget < 1:
            raise InvalidInput("budget must be at least 1 token")
        if project and all_projects:
            raise InvalidInput("give a project or all projects, not both")
        if project is None and not all_projects:
            project = self.default_scope()[0]
        result = build_context(
            self.service.store,
            project,
            budget=budget,
            reminder=REMINDER if reminder is None else reminder,
        )
        return Briefing.from_json(result.as_json())

    def recall(
        self,
        point: str,
        subject: str,
        *,
        project: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        cwd: str | Path | None = None,
        lines: tuple[int, int] | None = None,
    ) -> Recall:
        """What the hooks would inject for a prompt (``point`` "prompt", ``subject`` its text) or a file
        read or edit ("file", ``subject`` its path), and why: every memory weighed, its score, the bar.
        ``session``: leave out what that session was given already (nothing is marked here); ``agent``:
        that agent's ``[recall]`` settings; ``lines``: the part of the file read (first, last). Recall
        that is off for the agent and point weighs nothing."""
        from cmem_cli.core.recall_settings import POINTS, recall_settings
        from cmem_cli.services.read.recall import Recall, file_recall, prompt_recall

        if point not in POINTS:
            raise InvalidInput(f"unknown recall point {point!r} (expected one of: {', '.join(POINTS)})")
        if not subject or not subject.strip():
            raise InvalidInput(f"recall needs a {'prompt' if point == 'prompt' else 'file path'}")
        where = _cwd(cwd)
        project = project or self.project_here(where)
        settings = recall_settings(self.config.section("recall"), agent)
        if not settings.enabled(point):
            return Recall(
                point, subject, project, None, [], None, note=f"{point} recall is off for this agent"
            )
        store = self.reader.store
        if point == "prompt":
            return prompt_recall(store, project, subject, settings, session=session, cwd=where)
        path = _repo_relative(subject, where)
        return file_recall(store, project, path, settings, session=session, cwd=where, lines=lines)

    def stats(self) -> StatsJson:
        """Counts of what is stored, by type and project, where it lives and its size: the JSON-ready dict
        `cmem stats --json` prints (times ISO-8601)."""
        from cmem_cli.core.timeutil import to_iso

        config = self.config
        data = self.reader.store.stats.counts()
        return {
            "counts": data["counts"],
            "by_type": data["by_type"],
            "by_project": data["by_project"],
            "first": to_iso(data["first"]),
            "last": to_iso(data["last"]),
            "database": str(config.db_path),
            "export_dir": str(config.export_dir),
            "database_bytes": config.db_path.stat().st_size,
        }

    def projects(self) -> list[ProjectJson]:
        """The projects memory holds, most recently active first: ``project``, ``observations`` (a count),
        ``last`` (ISO-8601 time of the latest observation), ``repository`` (the key of the git repository
        it stands for, None for a folder outside git or a name the store could not tie to one), ``mapped``
        (how that was learnt: ``claimed`` by the first write from it, or ``anchors``: the store migration
        read it off the project's anchored memories) and ``same_as`` (for an older name of a repository,
        kept apart, the name its work goes under now; else None)."""
        from cmem_cli.core.timeutil import to_iso

        store = self.reader.store
        keys = store.projects.mapping()
        main = {row["key"]: name for name, row in keys.items() if row["main"]}
        out: list[ProjectJson] = []
        for row in store.projects.activity():
            known = keys.get(row["project"])
            same_as = main.get(known["key"]) if known and not known["main"] else None
            out.append(
                {
                    "project": row["project"],
                    "observations": row["observations"],
                    "last": to_iso(row["last"]),
                    "repository": known["key"] if known else None,
                    "mapped": known["source"] if known else None,
                    "same_as": same_as,
                }
            )
        return out

    @property
    def export_dir(self) -> Path:
        """The folder of the markdown export (the home and its database are created if missing)."""
        return Path(self.reader.config.export_dir)

    def rebuild_export(self) -> RebuildJson:
        """Adopt hand edits and new files in the export tree, then regenerate every file from the database
        (never deletes a file): counts as `cmem export --rebuild --json` prints them."""
        from cmem_cli.services.upkeep.export_upkeep import rebuild_export

        return rebuild_export(self.service)

    # -- sessions, prompts, summaries ----------------------------------------------------------------------
    def start_session(
        self,
        session_id: str | None = None,
        *,
        project: str | None = None,
        agent: str | None = None,
        label: str | None = None,
        goal: str | None = None,
        resume: bool = False,
    ) -> Session:
        """Start a session (a new id is made when none is given); an existing one is kept as it is, or with
        ``resume`` reopened if it had ended (`cmem session start ID`)."""
        from cmem_cli.core.ids import new_uid

        row = self.service.sessions.ensure_session(
            session_id or new_uid().lower(),
            agent=agent or default_agent(),
            project=project or self.project_here(claim=True),
            label=label,
            goal=goal,
            resume=resume,
        )
        return _session(row)

    def end_session(
        self,
        session_id: str,
        *,
        status: str = "completed",
        outcome: str | None = None,
        next_steps: str | None = None,
    ) -> Session:
        row = self.service.sessions.end_session(
            session_id, status=status, outcome=outcome, next_steps=next_steps
        )
        return _session(row)

    def session(self, session_id: str) -> Session:
        """Session ``session_id`` (exactly: see :meth:`resolve_session`) with its ``prompts`` (number, text,
        time), ``summaries`` (ids) and ``observations`` (a count); ``to_json()`` is what `cmem session show
        --json` prints. :class:`NotFound` if there is none."""
        from cmem_cli.core.timeutil import to_iso

        store = self.reader.store
        found = store.sessions.get(session_id)
        full = found["session_id"]
        row = _session_json(found)
        row["prompts"] = [
            {"number": p["prompt_number"], "text": p["text"], "created_at": to_iso(p["created_at"])}
            for p in store.prompts.of_session(full)
        ]
        row["summaries"] = [f"S{s['id']}" for s in store.summaries.recent(session=full)]
        row["observations"] = store.observations.count_in_session(full)
        row["machine"] = store.sessions.machine(full)
        from cmem_cli.core.results import Session

        return Session.from_json(row)

    def session_ids(self) -> list[str]:
        """Every session id in the home (the CLI shows each by its shortest unique prefix)."""
        return list(self.reader.store.sessions.ids())

    def sessions(
        self,
        *,
        project: str | None = None,
        status: str | None = None,
        machine: str | None = None,
        limit: int = 20,
    ) -> Rows[Session]:
        """Recent sessions, most recently active first, each with its ``observations`` count and the
        ``machine`` it ran on (``machine``: only those); ``to_json()`` is what `cmem session list --json`
        prints."""
        from cmem_cli.core.pages import sessions

        rows = self.reader.store.sessions.recent(project=project, status=status, machine=machine, limit=limit)
        listed = [_session_json(row) for row in rows]
        return sessions(cast("list[Row]", listed))  # the page's edge: JSON rows, typed items on access

    def add_prompt(
        self, text: str, *, session: str, project: str | None = None, agent: str | None = None
    ) -> Prompt:
        """Record a user prompt in ``session``; returns it with its running number. Project and agent default
        to the session's (a new session gets ``default`` and ``cli``)."""
        row = self.service.sessions.add_prompt(session, text, project=project, agent=agent)
        return self._prompt(row["id"])

    def prompts(self, session: str) -> list[Prompt]:
        rows = self.service.store.prompts.of_session(session)
        return [self._prompt(row["id"]) for row in rows]

    def _prompt(self, prompt_id: int) -> Prompt:
        from cmem_cli.services.read.search_pipeline import prompt_row

        row = self.service.store.prompts.get(prompt_id)
        from cmem_cli.core.results import Prompt

        return Prompt.from_json({**prompt_row(row), "text": row["text"], "author": row.get("author")})

    def add_summary(
        self,
        session: str,
        fields: Mapping[str, str | None] | None = None,
        *,
        request: str | None = None,
        investigated: str | None = None,
        learned: str | None = None,
        completed: str | None = None,
        next_steps: str | None = None,
        notes: str | None = None,
        project: str | None = None,
        agent: str | None = None,
    ) -> Summary:
        """Record a session summary (several per session are fine), from its fields by name or from a dict of
        them (as read from JSON; an unknown name is :class:`InvalidInput`); ``None`` values are left out."""
        named = {
            "request": request, "investigated": investigated, "learned": learned, "completed": completed,
            "next_steps": next_steps, "notes": notes,
        }  # fmt: skip
        given = {k: v for k, v in [*(fields or {}).items(), *named.items()] if v is not None}
        row = self.service.sessions.add_summary(session, given, project=project, agent=agent)
        return self._summary(row["id"])

    def summaries(self, *, session: str | None = None, project: str | None = None) -> list[Summary]:
        rows = self.service.store.summaries.recent(session=session, project=project)
        return [self._summary(row["id"]) for row in rows]

    def _summary(self, summary_id: int) -> Summary:
        from cmem_cli.core.fields import SUMMARY_FIELDS
        from cmem_cli.services.read.search_pipeline import summary_row

        row = self.service.store.summaries.get(summary_id)
        from cmem_cli.core.results import Summary

        return Summary.from_json(
            {**summary_row(row), **{f: row.get(f) for f in SUMMARY_FIELDS}, "author": row.get("author")}
        )

    # -- capture -------------------------------------------------------------------------------------------
    @property
    def recorder(self) -> Recorder:
        """The writes of a front end that records what happens as it happens (the Claude Code hooks, the
        transcript importer): cheap, id-returning, inside one transaction with its own bookkeeping. See
        :class:`cmem_cli.api.recorder.Recorder`."""
        from cmem_cli.api.recorder import Recorder

        return Recorder(self)

    # -- upkeep --------------------------------------------------------------------------------------------
    def adopt_edits(self, paths: Sequence[Path] | None = None) -> AdoptReport:
        """Adopt what people changed in the export tree since cmem last wrote it (or only ``paths``): edited
        files update their observation, new files add one, deleted files forget theirs. Returns the
        :class:`cmem_cli.services.inbound.adopt.AdoptReport` (`cmem sync` without a remote prints it)."""
        from cmem_cli.services.inbound.sync_local import sync_local

        return sync_local(self.service, list(paths) if paths is not None else None)

    # -- the remote ----------------------------------------------------------------------------------------
    @property
    def remote(self) -> Remote | None:
        """This home's remote (a git repository or a team database), or None: one face for both
        (:class:`cmem_cli.remote.Remote`: ``sync``, ``pull``, ``push``, ``status``, each exchange
        returning a :class:`SyncReport`). A failed exchange carries what it did as ``exc.sync_report``."""
        from cmem_cli.remote import of_home

        return of_home(self.service)

    def remote_at(self, url: str) -> Remote:
        """The remote ``url`` names (``postgresql://``: a team database; else git), for ``init``: `cmem
        sync init URL`. UsageError when this home already syncs with the other kind."""
        from cmem_cli.remote import at_url

        return at_url(self.service, url)

    def open_for_writes(self) -> None:
        """Open the write service now, so that the reads before a write share its connection."""
        self.service  # noqa: B018 - opened on first use

    def doctor(self, *, fix: bool = False, full: bool = False) -> DoctorReport:
        """Check the database's integrity and the export tree (`cmem doctor --json`); ``fix`` repairs what it
        safely can. Opens the home itself, so it also reports a store that cannot be opened. The export
        tree is checked by stat unless ``full`` (or ``fix``) renders every memory and compares its file."""
        from cmem_cli.services.upkeep.doctor import diagnose

        return diagnose(self.config, fix=fix, full=full)

    def remote_status(self) -> RemoteStatus | None:
        """This home's remote (None without one): which remote (no password), when it last synced and
        pulled, how many local writes wait to be pushed, and the last refused push; its ``to_json()`` is
        `cmem status --json`'s ``remote``. Reads what the last sync recorded; never reaches the remote."""
        from cmem_cli.services.inbound.remote_state import remote_status

        return remote_status(self.reader)

    # -- the index -----------------------------------------------------------------------------------------
    @property
    def index(self) -> Index:
        """The search index (:class:`cmem_cli.api.index.Index`): build, status, collections, models."""
        from cmem_cli.api.index import Index

        return Index(self.config)


def _repo_relative(path: str, cwd: str) -> str:
    """A file as the hooks cite it: relative to its repository's top folder (where an agent works), else
    to ``cwd``, when it lies inside; as given otherwise."""
    import os

    full = os.path.normpath(os.path.join(cwd, path))
    top = cwd
    while top != os.path.dirname(top) and not os.path.exists(os.path.join(top, ".git")):
        top = os.path.dirname(top)
    base = top if os.path.exists(os.path.join(top, ".git")) else cwd
    rel = os.path.relpath(full, base)
    return full if rel.startswith("..") else rel


def _cwd(value: str | Path | None) -> str:
    """The folder relative file paths are resolved against: the caller's, else the current directory."""
    import os

    if value is not None:
        return os.path.abspath(value)
    try:
        return os.getcwd()
    except OSError:  # the current directory was deleted: nothing relative can be resolved, or anchored
        return os.sep


def _listed(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def markdown(record: Record | dict[str, Any]) -> str:
    """A full record (from :meth:`Memory.get` or :meth:`Memory.records`) as `cmem get` prints it: the
    observation's markdown file, a summary's or prompt's text with a header."""
    from cmem_cli.core.results import as_dict
    from cmem_cli.services.read.details import render_details

    return render_details(record if isinstance(record, dict) else as_dict(record))


# Privacy for front ends that handle text before (or without) opening a home: a hook spools a payload it
# could not store, and skips an excluded project without opening the database.
def scrub(text: str, config: Config) -> str:
    """``text`` with ``<private>`` spans and secrets removed, as every write stores it."""
    from cmem_cli.services.write.privacy import scrub as scrub_text

    return scrub_text(text, config=config)


def scrub_record(record: Mapping[str, Any], config: Config) -> dict[str, Any]:
    """A copy of ``record`` with every string (in lists and nested objects too) scrubbed."""
    from cmem_cli.services.write.privacy import scrub_record as scrub_all

    return scrub_all(record, config=config)


def strip_private(text: str) -> str:
    """``text`` without its ``<private>...</private>`` spans (cheap: no secret patterns)."""
    from cmem_cli.services.write.privacy import strip_private as strip

    return strip(text)


def excluded_project(project: str | None, config: Config, extra: Sequence[str] = ()) -> bool:
    """True when ``project`` matches a name or glob of ``[privacy] exclude_projects`` or ``extra``."""
    from cmem_cli.services.write.privacy import is_excluded_project

    return is_excluded_project(project, config.section("privacy"), extra)


class _StoreReader:
    """The store of a home opened on its own, for the read methods (see :attr:`Memory.reader`)."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store

    @classmethod
    def open(cls, config: Config) -> _StoreReader:
        from cmem_cli.store.repository import Store

        config.ensure_home()
        return cls(config, Store.open(config.db_path, config.export_dir))

    def close(self) -> None:
        self.store.close()
