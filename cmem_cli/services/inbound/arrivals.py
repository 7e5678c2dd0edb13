"""Adopting what git brought into the export tree, all or nothing, and knowing what is still to adopt.

git says exactly which files changed between two commits, so adoption works on that list: the commits
since the last one whose changes the store adopted (``sync.last_adopted``, in the store's ``state``
table, written in the same transaction as the adoption) up to HEAD. Whatever point a sync dies at (after
`git merge`, after the merge's commit, while a new machine joins), the next sync, or ``doctor --fix``,
adopts ``last..HEAD`` and so converges; a file that equals what cmem last wrote at its path is already
adopted and is not read again.

Each file is read and validated first (size, encoding, front matter, the same rules as `cmem add`,
redaction included) with the tree's own reader (``cmem_export.reading``); invalid ones are reported by
path and change nothing (and are reported again on every sync, ``sync.rejected``, until fixed or
removed); the valid ones are written to the store inside the caller's transaction and re-exported, so
the store and the tree agree. What this module adds for git: identity by uid only (ids are local), an
edit's ``updated_at`` kept from the file (so a later sync does not see the adoption as a new edit), links
to uids not here yet kept rather than dropped, and deletions by path.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.errors import CmemError, InvalidInput
from cmem_cli.core.fields import LINKS_MARKER, SUMMARY_FIELDS
from cmem_cli.services.inbound import record_shapes
from cmem_cli.services.inbound.reconcile.rule import QUIET_FIELDS, Conflict, Side, conflict_copy
from cmem_cli.services.inbound.sync_repo import REGULAR_MODES, Git
from cmem_cli.services.write.service import FileTransaction, WriteService
from cmem_cli.store.records import parse_link
from cmem_export import digest, reading

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.sync_report import ConflictItem
    from cmem_cli.store.row_types import LinkTarget, ObservationInput

LAST_ADOPTED = "sync.last_adopted"  # state key: the last commit whose changes are in the store
REJECTED = "sync.rejected"  # state key: {path: reason} of arrived files that cannot be adopted
LINK_REFUSED = "a symbolic link (or submodule) in the repository: refused, never followed or adopted"
_SHOWN_LINK = re.compile(r"^- ([a-z_]+): \[(.*)\]\((.*)\)$")


class Incoming:
    """One observation or summary to write: its validated record, links by uid, and times to keep."""

    def __init__(
        self,
        kind: str,
        record: Mapping[str, Any],
        *,
        relpath: str | None = None,
        links: list[LinkTarget] | None = None,
        updated_at: int | None = None,
        anchor: dict[str, Any] | None = None,
    ):
        self.kind = kind
        self.record = record
        self.relpath = relpath
        self.links = links or []
        self.updated_at = updated_at
        self.anchor = anchor  # the code anchor the file states (None: it states none; the store's stays)

    @property
    def uid(self) -> str | None:
        return self.record.get("uid")


def parse_file(memory: WriteService, relpath: str, data: bytes, *, keep_times: bool = True) -> Incoming:
    """Validate one file with the tree's own reader (``cmem_export.reading``, as local adoption uses);
    InvalidInput names the first problem. Nothing is written.

    ``keep_times``: keep the file's ``updated_at`` (an edit made on another machine keeps its time)."""
    try:
        parsed = reading.parse_file(reading.decode(data), relpath)
    except reading.UnreadableFile as exc:
        raise InvalidInput(str(exc)) from None
    problem = record_shapes.front_matter_problem(parsed.kind, parsed.meta)
    if problem is not None:  # a shape cmem never writes: refused whole, as a team row would be
        raise InvalidInput(problem)
    record = dict(parsed.record)
    if not record.get("project"):
        if len(PurePosixPath(relpath).parts) < 2:
            raise InvalidInput("outside any project folder (and no project: in front matter)")
        record["project"] = PurePosixPath(relpath).parts[0]
    record["uid"] = parsed.uid
    updated = parsed.restore.get("updated_at") if keep_times else None
    if parsed.kind == "summary":
        if not record.get("session") or not parsed.uid:
            raise InvalidInput("a summary needs a session and a uid")
        values = memory.sessions.prepare_summary({k: record.get(k) for k in SUMMARY_FIELDS})
        record.update(values, agent=record.get("agent") or "cli")
        return Incoming("summary", record, relpath=relpath)
    links = [parse_link(link) for link in record.pop("links", None) or [] if link.get("uid")]
    shown = _shown_links(data)
    for link, (link_type, title, href) in zip(links, shown, strict=False):
        if link_type == link["type"]:  # what the file shows for a target this store may not hold yet
            link["title"], link["href"] = title, href
    prepared = memory.records.prepare({k: v for k, v in record.items() if v is not None})
    return Incoming(
        "observation", prepared, relpath=relpath, links=links, updated_at=updated, anchor=parsed.anchor
    )


