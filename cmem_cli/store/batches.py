"""Long lists in ``IN (...)`` clauses, a batch at a time: one place keeps each statement's bound parameters
well under SQLite's limit and writes the placeholders."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

BATCH = 500  # values per statement


def batches(values: list[T]) -> Iterator[tuple[list[T], str]]:
    """Each batch of ``values`` with its placeholders (``?, ?, ?``) for ``IN (...)``."""
    for start in range(0, len(values), BATCH):
        chunk = values[start : start + BATCH]
        yield chunk, ", ".join("?" * len(chunk))
