"""Reading any markdown file in the export tree back into a record, keeping every word a person wrote.

``render_observation``/``render_summary`` write front matter plus body sections; this is their inverse
for files people may have edited, or written from scratch. Fields shown in the body (title, subtitle,
facts, files, narrative; a summary's sections) are read from the body, since that is what people edit;
the rest come from the front matter. Text that is no known field is never dropped: it is appended to the
narrative (a summary's notes). A file without front matter is a new note: its title is its first heading
or its file name, its body the narrative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from cmem_cli.core.fields import LINKS_MARKER, SUMMARY_FIELDS
from cmem_cli.core.frontmatter import FrontMatterError
from cmem_export.markdown import (
    AUTHORSHIP_KEYS,
    EDITOR_KEYS,
    OBSERVATION_KEYS,
    SUMMARY_HEADINGS,
    _time,
    split_front_matter,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

MAX_FILE_BYTES = 1_000_000
_FILE_LINE = re.compile(r"^- (read|modified): `(.*)`$")
_LINK_LINE = re.compile(r"^- [a-z_]+: \[.*\]\(.*\)(?: \(#\d+\))?$")  # "(#id)": files before ids left them
_SUBTITLE = re.compile(r"^\*(.+)\*$")
_NARRATIVE = re.compile(r"(?m)^## Narrative\n")
_LIST_KEYS = ("facts", "concepts", "files_read", "files_modified", "tools_used")
_SECTION_OF = {f"## {title}": name for name, title in SUMMARY_HEADINGS.items()}


class UnreadableFile(ValueError):
    """The file cannot become a record (the message says why, for a one-line report)."""


@dataclass
class ParsedFile:
    kind: str  # "observation" or "summary"
    record: dict[str, Any]  # input fields, as `cmem add --json` / `summary add` take them
    has_front_matter: bool
    uid: str | None
    stated: set[str] = field(default_factory=set)  # fields the file itself states (others: keep)
    restore: dict[str, Any] = field(default_factory=dict)  # id and updated_at, kept when rebuilding
    # what the front matter says of the fields the body shows (title, subtitle, facts, files), where the
    # body shows them too: the front matter wins when only it changed (see ``front_matter_edits``)
    front: dict[str, Any] = field(default_factory=dict)
    written_at: int | None = (
        None  # the file's mtime (epoch ms), set by whoever read it: when the edit was made
    )
    anchor: dict[str, Any] | None = None  # the code anchor the front matter states (None: keep the store's)
    meta: dict[str, Any] = field(default_factory=dict)  # the front matter as stated, for checks of its shape


def _restore(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a store rebuilt from this file should keep: the local id (if free) and the update time."""
    local_id = meta.get("id")
    restore: dict[str, Any] = {}
    if isinstance(local_id, int) and not isinstance(local_id, bool) and 0 < local_id < 2**63:
        restore["id"] = local_id
    if meta.get("updated_at"):
        restore["updated_at"] = _time(meta["updated_at"])
    return restore