def _shown_links(data: bytes) -> list[tuple[str, str, str]]:
    """(type, title, href) of each ``- type: [title](href)`` line under the file's links marker."""
    text = data.decode("utf-8", "replace")
    at = text.find(LINKS_MARKER)
    if at == -1:
        return []
    return [(m[1], m[2], m[3]) for line in text[at:].split("\n") if (m := _SHOWN_LINK.match(line))]


def apply(
    memory: WriteService, files: FileTransaction, incoming: list[Incoming], deleted: list[str]
) -> Adoption:
    """Write ``incoming`` and forget what was at the ``deleted`` paths, inside the caller's transaction,
    through the inbound writer (:class:`cmem_cli.services.inbound.reconcile.writer.Inbound`, as team pulls do).

    A deleted path whose uid arrives again under another name (a file moved with plain git) is a move,
    not a forget: the observation follows the file to where git put it. A file that names its uid lives
    where git put it (its name was fixed where it was made); one without (a person's, committed with
    plain git) gets its standard name here.
    """
    from cmem_cli.services.inbound.reconcile.writer import Inbound

    notes: list[str] = []
    conflicts: list[ConflictItem] = []
    writer = Inbound(memory.export, files, notes, conflicts, pending=True)
    arriving = {item.uid for item in incoming if item.uid}
    adopted = 0
    for item in incoming:
        if item.kind == "removal":  # a duplicate file whose text lives on elsewhere
            if item.relpath:
                files.delete_after_commit(item.relpath)
        elif item.kind == "summary":
            writer.summary(item.record, relpath=item.relpath)
        else:
            writer.observation(
                cast("ObservationInput", item.record),  # prepared (parse_file) or the merge of two that were
                item.links,
                updated_at=item.updated_at,
                anchor=item.anchor,
                relpath=item.relpath if item.uid else None,
                arrived_at=item.relpath,
            )
            adopted += 1
    forgotten = 0
    for _relpath, (kind, uid) in memory.store.export_files.uids_at_paths(deleted).items():
        if uid not in arriving and writer.forget(kind, uid, file_gone=True):
            forgotten += 1
    writer.finish()
    return Adoption(adopted=adopted, forgotten=forgotten, conflicts=conflicts, notes=notes)


# -- the merge rule's terms, and files that arrive twice --------------------------------------------------
def side_of(item: Incoming) -> Side:
    """A parsed file in the terms of the merge rule."""
    fields = {k: v for k, v in item.record.items() if k not in ("uid", "updated_at", "links")}
    links = frozenset((link["type"], link["uid"]) for link in item.links)
    return Side(item.kind, item.uid or "", fields, links, item.anchor, item.updated_at or 0)


