"""The inbound writer: what another machine sent (git sync's files, the team database's rows) written into
this home, one batch in the caller's write transaction, the same way for both remotes.

Each memory is stored by uid through the one upsert (:mod:`.upsert`: its session, the key rule), its code
anchor taken, and its links set once the whole batch is in (a link's target may arrive in the same batch).
A link to a uid this home does not hold yet is kept waiting (``pending``: git sync, whose file names it)
or set when the target arrives (the team database, which holds every link). Files are written last:
every arrival is named before any file is, because a file names its links' paths; the files that show an
arrival's title (its referrers) are written again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cmem_cli.services import supersession
from cmem_cli.services.reconcile.upsert import put_observation, put_summary
from cmem_cli.services.writes import FileTransaction, WriteService
from cmem_export import layout


class Inbound:
    """One batch of arrivals. ``notes`` and ``conflicts`` are the sync report's lists (a key clash is a
    conflict, told with both uids; a broken ``supersedes`` loop a note)."""

    def __init__(
        self,
        memory: WriteService,
        files: FileTransaction,
        notes: list[str],
        conflicts: list[dict[str, Any]],
        *,
        pending: bool = False,
        on_loop: Callable[[int], None] | None = None,
    ):
        self.memory = memory
        self.store = memory.store
        self.files = files
        self.notes = notes
        self.conflicts = conflicts
        self.pending = pending  # keep links to uids not here yet (git: the file names them)
        self.on_loop = on_loop  # told the id of the memory whose link a broken supersedes loop lost
        self._links: dict[int, list[dict[str, Any]]] = {}  # local id -> its links (type, uid, title, href)
        self._names: dict[int, str | None] = {}  # arrivals to write: local id -> the file name to keep
        self._arrived_at: dict[int, str] = {}  # local id -> the path its file arrived at (git)
        self._labels: dict[int, str] = {}  # local id -> how notes name it
        self._refresh: set[int] = set()  # observations whose file shows another one's title or path
        self.stored = 0

    # -- observations -----------------------------------------------------------------------------------
    def observation(
        self,
        record: dict[str, Any],
        links: list[dict[str, Any]],
        *,
        updated_at: int | None,
        anchor: dict[str, Any] | None = None,
        relpath: str | None = None,
        arrived_at: str | None = None,
    ) -> int:
        """Store a prepared ``record`` (``WriteService.prepare``) under its uid; returns its local id. ``links``:
        its links by uid, all of them; ``anchor``: the code anchor it states (None: the store's stays);
        ``relpath``: the file name it keeps (git: a file that names its uid lives where git put it);
        ``arrived_at``: where its file arrived (removed when the memory's file is elsewhere)."""
        store = self.store
        before = store.observations.by_uid(record["uid"])
        put = put_observation(store, record, updated_at=updated_at)
        row = put.row
        if put.clash is not None:
            self._tell(put.clash.to_json())
            if put.unkeyed is not None:
                self._refresh.add(put.unkeyed)
        if anchor is not None:
            from cmem_cli.services.anchors import adopt_anchor

            adopt_anchor(store, row["id"], anchor, self.memory.scrub_text)
        if before is not None and before["title"] != row["title"]:
            self._refresh.update(link["id"] for link in store.links.incoming(row["id"]))
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
    def summary(self, record: dict[str, Any], *, relpath: str | None = None) -> int:
        """Store a summary under its uid and write its file (``relpath``: where it lives, git)."""
        row = put_summary(self.store, record)
        row = self.memory.export_summary(self.store.summaries.get(row["id"]), self.files, relpath=relpath)
        if relpath and relpath != row["path"]:
            self.files.delete_after_commit(relpath)
        self.stored += 1
        return int(row["id"])

    # -- at the end -------------------------------------------------------------------------------------
    def finish(self) -> None:
        """Set the links of what arrived, then name every arrival, then write the files."""
        store = self.store
        for obs_id, links in self._links.items():
            for link in store.links.outgoing(obs_id):
                store.links.remove(obs_id, link["id"], link["type"])
            store.links.clear_pending_from(obs_id)
            for link in links:
                target = store.observations.by_uid(link["uid"])
                if target is None:
                    if self.pending:  # not here (yet): kept, never dropped (dropping would travel)
                        store.links.add_pending(
                            obs_id, link["uid"], link["type"], link.get("title"), link.get("href")
                        )
                elif target["id"] != obs_id:
                    self._link(obs_id, target["id"], link["type"], None)
        for obs_id in list(self._links):  # links that were waiting for one of these
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
            written = self.memory.export_observation(store.observations.find(row["id"]) or row, self.files)
            came = self._arrived_at.get(row["id"])
            if came and came != written["path"]:
                self.files.delete_after_commit(came)  # the text lives on in the file cmem just wrote
        for obs_id in sorted(self._refresh - set(self._names)):
            referrer = store.observations.find(obs_id)
            if referrer is not None:
                self.memory.export_observation(referrer, self.files)

    def _link(self, from_id: int, to_id: int, link_type: str, from_uid: str | None) -> None:
        """One link of what arrived; a ``supersedes`` loop is broken where it closes, with a note."""
        broken = supersession.add_arrived_link(self.store, from_id, to_id, link_type)
        if broken is not None:
            label = self._labels.get(from_id) or from_uid
            label = label or self.store.observations.get(from_id)["uid"]
            self.notes.append(f"{label}: {broken.note}")
            if broken.rewrite is not None:
                self._refresh.add(broken.rewrite)
            if self.on_loop is not None:
                self.on_loop(broken.rewrite or from_id)

    def _tell(self, item: dict[str, Any]) -> None:
        if item not in self.conflicts:
            self.conflicts.append(item)
