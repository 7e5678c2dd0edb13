"""Resolving git merge conflicts in the export tree without a person and without conflict markers.

Two machines that changed the same observation both keep their text: the later edit (by its
``updated_at``) stays the observation, the other becomes a conflict copy with a new uid, linked
``related`` to it. An edit on one side and a forget (deletion) on the other keeps the edit.
"""

from __future__ import annotations

from typing import Any

from cmem_cli.core.errors import CmemError
from cmem_cli.core.ids import new_uid
from cmem_cli.services.writes import Memory
from cmem_cli.store.records import MAX_TITLE
from cmem_cli.sync import adopt as sync_adopt
from cmem_cli.sync.git import Git
from cmem_export import atomic, layout

COPY_SUFFIX = " (conflict copy)"


def unmerged(git: Git) -> dict[str, dict[int, str]]:
    """Conflicted path -> {stage: blob} (1 base, 2 this machine, 3 the remote)."""
    paths: dict[str, dict[int, str]] = {}
    for entry in git.z_list("ls-files", "-u", "-z"):
        info, relpath = entry.split("\t", 1)
        _mode, blob, stage = info.split()
        paths.setdefault(relpath, {})[int(stage)] = blob
    return paths


def resolve_conflicts(memory: Memory, git: Git) -> tuple[list[dict[str, Any]], list[sync_adopt.Incoming]]:
    """Resolve every conflicted path in the working tree and stage it.

    Returns the conflicts (for the report) and the conflict copies to adopt with the merge's arrivals.
    """
    conflicts: list[dict[str, Any]] = []
    copies: list[sync_adopt.Incoming] = []
    for relpath, stages in sorted(unmerged(git).items()):
        ours = git.run("cat-file", "blob", stages[2]).stdout if 2 in stages else None
        theirs = git.run("cat-file", "blob", stages[3]).stdout if 3 in stages else None
        path = layout.resolve_inside(memory.export_root, relpath)
        if ours is None or theirs is None:
            kept = ours if ours is not None else theirs
            if kept is not None:
                _write(path, kept)
            conflicts.append(
                {"path": relpath, "resolution": "edited on one machine, forgotten on the other: edit kept"}
            )
        elif not relpath.endswith(".md"):
            _write(path, ours)
            conflicts.append(
                {"path": relpath, "resolution": "not an observation: this machine's version kept"}
            )
        else:
            winner, loser = _order(memory, relpath, ours, theirs)
            _write(path, winner[0])
            copy = _conflict_copy(loser[1], winner[1])
            if copy is not None:
                copies.append(copy)
                conflicts.append(
                    {"path": relpath, "resolution": "both machines edited it: later edit kept, other kept as a copy",
                     "copy_uid": copy.uid}
                )  # fmt: skip
            else:
                raw = path.with_name(path.stem + ".conflict.md")
                _write(raw, loser[0])
                conflicts.append(
                    {"path": relpath, "resolution": f"unreadable side kept as {raw.name} (not adopted)"}
                )
        git.run("add", "-A", "--", relpath, what="git add (resolved conflict)")
    if copies or conflicts:
        git.run("add", "-A", what="git add (conflict copies)")
    return conflicts, copies


def _write(path: Any, data: bytes) -> None:
    atomic.atomic_write_bytes(path, data)  # exact bytes: an unreadable side is kept as it was


def _parse(memory: Memory, relpath: str, data: bytes) -> sync_adopt.Incoming | None:
    try:
        return sync_adopt.parse_file(memory, relpath, data)
    except CmemError:
        return None


def _order(
    memory: Memory, relpath: str, ours: bytes, theirs: bytes
) -> tuple[tuple[bytes, Any], tuple[bytes, Any]]:
    """(winner, loser) as (bytes, parsed or None): the later edit wins; a readable side beats a broken
    one; the same choice on every machine (ties go to the larger text)."""
    a, b = _parse(memory, relpath, ours), _parse(memory, relpath, theirs)

    def rank(item: sync_adopt.Incoming | None, data: bytes) -> tuple[int, int, bytes]:
        return (item is not None, (item.updated_at or 0) if item else 0, data)

    if rank(a, ours) >= rank(b, theirs):
        return (ours, a), (theirs, b)
    return (theirs, b), (ours, a)


def _conflict_copy(
    loser: sync_adopt.Incoming | None, winner: sync_adopt.Incoming | None
) -> sync_adopt.Incoming | None:
    """The losing text as a new observation (or summary) with its own uid, linked to the winner."""
    if loser is None or winner is None:
        return None
    record = dict(loser.record)
    record["uid"] = new_uid(record.get("created_at") or 0)
    if loser.kind == "summary":
        return sync_adopt.Incoming("summary", record)
    title = record["title"]
    if not title.endswith(COPY_SUFFIX):
        record["title"] = title[: MAX_TITLE - len(COPY_SUFFIX)] + COPY_SUFFIX
    record["key"] = None  # the key stays with the observation
    links = [*loser.links, {"type": "related", "uid": winner.uid}]
    return sync_adopt.Incoming("observation", record, links=links, updated_at=loser.updated_at)


def split_duplicates(
    incoming: list[sync_adopt.Incoming],
) -> tuple[list[sync_adopt.Incoming], list[dict[str, Any]]]:
    """Two arriving files with one uid (a rename on one machine, an edit on the other): keep the later,
    turn the other into a conflict copy."""
    by_uid: dict[str, list[sync_adopt.Incoming]] = {}
    out: list[sync_adopt.Incoming] = []
    for item in incoming:
        if item.uid and item.kind == "observation":
            by_uid.setdefault(item.uid, []).append(item)
        else:
            out.append(item)
    conflicts = []
    for items in by_uid.values():
        items.sort(key=lambda i: (i.updated_at or 0, i.relpath or ""), reverse=True)
        winner = items[0]
        out.append(winner)
        for loser in items[1:]:
            out_item = None if _content(loser) == _content(winner) else _conflict_copy(loser, winner)
            if loser.relpath:
                out.append(_Removal(loser.relpath))
            if out_item is not None:
                out.append(out_item)
                conflicts.append(
                    {"path": loser.relpath, "resolution": "renamed on one machine, edited on the other: "
                     "later edit kept, other kept as a copy", "copy_uid": out_item.uid}
                )  # fmt: skip
    return out, conflicts


def _content(item: sync_adopt.Incoming) -> dict[str, Any]:
    return {k: v for k, v in item.record.items() if k not in ("created_at",)}


class _Removal(sync_adopt.Incoming):
    """A duplicate file to delete (its text lives on in the winner or a copy)."""

    def __init__(self, relpath: str):
        super().__init__("removal", {}, relpath=relpath)
