"""The third retrieval layer: full details of observations, summaries and prompts."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.config import Config
from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.timeutil import now_ms, to_iso
from cmem_cli.services.read.documents import fetch_document, is_document_ref
from cmem_cli.services.read.search_pipeline import Reader, prompt_row, resolve_ref, summary_row
from cmem_cli.services.truth import supersession
from cmem_export import markdown

if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

    from cmem_cli.services.read.record_types import (
        DocumentRecord,
        ObservationRecord,
        PromptRecord,
        RecordJson,
        SummaryRecord,
    )


def observation_record(memory: Reader, row: Mapping[str, Any], *, anchored: bool = True) -> ObservationRecord:
    """One observation's full record; ``anchored`` False leaves its anchor's fields to the caller (who
    checks many records' anchors at once: :func:`cmem_cli.services.truth.anchor_notes.anchors_fields`)."""
    record = cast("ObservationRecord", {k: v for k, v in row.items()})  # the stored row, its times made ISO
    record["kind"] = "observation"
    record["created_at"] = to_iso(row.get("created_at"))
    record["updated_at"] = to_iso(row.get("updated_at"))
    record["last_retrieved_at"] = to_iso(row.get("last_retrieved_at"))
    record["links"] = [
        {"type": link["type"], "id": link["id"], "uid": link["uid"], "title": link["title"]}
        for link in memory.store.links.outgoing(row["id"])
    ]
    record["linked_from"] = [
        {"type": link["type"], "id": link["id"], "uid": link["uid"], "title": link["title"]}
        for link in memory.store.links.incoming(row["id"])
    ]
    if anchored:
        from cmem_cli.services.truth.anchor_notes import anchor_fields

        cast("MutableMapping[str, Any]", record).update(anchor_fields(memory.store, row["id"]))
    record["superseded_by"] = supersession.successors(memory.store, [row["id"]]).get(row["id"])
    record["possibly_superseded_by"] = (
        memory.store.supersession.newest_inferred([row["id"]]).get(row["id"])
        if record["superseded_by"] is None
        else None
    )
    return record


def fetch_details(memory: Reader, refs: list[str], *, follow_links: bool = False) -> list[RecordJson]:
    """Full records for ``refs`` (and, with ``follow_links``, their one-hop neighbours); counts retrievals."""
    store = memory.store
    records: list[RecordJson] = []
    seen: set[tuple[str, int]] = set()
    observation_ids: list[int] = []
    for ref in refs:
        if "\x00" in ref:  # no id, path or docid holds one (and the OS refuses it in a path)
            raise InvalidInput(f"not an id: {ref!r}")
        if is_document_ref(ref):
            records.append(fetch_document(memory.config, ref))
            continue
        kind, number = resolve_ref(store, ref)
        if (kind, number) in seen:
            continue
        seen.add((kind, number))
        row: Mapping[str, Any]
        if kind == "observation":
            row = store.observations.get(number)
            records.append(observation_record(memory, row, anchored=False))
            observation_ids.append(number)
        elif kind == "summary":
            row = store.summaries.get(number)
            records.append(summary_record(row))
        else:
            row = store.prompts.get(number)
            records.append(prompt_record(row))
    if follow_links:
        for record in list(records):
            if record["kind"] != "observation":
                continue
            for link in [*record["links"], *record["linked_from"]]:
                if ("observation", link["id"]) in seen:
                    continue
                seen.add(("observation", link["id"]))
                neighbour = observation_record(memory, store.observations.get(link["id"]), anchored=False)
                neighbour["via"] = {"type": link["type"], "from": record["id"]}
                records.append(neighbour)
                observation_ids.append(link["id"])
    from cmem_cli.services.truth.anchor_notes import anchors_fields

    fields = anchors_fields(store, observation_ids)  # one check for all: files read once, git asked once
    for record in records:
        if record["kind"] == "observation":
            cast("MutableMapping[str, Any]", record).update(fields[record["id"]])
    store.observations.record_retrieval(observation_ids)
    now = to_iso(now_ms())
    for record in records:  # show the counts as they are after this retrieval
        if record["kind"] == "observation":
            record["retrieval_count"] += 1
            record["last_retrieved_at"] = now
    return records


def summary_record(row: Mapping[str, Any]) -> SummaryRecord:
    """A session summary's full record: its search row, its fields and its author."""
    fields = {f: row.get(f) for f in SUMMARY_FIELDS}
    return cast("SummaryRecord", {**summary_row(row), **fields, "author": row.get("author")})


def prompt_record(row: Mapping[str, Any]) -> PromptRecord:
    """A prompt's full record: its search row, its text and its author."""
    return {**prompt_row(row), "text": row["text"], "author": row.get("author")}


def with_absolute_paths(config: Config, record: RecordJson) -> RecordJson:
    """``record`` as the CLI shows it: ``path`` is a file that exists on this machine (memories are stored
    relative to the export folder; a document's collection-relative path moves to ``relpath``)."""
    if record["kind"] == "document":
        document: DocumentRecord = record.copy()
        document["path"] = record["file"]
        document["relpath"] = record["path"]
        del document["file"]
        return document
    if record.get("path"):
        out = record.copy()
        out["path"] = str(config.export_dir / str(record["path"]))
        return out
    return record


def render_details(record: Mapping[str, Any]) -> str:
    """Markdown for one record: the same front matter and body as its export file. A record with an
    absolute ``path`` (see :func:`with_absolute_paths`) shows that path instead of repeating the title."""
    if record["kind"] == "observation":
        from cmem_cli.core.timeutil import parse_iso

        row = {**record}
        for key in ("created_at", "updated_at"):
            row[key] = parse_iso(record[key]) if record.get(key) else None
        links = [{**link, "href": f"#{link['id']}"} for link in record["links"]]
        text = _title_once_with_path(markdown.render_observation(row, links), record.get("path"))
        if record.get("stale"):
            from cmem_cli.services.truth.anchor_notes import stale_note

            text = stale_note(record) + "\n" + text
        elif record.get("behind"):
            from cmem_cli.services.truth.anchor_notes import behind_note

            text = behind_note(record) + "\n" + text
        elif record.get("drifted"):
            from cmem_cli.services.truth.anchor_notes import drifted_note

            text = drifted_note(record) + "\n" + text
        if record.get("superseded_by") is not None:
            text = supersession.notice(record) + text
        elif record.get("possibly_superseded_by") is not None:
            new = record["possibly_superseded_by"]
            text = (f"<!-- maybe replaced by #{new} (it states a change of this): `cmem get {new}`; "
                    f"`cmem link {new} supersedes {record['id']}` confirms it -->\n" + text)  # fmt: skip
        if record.get("invalidated") is not None:
            text = (
                f"<!-- invalidated: {' '.join(str(record['invalidated']).split())}. Left out of search, "
                f"context and the briefing; `cmem restore {record['id']}` brings it back -->\n" + text
            )
        if record.get("via"):
            text = f"<!-- linked: {record['via']['type']} of #{record['via']['from']} -->\n" + text
        return text
    if record["kind"] == "summary":
        from cmem_cli.core.timeutil import parse_iso

        text = markdown.render_summary(
            {**record, "id": record["id"], "created_at": parse_iso(record["created_at"])}
        )
        return _title_once_with_path(text, record.get("path"))
    if record["kind"] == "document":
        relpath, file = (record["relpath"], record["path"]) if "relpath" in record else (record["path"], None)
        where = f"{record['collection']}:{relpath}" + (f":{record['line']}" if record["line"] else "")
        return f"<!-- {record['id']} {where}{f' {file}' if file else ''} -->\n{record['text']}"
    return (
        f"# Prompt {record['id']} (#{record['prompt_number']} of session {record['session']})\n\n"
        f"{record['created_at']} · {record['project']} · {record['agent']}"
        f"{''.join(f' · {record[k]}' for k in ('machine', 'author') if record.get(k))}\n\n{record['text']}\n"
    )


def _title_once_with_path(text: str, path: str | None) -> str:
    """The export file's text for a reader: the title only as the heading (the front matter repeats it),
    and the absolute path of the file in the front matter instead."""
    if not text.startswith("---\n") or not (path and os.path.isabs(path)):
        return text  # a stored, export-relative path (the API, MCP): the file's own text
    end = text.find("\n---\n", 3)
    head = text[4:end].split("\n")
    kept: list[str] = []
    in_title = False
    for line in head:
        if line.startswith("title:"):
            in_title = True
            if path:
                kept.append(f"path: {json.dumps(path, ensure_ascii=False)}")
            continue
        if in_title and line.startswith((" ", "\t")):
            continue  # a long title's folded continuation lines
        in_title = False
        kept.append(line)
    return "---\n" + "\n".join(kept) + text[end:]
