"""The content hash cmem keeps of every export file it writes: how it knows a person changed one since."""

from __future__ import annotations

try:  # the builtin module: hashlib costs ~3 ms to import on the write path
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python implementations
    from hashlib import blake2b


def text_hash(text: str) -> str:
    return bytes_hash(text.encode("utf-8", "surrogateescape"))


def bytes_hash(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()
