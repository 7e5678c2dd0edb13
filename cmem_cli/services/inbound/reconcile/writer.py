"""The inbound writer: what comes in from elsewhere (git sync's files, the team database's rows, a person's
edits of this home's export tree) written into this home, one batch in the caller's write transaction, the
same way for all three.

Each memory is stored by uid through the one upsert (:mod:`.upsert`: its session, the key rule), its code
anchor taken, and its links set once the whole batch is in (a link's target may arrive in the same batch),
changing only the links that differ. A link to a uid this home does not hold yet is kept waiting
(``pending``: git sync, whose file names it) or set when the target arrives (the team database, which
holds every link). Files are written last: every arrival is named before any file is, because a file
names its links' paths; the files that show an arrival's title (its referrers) are written again.

A hand edit (``local``: `cmem sync`, `cmem watch`, `doctor --fix` adopting the export tree) differs in
three ways only: its key was checked where it was read (a clash refuses the file, so no clash rule), it is
this machine's, and a link to a uid that is not here stays only if it was waiting already; any other is
dropped and told (adoption refuses a file naming one, so only a link to itself), unless the batch forgot
its target (its file was deleted), whose links go with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cmem_cli.services.inbound.reconcile.upsert import put_observation, put_summary
from cmem_cli.services.truth import supersession
from cmem_export import layout

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from cmem_cli.core.sync_report import ConflictItem
    from cmem_cli.services.write.exporter import Exporter, FileWriter
    from cmem_cli.store.row_types import LinkTarget, ObservationInput


class Inbound:
    """One batch of arrivals, written through the export service ``export`` (its store and privacy filter:
    all the writer uses of the home) in ``files``. ``notes`` and ``conflicts`` are the sync report's lists
    (a key clash is a conflict, told with both uids; a broken ``supersedes`` loop a note, or what ``tell``
    is handed: adoption reports it against the file)."""

    def __init__(
        self,
        export: Exporter,
        files: FileWriter,
        notes: list[str],
        conflicts: list[ConflictItem],
        *,
        pending: bool = False,
        local: bool = False,
        on_loop: Callable[[int], None] | None = None,
        tell: Callable[[str, str], None] | None = None,
    ):
        self.export = export  # the one way a file is written: as cmem writes it
        self.store = export.store
        self.files = files
        self.notes = notes
        self.conflicts = conflicts
        self.pending = pending  # keep links to uids not here yet (git: the file names them)
        self.local = local  # a person's edits of this home's files (adoption; the module's docstring)
        self.on_loop = on_loop  # told the id of the memory whose link a broken supersedes loop lost
        self.tell = tell or self._note  # told (label, what) of a link dropped or a supersedes loop broken
        self._links: dict[int, list[LinkTarget]] = {}  # local id -> its links (type, uid, title, href)
        self._names: dict[int, str | None] = {}  # arrivals to write: local id -> the file name to keep
        self._arrived_at: dict[int, str] = {}  # local id -> the path its file arrived at (git)
        self._labels: dict[int, str] = {}  # local id -> how notes name it
        self._refresh: set[int] = set()  # observations whose file shows another one's title or path
        self._forgotten: set[str] = set()  # uids this batch forgot (a link to one goes without a word)
        self.stored = 0

    # -- observations -----------------------------------------------------------------------------------
    def observation(
        self,
        record: ObservationInput,
        links: Sequence[LinkTarget] | None,
        *,
        updated_at: int | None,
        anchor: Mapping[str, Any] | None = None,
        relpath: str | None = None,
        arrived_at: str | None = None,
        restore: Mapping[str, Any] | None = None,
    ) -> int:
        """Store a prepared ``record`` (``RecordWrites.prepare``) under its uid; returns its local id. ``links``:
        its links by uid, all of them (None: a hand-edited file that names none, whose links stay);
        ``anchor``: the code anchor it states (None: the store's stays); ``relpath``: the file name it
        keeps (a file that names its uid lives where it was put); ``arrived_at``: where its file arrived
        (removed when the memory's file is elsewhere); ``restore``: a new row's id as its file recorded
        it (adoption into a rebuilt store)."""
        store = self.store
        before = store.observations.by_uid(record["uid"] or "")
        put = put_observation(store, record, updated_at=updated_at, arrived=not self.local, restore=restore)
        row = put.row
        if put.clash is not None:
            self._tell(put.clash.to_json())
            if put.unkeyed is not None:
                self._refresh.add(put.unkeyed)
        if anchor is not None:
            from cmem_cli.services.truth.anchor_files import adopt_anchor

            adopt_anchor(store, row["id"], anchor, self.export.scrub)
        if before is not None and before["title"] != row["title"]:
            self._refresh.update(link["id"] for link in store.links.incoming(row["id"]))
        if links is not None:
            self._links[row["id"]] = list(links)
        self._names[row["id"]] = relpath
        self._labels[row["id"]] = arrived_at or row["uid"]
        if arrived_at:
            self._arrived_at[row["id"]] = arrived_at
        self.stored += 1
        return int(row["id"])

    def add_links(self, links: list[tuple[str, str, str]]) -> None:
        """Links (from uid, to uid, type) of memories already here whose target just arrived."""
        for from_uid, to_uid, link_type in links:
            source = self.store.observations.by_uid(from_uid)
            target = self.store.observations.by_uid(to_uid)
            if source is None or target is None or source["id"] in self._links:
                continue
            if not any(
                link["uid"] == to_uid and link["type"] == link_type
                for link in self.store.links.outgoing(source["id"])
            ):
                self._link(source["id"], target["id"], link_type, from_uid)
                self._refresh.add(source["id"])

    def forget(self, kind: str, uid: str, *, file_gone: bool = False) -> bool:
        """Forget what another machine forgot; the files that link to it are written again. ``file_gone``:
        its file is already gone (git deleted it). False when this home does not hold it."""
        if kind == "summary":
            row = self.store.summaries.by_uid(uid)
            if row is None:
                return False
            self.store.summaries.delete(row["id"])
            if not file_gone:
                self.files.delete_after_commit(row.get("path"))
            return True
        gone = self.store.observations.by_uid(uid)
        if gone is None:
            return False
        self._forgotten.add(uid)
        self._names.pop(gone["id"], None)
        self._links.pop(gone["id"], None)
        self._refresh.discard(gone["id"])
        self._refresh.update(
            link["id"] for link in self.store.links.incoming(gone["id"]) if link["id"] != gone["id"]
        )
        self.store.observations.delete(gone["id"])
        if not file_gone:
            self.files.delete_after_commit(gone.get("path"))
        return True

    # -- summaries --------------------------------------------------------------------------------------
    def summary(
        self,
        record: Mapping[str, Any],
        *,
        relpath: str | None = None,
        arrived_at: str | None = None,
        summary_id: int | None = None,
    ) -> int:
        """Store a summary under its uid and write its file (``relpath``: where it lives; ``arrived_at``:
        where its file arrived, if elsewhere, removed when it is not where it lives; ``summary_id``: a
        new summary's id as its file recorded it)."""
        stored = put_summary(self.store, record, arrived=not self.local, summary_id=summary_id)
        row = self.export.export_summary(self.store.summaries.get(stored["id"]), self.files, relpath=relpath)
        came = arrived_at or relpath
        if came and came != row["path"]:
            self.files.delete_after_commit(came)
        self.stored += 1
        return int(row["id"])

    # -- at the end -------------------------------------------------------------------------------------
    def finish(self) -> None:
        """Set the links of what arrived, then name every arrival, then write the files."""
        store = self.store
        for obs_id, links in self._links.items():
            self._settle_links(obs_id, links)
        for obs_id in list(self._names):  # links that were waiting for one of these
            row = store.observations.find(obs_id)
            if row is None:
                continue
            for from_id, link_type in store.links.take_pending_to(row["uid"]):
                if from_id != obs_id and store.observations.find(from_id) is not None:
                    self._link(from_id, obs_id, link_type, None)
                    self._refresh.add(from_id)
        arrived = [
            (row, self._names[row["id"]]) for row in map(store.observations.find, sorted(self._names)) if row
        ]
        for (
            row,
            relpath,
        ) in arrived:  # every arrival named before any file is written: files name links' paths
            name = relpath or row.get("path") or layout.observation_relpath(row)
            if row.get("path") != name:
                if row.get("path"):
                    self.files.delete_after_commit(row["path"])  # git moved it: it lives where git put it
                store.observations.set_export(row["id"], name, row.get("tokens") or 0)
        for row, _ in arrived:
            written = self.export.export_observation(store.observations.find(row["id"]) or row, self.files)
            came = self._arrived_at.get(row["id"])
            if came and came != written["path"]:
                self.files.delete_after_commit(came)  # the text lives on in the file cmem just wrote
        for obs_id in sorted(self._refresh - set(self._names)):
            referrer = store.observations.find(obs_id)
            if referrer is not None:
                self.export.export_observation(referrer, self.files)

    def _settle_links(self, obs_id: int, links: Sequence[Mapping[str, Any]]) -> None:
        """Make ``obs_id``'s links (and links waiting for a uid not here) those an arrival names, touching
        only those that differ."""
        store = self.store
        current = {(link["id"], link["type"]) for link in store.links.outgoing(obs_id)}
        waiting = {
            (link["uid"], link["type"]): (link["uid"], link["type"], link["title"], link["href"])
            for link in store.links.pending_from(obs_id)
        }
        wanted: set[tuple[int, str]] = set()
        wait: dict[tuple[str, str], tuple[str, str, str | None, str | None]] = {}
        for link in links:
            key = (link["uid"], link["type"])
            target = store.observations.by_uid(link["uid"])
            if target is not None and target["id"] != obs_id:
                wanted.add((target["id"], link["type"]))
            elif (
                target is None and self.pending
            ):  # not here (yet): kept, never dropped (dropping would travel)
                wait[key] = (*key, link.get("title"), link.get("href"))
            elif target is None and self.local and key in waiting:  # still waiting, kept as it is
                wait[key] = waiting[key]
            elif self.local and link["uid"] not in self._forgotten:  # (its file deleted: goes with it)
                self.tell(self._label(obs_id, None), f"link to {link['uid']} dropped (no such target)")
        for target_id, link_type in current - wanted:
            store.links.remove(obs_id, target_id, link_type)
        if sorted(wait.values(), key=str) != sorted(waiting.values(), key=str):
            store.links.clear_pending_from(obs_id)
            for uid, link_type, title, href in wait.values():
                store.links.add_pending(obs_id, uid, link_type, title, href)
        for target_id, link_type in sorted(wanted - current):
            self._link(obs_id, target_id, link_type, None)

    def _link(self, from_id: int, to_id: int, link_type: str, from_uid: str | None) -> None:
        """One link of what arrived; a ``supersedes`` loop is broken where it closes, with a note."""
        broken = supersession.add_arrived_link(self.store, from_id, to_id, link_type)
        if broken is not None:
            self.tell(self._label(from_id, from_uid), broken.note)
            if broken.rewrite is not None:
                self._refresh.add(broken.rewrite)
            if self.on_loop is not None:
                self.on_loop(broken.rewrite or from_id)

    def _label(self, obs_id: int, uid: str | None) -> str:
        """How notes name a memory: where its file arrived, else its uid."""
        label = self._labels.get(obs_id) or uid
        return label or str(self.store.observations.get(obs_id)["uid"])

    def _note(self, label: str, what: str) -> None:
        self.notes.append(f"{label}: {what}")

    def _tell(self, item: ConflictItem) -> None:
        if item not in self.conflicts:
            self.conflicts.append(item)
