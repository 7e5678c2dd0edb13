"""Memories as they travel to and from the team database: field lists, conversions, equality, copies.

What travels is what is stored, and everything stored was scrubbed when it was written (``<private>``
blocks stripped, secrets redacted): the server never sees text this home would not keep. Rows that
arrive are validated and scrubbed again before they are written here, like any input.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.services.inbound.reconcile.rule import Side
from cmem_cli.store.records import AUTHORSHIP_FIELDS, EDITOR_FIELDS, LIST_FIELDS

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

OBS_FIELDS = (
    "type", "title", "subtitle", "narrative", *LIST_FIELDS, "project", "session", "agent", "prompt_number",
    "key", "confidence", "created_at", "invalidated",
)  # fmt: skip
OBS_COLUMNS = ("uid", *OBS_FIELDS, "updated_at", "machine", "author", *EDITOR_FIELDS, "anchor", "path")
SUMMARY_COLUMNS = (
    "uid",
    "session",
    "project",
    "agent",
    *SUMMARY_FIELDS,
    "created_at",
    "updated_at",
    "machine",
    "author",
)


def observation_out(
    row: Mapping[str, Any],
    links: Sequence[Mapping[str, Any]],
    machine: str,
    anchor: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A stored observation (and its links by uid) as the server's row, with the machine that wrote it (this
    one, ``machine``, when not recorded); ``anchor``: its code anchor as its
    export file states it (``cmem_cli.services.truth.anchor_files.exported``: the repository by name, never a folder
    of this machine)."""
    out = {name: row.get(name) for name in OBS_FIELDS}
    out.update(
        uid=row["uid"],
        updated_at=row["updated_at"],
        machine=row.get("machine") or machine,
        author=row.get("author"),
        edited_on=row.get("edited_on"),
        edited_by=row.get("edited_by"),
        anchor=anchor,
        path=row.get("path"),  # the file name this home gave it: a home that pulls it names it so
    )
    out["links"] = sorted({(link["type"], link["uid"]) for link in links})
    return out


def summary_out(row: Mapping[str, Any], machine: str) -> dict[str, Any]:
    out = {name: row.get(name) for name in ("uid", "session", "project", "agent", *SUMMARY_FIELDS)}
    out.update(
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        machine=row.get("machine") or machine,
        author=row.get("author"),
    )
    return out


def server_params(row: Mapping[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    """Query parameters for one row: list fields as JSON text (the columns are jsonb)."""
    params = {name: row.get(name) for name in columns}
    for name in LIST_FIELDS:
        if name in params:
            params[name] = json.dumps(params[name] or [], ensure_ascii=False)
    if params.get("anchor") is not None:
        params["anchor"] = json.dumps(params["anchor"], ensure_ascii=False, sort_keys=True)
    return params


def observation_in(row: Mapping[str, Any]) -> dict[str, Any]:
    """A server row as an input record for the write service (which validates and scrubs it)."""
    record = {name: row.get(name) for name in OBS_FIELDS}
    record["uid"] = row["uid"]
    record["machine"] = row.get("machine")  # whose it is travels with it: the machine and the person
    record["author"] = row.get("author")
    record["edited_on"] = row.get("edited_on")  # who changed it last, apart from who wrote it
    record["edited_by"] = row.get("edited_by")
    for name in LIST_FIELDS:
        value = record.get(name)
        record[name] = json.loads(value) if isinstance(value, str) else list(value or [])
    return {k: v for k, v in record.items() if v is not None}


def same_observation(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal content (times of the edit, the machine, the revision and the code anchor aside): no conflict."""
    return _content(a) == _content(b)


def anchor_of(row: Mapping[str, Any]) -> dict[str, Any] | None:
    value = row.get("anchor")
    return json.loads(value) if isinstance(value, str) else value


def same_anchor(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return anchor_of(a) == anchor_of(b)


def newer_anchor(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Is this home's code anchor the later one (verified or anchored later)? A missing anchor never
    replaces one; ties go the same way on every machine (by content)."""
    a, b = anchor_of(mine), anchor_of(theirs)
    if a is None or b is None:
        return b is None and a is not None
    return _anchor_order(a) > _anchor_order(b)


def _anchor_order(anchor: Mapping[str, Any]) -> tuple[str, str]:
    return (
        str(anchor.get("verified_at") or anchor.get("anchored_at") or ""),
        json.dumps(anchor, sort_keys=True),
    )


def _content(row: Mapping[str, Any]) -> tuple[Any, ...]:
    values = []
    for name in OBS_FIELDS:
        value = row.get(name)
        if name in LIST_FIELDS:
            value = tuple(json.loads(value) if isinstance(value, str) else value or [])
        elif name == "confidence" and value is not None:
            value = round(float(value), 9)
        values.append(value)
    links = row.get("links")
    if links is not None:
        values.append(tuple(sorted(tuple(link) for link in links)))
    return tuple(values)


def same_summary(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    names = ("session", "project", "agent", *SUMMARY_FIELDS)
    return all((a.get(n) or None) == (b.get(n) or None) for n in names)


def side(kind: str, row: Mapping[str, Any]) -> Side:
    """A server-shaped row (this home's, the server's, or the base) in the terms of the merge rule."""
    if kind == "summary":
        names: tuple[str, ...] = (
            "session",
            "project",
            "agent",
            *SUMMARY_FIELDS,
            "created_at",
            *AUTHORSHIP_FIELDS,
        )
    else:
        names = (*OBS_FIELDS, *AUTHORSHIP_FIELDS, *EDITOR_FIELDS)
    fields: dict[str, Any] = {}
    for name in names:
        value = row.get(name)
        if name in LIST_FIELDS:
            value = list(json.loads(value) if isinstance(value, str) else value or [])
        elif name == "confidence" and value is not None:
            value = round(float(value), 9)
        fields[name] = value
    links = frozenset((str(t), str(u)) for t, u in row.get("links") or [])
    return Side(kind, row["uid"], fields, links, anchor_of(row), int(row.get("updated_at") or 0))


def row_of(merged: Side) -> dict[str, Any]:
    """The merge rule's result as a server-shaped row (what :func:`side` read)."""
    row: dict[str, Any] = {
        name: None for name in (OBS_COLUMNS if merged.kind == "observation" else SUMMARY_COLUMNS)
    }
    row.update(merged.fields)
    for name in LIST_FIELDS:
        if name in row:
            row[name] = list(row[name] or [])
    row.update(uid=merged.uid, updated_at=merged.updated_at)
    if merged.kind == "observation":
        row["anchor"] = dict(merged.anchor) if merged.anchor is not None else None
        row["links"] = sorted(merged.links)
    return row
