"""Globally unique, time-sortable ids (ULID form) so stores from several machines can merge."""

from __future__ import annotations

import os
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# A file name ends in its uid's last characters (``...-7zk3qw9m.md``): random, so they tell files apart
# where the uid's head (its time) does not, and a person may copy them as the id (``cmem get 7zk3qw9m``).
UID_TAIL = 8


def new_uid(ms: int | None = None) -> str:
    """26 characters: 48 bits of epoch milliseconds, then 80 random bits, Crockford base32."""
    stamp = int(time.time() * 1000) if ms is None else ms
    value = (stamp & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def derived_uid(ms: int, seed: str) -> str:
    """A uid of the ``new_uid`` shape whose random part comes from ``seed``: two machines that make the same
    thing (a conflict copy of the same text) give it the same uid, so the copies merge instead of doubling."""
    import hashlib

    digest = int.from_bytes(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()[:10], "big")
    value = (ms & ((1 << 48) - 1)) << 80 | digest
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))
