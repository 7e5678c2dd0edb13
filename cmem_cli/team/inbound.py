"""What arrives from the team database, checked against the record format before it touches the store.

The team tables can be written by anything holding a role that may write them (a teammate's script, a
migration, a dashboard), not only by cmem: a list column may hold a number, a column cmem never leaves
empty may be NULL, a text may be larger than the export's own file limit. Such a row is refused here,
whole, with a reason; the caller skips it (a one-line note naming its uid and the machine that wrote it,
``skipped`` in `cmem sync --json`, `cmem doctor`) and the rest of the sync goes on. A row that passes
is then validated and scrubbed again by the write service, as any input.

The rule for each field is the one files arriving by git sync are held to
(``cmem_cli.services.inbound.record_shapes``); this module applies it to the team tables' columns. Every check
reads only the row: nothing here touches the store or the server.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import CmemError
from cmem_cli.core.fields import LINK_TYPES, SESSION_STATUSES, SUMMARY_FIELDS
from cmem_cli.core.timeutil import MAX_MS
from cmem_cli.services.inbound.record_shapes import MAX_LINKS, MAX_UID, Refused
from cmem_cli.services.inbound.record_shapes import anchor as _anchor
from cmem_cli.services.inbound.record_shapes import short as _short
from cmem_cli.services.inbound.record_shapes import text as _text
from cmem_cli.services.inbound.record_shapes import text_list as _text_list
from cmem_cli.services.inbound.record_shapes import uid as _uid
from cmem_cli.services.write.sessions import SUMMARY_LIMIT
from cmem_cli.store.records import LIST_FIELDS, MAX_SHORT, normalize_observation
from cmem_export.reading import MAX_FILE_BYTES

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.sync_report import Skipped, SyncReport

# What a file holds besides the row's own text (front matter keys, headings, a link line's markup) is
# bounded by these: a row whose text comes near the limit is refused rather than written as a file that
# no later sync could read back (docs/team.md).
FILE_OVERHEAD = 8_192
MAX_PATH = 1_024  # the file name a memory's writer gave it, relative to the export tree
LINK_LINE = 2_600  # a link's line: its type, the target's title (500 characters) and relative path


def label(row: Mapping[str, Any], key: str = "uid") -> str:
    """The row's uid as a note can show it (a uid of the wrong shape is shown as a short repr)."""
    value = row.get(key)
    if isinstance(value, str) and 0 < len(value) <= MAX_UID and value.isprintable():
        return value
    return _short(value)


def machine_of(row: Mapping[str, Any]) -> str:
    value = row.get("machine")
    if isinstance(value, str) and 0 < len(value) <= MAX_SHORT and value.isprintable():
        return value
    return "an unknown machine"


# -- one check per table ------------------------------------------------------------------------------
def observation(row: Mapping[str, Any]) -> None:
    """A ``cmem_observations`` row with its ``links`` [(type, uid)]."""
    _uid(row.get("uid"), "uid")
    _machine(row)
    for name in LIST_FIELDS:
        _text_list(row.get(name), name)
    for name in ("created_at", "updated_at"):
        _time(row.get(name), name)
    record = {n: row.get(n) for n in (*LIST_FIELDS, "type", "title", "subtitle", "narrative", "project",
                                       "session", "agent", "prompt_number", "key", "confidence", "uid", "invalidated")}  # fmt: skip
    for name in ("type", "title", "project", "agent"):
        value = record[name]
        if not isinstance(value, str) or not value.strip():
            raise Refused(f"{name} is {_short(value)}, not a text")
    confidence = record["confidence"]
    if isinstance(confidence, float) and not math.isfinite(confidence):
        raise Refused(f"confidence is {confidence}, not a number from 0 to 1")
    try:
        normalize_observation({k: v for k, v in record.items() if v is not None})
    except CmemError as exc:
        raise Refused(exc.message) from None
    _anchor(row.get("anchor"))
    links = row.get("links") or []
    if len(links) > MAX_LINKS:
        raise Refused(f"it has {len(links)} links (limit {MAX_LINKS})")
    for link_type, target in links:
        if link_type not in LINK_TYPES:
            raise Refused(f"a link's type is {_short(link_type)}")
        _uid(target, "a link's target")
    size = _bytes(*(row.get(n) for n in ("title", "subtitle", "narrative", "project", "session", "agent",
                                         "key", "invalidated")), *(item for n in LIST_FIELDS for item in row[n]))  # fmt: skip
    size += len(links) * LINK_LINE + len(json.dumps(row.get("anchor"), default=str)) * 2
    _fits(size)