def incoming_of(side: Side, *shown: Incoming) -> Incoming:
    """The rule's result as a record to render; links show their target as the given files showed it."""
    by_key = {(link["type"], link["uid"]): link for item in shown for link in item.links}
    links = [by_key.get(key) or {"type": key[0], "uid": key[1]} for key in sorted(side.links)]
    record = {**side.fields, "uid": side.uid}
    anchor = dict(side.anchor) if side.anchor is not None else None
    relpath = shown[0].relpath if shown else None
    return Incoming(
        side.kind, record, relpath=relpath, links=links, updated_at=side.updated_at or None, anchor=anchor
    )


def _held_elsewhere(memory: WriteService, incoming: list[Incoming], deleted: list[str]) -> list[Incoming]:
    """The files this store holds for the uids arriving under another path, when those files are still in
    the tree (not moved: a copy made with plain git): each joins the arrivals, so that two files with one
    uid meet the one rule (:func:`split_duplicates`) instead of the arrival silently taking the memory over.
    A file that cannot be read or parsed any more is left out (the arrival then moves the memory)."""
    from cmem_cli.core.files import read_in_tree

    arriving = {item.relpath for item in incoming if item.relpath}
    gone = set(deleted)
    found = []
    for item in incoming:
        if item.kind != "observation" or not item.uid:
            continue
        row = memory.store.observations.by_uid(item.uid)
        held = row.get("path") if row is not None else None
        if not held or held == item.relpath or held in arriving or held in gone:
            continue
        try:
            found.append(
                parse_file(memory, held, read_in_tree(memory.export_root, held, reading.MAX_FILE_BYTES))
            )
        except (OSError, CmemError):
            continue
        arriving.add(held)
    return found


def _named_for(item: Incoming) -> bool:
    """Does the file's name end with its uid's tail, as cmem names a memory's file (a copy a person made
    and named does not)?"""
    from cmem_cli.core.ids import UID_TAIL

    stem = PurePosixPath(item.relpath or "").stem.lower()
    return bool(item.uid) and stem.endswith(str(item.uid)[-UID_TAIL:].lower())


def split_duplicates(incoming: list[Incoming]) -> tuple[list[Incoming], list[ConflictItem]]:
    """Two files with one uid (one moved or copied with plain git, the other edited): keep the later edit,
    turn the other into a conflict copy with a derived uid (none when both say the same). On a tie the
    file cmem named for the uid keeps it, then the later path: every machine decides alike."""
    by_uid: dict[str, list[Incoming]] = {}
    out: list[Incoming] = []
    for item in incoming:
        if item.uid and item.kind == "observation":
            by_uid.setdefault(item.uid, []).append(item)
        else:
            out.append(item)
    conflicts: list[ConflictItem] = []
    for uid, items in by_uid.items():
        items.sort(key=lambda i: (i.updated_at or 0, _named_for(i), i.relpath or ""), reverse=True)
        winner = items[0]
        out.append(winner)
        for loser in items[1:]:
            lost, kept = side_of(loser), side_of(winner)
            same = {k: v for k, v in lost.content().items() if k not in QUIET_FIELDS} == {
                k: v for k, v in kept.content().items() if k not in QUIET_FIELDS
            }
            if loser.relpath:
                out.append(Incoming("removal", {}, relpath=loser.relpath))
            if not same:
                copy = incoming_of(conflict_copy(lost, uid), loser)
                copy.relpath = None
                out.append(copy)
                conflicts.append(
                    Conflict(uid, "two files with one uid: later edit kept, other kept as a copy",
                             copy_uid=copy.uid, path=loser.relpath).to_json()
                )  # fmt: skip
    return out, conflicts


