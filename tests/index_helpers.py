"""Helpers for the index tests: a counting stand-in embedder and small corpus writers.

The stand-in is for testing the indexer's bookkeeping (what gets embedded, cached, marked stale), where a
real model would only add minutes. Retrieval quality is tested with the real MiniLM GGUF.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

_WORD = re.compile(r"\w+")


class CountingEmbedder:
    """Deterministic bag-of-words hashing vectors; records every text it embeds."""

    def __init__(self, fingerprint: str = "fake-a", dim: int = 32, max_tokens: int = 512):
        self.fingerprint = fingerprint
        self.dim = dim
        self.max_tokens = max_tokens
        self.embedded: list[tuple[str | None, str]] = []

    def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            vec[int.from_bytes(digest, "little") % self.dim] += 1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec + 1.0 / np.sqrt(self.dim)

    def embed_documents(self, items: list[tuple[str | None, str]]) -> np.ndarray:
        self.embedded.extend(items)
        return np.stack([self._vector(f"{title or ''} {text}") for title, text in items])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def query_vector(self, text: str) -> list[float]:
        return [float(x) for x in self._vector(text)]

    def query_vectors(self, texts: list[str]) -> list[list[float]]:
        return [self.query_vector(text) for text in texts]


def observation_file(
    root: Path,
    relpath: str,
    *,
    uid: str,
    title: str,
    body: str = "",
    obs_id: int = 1,
    type: str = "discovery",
    project: str = "webapp",
    concepts: list[str] | None = None,
    created_at: str = "2026-01-02T03:04:05.000Z",
    agent: str = "cli",
    session: str | None = None,
    tools_used: list[str] | None = None,
) -> Path:
    """Write a file shaped like cmem's export of one observation."""
    lines = [
        "---",
        "cmem: observation",
        f"id: {obs_id}",
        f'uid: "{uid}"',
        f"type: {type}",
        f"title: {json.dumps(title)}",
        f"project: {project}",
        f"agent: {agent}",
    ]
    if session:
        lines.append(f"session: {session}")
    if concepts:
        lines.append("concepts: [" + ", ".join(f'"{c}"' for c in concepts) + "]")
    if tools_used:
        lines.append("tools_used: [" + ", ".join(f'"{t}"' for t in tools_used) + "]")
    lines += [f'created_at: "{created_at}"', "---", f"# {title}", "", body]
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write(root: Path, relpath: str, text: str) -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def index_for_search(config: Any, embedder: CountingEmbedder, monkeypatch: Any) -> None:
    """Index ``config``'s collections with the stand-in ``embedder`` and have search use it as its model."""
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer
    from cmem_index.store import IndexStore

    store = IndexStore.open(config.index_path)
    try:
        Indexer(store, load_collections(config), embedder).run()
    finally:
        store.close()
    monkeypatch.setattr("cmem_index.hybrid._usable_embedder", lambda *a, **k: embedder)


def indexed_with_model(home: Path, model: Path, monkeypatch: object):
    """The config of ``home`` with ``model`` as embedder, its files indexed (the real model's vectors)."""
    from cmem_cli.core.config import load_config
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer
    from cmem_index.loading import load_embedder
    from cmem_index.store import IndexStore

    monkeypatch.setenv("CMEM_HOME", str(home))  # type: ignore[attr-defined]
    monkeypatch.setenv("CMEM_EMBED_MODEL", str(model))  # type: ignore[attr-defined]
    config = load_config()
    embedder, why = load_embedder(config)
    assert embedder is not None, why
    store = IndexStore.open(config.index_path)
    try:
        Indexer(store, load_collections(config), embedder).run()
    finally:
        store.close()
    return config


def stored_vector(config, uid: str) -> np.ndarray:
    """The index's vector of the observation ``uid`` (its first chunk)."""
    from cmem_index.store import IndexStore

    store = IndexStore.open(config.index_path, readonly=True)
    try:
        (blob,) = index_rows(
            store,
            """SELECT v.embedding FROM chunk_vectors v JOIN chunks c ON c.id = v.rowid
               JOIN documents d ON d.id = c.doc_id WHERE d.uid = ? ORDER BY c.seq""",
            [uid],
        )[0]
    finally:
        store.close()
    return np.frombuffer(blob, dtype=np.float32)


def index_rows(store: Any, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` on an open index's own connection: a test reads the file as it is, past the
    repositories (cmem's own code asks them by name)."""
    return list(store.conn.execute(sql, params).fetchall())


def index_value(store: Any, sql: str, params: Any = ()) -> Any:
    """The first column of the first row of ``sql`` on an open index's connection, or None."""
    rows = index_rows(store, sql, params)
    return rows[0][0] if rows else None
