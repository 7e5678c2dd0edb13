"""Validation of observation records: the one JSON shape that `cmem add --json` takes and `--json` prints.

Everything that writes an observation (flags, JSON import, hooks, transcript import) passes its input
through ``normalize_observation`` so limits and types are enforced in one place, before anything is
written.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.fields import LINK_TYPES, OBSERVATION_TYPES
from cmem_cli.core.text import is_valid_text
from cmem_cli.core.timeutil import parse_time

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.store.row_types import LinkTarget, ObservationInput

# Sane limits: large enough for real notes, small enough that a runaway script cannot bloat the store.
MAX_TITLE = 500
MAX_SHORT = 2_000  # subtitle, each fact/concept/file path/tool, key, project, session, agent
MAX_NARRATIVE = 200_000
MAX_LIST_ITEMS = 1_000

LIST_FIELDS = ("facts", "concepts", "files_read", "files_modified", "tools_used")
TEXT_FIELDS = ("title", "subtitle", "narrative", "project", "session", "agent", "key")
AUTHORSHIP_FIELDS = ("machine", "author")  # who wrote it: given by a memory arriving from elsewhere
EDITOR_FIELDS = ("edited_on", "edited_by")  # who changed it last (machine, person): stated by an arrival
INPUT_FIELDS = frozenset(
    {*LIST_FIELDS, *TEXT_FIELDS, *AUTHORSHIP_FIELDS, *EDITOR_FIELDS, "type", "uid", "prompt_number",
     "confidence", "created_at", "links", "supersedes", "invalidated"}
)  # fmt: skip
# What `cmem edit` may change: every input field except identity (uid, who wrote it) and links (added, not
# replaced; ``supersedes`` is a link too).
EDITABLE_FIELDS = tuple(
    sorted(INPUT_FIELDS - {"uid", "links", "supersedes", *AUTHORSHIP_FIELDS, *EDITOR_FIELDS})
)
# Fields that `--json` output carries; accepted on input (so output can be re-imported) and ignored.
OUTPUT_ONLY_FIELDS = frozenset(
    {
        "id",
        "kind",
        "score",
        "tokens",
        "path",
        "retrieval_count",
        "last_retrieved_at",
        "updated_at",
        "date",
        "stale",
        "branch",
        "anchor",
        "behind",
        "drifted",
        "superseded_by",
        "possibly_superseded_by",
    }
)


# A uid names files (its tail ends each export file name) and travels between machines: a plain token.
_UID_SHAPE = (
    r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}"  # compiled where used (re caches it): most calls never need it
)
MAX_SQL_INT = 2**63 - 1


def _check_text(field: str, value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"field '{field}' must be a string, got {type(value).__name__}")
    if not is_valid_text(value):
        raise InvalidInput(f"field '{field}' is not valid UTF-8")
    if "\x00" in value:
        raise InvalidInput(f"field '{field}' contains a NUL character")
    if len(value) > limit:
        raise InvalidInput(f"field '{field}' is too long ({len(value)} characters, limit {limit})")
    return value


def _optional_text(record: Mapping[str, Any], field: str, limit: int) -> str | None:
    value = record.get(field)
    if value is None:
        return None
    text = _check_text(field, value, limit).strip()
    return text or None


def _text_list(record: Mapping[str, Any], field: str) -> list[str]:
    value = record.get(field)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise InvalidInput(f"field '{field}' must be a list of strings")
    if len(value) > MAX_LIST_ITEMS:
        raise InvalidInput(f"field '{field}' has too many items ({len(value)}, limit {MAX_LIST_ITEMS})")
    items: list[str] = []
    for item in value:
        text = _check_text(field, item, MAX_SHORT).strip()
        if text and text not in items:
            items.append(text)
    return items


def parse_link(value: Any) -> LinkTarget:
    """``"related:12"``, ``{"type": "related", "id": 12}`` or ``{"type": ..., "uid": ...}``."""
    if isinstance(value, str):
        link_type, sep, target = value.partition(":")
        if not sep or not target.strip():
            raise InvalidInput(f"link must look like TYPE:ID, got {value!r}")
        target = target.strip()
        value = (
            {"type": link_type.strip(), "id": int(target)}
            if target.isascii() and target.isdigit()
            else {"type": link_type.strip(), "uid": target}
        )
    if not isinstance(value, dict):
        raise InvalidInput("a link must be 'TYPE:ID' or an object with 'type' and 'id' or 'uid'")
    kind = value.get("type")
    if kind not in LINK_TYPES:
        raise InvalidInput(f"unknown link type {kind!r} (expected one of: {', '.join(LINK_TYPES)})")
    if isinstance(value.get("id"), int) and not isinstance(value.get("id"), bool):
        if not 1 <= value["id"] <= MAX_SQL_INT:
            raise InvalidInput(f"link target id {value['id']} is out of range")
        return {"type": kind, "id": value["id"]}
    if isinstance(value.get("uid"), str) and value["uid"]:
        return {"type": kind, "uid": value["uid"]}
    raise InvalidInput("a link needs an integer 'id' or a 'uid'")


def normalize_observation(record: Any, *, defaults: Mapping[str, Any] | None = None) -> ObservationInput:
    """Check and clean one input record; raise InvalidInput naming the first problem."""
    if not isinstance(record, dict):
        raise InvalidInput(f"an observation must be a JSON object, got {type(record).__name__}")
    unknown = set(record) - INPUT_FIELDS - OUTPUT_ONLY_FIELDS
    if unknown:
        raise InvalidInput(f"unknown field '{sorted(unknown)[0]}'")
    merged = {**(defaults or {}), **{k: v for k, v in record.items() if v is not None}}

    title = _optional_text(merged, "title", MAX_TITLE)
    if not title:
        raise InvalidInput("missing title")
    obs_type = merged.get("type", "change")
    if obs_type not in OBSERVATION_TYPES:
        raise InvalidInput(f"unknown type {obs_type!r} (expected one of: {', '.join(OBSERVATION_TYPES)})")

    project = _optional_text(merged, "project", MAX_SHORT)
    if not project:
        raise InvalidInput("missing project")
    texts = {
        field: _optional_text(merged, field, MAX_NARRATIVE if field == "narrative" else MAX_SHORT)
        for field in ("subtitle", "narrative", "session", "agent", "key")
    }
    # whose it is and who changed it last: only when a memory arriving from elsewhere states it
    stated = {
        field: _optional_text(merged, field, MAX_SHORT)
        for field in (*AUTHORSHIP_FIELDS, *EDITOR_FIELDS)
        if merged.get(field) is not None
    }
    lists = {field: _text_list(merged, field) for field in LIST_FIELDS}
    spans = _cited_spans(lists)

    prompt_number = merged.get("prompt_number")
    if prompt_number is not None and (
        not isinstance(prompt_number, int)
        or isinstance(prompt_number, bool)
        or not 0 <= prompt_number <= MAX_SQL_INT
    ):
        raise InvalidInput("field 'prompt_number' must be a non-negative integer")

    confidence = merged.get("confidence")
    if confidence is not None:
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not math.isfinite(confidence)
            or not 0 <= confidence <= 1
        ):
            raise InvalidInput("field 'confidence' must be a number from 0 to 1")
        confidence = float(confidence)
    # invalidated (`cmem invalidate`): the reason it no longer holds; None while it is valid
    invalidated = _optional_text(merged, "invalidated", MAX_SHORT) or None

    created = merged.get("created_at")
    created_at = parse_time(created) if created is not None and created != "" else None
    uid = merged.get("uid")
    if uid is not None:
        uid = _check_text("uid", uid, 64).strip()
        if not re.fullmatch(_UID_SHAPE, uid) or ".." in uid:
            raise InvalidInput(
                "field 'uid' must be 1-64 letters, digits, '.', '_', ':' or '-' (no '..', no slashes)"
            )

    links = merged.get("links") or []
    if not isinstance(links, list):
        raise InvalidInput("field 'links' must be a list")
    out: ObservationInput = {
        "type": obs_type,
        "title": title,
        "subtitle": texts["subtitle"],
        "narrative": texts["narrative"],
        "project": project,
        "session": texts["session"],
        "agent": texts["agent"] or "cli",
        "key": texts["key"],
        "facts": lists["facts"],
        "concepts": lists["concepts"],
        "files_read": lists["files_read"],
        "files_modified": lists["files_modified"],
        "tools_used": lists["tools_used"],
        "prompt_number": prompt_number,
        "confidence": confidence,
        "invalidated": invalidated,
        "created_at": created_at,
        "uid": uid,
        "links": [parse_link(link) for link in links] + superseded_links(merged.get("supersedes")),
    }
    if "machine" in stated:
        out["machine"] = stated["machine"]
    if "author" in stated:
        out["author"] = stated["author"]
    if "edited_on" in stated:
        out["edited_on"] = stated["edited_on"]
    if "edited_by" in stated:
        out["edited_by"] = stated["edited_by"]
    if spans:
        out["_spans"] = spans  # what the memory is about in those files: its anchor's regions
    return out


# A cited range: ``src/auth.py:40-62`` (or ``:40`` for one line) names the lines a memory is about.
_SPAN = r"^(.*[^:\s]):([0-9]{1,9})(?:-([0-9]{1,9}))?$"  # compiled where used (re caches it): most calls never need it


def _cited_spans(out: dict[str, list[str]]) -> dict[str, tuple[int, int]]:
    """Take ``PATH:START-END`` apart in the cited files: the path is what is cited, the range goes to the
    anchor. A range that is not START <= END from line 1 is refused."""
    spans: dict[str, tuple[int, int]] = {}
    for field in ("files_read", "files_modified"):
        items: list[str] = []
        for item in out[field]:
            match = re.match(_SPAN, item)
            if match:
                first = int(match.group(2))
                last = int(match.group(3) or first)
                if not 1 <= first <= last:
                    raise InvalidInput(
                        f"field '{field}': {item!r} needs lines START-END with 1 <= START <= END"
                    )
                item = match.group(1)
                spans[item] = (first, last)
            if item not in items:
                items.append(item)
        out[field] = items
    return spans


def superseded_links(value: Any) -> list[LinkTarget]:
    """``supersedes``: the id (or uid) of the memory this one replaces, or a list of them, as links."""
    if value is None:
        return []
    targets = value if isinstance(value, list) else [value]
    if len(targets) > MAX_LIST_ITEMS:
        raise InvalidInput(f"field 'supersedes' has too many items ({len(targets)}, limit {MAX_LIST_ITEMS})")
    links = []
    for target in targets:
        if isinstance(target, str) and target.strip().isascii() and target.strip().isdigit():
            target = int(target.strip())
        if not (isinstance(target, int | str) and not isinstance(target, bool)) or target == "":
            raise InvalidInput("field 'supersedes' must be an observation id or uid, or a list of them")
        key = "id" if isinstance(target, int) else "uid"
        links.append(parse_link({"type": "supersedes", key: target}))
    return links
