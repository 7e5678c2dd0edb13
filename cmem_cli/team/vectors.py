"""Vectors for the team database: computed here with this home's GGUF model, stored with its fingerprint.

A memory's vector is its title and text embedded as a document (one vector per memory; the local index
chunks files, the server keeps one row per memory). Each vector is stored with the model's fingerprint
(:attr:`cmem_index.embedder.Embedder.fingerprint`: the weights, the prompt format, the token limit), and
a search compares only vectors of the searcher's own fingerprint: homes with different models share
keywords, never each other's vectors. Each model gets its own HNSW index (cosine), made by the first
push that stores one of its vectors.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from cmem_cli.core.config import Config
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.store import team_outbox as outbox
from cmem_cli.team import repository

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

_FINGERPRINT = re.compile(r"[0-9a-f]{8,64}")


def observation_text(row: Mapping[str, Any]) -> tuple[str, str]:
    """(title, text) of an observation as embedded: subtitle, narrative and facts under its title."""
    parts = [row.get("subtitle") or "", row.get("narrative") or "", *(row.get("facts") or [])]
    return row["title"], "\n".join(p for p in parts if p)


def summary_text(row: Mapping[str, Any]) -> tuple[str, str]:
    return row.get("request") or "", "\n".join(row.get(f) or "" for f in SUMMARY_FIELDS if row.get(f))


def index_name(fingerprint: str) -> str:
    return f"cmem_vectors_hnsw_{fingerprint}"


def check_fingerprint(fingerprint: str) -> str:
    """Fingerprints are written into index names and partial-index predicates: hex only."""
    if not _FINGERPRINT.fullmatch(fingerprint):
        raise ValueError(f"not a model fingerprint: {fingerprint!r}")
    return fingerprint


class VectorMaker:
    """This home's embedding model, loaded on first use; without one, memories travel without vectors."""

    def __init__(self, config: Config, notes: list[str]):
        self.config = config
        self.notes = notes
        self._embedder: Any = None
        self._tried = False
        self._why: str | None = None  # why there is no model, said once memories went without vectors

    @property
    def embedder(self) -> Any:
        if not self._tried:
            self._tried = True
            from cmem_index.loading import load_embedder

            self._embedder, why = load_embedder(self.config)
            if self._embedder is None and self.config.embed_model:
                self._why = why
        return self._embedder

    def embed(
        self, observations: Sequence[Mapping[str, Any]], summaries: Sequence[Mapping[str, Any]]
    ) -> dict[tuple[str, str], Any]:
        """(kind, uid) -> vector for the rows given (nothing when there is no model)."""
        if not observations and not summaries:
            return {}
        embedder = self.embedder
        if embedder is None:
            return {}
        keys = [(outbox.OBSERVATION, r["uid"]) for r in observations] + [
            (outbox.SUMMARY, r["uid"]) for r in summaries
        ]
        texts = [observation_text(r) for r in observations] + [summary_text(r) for r in summaries]
        vectors = embedder.embed_documents(texts)
        return dict(zip(keys, vectors, strict=True))

    def store(self, conn: Any, vectors: dict[tuple[str, str], Any], pushed: set[tuple[str, str]]) -> None:
        """Store the vectors of the rows this push wrote (inside its transaction). Rows it wrote without
        one (no model here) are said once: not at a push that wrote nothing (a reader's, refused)."""
        if self._why is not None and pushed:
            self.notes.append(f"memories pushed without vectors: {self._why}")
            self._why = None
        rows = [(kind, uid, vector) for (kind, uid), vector in vectors.items() if (kind, uid) in pushed]
        if not rows:
            return
        embedder = self.embedder
        fingerprint = check_fingerprint(embedder.fingerprint)
        ensure_model(conn, fingerprint, embedder.dim, embedder.name or "", self.notes)
        register(conn)
        repository.store_vectors(conn, fingerprint, rows)


def register(conn: Any) -> None:
    """Let psycopg send and read pgvector's type in binary (numpy arrays)."""
    if getattr(conn, "_cmem_vector", False):
        return
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn._cmem_vector = True


def ensure_model(conn: Any, fingerprint: str, dim: int, name: str, notes: list[str]) -> None:
    """Record the model and give it its HNSW index (a savepoint: a role that may not create indexes
    still pushes, and search falls back to an exact scan)."""
    if not repository.add_model(conn, fingerprint, dim, name):
        return
    from cmem_cli.team.server import psycopg, reason

    try:
        with conn.transaction():
            repository.add_model_index(conn, index_name(fingerprint), fingerprint, dim)
    except psycopg().Error as exc:
        notes.append(f"no HNSW index for model {fingerprint}: {reason(exc)}")
