"""Long lists in ``IN (...)`` clauses, a batch at a time: one place keeps each statement's bound parameters
well under SQLite's limit and writes the placeholders."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

BATCH = 500  # values per statement


def batches(values: Sequence[T]) -> Iterator[tuple[list[T], str]]:
    """Each batch of ``values`` with its placeholders (``?, ?, ?``) for ``IN (...)``: for cmem.db's store
    and for the index alike."""
    for start in range(0, len(values), BATCH):
        chunk = list(values[start : start + BATCH])
        yield chunk, ", ".join("?" * len(chunk))