# -- what git brought since the last adoption ----------------------------------------------------------
def head_of(git: Git) -> str | None:
    """HEAD's commit, or None before the first commit."""
    proc = git.run("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


@dataclass
class Pending:
    """The changes of ``last..head`` not yet adopted (``whole_tree``: no usable ``last``, so every file
    of ``head`` is looked at, and nothing is forgotten)."""

    last: str | None
    head: str
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    whole_tree: bool = False
    links: list[str] = field(default_factory=list)  # symbolic links and submodules git brought: refused


def pending(
    memory: WriteService, git: Git, head: str | None = None, *, ancestor: str | None = None
) -> Pending | None:
    """What git brought that the store has not adopted; None when it is up to date. ``ancestor``: a
    commit the caller knows ``head`` descends from (no need to ask git)."""
    head = head or head_of(git)
    if head is None:
        return None
    last = memory.store.state.get(LAST_ADOPTED)
    if last == head:
        return None
    if last and (last == ancestor or git.ok("merge-base", "--is-ancestor", last, head)):
        entries = git.z_list("diff", "--raw", "-z", "--no-renames", "--no-abbrev", last, head)
        found = Pending(last, head)
        for meta, relpath in zip(entries[::2], entries[1::2], strict=False):
            fields = meta.split()
            mode, status = fields[1], fields[-1]
            if status != "D" and mode not in REGULAR_MODES:
                found.links.append(relpath)
            elif relpath.endswith(".md"):
                (found.deleted if status == "D" else found.changed).append(relpath)
        return found
    found = Pending(last, head, whole_tree=True)
    for entry in git.z_list("ls-tree", "-r", "-z", head):
        meta, _, relpath = entry.partition("\t")
        if meta.split()[0] not in REGULAR_MODES:
            found.links.append(relpath)
        elif relpath.endswith(".md"):
            found.changed.append(relpath)
    return found


@dataclass
class Adoption:
    adopted: int = 0
    forgotten: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)
    conflicts: list[ConflictItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def named(memory: WriteService, relpath: str) -> tuple[str | None, str | None]:
    """(uid, machine) as the file at ``relpath`` states them (None, None when it cannot be read): what a
    report of a file not taken names besides its path."""
    from cmem_cli.core.files import read_in_tree

    try:
        data = read_in_tree(memory.export_root, relpath, reading.MAX_FILE_BYTES)
    except OSError:  # not there, not a regular file inside the tree, too large: named by its path alone
        return None, None
    return record_shapes.who_wrote(data[: record_shapes.FRONT_MATTER_BYTES])


def skipped(data: bytes, reason: str) -> str:
    """Why an arrived file was not taken, naming the memory and the machine that wrote it as its front
    matter states them (read without YAML, so a file no parser takes is named too); a file that states
    neither (a teammate's TEAM.md) is named by its path alone."""
    uid, machine = record_shapes.who_wrote(data)
    if uid is None and machine is None:
        return reason
    return (
        f"skipped {uid or 'a memory without a uid'} (written by {machine or 'an unknown machine'}): {reason}"
    )


def adopt_pending(
    memory: WriteService, files: FileTransaction, todo: Pending, *, dirty: AbstractSet[str] = frozenset()
) -> Adoption:
    """Adopt ``todo`` inside the caller's transaction and record its head as adopted, in that same
    transaction. ``dirty``: paths a person changed in the tree since HEAD; their own adoption (as local
    edits) takes them, so they are left alone here."""
    from cmem_cli.core.files import NotRegularFile, read_in_tree

    store, root = memory.store, memory.export_root
    result = Adoption()
    hashes = store.export_files.hashes()
    incoming: list[Incoming] = []
    result.rejected += [(relpath, LINK_REFUSED) for relpath in todo.links]
    for relpath in todo.changed:
        if relpath in dirty:
            continue
        try:
            data = read_in_tree(root, relpath, reading.MAX_FILE_BYTES)
        except FileNotFoundError:
            continue  # deleted in the tree since: a local change, adopted as one
        except NotRegularFile as exc:
            result.rejected.append((relpath, f"{exc.strerror}, not adopted"))
            continue
        except OSError as exc:
            result.rejected.append((relpath, f"cannot read: {exc.strerror}"))
            continue
        if hashes.get(relpath) == digest.bytes_hash(data):
            continue  # exactly what cmem wrote here: adopted already (this machine's own commit)
        try:
            incoming.append(parse_file(memory, relpath, data))
        except CmemError as exc:
            result.rejected.append((relpath, skipped(data, exc.message)))
    deleted = [p for p in todo.deleted if p not in dirty and not os.path.lexists(root / p)]
    incoming += _held_elsewhere(memory, incoming, deleted)
    incoming, result.conflicts = split_duplicates(incoming)
    applied = apply(memory, files, incoming, deleted)
    result.adopted, result.forgotten, result.notes = applied.adopted, applied.forgotten, applied.notes
    result.conflicts += applied.conflicts
    remember_rejected(memory, result.rejected, settled=[i.relpath for i in incoming if i.relpath] + deleted)
    store.state.set(LAST_ADOPTED, todo.head)
    return result


TRAILER = "Cmem-Conflict: "  # a merge commit's line naming one conflict it settled (JSON)


def conflict_trailer(item: Mapping[str, Any]) -> str:
    return TRAILER + json.dumps(item, ensure_ascii=True, sort_keys=True)


def told(git: Git, last: str, head: str) -> list[ConflictItem]:
    """The conflicts the commits of ``last..head`` settled (on any machine), oldest first."""
    proc = git.run("log", "--reverse", "--format=%B", f"--grep=^{TRAILER}", f"{last}..{head}", check=False)
    found: list[ConflictItem] = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith(TRAILER):
            try:
                item = json.loads(line[len(TRAILER) :])
            except ValueError:
                continue
            if isinstance(item, dict) and isinstance(item.get("resolution"), str):
                found.append(cast("ConflictItem", item))  # another machine's cmem wrote it
    return found


def advance_adopted(memory: WriteService, parent: str | None, head: str | None) -> None:
    """A commit cmem made (``head``) holds only what the store holds: if its ``parent`` was adopted, so is
    it (the next sync need not read ``parent..head`` back)."""
    if memory.store.state.get(LAST_ADOPTED) == parent:
        with memory.store.transaction():
            memory.store.state.set(LAST_ADOPTED, head)


def adopt_pending_now(
    memory: WriteService, git: Git, *, dirty: AbstractSet[str] = frozenset()
) -> Adoption | None:
    """:func:`adopt_pending` in its own write transaction (doctor --fix, a sync's first step)."""
    todo = pending(memory, git)
    if todo is None:
        return None
    with memory.write_transaction(fsync=False, skip_identical=True) as files:
        return adopt_pending(memory, files, todo, dirty=dirty)


# -- arrived files that cannot be adopted, reported on every sync until fixed or removed --------------------
def rejected_files(memory: WriteService) -> dict[str, str]:
    try:
        value = json.loads(memory.store.state.get(REJECTED) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def remember_rejected(
    memory: WriteService, rejected: list[tuple[str, str]], *, settled: Sequence[str] = ()
) -> None:
    """Add ``rejected`` to the list kept in the store, and drop the ``settled`` paths (adopted, deleted)."""
    current = rejected_files(memory)
    if not rejected and not any(p in current for p in settled):
        return
    for relpath in settled:
        current.pop(relpath, None)
    current.update(dict(rejected))
    memory.store.state.set(REJECTED, json.dumps(current, sort_keys=True) if current else None)


def still_rejected(memory: WriteService, *, prune: bool = True) -> list[tuple[str, str]]:
    """The kept rejections whose file is still in the tree and still not adopted (with ``prune``, the
    list is pruned of the others; doctor without ``--fix`` only reads)."""
    current = rejected_files(memory)
    if not current:
        return []
    from cmem_cli.core.files import tree_entry_problem

    known = memory.store.export_files.record_paths()
    root = memory.export_root
    keep = {
        p: r
        for p, r in current.items()
        if os.path.lexists(root / p) and (p not in known or tree_entry_problem(root, p) is not None)
    }
    if prune and keep != current:
        with memory.store.transaction():
            memory.store.state.set(REJECTED, json.dumps(keep, sort_keys=True) if keep else None)
    return sorted(keep.items())
