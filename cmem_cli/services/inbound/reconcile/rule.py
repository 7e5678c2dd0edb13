"""The one merge rule for a memory two machines changed, the same for a git remote and a team database.

Each side is a :class:`Side`: the record's fields, its links (as a set of ``(type, uid)``), its code
anchor and the time of its last edit. Against the version both started from (the base: git's merge
base, or the row this home last pulled from or pushed to the team database):

- a field only one side changed takes that side's value; a field both changed to the same value is that
  value; a field both changed differently takes the later edit's value (``updated_at``, ties by content,
  the same on every machine) and the earlier side is kept whole as a conflict copy (:func:`conflict_copy`);
- links merge as sets (added if either adds, removed if either removes): never a conflict;
- the code anchor is a check, not a person's text: the side that changed it wins, both changed it, the
  later anchor (verified or anchored later); never a conflict;
- an edit on one side and a forget on the other keeps the edit (:data:`EDIT_BEATS_FORGET`), in either
  order, and both machines are told;
- with no base (a memory that came into being on both sides unseen), every differing field counts as
  changed on both sides.

The copy's uid is derived from the winner's uid and the copy's text, so a sync run again (after a kill)
or two machines making the same copy make one memory, not two.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from cmem_cli.core.ids import derived_uid
from cmem_cli.store.records import MAX_TITLE

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import ConflictItem

COPY_SUFFIX = " (conflict copy)"
QUIET_FIELDS = frozenset(
    {"machine", "author", "edited_on", "edited_by", "created_at"}
)  # never a conflict: who made it, who changed it last, when it was made

SAME_FIELD = "both machines changed {fields}: the later edit kept, the other kept as a copy"
EDIT_BEATS_FORGET = "edited on one machine, forgotten on the other: the edit is kept"
KEY_CLASH = "key {key!r} was given to two memories: the earlier one keeps it"


@dataclass(frozen=True)
class Side:
    """One machine's version of a memory, in the terms the rule compares."""

    kind: str  # "observation" or "summary"
    uid: str
    fields: Mapping[str, Any]
    links: frozenset[tuple[str, str]] = frozenset()
    anchor: Mapping[str, Any] | None = None
    updated_at: int = 0

    def content(self) -> dict[str, Any]:
        """The fields that say something (an absent field and an empty one are the same)."""
        return {k: v for k, v in self.fields.items() if not _empty(v)}

    def rank(self) -> tuple[int, str]:
        """Later edit first; ties go the same way on every machine (by content)."""
        text = json.dumps([self.content(), sorted(self.links)], sort_keys=True, default=str)
        return (self.updated_at or 0, text)


@dataclass(frozen=True)
class Merged:
    """The merged version, the fields both sides changed differently, and the side that lost them."""

    side: Side
    clashes: frozenset[str] = frozenset()
    loser: Side | None = None
    ours_later: bool = True

    @property
    def copy(self) -> Side | None:
        """The conflict copy to make (None: the sides merged cleanly)."""
        return conflict_copy(self.loser, self.side.uid) if self.clashes and self.loser else None


@dataclass
class Conflict:
    """What a sync tells the person about one memory both machines touched."""

    uid: str
    resolution: str
    copy_uid: str | None = None
    other_uid: str | None = None
    fields: list[str] = field(default_factory=list)
    path: str | None = None

    def to_json(self) -> ConflictItem:
        out: ConflictItem = {"uid": self.uid, "resolution": self.resolution}
        if self.copy_uid:
            out["copy_uid"] = self.copy_uid
        if self.other_uid:
            out["other_uid"] = self.other_uid
        if self.path:
            out["path"] = self.path
        if self.fields:
            out["fields"] = self.fields
        return out


