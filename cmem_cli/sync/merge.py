"""Merging two machines' versions of a memory by uid, field by field, without a person and without markers.

For every file both sides changed since their common commit, the three versions (the base, this
machine's, the remote's) are read back into records and merged field by field: a field only one side
changed takes that side's value; a field both changed to the same value is that value (identical edits
make no copy); a field both changed differently keeps the later edit's value (by ``updated_at``) and
the earlier side is kept whole as a new observation titled ``… (conflict copy)``, linked ``related`` to
the one kept. Links merge as sets. The result is written in cmem's own form, so no file ever holds
conflict markers. git's rename detection is never involved: a file keeps its name for life, so one
memory is one path on every machine.

An edit on one side and a forget (deletion) on the other keeps the edit. A side that cannot be read as a
memory loses to one that can; the unreadable text is kept beside it as ``<name>.conflict.md`` (it came
from a commit already, so nothing new leaves the machine) and reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from cmem_cli.core.errors import CmemError
from cmem_cli.services.arrivals import Incoming, conflict_copy, parse_file
from cmem_cli.services.gitrepo import Git
from cmem_cli.services.writes import Memory
from cmem_export import layout, markdown


@dataclass
class Resolution:
    """What one path becomes: its bytes (None: deleted), the conflict copies to add beside it, and the
    conflict to report (None: the sides merged cleanly)."""

    relpath: str
    data: bytes | None
    copies: list[tuple[str, bytes]] = field(default_factory=list)
    conflict: dict[str, Any] | None = None


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


def _parse(memory: Memory, relpath: str, data: bytes | None) -> Incoming | None:
    if data is None:
        return None
    try:
        return parse_file(memory, relpath, data)
    except CmemError:
        return None


def merge_versions(
    memory: Memory, relpath: str, base: bytes | None, ours: bytes | None, theirs: bytes | None
) -> Resolution:
    """Merge one path's three versions (None: absent on that side)."""
    if ours == theirs:
        return Resolution(relpath, ours)
    if ours is None or theirs is None:
        kept = ours if ours is not None else theirs
        return Resolution(
            relpath,
            kept,
            conflict={
                "path": relpath,
                "resolution": "edited on one machine, forgotten on the other: edit kept",
            },
        )
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
        winner, loser = _order(a, b)
        copy = conflict_copy(loser, winner.uid or "")
        return Resolution(
            relpath, render(memory, winner, relpath), [_copy_file(memory, copy)],
            {"path": relpath, "resolution": "two memories at one path: later kept, other kept as a copy", "copy_uid": copy.uid},
        )  # fmt: skip
    old = _parse(memory, relpath, base)
    if old is not None and (old.kind != a.kind or old.uid != a.uid):
        old = None
    merged, clashes = merge_records(old, a, b)
    if not clashes:
        return Resolution(relpath, render(memory, merged, relpath))
    _winner, loser = _order(a, b)
    copy = conflict_copy(loser, a.uid or "")
    fields = ", ".join(sorted(clashes))
    return Resolution(
        relpath, render(memory, merged, relpath), [_copy_file(memory, copy)],
        {"path": relpath, "resolution": f"both machines changed {fields}: later edit kept, other kept as a copy",
         "copy_uid": copy.uid},
    )  # fmt: skip


def _rank(item: Incoming) -> tuple[int, str]:
    """Later edit first; ties (summaries carry no edit time) go to the larger text, on every machine alike."""
    return (item.updated_at or 0, json.dumps([item.record, item.links], sort_keys=True, default=str))


def _order(a: Incoming, b: Incoming) -> tuple[Incoming, Incoming]:
    return (a, b) if _rank(a) >= _rank(b) else (b, a)


def merge_records(base: Incoming | None, ours: Incoming, theirs: Incoming) -> tuple[Incoming, set[str]]:
    """The field-by-field merge of two versions of one memory; returns it and the fields both changed
    differently (where the later edit's value was taken)."""
    later = _order(ours, theirs)[0]
    before = base.record if base is not None else {}
    record: dict[str, Any] = {}
    clashes: set[str] = set()
    for key in sorted(set(ours.record) | set(theirs.record)):
        mine, other = ours.record.get(key), theirs.record.get(key)
        if mine == other:
            record[key] = mine
        elif base is not None and mine == before.get(key):
            record[key] = other
        elif base is not None and other == before.get(key):
            record[key] = mine
        else:
            record[key] = later.record.get(key)
            clashes.add(key)
    times = [t for t in (ours.updated_at, theirs.updated_at) if t]
    merged = Incoming(ours.kind, record, relpath=ours.relpath, updated_at=max(times) if times else None)
    merged.links = _merge_links(base.links if base is not None else None, ours.links, theirs.links)
    merged.anchor = _merge_anchor(base.anchor if base is not None else None, ours, theirs, later)
    return merged, clashes


def _merge_anchor(
    base: dict[str, Any] | None, ours: Incoming, theirs: Incoming, later: Incoming
) -> dict[str, Any] | None:
    """The code anchor as a field of its own: the side that changed it (a verify, an edit of the files)
    wins; both changed it, the later edit's. Never a clash: an anchor is a check, not a person's text."""
    if ours.anchor == theirs.anchor or theirs.anchor == base:
        return ours.anchor
    if ours.anchor == base:
        return theirs.anchor
    return later.anchor


def _merge_links(
    base: list[dict[str, Any]] | None, ours: list[dict[str, Any]], theirs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Links as sets: kept if both sides keep them, added if either adds, removed if either removes."""

    def keys(links: list[dict[str, Any]]) -> set[tuple[str, str]]:
        return {(link["type"], link["uid"]) for link in links}

    mine, other = keys(ours), keys(theirs)
    old = keys(base) if base is not None else mine & other
    wanted = (mine & other) | (mine - old) | (other - old)
    shown = {(link["type"], link["uid"]): link for link in [*theirs, *ours]}
    return [shown[key] for key in sorted(wanted)]


def render(memory: Memory, item: Incoming, relpath: str) -> bytes:
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


def _copy_file(memory: Memory, copy: Incoming) -> tuple[str, bytes]:
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
