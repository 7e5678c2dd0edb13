"""Rendering records as front-mattered markdown, and parsing such files back into records.

The front matter carries every structured field as one ``key: value`` line, with values written as JSON
(a strict subset of YAML flow syntax), so rendering is fast and needs no YAML library; parsing uses a
real YAML parser, so hand-edited files still read back. The narrative is body text for people to read
and edit; it ends at the ``<!-- cmem:links -->`` marker, so it may itself contain headings.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from cmem_cli.core.fields import LINKS_MARKER, SUMMARY_FIELDS
from cmem_cli.core.frontmatter import (
    PLAIN_WORDS,
    YAML_WORDS,
    FrontMatterError,
    check_values,
    fast_front_matter,
    load_yaml,
)
from cmem_cli.core.summary_title import summary_title
from cmem_cli.core.timeutil import parse_time, to_iso

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

# No local integer id: ids differ between machines, and a file that named one would change on every
# machine that adopted it (git sync would never settle). Identity is the uid.
OBSERVATION_KEYS = (
    "uid", "type", "title", "subtitle", "project", "session", "agent", "machine", "author", "edited_on",
    "edited_by", "key", "concepts",
    "facts", "files_read", "files_modified", "tools_used", "prompt_number", "confidence", "created_at",
    "updated_at", "invalidated",
)  # fmt: skip
# Who wrote it (the machine, the person): stated when known, so that other homes learn it from the file.
AUTHORSHIP_KEYS = ("machine", "author")
# Who changed it last (the machine, the person), when someone did: stated apart from who wrote it.
EDITOR_KEYS = ("edited_on", "edited_by")
SUMMARY_HEADINGS = {
    "request": "Request",
    "investigated": "Investigated",
    "learned": "Learned",
    "completed": "Completed",
    "next_steps": "Next steps",
    "notes": "Notes",
}
# Characters YAML forbids raw or folds as line breaks (NEL, LS, PS); JSON leaves them raw, so escape them.
# Compiled where used (re caches it): an ASCII value, most, has none but DEL, and the class costs about a
# millisecond to compile, in every process that writes a file.
_NON_PRINTABLE = "[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]"


def _printable(quoted: str) -> str:
    """``quoted`` (JSON) with the characters YAML forbids escaped as ``\\uXXXX``."""
    if quoted.isascii() and "\x7f" not in quoted:
        return quoted
    return re.sub(_NON_PRINTABLE, lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, str):
        if PLAIN_WORDS.match(value) and value.lower() not in YAML_WORDS and not value.endswith(" "):
            return value
        return _printable(json.dumps(value, ensure_ascii=False))
    if isinstance(value, list):
        return "[" + ", ".join(_yaml_scalar(v) if not isinstance(v, str) else _quoted(v) for v in value) + "]"
    if isinstance(value, dict):  # JSON inside: the fast reader below takes it without YAML
        items = (
            f"{_quoted(str(k))}: {_quoted(v) if isinstance(v, str) else _yaml_scalar(v)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to front matter")


def _quoted(value: str) -> str:
    return _printable(json.dumps(value, ensure_ascii=False))


def front_matter(fields: list[tuple[str, Any]]) -> str:
    lines = ["---"]
    for key, value in fields:
        lines.append(f"{key}: {_quoted(value) if key.endswith('_at') and value else _yaml_scalar(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def link_entries(links: Iterable[Mapping[str, Any]], relpath: str) -> list[dict[str, Any]]:
    """The links a file at ``relpath`` lists, as :func:`render_observation` takes them: the one rule for
    every writer of a file (a local write, git sync's merge), so their files agree byte for byte.

    Each of ``links`` has ``type``, ``uid`` and ``title``, and ``path`` (the target's file, relative to
    the export root) when this store holds the target; else ``href`` (and ``title``) as a file showed it
    (a target not here yet). Ordered by type, then the target's uid: ids and the times links were added
    differ from store to store."""
    import os.path

    base = str(PurePosixPath(relpath).parent)
    out = []
    for link in links:
        if link.get("path"):
            title, href = link["title"], PurePosixPath(os.path.relpath(link["path"], base or ".")).as_posix()
        else:
            title, href = link.get("title") or link["uid"], link.get("href") or ""
        out.append({"type": link["type"], "uid": link["uid"], "title": title, "href": href})
    out.sort(key=lambda link: (link["type"], link["uid"]))
    return out


def render_observation(
    record: Mapping[str, Any],
    links: Sequence[Mapping[str, Any]] | None = None,
    anchor: Mapping[str, Any] | None = None,
) -> str:
    """The markdown file for one observation. ``links``: dicts with type, id, uid, title, relpath.
    ``anchor``: the code anchor as it travels between machines (repository name, branch, commit, blob
    ids by repository-relative path, times), one JSON line in the front matter."""
    fields: list[tuple[str, Any]] = [("cmem", "observation")]
    for key in OBSERVATION_KEYS:
        value = record.get(key)
        if key in ("created_at", "updated_at"):
            value = to_iso(value)
        if value is not None and value != []:  # absent means empty: files stay short and greppable
            fields.append((key, value))
    if links:
        fields.append(("links", [{"type": link["type"], "uid": link["uid"]} for link in links]))
    if anchor:
        fields.append(("anchor", anchor))
    parts = [front_matter(fields), f"# {_one_line(record['title'])}\n"]
    if record.get("subtitle"):
        parts.append(f"\n*{_one_line(record['subtitle'])}*\n")
    if record.get("facts"):
        parts.append("\n## Facts\n\n" + "".join(f"- {_one_line(f)}\n" for f in record["facts"]))
    files = [("read", p) for p in record.get("files_read") or []] + [
        ("modified", p) for p in record.get("files_modified") or []
    ]
    if files:
        parts.append("\n## Files\n\n" + "".join(f"- {kind}: `{path}`\n" for kind, path in files))
    if record.get("narrative"):
        parts.append("\n## Narrative\n\n" + record["narrative"].rstrip("\n") + "\n")
    if links:
        lines = [f"- {link['type']}: [{_one_line(link['title'])}]({link['href']})\n" for link in links]
        parts.append(f"\n{LINKS_MARKER}\n## Related\n\n" + "".join(lines))
    return "".join(parts)


def render_summary(record: Mapping[str, Any]) -> str:
    fields: list[tuple[str, Any]] = [("cmem", "summary")]
    for key in ("uid", "session", "project", "agent"):
        fields.append((key, record.get(key)))
    fields += [(key, record[key]) for key in AUTHORSHIP_KEYS if record.get(key)]
    fields.append(("created_at", to_iso(record.get("created_at"))))
    title = summary_title(record)
    fields.insert(2, ("title", title))
    parts = [front_matter(fields), f"# {title}\n"]
    for field in SUMMARY_FIELDS:
        if record.get(field):
            parts.append(f"\n## {SUMMARY_HEADINGS[field]}\n\n{record[field].rstrip()}\n")
    return "".join(parts)


# -- parsing back -------------------------------------------------------------------------------------


_fast_front_matter = fast_front_matter  # the kernel's: the index reads front matter the same way


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter dict, body). Files without front matter give ({}, text); a block that cannot be read
    safely (broken YAML, not a mapping, anchors, deep nesting, numbers or dates out of range) raises
    :class:`FrontMatterError` with the reason."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            return {}, text
    block = text[4:end]
    meta = _fast_front_matter(block)
    if meta is None:
        meta = load_yaml(block) or {}
    else:
        check_values(meta)
    if not isinstance(meta, dict):
        raise FrontMatterError("broken front matter (not a YAML mapping between --- lines)")
    return meta, text[end + 5 :]


def _time(value: Any) -> int | None:
    if value is None or value == "":
        return None
    loaded = sys.modules.get("datetime")  # a YAML loader that made a datetime imported it: no one else must
    if loaded is not None and isinstance(value, loaded.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=loaded.UTC)
        return int(value.timestamp() * 1000)
    return parse_time(str(value))
