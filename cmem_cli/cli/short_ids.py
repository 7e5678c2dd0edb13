"""Short, copyable forms of long ids: the shortest prefix that names one id among many (as git shows)."""

from __future__ import annotations

from collections.abc import Iterable


def unique_prefixes(ids: Iterable[str], *, minimum: int = 8) -> dict[str, str]:
    """Map each id to its shortest prefix of at least ``minimum`` characters that no other id starts with.

    Sorting puts the ids that share the longest prefix with an id next to it, so its two neighbours
    decide how long its prefix must be."""
    ordered = sorted(set(ids))
    short: dict[str, str] = {}
    for index, value in enumerate(ordered):
        shared = 0
        for neighbour in ordered[max(index - 1, 0) : index + 2]:
            if neighbour != value:
                shared = max(shared, _common_length(value, neighbour))
        short[value] = value[: max(minimum, shared + 1)]
    return short


def _common_length(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length