def summary(row: Mapping[str, Any]) -> None:
    _uid(row.get("uid"), "uid")
    _machine(row)
    for name in ("session", "project", "agent"):
        _text(row.get(name), name, MAX_SHORT)
    for name in ("created_at", "updated_at"):
        _time(row.get(name), name)
    texts = [row.get(name) for name in SUMMARY_FIELDS]
    for name, value in zip(SUMMARY_FIELDS, texts, strict=True):
        if value is not None:
            _text(value, name, SUMMARY_LIMIT, empty=True)
    if not any(isinstance(value, str) and value.strip() for value in texts):
        raise Refused("a summary needs at least one of: " + ", ".join(SUMMARY_FIELDS))
    _fits(_bytes(*texts, row.get("session"), row.get("project"), row.get("agent")))


def session(row: Mapping[str, Any]) -> None:
    _text(row.get("session_id"), "session_id", MAX_SHORT)
    _machine(row)
    for name in ("agent", "project"):
        _text(row.get(name), name, MAX_SHORT)
    if row.get("status") not in SESSION_STATUSES:
        raise Refused(f"status is {_short(row.get('status'))}")
    for name in ("started_at", "last_activity_at"):
        _time(row.get(name), name)
    if row.get("completed_at") is not None:
        _time(row.get("completed_at"), "completed_at")
    counter = row.get("prompt_counter")
    if isinstance(counter, bool) or not isinstance(counter, int) or not 0 <= counter < 2**31:
        raise Refused(f"prompt_counter is {_short(counter)}")
    for name, limit in (("label", 500), ("goal", SUMMARY_LIMIT), ("outcome", SUMMARY_LIMIT),
                        ("next_steps", SUMMARY_LIMIT)):  # fmt: skip
        if row.get(name) is not None:
            _text(row.get(name), name, limit, empty=True)


def prompt(row: Mapping[str, Any]) -> None:
    _uid(row.get("uid"), "uid")
    _machine(row)
    for name in ("session", "project", "agent"):
        _text(row.get(name), name, MAX_SHORT)
    _text(row.get("text"), "text", SUMMARY_LIMIT)
    number = row.get("prompt_number")
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number < 2**31:
        raise Refused(f"prompt_number is {_short(number)}")
    _time(row.get("created_at"), "created_at")


def tombstone(row: Mapping[str, Any]) -> None:
    _uid(row.get("uid"), "uid")


CHECKS = {"observation": observation, "summary": summary, "session": session, "prompt": prompt}


def problem(kind: str, row: Mapping[str, Any]) -> str | None:
    """Why ``row`` (of ``kind``) cannot be taken, or None."""
    try:
        CHECKS[kind](row)
    except Refused as exc:
        return exc.reason
    return None


def skip(report: SyncReport, kind: str, row: Mapping[str, Any], reason: str, key: str = "uid") -> Skipped:
    """Say in ``report`` that ``row`` was skipped (``skipped``, and a note for stderr); returns the item."""
    item: Skipped = {"kind": kind, "uid": label(row, key), "machine": machine_of(row), "reason": reason}
    report.skipped.append(item)
    return item


# -- the pieces ----------------------------------------------------------------------------------------
def _machine(row: Mapping[str, Any]) -> None:
    """Whose it is: the machine and, where known, the person (a text, or none)."""
    _text(row.get("machine"), "machine", MAX_SHORT)
    for name in ("author", "edited_on", "edited_by"):  # the person, and who changed it last, where known
        if row.get(name) is not None:
            _text(row[name], name, MAX_SHORT)
    if row.get("path") is not None:  # the writer's file name: taken only when it is cmem's (apply.py)
        _text(row["path"], "path", MAX_PATH)


def _time(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MS:
        raise Refused(f"{name} is {_short(value)}, not a time in epoch milliseconds")


def _bytes(*values: Any) -> int:
    return sum(len(value.encode("utf-8", "replace")) for value in values if isinstance(value, str))


def _fits(size: int) -> None:
    if size + FILE_OVERHEAD > MAX_FILE_BYTES:
        raise Refused(
            f"its file would be over the export's limit ({size} bytes of text, limit {MAX_FILE_BYTES})"
        )
