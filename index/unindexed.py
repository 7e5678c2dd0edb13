"""What a search does about memories the index does not know yet: embed a few, and call the rest unknown.

The store has a memory the moment a write commits; the index has it after the next update pass (the hooks
start one, detached, at the end of each turn), and its vector after the pass has embedded it. In between,
a vector list cannot have found it, and counting that as "not near the query" put a decision recorded a
minute earlier, searched by its own words, 14th. So a search with a model embeds up to ``EMBED_AT_SEARCH``
chunks of such memories itself (a short memory embeds in milliseconds with MiniLM), exactly as a pass
would (the same chunks and inputs: :func:`cmem_index.indexer.document_chunks`), and places each in the
vector list by its cosine. For whatever is still without a vector, the vector list is *blind*: fusion
leaves it out of that memory's score instead of scoring it 0 (:func:`cmem_index.fusion.fuse`'s
``unseen``), and so is the index's keyword list for a memory the index does not hold at all.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cmem_index.store import IndexStore

EMBED_AT_SEARCH = 32  # chunks a search embeds itself: ~0.1-0.2 s of MiniLM for short memories on 2 cores
FreshList = Sequence[tuple[str, str | None]]  # (key, path under the export tree) of the store's memories


class Unindexed:
    """For one search: the vector scores of what it embedded itself (``vectors``, and ``whole``: cosines
    to the whole query), and the keys each list could not judge (``blind``: list name -> keys)."""

    __slots__ = ("absent", "behind", "blind", "embedded", "vectors", "whole")

    def __init__(self) -> None:
        self.vectors: dict[str, float] = {}
        self.whole: dict[str, float] = {}
        self.blind: dict[str, set[str]] = {}
        self.embedded = 0  # memories given a vector here
        self.absent = 0  # memories of the store that the index does not hold
        self.behind = 0  # those, and the memories it holds without a vector of the model searched


def judge(
    store: IndexStore,
    export_root: Path,
    keys: Sequence[str],
    doc_ids: Mapping[str, int],
    fresh: FreshList,
    *,
    embedder: Any,
    fingerprint: str | None,
    vectors: Sequence[bytes],
    keyword_list: str,
    vector_list: str,
) -> Unindexed:
    """Which of ``keys`` (every key a list found, best first) and ``fresh`` (the store's hits and newest
    memories, with their files) the index cannot judge, and vectors for the first of them.

    ``doc_ids``: the index's document of each key its own lists found; ``vectors``: the query's search
    vector and, when it embedded fewer words, the whole query's (float32 bytes); ``embedder`` None (a
    keyword search) embeds nothing and only marks what the index does not hold."""
    out = Unindexed()
    paths = {key: path for key, path in fresh}
    wanted = list(dict.fromkeys([*keys, *(key for key, _ in fresh)]))
    uids = [key[4:] for key in wanted if key.startswith("obs:") and key not in doc_ids]
    held = {f"obs:{uid}": doc_id for uid, doc_id in store.retrieval.documents_of_uids(uids).items()}
    docs = {**held, **{key: doc_ids[key] for key in wanted if key in doc_ids}}
    absent = [key for key in wanted if key.startswith("obs:") and key not in docs]
    out.absent = len(absent)
    out.blind[keyword_list] = set(absent)
    out.behind = len(absent)
    if fingerprint is None:
        return out
    pending = store.chunks.pending_of(list(docs.values()), fingerprint)
    unembedded = [key for key in wanted if (key in docs and docs[key] in pending) or key in absent]
    out.behind = len(unembedded)
    blind = out.blind.setdefault(vector_list, set())
    budget = EMBED_AT_SEARCH if embedder is not None else 0
    inputs: list[tuple[str, tuple[str, str]]] = []
    for key in unembedded:
        if key in docs:
            from cmem_index.indexer import stored_input

            items = [stored_input(chunk) for chunk in pending[docs[key]]]
        else:
            items = _file_inputs(export_root, paths.get(key), embedder) if budget else []
        if not items or len(items) > budget:
            blind.add(key)
            continue
        budget -= len(items)
        inputs.extend((key, item) for item in items)
    if not inputs:
        return out
    computed = embedder.document_vectors([item for _, item in inputs])
    query = _floats(vectors[0])
    whole = _floats(vectors[1]) if len(vectors) > 1 else None
    for (key, _), vector in zip(inputs, computed, strict=True):
        out.vectors[key] = max(out.vectors.get(key, -1.0), _dot(query, vector))
        if whole is not None:
            out.whole[key] = max(out.whole.get(key, -1.0), _dot(whole, vector))
    out.embedded = len(out.vectors)
    return out


def _file_inputs(root: Path, relpath: str | None, embedder: Any) -> list[tuple[str, str]]:
    """What the model embeds for each chunk of the export file ``relpath``, as an update pass would cut
    it; none when the file cannot be read as the index reads it."""
    if not relpath:
        return []
    data = read_document(root, relpath)
    if data is None:
        return []
    from cmem_index.document import parse_markdown
    from cmem_index.indexer import document_chunks

    parsed = parse_markdown(data.decode("utf-8", errors="replace"), relpath)
    return [item for _, item in document_chunks(parsed, embedder, embedder.count_tokens)]


def read_document(root: Path, relpath: str) -> bytes | None:
    """The bytes of a regular file under ``root`` (symlinks resolved, never outside it, the index's size
    limit), or None."""
    from cmem_index.scan import MAX_FILE_BYTES, resolves_inside

    path = os.path.join(root, relpath)
    if ".." in relpath.split("/") or not resolves_inside(path, os.path.realpath(root)):
        return None
    try:
        fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat_module.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                return None
            return fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None


def _floats(blob: bytes) -> list[float]:
    from array import array

    return list(array("f", blob))


def _dot(query: Sequence[float], vector: Sequence[float]) -> float:
    """The vector list's score of a document: its cosine to the search vector (the mean of the query
    parts' unit vectors), as sqlite-vec's distance times the search vector's length gives it; the
    document's vector rounded to float32, as the index stores it."""
    from array import array

    stored = array("f", vector)
    return float(sum(q * d for q, d in zip(query, stored, strict=True)))


Fresh = Callable[[], FreshList]
