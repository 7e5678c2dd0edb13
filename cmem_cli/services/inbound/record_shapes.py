"""The record format as it arrives from elsewhere: what each field of a memory may hold, checked before
anything that arrived touches the store.

A team row (``cmem_cli.team.inbound``) and a file git brought (``cmem_cli.services.inbound.arrivals``) can be
written by anything, not only by cmem: a teammate's script, a dashboard, a hand edit committed with plain
git. A field of a shape cmem never writes (a list holding a number, a session that is a mapping, a uid
that is a list, a link without a type; in a team row, an anchor pointing out of its repository) is refused
here, whole,
with a one-line reason naming the field; the caller skips that one memory, names its uid and the machine
that wrote it, and goes on with the rest. One rule for both remotes, so a memory that one of them would
refuse is refused by the other too.

Every check reads only the value: nothing here touches the store.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import CmemError
from cmem_cli.core.fields import LINK_TYPES
from cmem_cli.store.records import LIST_FIELDS, MAX_LIST_ITEMS, MAX_SHORT, MAX_TITLE, normalize_observation

if TYPE_CHECKING:
    from collections.abc import Mapping

MAX_UID = 64
MAX_LINKS = MAX_LIST_ITEMS
FRONT_MATTER_BYTES = 1_000_000  # the export's file limit: no front matter is longer


class Refused(Exception):
    """A value cmem would never have written; ``reason`` says which field and why, in one line."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# -- the pieces --------------------------------------------------------------------------------------------
def short(value: Any) -> str:
    """A value as a note shows it: its JSON (or repr) cut to 40 characters, control characters escaped."""
    try:
        text_ = json.dumps(value, ensure_ascii=True, default=repr)
    except (TypeError, ValueError):
        text_ = repr(value)
    return text_ if len(text_) <= 40 else text_[:37] + "..."


def text(value: Any, name: str, limit: int, *, empty: bool = False) -> None:
    if not isinstance(value, str):
        raise Refused(f"{name} is {short(value)}, not a text")
    if not empty and not value.strip():
        raise Refused(f"{name} is empty")
    if "\x00" in value:
        raise Refused(f"{name} contains a NUL character")
    if len(value) > limit:
        raise Refused(f"{name} is too long ({len(value)} characters, limit {limit})")


def uid(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise Refused(f"{name} is {short(value)}, not a uid")
    try:
        normalize_observation({"title": "t", "project": "p", "uid": value})
    except CmemError:
        raise Refused(f"{name} is {short(value)}, not a uid") from None


def text_list(value: Any, name: str) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Refused(f"{name} is {short(value)}, not a list of texts")


def anchor(value: Any) -> None:
    if value is None:
        return
    from cmem_cli.services.truth.anchor_files import from_exported

    if from_exported(value) is None:
        raise Refused(f"anchor is {short(value)}, not a code anchor cmem writes")


def link_list(value: Any) -> None:
    """Links as a file states them: ``[{type, uid}, ...]``."""
    if not isinstance(value, list):
        raise Refused(f"links is {short(value)}, not a list of links")
    if len(value) > MAX_LINKS:
        raise Refused(f"it has {len(value)} links (limit {MAX_LINKS})")
    for link in value:
        if not isinstance(link, dict) or link.get("type") not in LINK_TYPES:
            raise Refused(f"a link is {short(link)}, not a link cmem writes")
        uid(link.get("uid"), "a link's target")


# -- a file's front matter ---------------------------------------------------------------------------------
# Texts a file's front matter may state, with their limits. A person may type a bare number (YAML then
# reads `session: 12345` as one); cmem quotes every text that looks like one.
OBSERVATION_TEXTS = {
    "type": 64, "title": MAX_TITLE, "subtitle": MAX_SHORT, "project": MAX_SHORT, "session": MAX_SHORT,
    "agent": MAX_SHORT, "key": MAX_SHORT, "machine": MAX_SHORT, "author": MAX_SHORT,
    "edited_on": MAX_SHORT, "edited_by": MAX_SHORT,
}  # fmt: skip
SUMMARY_TEXTS = {name: MAX_SHORT for name in ("session", "project", "agent", "machine", "author")}


def _scalar_text(value: Any, name: str, limit: int) -> None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return
    text(value, name, limit, empty=True)


def observation_front_matter(meta: Mapping[str, Any]) -> None:
    """What an observation's front matter states (an absent or null field states nothing)."""
    _stated_uid(meta)
    for name, limit in OBSERVATION_TEXTS.items():
        if meta.get(name) is not None:
            _scalar_text(meta[name], name, limit)
    for name in LIST_FIELDS:
        value = meta.get(name)
        if value is None or isinstance(value, str):
            continue  # a single text is a list of one, as `cmem add --json` takes it
        if not isinstance(value, list) or not all(
            isinstance(item, str | int | float) and not isinstance(item, bool) for item in value
        ):
            raise Refused(f"{name} is {short(value)}, not a list of texts")
    if meta.get("links") is not None:
        link_list(meta["links"])
    # An anchor a file states is not checked here: one cmem cannot trust is ignored and never followed
    # (``services.truth.anchor_files.from_exported``), the memory taken without it and the store's own kept.


def summary_front_matter(meta: Mapping[str, Any]) -> None:
    _stated_uid(meta)
    for name, limit in SUMMARY_TEXTS.items():
        if meta.get(name) is not None:
            _scalar_text(meta[name], name, limit)


def _stated_uid(meta: Mapping[str, Any]) -> None:
    value = meta.get("uid")
    if value is None or value == "":
        return
    uid(str(value) if isinstance(value, int) and not isinstance(value, bool) else value, "uid")


def front_matter_problem(kind: str, meta: Mapping[str, Any]) -> str | None:
    """Why a file of ``kind`` whose front matter says ``meta`` cannot be taken, or None."""
    try:
        (summary_front_matter if kind == "summary" else observation_front_matter)(meta)
    except Refused as exc:
        return exc.reason
    return None


_STATED = re.compile(r'^(uid|machine):[ \t]*"?([^"\n]{1,200}?)"?[ \t]*$', re.M)


def who_wrote(data: bytes) -> tuple[str | None, str | None]:
    """(uid, machine) as a file's front matter states them, read line by line without a YAML parser, so
    that a file no parser takes (broken YAML, an alias bomb) is named too. None for what it does not state
    plainly."""
    head = data[:FRONT_MATTER_BYTES].decode("utf-8", "replace")
    if not head.lstrip("\ufeff").startswith("---"):
        return None, None
    end = head.find("\n---", 3)
    found: dict[str, str] = {}
    for match in _STATED.finditer(head, 0, end if end != -1 else len(head)):
        value = match[2].strip()
        if value.isprintable() and match[1] not in found:
            found[match[1]] = value
    stated = found.get("uid")
    return (stated if stated and len(stated) <= MAX_UID else None), found.get("machine")