def decode(data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise UnreadableFile(f"file too large ({len(data)} bytes, limit {MAX_FILE_BYTES})")
    if b"\x00" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableFile("not UTF-8 text") from None


_CLAIM = re.compile(r"^(?:cmem|project|uid):", re.M)


def claims_memory(text: str) -> bool:
    """True when a file directly in the export root says it is a memory: front matter naming ``cmem:``,
    ``project:`` or ``uid:``. Any other file there (a README.md, a team's TEAM.md) is the user's own and
    is left alone, silently; files in project folders are always memories."""
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    if not text.startswith("---\n"):
        return False
    end = text.find("\n---", 3)
    return bool(_CLAIM.search(text, 4, end if end != -1 else len(text)))


def parse_file(text: str, relpath: str) -> ParsedFile:
    """Parse one export file (cmem's or a person's) into a record; raise UnreadableFile if impossible."""
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    try:
        meta, body = split_front_matter(text)
    except FrontMatterError as exc:
        raise UnreadableFile(str(exc)) from None
    if not meta and text.startswith("---\n"):
        raise UnreadableFile("broken front matter (not a YAML mapping between --- lines)")
    kind = meta.get("cmem", "observation")
    if kind == "summary":
        return _parse_summary(meta, body, relpath)
    if kind != "observation":
        raise UnreadableFile(f"unknown cmem kind {kind!r} in front matter")
    return _parse_observation(meta, body, relpath)


def _folder_project(relpath: str) -> str | None:
    parts = PurePosixPath(relpath).parts
    return parts[0] if len(parts) > 1 else None


def _title_from_name(relpath: str) -> str:
    stem = PurePosixPath(relpath).stem
    return re.sub(r"[-_]+", " ", stem).strip() or stem


def _uid(meta: Mapping[str, Any]) -> str | None:
    uid = meta.get("uid")
    return str(uid) if uid not in (None, "") else None


def _parse_observation(meta: dict[str, Any], body: str, relpath: str) -> ParsedFile:
    record: dict[str, Any] = {}
    stated: set[str] = set()
    if meta:
        for key in OBSERVATION_KEYS:
            if key in ("id", "updated_at"):
                continue  # local to one store / set by the store
            if key in AUTHORSHIP_KEYS or key in EDITOR_KEYS:
                if meta.get(key) not in (None, ""):  # an older file says nothing of who wrote it
                    record[key] = str(meta[key])
                continue
            value = meta.get(key)
            if key == "created_at":
                value = _time(value) if value not in (None, "") else None
            record[key] = value
            stated.add(key)
        for key in _LIST_KEYS:
            record[key] = _str_list(record.get(key))
        links = meta.get("links") or []
        record["links"] = [
            {"type": link.get("type"), "uid": str(link.get("uid"))}
            for link in (links if isinstance(links, list) else [])
            if isinstance(link, dict) and link.get("uid")
        ]
        stated.add("links")
    body_fields, extra = _observation_body(body)
    front = {k: record[k] for k in BODY_SHOWN if k in body_fields and meta and k in meta}
    record.update(body_fields)
    stated.update(body_fields)
    if meta and "narrative" not in body_fields:
        record["narrative"] = None
        stated.add("narrative")
    if extra:
        narrative = record.get("narrative")
        record["narrative"] = (narrative.rstrip("\n") + "\n\n" if narrative else "") + extra
        stated.add("narrative")
    if not record.get("title"):
        record["title"] = _title_from_name(relpath)
    if not record.get("project") and _folder_project(relpath):
        record["project"] = _folder_project(relpath)
    parsed = ParsedFile(
        "observation", record, bool(meta), _uid(meta), stated, _restore(meta), front, meta=meta
    )
    if isinstance(meta.get("anchor"), dict):
        parsed.anchor = meta["anchor"]
    return parsed


BODY_SHOWN = ("title", "subtitle", "facts", "files_read", "files_modified")  # also in cmem's front matter


def front_matter_edits(parsed: ParsedFile, written: Mapping[str, Any]) -> dict[str, Any]:
    """The fields changed only in the front matter, against ``written`` (the record cmem last wrote):
    where the body still shows what cmem wrote and the front matter says otherwise, the person edited the
    front matter, and that edit is taken. Changed in both places, the body wins."""
    taken: dict[str, Any] = {}
    for key, value in parsed.front.items():
        if key == "title" or key == "subtitle":
            value = None if value is None else " ".join(str(value).split()) or None
        was = written.get(key) or ([] if key in _LIST_KEYS else None)
        if parsed.record.get(key) == was and value != was:
            taken[key] = value
    return taken


def _str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def _observation_body(body: str) -> tuple[dict[str, Any], str]:
    """Fields the body shows, and the text that is none of them."""
    fields: dict[str, Any] = {}
    extra: list[str] = []
    body, related = _split_links(body)
    narrative = _NARRATIVE.search(body)
    head = body if narrative is None else body[: narrative.start()]
    if narrative is not None:
        fields["narrative"] = body[narrative.end() :].strip("\n") or None
    section = None
    previous = ""  # the last non-blank line: a subtitle directly follows the title
    for line in head.split("\n"):
        before, previous = previous, (line if line.strip() else previous)
        if line.startswith("# ") and "title" not in fields and section is None:
            fields["title"] = line[2:].strip()
            continue
        if line.startswith("## "):
            section = line[3:].strip()
            if section == "Facts":
                fields.setdefault("facts", [])
                continue
            if section == "Files":
                fields.setdefault("files_read", [])
                fields.setdefault("files_modified", [])
                continue
            extra.append(line)
            continue
        subtitle = _SUBTITLE.match(line)
        if subtitle and section is None and "subtitle" not in fields and before.startswith("# "):
            fields["subtitle"] = subtitle.group(1).strip()
            continue
        if section == "Facts" and line.startswith("- "):
            fields["facts"].append(line[2:].strip())
            continue
        if section == "Files":
            match = _FILE_LINE.match(line)
            if match:
                fields["files_" + match.group(1)].append(match.group(2))
                continue
        extra.append(line)
    for line in related.split("\n"):
        if line and line != "## Related" and not _LINK_LINE.match(line):
            extra.append(line)
    return fields, "\n".join(extra).strip("\n")


def _split_links(body: str) -> tuple[str, str]:
    at = body.find(LINKS_MARKER)
    if at == -1:
        return body, ""
    return body[:at].rstrip("\n") + "\n", body[at + len(LINKS_MARKER) :]


def _parse_summary(meta: dict[str, Any], body: str, relpath: str) -> ParsedFile:
    record: dict[str, Any] = {
        key: (str(meta[key]) if meta.get(key) is not None else None)
        for key in ("session", "project", "agent")
    }
    record["created_at"] = _time(meta.get("created_at")) if meta.get("created_at") else None
    record.update({key: str(meta[key]) for key in AUTHORSHIP_KEYS if meta.get(key) not in (None, "")})
    current: str | None = None
    sections: dict[str, list[str]] = {}
    extra: list[str] = []
    for line in body.split("\n"):
        if line in _SECTION_OF:
            current = _SECTION_OF[line]
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
        elif line.strip() and not line.startswith("# Session summary:"):
            extra.append(line)
    for name in SUMMARY_FIELDS:
        lines = sections.get(name)
        record[name] = ("\n".join(lines).strip("\n") or None) if lines is not None else None
    if extra:
        notes = record.get("notes")
        record["notes"] = (notes + "\n\n" if notes else "") + "\n".join(extra).strip("\n")
    if not record.get("project") and _folder_project(relpath):
        record["project"] = _folder_project(relpath)
    stated = {*SUMMARY_FIELDS, "project", "agent"}
    return ParsedFile("summary", record, True, _uid(meta), stated, _restore(meta), meta=meta)
