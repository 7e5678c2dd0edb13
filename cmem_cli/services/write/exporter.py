"""The export service: the markdown file of a stored row, written inside the caller's write transaction.

Every writer (the record and session services, the inbound writer, the export's upkeep) writes a row's file
through this one renderer, so that what git or a remote brought is written exactly as cmem writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from cmem_cli.core.text import estimate_tokens
from cmem_export import layout, markdown

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from cmem_cli.store.repository import Store
    from cmem_cli.store.row_types import ObservationRow, SummaryRow

STORED: Any = object()  # "the observation's anchor as the store holds it" (read when needed)


class FileWriter(Protocol):
    """The files of one write transaction, as its writers see them (``cmem_cli.services.write.service.FileTransaction``
    is the one there is): written now, kept or undone with the transaction; deleted after its commit."""

    def write(self, relpath: str, text: str) -> None: ...

    def write_many(self, items: list[tuple[str, str]]) -> None: ...

    def place_many(self, items: list[tuple[str, Path, str, str, tuple[int, int]]]) -> None: ...

    def delete_after_commit(self, relpath: str | None) -> None: ...


class Exporter:
    """Renders and writes the files of stored rows; ``scrub`` is the home's privacy filter, applied to what a
    file states of its code anchor (the row's own fields were scrubbed when they were stored)."""

    def __init__(self, store: Store, scrub: Callable[[str | None], str | None]) -> None:
        self.store = store
        self.scrub = scrub

    def link_entries(
        self,
        row: Mapping[str, Any],
        relpath: str,
        links: Sequence[Mapping[str, Any]] | None = None,
        pending: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The row's outgoing links as its file lists them (``links``, ``pending``: already read, else asked
        for; :func:`cmem_export.markdown.link_entries`). A link to a uid this store does not hold yet (git
        sync) is listed as its file showed it."""
        held = self.store.links.outgoing(row["id"]) if links is None else links
        waiting = self.store.links.pending_from(row["id"]) if pending is None else pending
        return markdown.link_entries([*held, *({**link, "path": None} for link in waiting)], relpath)

    def refresh_referrers(self, obs_id: int, files: FileWriter) -> None:
        """Write again the files that link to ``obs_id``: they show its title."""
        for link in self.store.links.incoming(obs_id):
            if link["id"] != obs_id:
                self.export_observation(self.store.observations.get(link["id"]), files)

    def export_observation(
        self,
        row: ObservationRow,
        files: FileWriter,
        *,
        relpath: str | None = None,
        no_links: bool = False,
        anchor: Any = STORED,
    ) -> ObservationRow:
        """Write the row's file at the name the row holds and record path and token cost, in the caller's
        write transaction (``files``); returns the row with its path and tokens.

        The name never changes with the content (a retitle, a project move): only a row without one (a
        store older than names in rows) gets its standard name. ``relpath`` is given for a new row's
        chosen name, or to move the file there (git brought it under another name); ``no_links`` says
        the row cannot have links yet; ``anchor``: its code anchor when the caller just made it (else it
        is read from the store)."""
        relpath = relpath or row.get("path") or layout.observation_relpath(row)
        links = [] if no_links else self.link_entries(row, relpath)
        text = markdown.render_observation(row, links, self.anchor_front(row["id"], anchor))
        files.write(relpath, text)
        tokens = estimate_tokens(text)  # what `cmem get` prints for it
        if row.get("path") and row["path"] != relpath:
            files.delete_after_commit(row["path"])
        if relpath != row.get("path") or tokens != row.get("tokens"):
            self.store.observations.set_export(row["id"], relpath, tokens)
            row["path"], row["tokens"] = relpath, tokens
        return row  # the same dict, changed in place

    def anchor_front(self, obs_id: int, anchor: Any = STORED) -> dict[str, Any] | None:
        """What the observation's file says of its code anchor (``cmem_cli.services.truth.anchor_files.exported``)."""
        from cmem_cli.services.truth.anchor_files import exported

        if anchor is STORED:
            anchor = self.store.anchors.for_ids([obs_id]).get(obs_id)
        return exported(anchor, self.scrub)

    def export_summary(self, row: SummaryRow, files: FileWriter, *, relpath: str | None = None) -> SummaryRow:
        """Write a summary's file at the name its row holds (fixed at creation, like an observation's)
        and record it; ``relpath`` names a new summary's file, or moves it there."""
        relpath = relpath or row.get("path") or layout.summary_relpath(row)
        files.write(relpath, markdown.render_summary(row))
        if row.get("path") and row["path"] != relpath:
            files.delete_after_commit(row["path"])
        if row.get("path") != relpath:
            self.store.summaries.set_path(row["id"], relpath)
        row["path"] = relpath
        return row  # the same dict, changed in place

    def render_record(self, kind: str, record_id: int) -> str:
        """The exact text cmem writes for one observation or summary (at its current path)."""
        if kind == "summary":
            return markdown.render_summary(self.store.summaries.get(record_id))
        row = self.store.observations.get(record_id)
        relpath = row["path"] or layout.observation_relpath(row)
        return markdown.render_observation(row, self.link_entries(row, relpath), self.anchor_front(record_id))
