"""index.db's vectors: ``chunk_vectors`` (sqlite-vec, one model's float32 vectors), ``chunk_bits`` (their signs,
for a large index) and ``embed_cache`` (every vector computed, by chunk hash and model).

Vectors of two models are never mixed: ``chunk_vectors`` holds vectors of exactly one model fingerprint
(the ``vectors_model`` setting); switching models empties it, and the embedding cache brings vectors back
without recomputing when a model returns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from cmem_cli.core.batches import batches
from cmem_index.repositories import IndexHandle, Repository

# A float32 vector as bits: the signs of the vector less the centre (the second parameter)
_QUANTIZED = "vec_quantize_binary(vec_sub(?, ?))"


class Vectors(Repository):
    """One model's vectors of the chunks, their bits and the embedding cache."""

    def __init__(self, store: IndexHandle) -> None:
        super().__init__(store)
        self._bits: bytes | None = None  # bits_center, read once per connection (b"": no chunk_bits)

    def has_table(self) -> bool:
        return bool(
            self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunk_vectors'"
            ).fetchone()
        )

    def model(self) -> tuple[str, int] | None:
        """(fingerprint, dimension) of the vectors in ``chunk_vectors``, or None when there are none."""
        model, dim = self._store.settings.get("vectors_model"), self._store.settings.get("vectors_dim")
        if not model or not dim or not self.has_table():
            return None
        return model, int(dim)

    def use_model(self, fingerprint: str, dim: int) -> bool:
        """Make ``chunk_vectors`` hold this model's vectors; True when the previous ones were discarded.

        Never mixes models: on a change the table is recreated empty and every chunk is pending again.
        """
        if self.model() == (fingerprint, dim):
            return False
        with self._store.transaction():
            self.conn.execute("DROP TABLE IF EXISTS chunk_vectors")
            self.conn.execute("DROP TABLE IF EXISTS chunk_bits")
            self.conn.execute("DELETE FROM settings WHERE key IN ('bits_center', 'vector_count')")
            self.conn.execute(
                f"CREATE VIRTUAL TABLE chunk_vectors USING vec0(embedding float[{int(dim)}] distance_metric=cosine)"
            )
            self.conn.execute("UPDATE chunks SET embedded_with = NULL WHERE embedded_with IS NOT NULL")
            self._store.settings.set("vectors_model", fingerprint)
            self._store.settings.set("vectors_dim", str(int(dim)))
        self._bits = None
        return True

    def cached(self, hashes: Sequence[str], fingerprint: str) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(hashes))
        for part, marks in batches(unique):
            for h, blob in self.conn.execute(
                f"SELECT hash, vector FROM embed_cache WHERE model = ? AND hash IN ({marks})",
                (fingerprint, *part),
            ):
                found[h] = blob
        return found

    def write(self, items: Sequence[tuple[int, str, bytes]], fingerprint: str, *, cache: bool) -> None:
        """Write (chunk id, chunk hash, float32 vector) rows; call inside a transaction."""
        chunk_ids = [(i,) for i, _, _ in items]
        self.conn.executemany("DELETE FROM chunk_vectors WHERE rowid = ?", chunk_ids)
        self.conn.executemany(
            "INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)", [(i, blob) for i, _, blob in items]
        )
        center = self.bits_center()
        if center is not None:
            self.conn.executemany("DELETE FROM chunk_bits WHERE rowid = ?", chunk_ids)
            self.conn.executemany(
                f"INSERT INTO chunk_bits(rowid, embedding) VALUES (?, {_QUANTIZED})",
                [(i, blob, center) for i, _, blob in items],
            )
        self.conn.executemany(
            "UPDATE chunks SET embedded_with = ? WHERE id = ?", [(fingerprint, i) for i, _, _ in items]
        )
        if cache:
            self.conn.executemany(
                "INSERT OR IGNORE INTO embed_cache(hash, model, vector) VALUES (?, ?, ?)",
                [(h, fingerprint, blob) for _, h, blob in items],
            )

    # -- compact vectors ---------------------------------------------------------------------------
    # Above COMPACT_ABOVE vectors a search first ranks one bit per dimension (the sign of the vector less
    # the mean of the model's vectors: 48 bytes for 384 dimensions, against 1,536 for float32), then
    # re-ranks the head exactly with the float32 vectors (cmem_index.retrieve.vector). Below it, and in
    # every index that never grew past it, ``chunk_bits`` does not exist and search is exact.
    def bits_center(self) -> bytes | None:
        """The vector subtracted before taking signs, when ``chunk_bits`` exists (None: it does not)."""
        if self._bits is None:
            value = self._store.settings.get("bits_center") if self._plain_bits() else None
            self._bits = bytes.fromhex(value) if value else b""
        return self._bits or None

    def _plain_bits(self) -> bool:
        """Whether ``chunk_bits`` exists as a plain table. Before, it was a sqlite-vec ``bit[]`` table, whose
        search costs grow with the head it is asked for (400 of 220,000: 0.11 s, against 0.03 s for a plain
        scan ranked by ``vec_distance_hamming``); such an index is searched exactly until the next
        `cmem index` builds the bits again."""
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunk_bits'").fetchone()
        return row is not None and not str(row[0]).upper().startswith("CREATE VIRTUAL")

    def count(self) -> int:
        """How many vectors the last update pass left (a setting: counting a million rows per search would
        cost more than the search)."""
        return int(self._store.settings.get("vector_count") or 0)

    def count_of(self, fingerprint: str) -> int:
        return int(self._one("SELECT count(*) FROM chunks WHERE embedded_with = ?", (fingerprint,)) or 0)

    def build_bits(self, fingerprint: str, sample: int = 20_000) -> None:
        """Create ``chunk_bits`` from every stored vector, centred on the mean of up to ``sample`` of them
        (from the cache: a scan of ``chunk_vectors`` by rowid would read all of it)."""
        from array import array

        dim = int(self._store.settings.get("vectors_dim") or 0)
        if dim <= 0 or dim % 8:
            return  # bits come in bytes: such a model is always searched exactly
        total = array("d", bytes(8 * dim))
        count = 0
        for (blob,) in self.conn.execute(
            "SELECT vector FROM embed_cache WHERE model = ? LIMIT ?", (fingerprint, sample)
        ):
            vector = array("f", blob)
            for i in range(dim):
                total[i] += vector[i]
            count += 1
        center = array("f", (x / max(count, 1) for x in total)).tobytes()
        with self._store.transaction():
            self.conn.execute("DROP TABLE IF EXISTS chunk_bits")
            self.conn.execute("CREATE TABLE chunk_bits(id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
            self.conn.execute(
                f"INSERT INTO chunk_bits(rowid, embedding) SELECT rowid, {_QUANTIZED.replace('?', 'embedding', 1)} "
                "FROM chunk_vectors",
                (center,),
            )
            self._store.settings.set("bits_center", center.hex())
        self._bits = center

    def prune_cache(self, hashes: Iterable[str] | None = None) -> int:
        """Forget cached vectors of chunks that no longer exist (any model): of these chunk hashes (those an
        update pass deleted: work in proportion to the change), or of all (a full rebuild)."""
        with self._store.transaction():
            if hashes is None:
                self.conn.execute("DELETE FROM embed_cache WHERE hash NOT IN (SELECT hash FROM chunks)")
                return int(self.conn.changes())
            before = int(self.conn.total_changes())
            self.conn.executemany(
                "DELETE FROM embed_cache WHERE hash = ?1 AND NOT EXISTS (SELECT 1 FROM chunks WHERE hash = ?1)",
                [(h,) for h in hashes],
            )
            return int(self.conn.total_changes() - before)

    def cached_count(self) -> int:
        """Vectors in the embedding cache, of every model."""
        return int(self._one("SELECT count(*) FROM embed_cache") or 0)

    def seed_cache(self, old_path: Path) -> None:
        """Copy the embedding cache of the index at ``old_path`` into this one (a full rebuild keeps the
        vectors it computed: they are keyed by content, so they cannot be stale); an old index that
        cannot be read leaves the cache empty."""
        if not old_path.exists():
            return
        try:
            self.conn.execute("ATTACH DATABASE ? AS old", (str(old_path),))
        except Exception:  # noqa: BLE001 - an unreadable old index: nothing to carry over
            return
        try:
            with self._store.transaction():
                self.conn.execute(
                    "INSERT OR IGNORE INTO main.embed_cache SELECT hash, model, vector FROM old.embed_cache"
                )
        except Exception:  # noqa: BLE001 - a damaged or foreign old index: start with an empty cache
            pass
        finally:
            self.conn.execute("DETACH DATABASE old")
