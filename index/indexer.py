"""Bring index.db up to date with the collections: the update pass and the atomic full rebuild.

Work is proportional to what changed. A file is re-read only when its size or mtime differs from the
index, re-chunked only when its content hash (or the chunker's settings) changed, and a chunk is embedded
only when no vector for (chunk hash, model fingerprint) is cached. Chunks are written first and embedded
afterwards in large batches (the model is the slow part; batching is what keeps end-to-end throughput close
to the model's raw rate), each batch in its own short transaction so searches are never held up and an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat as stat_module
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.fields import LINKS_MARKER, OBSERVATION_HEADINGS
from cmem_cli.core.text import estimate_tokens
from cmem_index.chunker import (
    CHUNKER_VERSION,
    DEFAULT_MAX_TOKENS,
    DEFAULT_OVERLAP,
    chunk_markdown,
)
from cmem_index.codelike import identifier_words
from cmem_index.collections import Collection
from cmem_index.document import (
    ParsedDocument,
    as_epoch_ms,
    as_int,
    as_list,
    as_text,
    content_hash,
    parse_markdown,
    short_docid,
)
from cmem_index.folders import FolderWalk, folder_times
from cmem_index.repositories.chunks import NewChunk, PendingChunk
from cmem_index.repositories.documents import StoredDocument
from cmem_index.scan import MAX_FILE_BYTES, FileStat, merge_sorted, walk
from cmem_index.store import IndexStore

if TYPE_CHECKING:
    from cmem_index.embedder import Embedder
    from cmem_index.loading import LazyEmbedder

PROMPT_RESERVE = 16  # tokens the model's prompt template adds around title and text
MIN_CHUNK_TOKENS = 64
WRITE_BATCH_FILES = 64
WRITE_BATCH_DELETES = 1_000
SCAN_PROGRESS_STEP = 1_000  # files stat'ed between progress reports
MERGE_FROM = 10_000  # chunks a pass wrote or deleted before the keyword index is merged (and a tenth of it)
EMBED_PAGE = 512  # chunks fetched, embedded and written per transaction
EMBED_PROGRESS_STEP = 64  # chunks embedded per model call, so progress moves within a page

Progress = Callable[[str, int, int], None]  # (phase, done, total or 0 if unknown): "scan", "read", "embed"


@dataclass
class IndexReport:
    """What one pass did; ``note`` says why there are no vectors when there is no model."""

    full: bool = False
    collections: int = 0
    scanned: int = 0
    read: int = 0
    chunked: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_written: int = 0
    embedded: int = 0
    embed_seconds: float = 0.0  # in the model: ``embedded`` / this is the embedding rate
    cache_hits: int = 0
    model: str | None = None
    note: str | None = None
    errors: list[str] = field(default_factory=list)
    started_at: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Prepared:
    relpath: str
    stat: FileStat
    content_hash: str
    parsed: ParsedDocument | None  # None: content unchanged, only size/mtime to record
    stored: StoredDocument | None
    chunks: list[NewChunk] = field(default_factory=list)


def chunker_signature(embedder: Embedder | LazyEmbedder | None) -> str:
    """Identifies how chunks were cut; documents cut another way are re-chunked on the next pass."""
    if embedder is None:
        return f"v{CHUNKER_VERSION}/{DEFAULT_MAX_TOKENS}/{DEFAULT_OVERLAP}/chars4"
    budget = min(DEFAULT_MAX_TOKENS, embedder.max_tokens)
    return f"v{CHUNKER_VERSION}/{budget}/{DEFAULT_OVERLAP}/{embedder.fingerprint}"


def chunk_hash(context: str, text: str) -> str:
    """The embedding-cache key of a chunk: everything the model sees (title context and text)."""
    return hashlib.blake2b(f"{context}\x1f{text.strip()}".encode(), digest_size=16).hexdigest()


def title_heading_end(body: str, title: str) -> int:
    """Offset just past a leading ``# heading`` that repeats the document's title (and the blank lines after
    it), else 0. cmem's export starts every file with one; the title is already each chunk's context."""
    match = _LEADING_H1.match(body)
    if match is None or " ".join(match.group(1).split()) != " ".join(title.split()):
        return 0
    return match.end()


def embedding_input(title: str, context: str, text: str) -> tuple[str, str]:
    """What the model embeds for a chunk: (context as the prompt's title, the text without a repeated title).

    The context starts with the title, so a chunk that opens with the title as a heading would show the
    model the title twice: wasted tokens in a small window, and a title counted double against the text.
    A title that is one identifier (a function's name) is also given as words, as keyword search splits it.
    """
    text = text.strip()
    end = title_heading_end(text, title) if title else 0
    words = identifier_words(title) if title else None
    if words is not None and context.startswith(title):
        context = f"{title} ({words}){context[len(title) :]}"
    return context, _without_section_headings(text[end:]).strip()


def stored_input(chunk: PendingChunk) -> tuple[str, str]:
    """What the model embeds for a stored chunk: the input whose hash the chunk carries. A hook's capture of
    one tool call is embedded by its title alone, so the diffs and command output a person never reads cost
    ~10 tokens each instead of up to ~250, and the same title again (a file read twice) is one cached
    vector; the whole text stays in the keyword index."""
    context, text = embedding_input(chunk.title, chunk.context, chunk.text)
    if chunk.hash != chunk_hash(context, text) and chunk.hash == chunk_hash(context, ""):
        return context, ""
    return context, text


def _without_section_headings(text: str) -> str:
    """The text without the section headings every cmem observation file carries (``## Narrative``...).

    They are the same in every file: embedded, they pull all vectors towards the same words, which cost
    CoSQA's vectors 0.8 nDCG points on short functions (0.594 -> 0.586)."""
    if "## " not in text and LINKS_MARKER not in text:
        return text
    return "\n".join(line for line in text.split("\n") if line.rstrip() not in _SECTION_LINES)


_SECTION_LINES = frozenset((*OBSERVATION_HEADINGS, LINKS_MARKER))


_LEADING_H1 = re.compile(r"\A\s*#[ \t]+(.+?)[ \t#]*(?:\r?\n|\Z)\s*")


def document_chunks(
    parsed: ParsedDocument, embedder: Embedder | LazyEmbedder | None, count: Callable[[str], int]
) -> list[tuple[NewChunk, tuple[str, str]]]:
    """A parsed document's chunks, each with what the model embeds for it (its hash is the chunk's): how a
    pass cuts a file, and how a search embeds a memory the index does not hold yet."""
    budget = DEFAULT_MAX_TOKENS
    if embedder is not None:
        text_budget = getattr(embedder, "text_budget", None)
        if text_budget is not None:
            room = text_budget(parsed.context)
        else:
            room = embedder.max_tokens - count(parsed.context) - PROMPT_RESERVE
        budget = max(MIN_CHUNK_TOKENS, min(DEFAULT_MAX_TOKENS, room))
    # A leading heading that repeats the title is not embedded (the context carries the title), so it
    # takes no room in the first chunk's budget either: chunk what follows it, then give the heading
    # back to the first chunk's text (keyword search and display keep it).
    body = parsed.body
    head = title_heading_end(body, parsed.title)
    if head and not body[head:].strip():
        head = 0  # the heading is the whole document: it is the text
    pieces = chunk_markdown(
        body[head:],
        max_tokens=budget,
        overlap=DEFAULT_OVERLAP,
        count_tokens=count,
        first_line=parsed.body_line + body.count("\n", 0, head),
    )
    chunks: list[tuple[NewChunk, tuple[str, str]]] = []
    for p in pieces:
        if not p.text.strip():
            continue
        text, line = p.text, p.start_line
        if head and p.start == 0:
            text = body[:head] + text
            line = parsed.body_line + body[: len(body) - len(body.lstrip())].count("\n")
        prompt_title, embedded = embedding_input(parsed.title, parsed.context, text)
        if parsed.capture:
            embedded = ""  # a tool call's title says what happened: embed it alone (see title_only)
        chunk = NewChunk(seq=len(chunks), start_line=line, hash=chunk_hash(prompt_title, embedded), text=text)
        chunks.append((chunk, (prompt_title, embedded)))
    return chunks


class Indexer:
    """One update pass over some collections into one store."""

    def __init__(
        self,
        store: IndexStore,
        collections: Sequence[Collection],
        embedder: Embedder | LazyEmbedder | None,
        *,
        note: str | None = None,
        progress: Progress | None = None,
        trust_folders: bool = True,
    ):
        self.store = store
        self.collections = list(collections)
        # cmem's own tree is compared folder by folder (cmem_index.folders) unless told otherwise (a
        # watcher's events may name a file rewritten in place)
        self.trust_folders = trust_folders
        self.embedder = embedder
        self.note = note
        self.progress = progress or (lambda phase, done, total: None)
        self.signature = chunker_signature(embedder)
        self._roots: dict[str, str] = {}
        self._count = self._token_counter()

    def run(self, *, prune_other_collections: bool = True, full: bool = False) -> IndexReport:
        started = time.monotonic()
        report = IndexReport(full=full, started_at=int(time.time() * 1000), note=self.note)
        report.collections = len(self.collections)
        if self.embedder is not None:
            report.model = self.embedder.fingerprint
            self.store.vectors.use_model(self.embedder.fingerprint, self.embedder.dim)
        for collection in self.collections:
            self._update_collection(collection, report)
        if prune_other_collections:
            self._drop_unconfigured(report)
        if not self.store.keeps_machines:
            self._read_machines()
        self._merge_keywords(report)
        if self.embedder is not None:
            self._embed_pending(report)
        self.count_vectors()
        if full:
            self.store.vectors.prune_cache()
        elif report.removed or report.chunked:
            self.store.vectors.prune_cache(self.store.chunks.dropped_hashes)
        self.store.chunks.dropped_hashes.clear()
        report.seconds = round(time.monotonic() - started, 3)
        report.embed_seconds = round(report.embed_seconds, 3)
        with self.store.transaction():
            self.store.settings.set("chunker", self.signature)
            self.store.settings.set("last_run", json.dumps(report.to_json()))
        return report

    def _read_machines(self) -> None:
        """Fill the machine of the documents an older cmem indexed, from their files' front matter (no chunk
        cut or embedded again). Left to a later pass when a collection that holds cmem documents is not
        this pass's (a watcher of one collection)."""
        mine = {collection.name for collection in self.collections}
        if any(name not in mine for name in self.store.documents.collections_with_cmem_documents()):
            return
        for collection in self.collections:
            root = self._real_root(collection)
            documents = self.store.documents.cmem_documents(collection.name)
            for start in range(0, len(documents), WRITE_BATCH_DELETES):
                found: list[tuple[str | None, int]] = []
                for doc_id, relpath in documents[start : start + WRITE_BATCH_DELETES]:
                    meta = _front_matter(os.path.join(root, relpath), root)
                    if meta is not None:  # unreadable or gone: the update pass re-reads or drops it
                        found.append((as_text(meta.get("machine")), doc_id))
                with self.store.transaction():
                    self.store.documents.set_machines(found)
        self.store.machines_read()

    # -- change detection --------------------------------------------------------------------------
    def _update_collection(self, collection: Collection, report: IndexReport) -> None:
        """Compare the folder with the index, both walked in path order (memory grows with what changed,
        not with the collection), then drop what is gone and re-read what changed."""
        outside: list[str] = []
        changed: list[tuple[str, FileStat, StoredDocument | None]] = []
        gone: list[int] = []
        scanned = 0
        by_folder, times = None, None
        changes: Iterable[tuple[str, FileStat | None, StoredDocument | None]]
        if collection.builtin:
            by_folder, times = self._by_folder(collection, outside)
        if by_folder is not None:
            changes = by_folder.changes()
        else:
            on_disk = walk(collection.root, collection.mask, outside)
            changes = merge_sorted(on_disk, self.store.documents.iterate(collection.name))
        for relpath, stat, stored in changes:
            if stat is None:
                assert stored is not None
                gone.append(stored.id)
                continue
            scanned += 1
            if scanned % SCAN_PROGRESS_STEP == 0:
                self.progress("scan", scanned, 0)
            if (
                stored is None
                or stored.size != stat.size
                or stored.mtime_ns != stat.mtime_ns
                or stored.chunked_with != self.signature
            ):
                changed.append((relpath, stat, stored))
        report.errors.extend(
            f"{collection.name}:{relpath}: a symlink resolving outside the collection, skipped"
            for relpath in outside
        )
        report.scanned += scanned
        for start in range(0, len(gone), WRITE_BATCH_DELETES):
            with self.store.transaction():
                for doc_id in gone[start : start + WRITE_BATCH_DELETES]:
                    self.store.documents.delete(doc_id)
        report.removed += len(gone)
        total = len(changed)
        for start in range(0, total, WRITE_BATCH_FILES):
            batch = []
            for offset, (relpath, stat, stored) in enumerate(changed[start : start + WRITE_BATCH_FILES]):
                prepared = self._prepare(collection, relpath, stat, stored, report)
                if prepared is not None:
                    batch.append(prepared)
                # per file, not per batch: chunking with a model's tokenizer can take seconds per batch
                self.progress("read", start + offset + 1, total)
            self._write(collection, batch, report)
        if by_folder is not None:
            by_folder.record()
        elif times is not None:
            with self.store.transaction():
                self.store.folders.set_times(collection.name, times, [""])

    def _by_folder(
        self, collection: Collection, outside: list[str]
    ) -> tuple[FolderWalk | None, dict[str, int] | None]:
        """How to compare cmem's own tree with the index: folder by folder (:class:`FolderWalk`) when the
        index knows its folders and nothing asks for every file to be looked at again (a new chunker,
        a watcher); else every file (None), with the folders' mtimes taken first, for the next pass."""
        self.store.folders.ensure()
        known = self.store.folders.times(collection.name)
        if known and self.trust_folders and self.store.settings.get("chunker") == self.signature:
            return FolderWalk(
                self.store, collection.name, str(collection.root), collection.mask, known, outside
            ), None
        return None, folder_times(str(collection.root))

    def _prepare(
        self,
        collection: Collection,
        relpath: str,
        stat: FileStat,
        stored: StoredDocument | None,
        report: IndexReport,
    ) -> _Prepared | None:
        real = os.path.realpath(os.path.join(collection.root, relpath))  # once: it walks every folder
        root = self._real_root(collection)
        if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
            # swapped for a symlink pointing outside since the scan: never read it
            report.errors.append(f"{collection.name}:{relpath}: resolves outside the collection, skipped")
            return None
        try:
            # without blocking: a FIFO swapped in since the scan must not hang the pass (or cmem watch)
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as fh:
                actual = os.fstat(fh.fileno())
                if not stat_module.S_ISREG(actual.st_mode):
                    report.errors.append(f"{collection.name}:{relpath}: not a regular file, skipped")
                    return None
                if actual.st_size > MAX_FILE_BYTES:
                    report.errors.append(
                        f"{collection.name}:{relpath}: larger than {MAX_FILE_BYTES} bytes, skipped"
                    )
                    return None
                os.set_blocking(fd, True)
                data = fh.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None  # deleted since the scan; the next pass removes it
        except OSError as exc:
            report.errors.append(f"{collection.name}:{relpath}: {exc.strerror}")
            return None
        report.read += 1
        stat = FileStat(actual.st_size, actual.st_mtime_ns)
        digest = content_hash(data)
        if stored is not None and stored.hash == digest and stored.chunked_with == self.signature:
            report.unchanged += 1
            return _Prepared(relpath, stat, digest, None, stored)
        parsed = parse_markdown(data.decode("utf-8", errors="replace"), relpath)
        prepared = _Prepared(relpath, stat, digest, parsed, stored, self._chunks(parsed))
        report.chunked += 1
        return prepared

    def _real_root(self, collection: Collection) -> str:
        """The collection's folder with symlinks resolved, once a pass (not once a file)."""
        root = self._roots.get(collection.name)
        if root is None:
            root = self._roots[collection.name] = os.path.realpath(collection.root)
        return root

    def _chunks(self, parsed: ParsedDocument) -> list[NewChunk]:
        return [chunk for chunk, _ in document_chunks(parsed, self.embedder, self._count)]

    def _write(self, collection: Collection, batch: list[_Prepared], report: IndexReport) -> None:
        if not batch:
            return
        now_ms = int(time.time() * 1000)
        with self.store.transaction():
            for item in batch:
                if item.parsed is None:
                    assert item.stored is not None
                    self.store.documents.touch(item.stored.id, item.stat.size, item.stat.mtime_ns)
                    continue
                meta = item.parsed.meta
                self.store.documents.upsert(
                    collection=collection.name,
                    path=item.relpath,
                    docid=short_docid(collection.name, item.relpath),
                    size=item.stat.size,
                    mtime_ns=item.stat.mtime_ns,
                    content_hash=item.content_hash,
                    chunked_with=self.signature,
                    title=item.parsed.title,
                    context=item.parsed.context,
                    keyword_context=item.parsed.keyword_context,
                    fields=_fields(item.parsed),
                    concepts=[str(c) for c in as_list(meta.get("concepts"))],
                    files=[
                        str(f) for f in as_list(meta.get("files_read")) + as_list(meta.get("files_modified"))
                    ],
                    chunks=item.chunks,
                    now_ms=now_ms,
                )
                report.chunks_written += len(item.chunks)

    def _merge_keywords(self, report: IndexReport) -> None:
        """After a pass that rewrote a tenth of the index or more (a first build, a new chunker), merge the
        keyword index into one segment. Each write transaction leaves a segment and each deleted chunk a
        tombstone that every search steps over until a merge drops it: a million-chunk index chunked again
        took 52 ms to count three words' matches, 16 ms merged (about 10 s of merging once)."""
        churn = report.chunks_written + len(self.store.chunks.dropped_hashes)
        if churn >= MERGE_FROM and churn * 10 >= self.store.chunks.count():
            self.progress("keywords", 0, 0)
            self.store.chunks.merge_keywords()

    def _drop_unconfigured(self, report: IndexReport) -> None:
        configured = {c.name for c in self.collections}
        for name in self.store.documents.collections():
            if name in configured:
                continue
            docs = self.store.documents.in_collection(name)
            with self.store.transaction():
                for stored in docs.values():
                    self.store.documents.delete(stored.id)
            report.removed += len(docs)

    # -- embedding ---------------------------------------------------------------------------------
    def _embed_pending(self, report: IndexReport) -> None:
        embedder = self.embedder
        assert embedder is not None
        fingerprint = embedder.fingerprint
        total = self.store.chunks.count_pending(fingerprint)
        if total == 0:
            return
        done = 0
        after = 0
        self.progress("embed", 0, total)
        while True:
            page = self.store.chunks.pending(fingerprint, after, EMBED_PAGE)
            if not page:
                break
            after = page[-1].id
            vectors = self.store.vectors.cached([c.hash for c in page], fingerprint)
            report.cache_hits += sum(1 for c in page if c.hash in vectors)
            missing: dict[str, tuple[str, str]] = {}
            for chunk in page:
                if chunk.hash not in vectors and chunk.hash not in missing:
                    missing[chunk.hash] = stored_input(chunk)
            keys = list(missing)
            for step in range(0, len(keys), EMBED_PROGRESS_STEP):
                part = keys[step : step + EMBED_PROGRESS_STEP]
                started = time.perf_counter()
                computed = embedder.embed_documents([missing[key] for key in part])
                report.embed_seconds += time.perf_counter() - started
                for key, vector in zip(part, computed, strict=True):
                    vectors[key] = vector.astype("float32").tobytes()
                report.embedded += len(part)
                # a page of a slow model takes minutes: show progress within it, in chunks of the page
                self.progress("embed", done + len(page) * (step + len(part)) // len(keys), total)
            with self.store.transaction():
                self.store.vectors.write(
                    [(c.id, c.hash, vectors[c.hash]) for c in page], fingerprint, cache=True
                )
            done += len(page)
            self.progress("embed", done, total)

    def count_vectors(self) -> None:
        """Record how many vectors the index holds (search reads it to choose exact or compact vectors), and
        give it its bits the first time it holds more than ``COMPACT_ABOVE``."""
        from cmem_index.retrieve import COMPACT_ABOVE

        model = self.store.vectors.model()
        if model is None:
            return
        count = self.store.vectors.count_of(model[0])
        if count > COMPACT_ABOVE and self.store.vectors.bits_center() is None:
            self.progress("compact", 0, 0)
            self.store.vectors.build_bits(model[0])
        with self.store.transaction():
            self.store.settings.set("vector_count", str(count))

    def _token_counter(self) -> Callable[[str], int]:
        embedder = self.embedder
        if embedder is None:
            return estimate_tokens
        return lambda text: embedder.count_tokens(text)  # resolved late: a lazy embedder loads on first use


def _fields(parsed: ParsedDocument) -> dict[str, Any]:
    meta = parsed.meta
    return {
        "kind": parsed.kind,
        "uid": as_text(meta.get("uid")),
        "obs_id": as_int(meta.get("id")),
        "type": as_text(meta.get("type")),
        "project": as_text(meta.get("project")),
        "session": as_text(meta.get("session")),
        "agent": as_text(meta.get("agent")),
        "machine": as_text(meta.get("machine")),
        "created_at": as_epoch_ms(meta.get("created_at")),
    }


def _front_matter(path: str, root: str) -> dict[str, Any] | None:
    """A cmem file's front matter, or None when it cannot be read or now resolves outside ``root``."""
    real = os.path.realpath(path)
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))  # a FIFO never hangs
        with os.fdopen(fd, "rb") as fh:
            if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                return None
            os.set_blocking(fd, True)
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    return parse_markdown(data.decode("utf-8", errors="replace"), os.path.basename(path)).meta


# -- full rebuild ------------------------------------------------------------------------------------
def rebuild(
    index_path: Path,
    collections: Sequence[Collection],
    embedder: Embedder | LazyEmbedder | None,
    *,
    note: str | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Build a fresh index in a temporary file and swap it in atomically.

    The embedding cache of the old index is carried over (vectors are expensive and keyed by content, so
    they cannot be stale). Until the swap commits, searches see the old index; if the rebuild is
    interrupted, the old index stays as it was and the temporary file is removed.
    """
    temp = index_path.with_name(index_path.name + ".rebuild")
    remove_database_files(temp)
    try:
        fresh = IndexStore.open(temp)
        try:
            fresh.vectors.seed_cache(index_path)
            report = Indexer(fresh, collections, embedder, note=note, progress=progress).run(full=True)
            fresh.checkpoint()
            _swap_in(fresh, index_path)
        finally:
            fresh.close()
    finally:
        remove_database_files(temp)
    return report


def _swap_in(fresh: IndexStore, index_path: Path) -> None:
    """Copy the fresh database over the live one in one SQLite transaction (readers see old or new)."""
    from cmem_cli.core.errors import DatabaseCorrupt

    try:
        live = IndexStore.open(index_path)
    except DatabaseCorrupt:
        live = None
    if live is None:
        # The old file is not a usable database: nothing can be reading it consistently anyway.
        remove_database_files(index_path)
        live = IndexStore.open(index_path)
    try:
        live.replace_with(fresh)
    finally:
        live.close()


def remove_database_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