def merge(base: Side | None, ours: Side, theirs: Side) -> Merged:
    """The field-by-field merge of two versions of one memory (see the module's docstring)."""
    ours_later = ours.rank() >= theirs.rank()
    later, earlier = (ours, theirs) if ours_later else (theirs, ours)
    mine, other = ours.content(), theirs.content()
    before = base.content() if base is not None else None
    fields: dict[str, Any] = {}
    clashes: set[str] = set()
    for key in sorted(set(mine) | set(other)):
        a, b = mine.get(key), other.get(key)
        if _same(a, b):
            value = a
        elif before is not None and _same(a, before.get(key)):
            value = b
        elif before is not None and _same(b, before.get(key)):
            value = a
        else:
            value = later.content().get(key)
            if key not in QUIET_FIELDS:
                clashes.add(key)
        if not _empty(value):
            fields[key] = value
    links = _merge_links(base.links if base is not None else None, ours.links, theirs.links)
    anchor = _merge_anchor(base.anchor if base is not None else None, ours.anchor, theirs.anchor)
    merged = replace(
        ours, fields=fields, links=links, anchor=anchor, updated_at=max(ours.updated_at, theirs.updated_at)
    )
    return Merged(merged, frozenset(clashes), earlier if clashes else None, ours_later)


def conflict_copy(loser: Side, winner_uid: str) -> Side:
    """The losing side kept whole as a new memory: ``(conflict copy)`` in its title, no key (the key stays
    with the memory kept), a ``related`` link to the one kept (a summary's copy is a second summary of
    its session). Its uid is derived from the winner and the copy's text: made twice, it is one memory."""
    seed = json.dumps(
        [winner_uid, loser.kind, loser.content(), sorted(loser.links)], sort_keys=True, default=str
    )
    created = loser.fields.get("created_at")
    uid = derived_uid(created if isinstance(created, int) else 0, seed)
    if loser.kind == "summary":
        return replace(loser, uid=uid)
    fields = dict(loser.fields)
    title = str(fields.get("title") or "")
    if not title.endswith(COPY_SUFFIX):
        fields["title"] = title[: MAX_TITLE - len(COPY_SUFFIX)] + COPY_SUFFIX
    fields.pop("key", None)
    links = frozenset({link for link in loser.links if link[1] != winner_uid} | {("related", winner_uid)})
    return replace(loser, uid=uid, fields=fields, links=links)


def same_field_conflict(merged: Merged, copy: Side, *, path: str | None = None) -> Conflict:
    names = sorted(merged.clashes)
    return Conflict(
        merged.side.uid,
        SAME_FIELD.format(fields=", ".join(names)),
        copy_uid=copy.uid,
        fields=names,
        path=path,
    )


def later_anchor(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The anchor verified or anchored later (a missing anchor never replaces one; ties by content)."""
    if a is None or b is None:
        return a if b is None else b
    return a if _anchor_order(a) >= _anchor_order(b) else b


def _merge_anchor(
    base: Mapping[str, Any] | None, ours: Mapping[str, Any] | None, theirs: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return later_anchor(ours, theirs)


def _anchor_order(anchor: Mapping[str, Any]) -> tuple[str, str]:
    return (
        str(anchor.get("verified_at") or anchor.get("anchored_at") or ""),
        json.dumps(anchor, sort_keys=True, default=str),
    )


def _merge_links(
    base: frozenset[tuple[str, str]] | None,
    ours: frozenset[tuple[str, str]],
    theirs: frozenset[tuple[str, str]],
) -> frozenset[tuple[str, str]]:
    old = base if base is not None else ours & theirs
    return frozenset((ours & theirs) | (ours - old) | (theirs - old))


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == ()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return round(float(a), 9) == round(float(b), 9)
        except (TypeError, ValueError):
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return bool(a == b) and (_empty(a) == _empty(b))


def tell(conflicts: list[ConflictItem], item: ConflictItem) -> None:
    """Add a conflict (:meth:`Conflict.to_json`) to a sync report's ``conflicts`` once: the home that
    settles a conflict and the log it then reads back name it alike."""
    key = (item.get("uid"), item.get("copy_uid"), item.get("other_uid"), item.get("resolution"))
    known = {(c.get("uid"), c.get("copy_uid"), c.get("other_uid"), c.get("resolution")) for c in conflicts}
    if key not in known:
        conflicts.append(item)
