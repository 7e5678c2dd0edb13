"""What each stage of one search did, for ``cmem search --explain`` and the benchmarks.

A search runs named stages (:mod:`cmem_index.hybrid`: scope words, candidates, unindexed, code share, fusion,
cut-off, rerank; then the service's replies, branches and successors). Each stage that runs leaves one record here
saying what it did to the query or the rows, and the stages that order or cut rows leave each row's place
after them, so a row's way to its place can be read stage by stage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cmem_index.fusion import Signal


class Trace:
    """The stages' records (``stages``, in the order they ran), each row's 1-based place after every stage
    that placed it (``places``: key -> {stage: place}), and what fusion read: the candidate lists (``lists``:
    name -> [(key, raw score), ...], best first) and how it read each (``signals``: name ->
    ``cmem_index.fusion.Signal``). The benchmarks replay the last two."""

    __slots__ = ("stages", "places", "lists", "signals")

    def __init__(self) -> None:
        self.stages: list[dict[str, Any]] = []
        self.places: dict[str, dict[str, int]] = {}
        self.lists: dict[str, list[tuple[str, float]]] = {}
        self.signals: dict[str, Signal] = {}

    def record(self, stage: str, **facts: Any) -> None:
        """What ``stage`` did to the query or the rows (JSON-ready values)."""
        self.stages.append({"stage": stage, **facts})

    def place(self, stage: str, keys: Iterable[str]) -> None:
        """The rows' order after ``stage``: each key's place, from 1."""
        for place, key in enumerate(keys, 1):
            self.places.setdefault(key, {}).setdefault(stage, place)

    def fusion_input(
        self, lists: Mapping[str, Sequence[tuple[str, float]]], signals: Mapping[str, Signal]
    ) -> None:
        self.lists = {name: list(items) for name, items in lists.items()}
        self.signals = dict(signals)

    def summary(self) -> list[str]:
        """One line per stage, for stderr: ``stage: fact=value, ...``."""
        lines = []
        for record in self.stages:
            facts = ", ".join(f"{name}={_short(value)}" for name, value in record.items() if name != "stage")
            lines.append(f"{record['stage']}: {facts}" if facts else record["stage"])
        return lines


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "[" + " ".join(_short(v) for v in value) + "]"
    return str(value)
