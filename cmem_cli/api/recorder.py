"""Capture's writes: what a front end that records events as they happen needs from a home.

The Claude Code hooks and the transcript importer (``cmem_cli/capture``) run many times a minute, and
`cmem add` is run by scripts as often. Their
writes return ids or plain values (no result object is built), take the uid and creation time an event
already has, and run inside :meth:`Recorder.transaction` together with the marks of what was recorded
(:attr:`Recorder.capture_log`) on the same connection. They live here, apart from :class:`~cmem_cli.api.Memory`, so that the API a script
reads stays the three retrieval layers and the typed writes; ``memory.recorder`` gives one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.api import Memory
    from cmem_cli.core.json_types import CandidateJson
    from cmem_cli.core.recall_settings import RecallSettings
    from cmem_cli.services.read.recall import Recall
    from cmem_cli.store.capture_log import CaptureLog


class Recorder:
    """The capture writes over one :class:`~cmem_cli.api.Memory` (which opens and closes the home)."""

    __slots__ = ("_memory",)

    def __init__(self, memory: Memory):
        self._memory = memory

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (BEGIN IMMEDIATE) around several writes: their rows and markdown files are
        all kept or none is (an exception must leave the ``with`` block: do not catch a failed write
        inside), and so are the marks of :attr:`capture_log` made in it."""
        with self._memory.service.transaction():
            yield

    def roll_back_interrupted(self) -> int:
        """Undo the export files of write transactions whose process died before its commit (a hook's
        detached child killed mid-write), as a sync or ``doctor --fix`` would; returns how many files were
        put back. One folder listing when nothing was interrupted."""
        from cmem_export.journal import pending

        service = self._memory.service
        if not pending(service.journal_dir):
            return 0
        from cmem_cli.services.upkeep.recovery import recover

        with service.write_transaction(fsync=False):
            return len(recover(service))

    @property
    def capture_log(self) -> CaptureLog:
        """What capture already recorded (claims and marks of tool calls, prompts and replayed events,
        transcript offsets; :class:`cmem_cli.store.capture_log.CaptureLog`), on the write connection (opens
        the write service): a mark made inside :meth:`transaction` commits with the writes it marks, or
        not at all."""
        return self._memory.service.store.capture_log

    @property
    def in_transaction(self) -> bool:
        """True inside :meth:`transaction` (or a write the caller started)."""
        return self._memory._service is not None and self._memory._service.store.in_transaction

    def tune(self, *, busy_timeout_ms: int, checkpoint_on_close: bool = True, reads: bool = False) -> None:
        """Wait for a locked database at most ``busy_timeout_ms`` (then :class:`DatabaseBusy`); with
        ``checkpoint_on_close`` False, leave the WAL checkpoint to SQLite's automatic one instead of paying
        for a full checkpoint whenever the last connection closes (5-10 ms of every hook call). ``reads``:
        tune the store opened for reading alone (a hook that answers before it writes), not the write
        service."""
        store = self._memory.reader.store if reads else self._memory.service.store
        store.tune(busy_timeout_ms=busy_timeout_ms, checkpoint_on_close=checkpoint_on_close)

    def add_record(
        self,
        record: Mapping[str, Any],
        *,
        defaults: dict[str, str | None] | None = None,
        cwd: str | None = None,
        written: dict[str, str] | None = None,
    ) -> int:
        """Record one observation given as a dict in the JSON record format, plus ``uid`` and ``created_at``
        (epoch ms) when the caller has them; returns its id (no result object: `cmem add` prints just the
        id, hooks keep it). An observation with that ``uid`` (or the project's ``key``) already stored is
        updated instead. Project, agent and session are the record's, else ``defaults``'. With ``cwd``
        (where the event happened) it is anchored to its files and branch in git, as :meth:`Memory.add`
        does; without, it is not (history imported later). ``written``: the text the event wrote into
        cited files (by path as cited): the anchor keeps where it is, as what the memory is about."""
        return int(
            self._memory.service.records.add_observation(record, defaults, cwd=cwd, written=written)["id"]
        )

    def add_reporting(
        self,
        record: Mapping[str, Any],
        *,
        defaults: dict[str, str | None] | None = None,
        cwd: str | None = None,
    ) -> tuple[int, list[CandidateJson]]:
        """:meth:`add_record`, and what the new memory may replace (:mod:`cmem_cli.services.truth.candidates`:
        id, title, score, ``inferred``, why, the ``confirm`` command), best first; a confident match is
        marked maybe replaced at once. A keyed record that rewrites its note has none."""
        row = self._memory.service.records.add_observation(record, defaults, cwd=cwd, candidates=True)
        return int(row["id"]), list(row.get("candidates") or [])

    def add_many_reporting(
        self,
        records: Sequence[dict[str, Any]],
        *,
        defaults: dict[str, str | None] | None = None,
        progress: Any = None,
        every: bool = False,
    ) -> list[tuple[int, list[CandidateJson]]]:
        """:meth:`Memory.add_many` with each new record's candidates (:meth:`add_reporting`), in order:
        with ``every``, of an import of any size (up to 5,000 records), else of one of at most 50."""
        memory = self._memory
        defaults = defaults or {}
        found: list[list[CandidateJson]] = []
        ids = memory.add_many(
            records,
            project=defaults.get("project"),
            agent=defaults.get("agent"),
            session=defaults.get("session"),
            progress=progress,
            report=found if every or len(records) <= 50 else None,
        )
        return list(zip(ids, found or [[] for _ in ids], strict=True))

    def briefing_text(self, project: str, *, budget: int = 1500, exclude_session: str | None = None) -> str:
        """:meth:`Memory.context`'s text (what the SessionStart hook injects), without a result object; with
        ``exclude_session``, that session's own summaries are left out (a new session wants the previous
        one's)."""
        from cmem_cli.services.read.briefing import build_context

        if budget < 1:
            raise InvalidInput("budget must be at least 1 token")
        # the write service's store when it is open, else the store alone (a SessionStart that answers
        # before it writes opens no exporter)
        return build_context(
            self._memory.reader.store, project, budget=budget, exclude_session=exclude_session
        ).text

    def kept_briefing(self, project: str, *, budget: int, top: str | None) -> dict[str, Any] | None:
        """The briefing of ``project`` with what it was built from, for the SessionStart hook to keep and
        print while all of that holds (:mod:`cmem_cli.core.briefing_cache`); None when it cannot be kept."""
        from cmem_cli.services.read.briefing import keep

        store = self._memory.reader.store
        return keep(store, project, budget=budget, top=top, db_path=str(self._memory.config.db_path))

    def recall(
        self,
        point: str,
        subject: str,
        *,
        project: str,
        session: str,
        cwd: str | None,
        settings: RecallSettings,
        lines: tuple[int, int] | None = None,
        wait_ms: int = 200,
        given: Collection[str] = (),
        record: bool = True,
    ) -> Recall:
        """What recall injects for a prompt (``point`` "prompt") or a file read or edit ("file", ``subject``
        the file's path relative to ``cwd``; ``lines``: the part read), marked in the session's capture log in the same transaction,
        so the session is never given a memory twice (:mod:`cmem_cli.services.read.recall`). A database locked
        longer than ``wait_ms`` raises :class:`DatabaseBusy`: nothing is injected rather than the agent kept
        waiting. ``given``: keys the session was given that the store does not hold yet (events still in
        the hooks' spool). With ``record`` False nothing is written and the write service is not opened:
        the caller records ``Recall.given_keys`` itself (a hook, after its answer)."""
        from cmem_cli.services.read.recall import file_recall, mark_given, prompt_recall

        store = self._memory.service.store if record else self._memory.reader.store
        store.tune(busy_timeout_ms=wait_ms, checkpoint_on_close=False)
        if point == "prompt":
            found = prompt_recall(  # a hook that records writes the prompt first (capture/hooks/runner.py)
                store, project, subject, settings, session=session, cwd=cwd, given=given, recorded=record
            )
        else:
            found = file_recall(
                store, project, subject, settings, session=session, cwd=cwd, lines=lines, given=given
            )
        if record and found.given_keys:
            with self.transaction():
                mark_given(store, session, found)
        return found

    def recheck_file(
        self, path: str, *, project: str, session: str, cwd: str | None, wait_ms: int = 200
    ) -> list[int]:
        """A file the session watches changed: check the notes citing it at once and queue those it left
        stale for the session's next prompt (:func:`cmem_cli.services.read.recall.recheck`); their ids."""
        from cmem_cli.services.read.recall import recheck

        store = self._memory.service.store
        store.tune(busy_timeout_ms=wait_ms, checkpoint_on_close=False)  # busy: the change is not told
        with self.transaction():
            return recheck(store, project, path, session, cwd=cwd)

    def watch_paths(self, project: str, top: str) -> list[str]:
        """The files worth watching for a session in ``top``: those the project's newest notes cite."""
        from cmem_cli.services.read.recall import watch_paths

        return watch_paths(self._memory.reader.store, project, top)  # a read: no write service opened

    def has_uid(self, uid: str) -> bool:
        """True when an observation with this uid is stored (no retrieval counted, nothing built)."""
        return self._memory.service.store.observations.by_uid(uid) is not None

    def project_of(self, directory: str) -> str:
        """The project of work done in ``directory`` (its repository's, recorded if new; else the folder's
        name), whatever ``$CMEM_PROJECT`` says: see :meth:`Memory.project_of`."""
        return self._memory.project_of(directory, claim=True) or "default"

    def ensure_session(self, session_id: str, *, project: str, agent: str, at: int | None = None) -> str:
        """Create session ``session_id`` if it is new (kept as it is otherwise); returns its id. ``at``: when
        it began, if that was earlier than now (a transcript being imported)."""
        row = self._memory.service.sessions.ensure_session(session_id, agent=agent, project=project, at=at)
        return str(row["session_id"])

    def close_session(self, session_id: str, *, status: str = "completed") -> None:
        """End session ``session_id`` (:meth:`Memory.end_session` without a result object)."""
        self._memory.service.sessions.end_session(session_id, status=status)

    def label_sessions(self, labels: dict[str, str]) -> None:
        """Label sessions that have no label yet (a transcript's title; scrubbed, clipped to 500 characters),
        in one transaction; a session that does not exist is left alone."""
        self._memory.service.sessions.label_sessions(labels)

    def prompt_counter(self, session_id: str) -> int | None:
        """The number of the session's latest prompt; None for a session without prompts or no session."""
        try:
            return int(self._memory.service.store.sessions.get(session_id)["prompt_counter"]) or None
        except NotFound:
            return None

    def latest_prompt(self, session_id: str) -> str | None:
        """The text of the session's latest prompt, None if it has none."""
        return self._memory.service.store.prompts.latest_text(session_id)

    def add_prompt(
        self,
        text: str,
        *,
        session: str,
        project: str | None = None,
        agent: str | None = None,
        created_at: int | None = None,
    ) -> str:
        """Record a user prompt in ``session`` at time ``created_at`` (epoch ms; default now); returns the
        prompt's id (``P7``, as :meth:`Memory.get` takes it)."""
        row = self._memory.service.sessions.add_prompt(
            session, text, project=project, agent=agent, created_at=created_at
        )
        return f"P{row['id']}"

    def add_summary(
        self,
        session: str,
        fields: dict[str, Any],
        *,
        project: str | None = None,
        agent: str | None = None,
        created_at: int | None = None,
    ) -> str:
        """Record a session summary from a dict of its fields (``None`` values left out) at time
        ``created_at`` (epoch ms; default now); returns its id (``S3``)."""
        fields = {k: v for k, v in fields.items() if v is not None}
        if created_at:
            fields["created_at"] = created_at
        row = self._memory.service.sessions.add_summary(session, fields, project=project, agent=agent)
        return f"S{row['id']}"

    def scrub(self, text: str) -> str:
        """``text`` as cmem would store it: ``<private>`` spans and recognised secrets (and the home's
        ``[privacy] redact`` rules) removed. Front ends that derive keys from text use it."""
        from cmem_cli.api import scrub

        return scrub(text, self._memory.config)

    def scrub_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`scrub` applied to every string of ``record``, in lists and nested objects too."""
        from cmem_cli.api import scrub_record

        return scrub_record(record, self._memory.config)

    def excluded(self, project: str | None, extra: Sequence[str] = ()) -> bool:
        """True when ``project`` is listed (name or glob) in ``[privacy] exclude_projects`` or ``extra``."""
        from cmem_cli.api import excluded_project

        return excluded_project(project, self._memory.config, extra)
