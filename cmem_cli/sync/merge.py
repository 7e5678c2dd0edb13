"""Merging two machines' versions of a memory by uid, field by field, without a person and without markers.

For every file both sides changed since their common commit, the three versions (the base, this
machine's, the remote's) are read back into records and merged by the one rule the team database
follows too (:mod:`cmem_cli.services.inbound.reconcile.rule`): field by field, links as sets, a conflict copy
only when both changed one field differently. The result is written in cmem's own form, so no file ever
holds conflict markers. git's rename detection is never involved: a file keeps its name for life, so one
memory is one path on every machine.

An edit on one side and a forget (deletion) on the other keeps the edit. A side that cannot be read as a
memory loses to one that can; the unreadable text is kept beside it as ``<name>.conflict.md`` (it came
from a commit already, so nothing new leaves the machine) and reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from cmem_cli.core.errors import CmemError
from cmem_cli.services.inbound.arrivals import Incoming, incoming_of, parse_file, side_of
from cmem_cli.services.inbound.reconcile.rule import (
    EDIT_BEATS_FORGET,
    Conflict,
    conflict_copy,
    merge,
    same_field_conflict,
)
from cmem_cli.services.inbound.sync_repo import Git
from cmem_cli.services.write.service import WriteService
from cmem_export import layout, markdown

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import ConflictItem


@dataclass
class Resolution:
    """What one path becomes: its bytes (None: deleted), the conflict copies to add beside it, and the
    conflict to report (None: the sides merged cleanly)."""

    relpath: str
    data: bytes | None
    copies: list[tuple[str, bytes]] = field(default_factory=list)
    conflict: ConflictItem | None = None


def read_blobs(git: Git, specs: list[str]) -> dict[str, bytes | None]:
    """``rev:path`` -> the blob's bytes (None when there is none), with one ``git cat-file`` process."""
    if not specs:
        return {}
    proc = git.run(
        "cat-file", "--batch", input=("\n".join(specs) + "\n").encode("utf-8"), what="git cat-file"
    )
    out, pos = proc.stdout, 0
    found: dict[str, bytes | None] = {}
    for spec in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode("utf-8", "replace")
        pos = end + 1
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            found[spec] = None
            continue
        _sha, kind, size = header.rsplit(" ", 2)
        data = out[pos : pos + int(size)]
        pos += int(size) + 1
        found[spec] = data if kind == "blob" else None
    return found


def _parse(memory: WriteService, relpath: str, data: bytes | None) -> Incoming | None:
    if data is None:
        return None
    try:
        return parse_file(memory, relpath, data)
    except CmemError:
        return None


def merge_versions(
    memory: WriteService, relpath: str, base: bytes | None, ours: bytes | None, theirs: bytes | None
) -> Resolution:
    """Merge one path's three versions (None: absent on that side) by the one rule
    (:mod:`cmem_cli.services.inbound.reconcile.rule`)."""
    if ours == theirs:
        return Resolution(relpath, ours)
    if ours is None or theirs is None:
        kept = ours if ours is not None else theirs
        item = _parse(memory, relpath, kept)
        uid = item.uid if item is not None and item.uid else ""
        return Resolution(relpath, kept, conflict=Conflict(uid, EDIT_BEATS_FORGET, path=relpath).to_json())
    if not relpath.endswith(".md"):
        return Resolution(
            relpath,
            ours,
            conflict={"path": relpath, "resolution": "not a memory: this machine's version kept"},
        )
    a, b = _parse(memory, relpath, ours), _parse(memory, relpath, theirs)
    if a is None or b is None:
        return _unreadable(relpath, (ours, a), (theirs, b))
    if a.kind != b.kind or a.uid != b.uid:  # two memories at one path (cannot happen with uid tails)
        winner, loser = (a, b) if side_of(a).rank() >= side_of(b).rank() else (b, a)
        copy = incoming_of(conflict_copy(side_of(loser), winner.uid or ""), loser)
        return Resolution(
            relpath, render(memory, winner, relpath), [_copy_file(memory, copy)],
            Conflict(winner.uid or "", "two memories at one path: later kept, other kept as a copy",
                     copy_uid=copy.uid, path=relpath).to_json(),
        )  # fmt: skip
    old = _parse(memory, relpath, base)
    if old is not None and (old.kind != a.kind or old.uid != a.uid):
        old = None
    merged, made, conflict = merge_records(old, a, b)
    if made is None or conflict is None:
        return Resolution(relpath, render(memory, merged, relpath))
    conflict.path = relpath
    return Resolution(
        relpath, render(memory, merged, relpath), [_copy_file(memory, made)], conflict.to_json()
    )


def merge_records(
    base: Incoming | None, ours: Incoming, theirs: Incoming
) -> tuple[Incoming, Incoming | None, Conflict | None]:
    """The field-by-field merge of two versions of one memory: the merged record, and the conflict copy
    and the conflict to report when both changed one field differently."""
    result = merge(side_of(base) if base is not None else None, side_of(ours), side_of(theirs))
    merged = incoming_of(result.side, ours, theirs)
    copy = result.copy
    if copy is None:
        return merged, None, None
    loser = ours if result.loser is not None and not result.ours_later else theirs
    return merged, incoming_of(copy, loser), same_field_conflict(result, copy)


def render(memory: WriteService, item: Incoming, relpath: str) -> bytes:
    """The file cmem would write for ``item`` at ``relpath`` (links name their targets as this store
    knows them, else as the merged files showed them)."""
    record = dict(item.record)
    if item.kind == "summary":
        return markdown.render_summary(record).encode("utf-8")
    record["updated_at"] = item.updated_at or record.get("updated_at")
    links = []
    for link in item.links:
        target = memory.store.observations.by_uid(link["uid"])
        if target is not None and target.get("path"):  # held here: its file and title as known here
            links.append({**link, "path": target["path"], "title": target["title"]})
        else:
            links.append({**link, "path": None})
    text = markdown.render_observation(record, markdown.link_entries(links, relpath), item.anchor)
    return text.encode("utf-8")


def _copy_file(memory: WriteService, copy: Incoming) -> tuple[str, bytes]:
    record = copy.record
    if copy.kind == "summary":
        relpath = layout.summary_relpath(record)
    else:
        relpath = layout.observation_relpath({**record, "created_at": record.get("created_at") or 0})
    return relpath, render(memory, copy, relpath)


def _unreadable(
    relpath: str, ours: tuple[bytes, Incoming | None], theirs: tuple[bytes, Incoming | None]
) -> Resolution:
    """A side that is no memory: the readable one stays (else the larger), the other beside it, reported."""
    (kept, _), (other, _) = sorted(
        (ours, theirs), key=lambda side: (side[1] is not None, side[0]), reverse=True
    )
    path = PurePosixPath(relpath)
    aside = str(path.with_name(path.stem + ".conflict.md"))
    return Resolution(
        relpath, kept, [(aside, other)],
        {"path": relpath, "resolution": f"unreadable side kept as {PurePosixPath(aside).name} (not adopted)"},
    )  # fmt: skip
