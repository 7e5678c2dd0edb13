"""Results that are lists: typed items over the JSON rows they came from, each item built on first access.

`cmem search`, `get` and `timeline` run many times a minute and print JSON rows; a script using the API
wants typed items (:mod:`cmem_cli.core.results`). One object serves both: it keeps the rows (``to_json()``
is exactly what the CLI prints) and builds an item from its row only when the item is read, so the CLI
never pays for defining or filling the named tuples. This module defines plain classes only, for the same
reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

if TYPE_CHECKING:
    from cmem_cli.core.hit_types import HitRow, TimelineJson
    from cmem_cli.core.results import Hit, Record, Session, TimelineItem

T = TypeVar("T")
Row = dict[str, Any]  # one JSON object as the CLI prints it (values: JSON types)


class Rows(Sequence[T]):
    """A sequence of typed items made from JSON rows on first access; ``to_json()`` gives the rows."""

    __slots__ = ("_rows", "_items", "_make")

    def __init__(self, rows: list[Row], make: Callable[[Row], T]):
        self._rows = rows
        self._items: list[T | None] = [None] * len(rows)
        self._make = make

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self._rows))[index]]
        item = self._items[index]
        if item is None:
            item = self._items[index] = self._make(self._rows[index])
        return item

    def __iter__(self) -> Iterator[T]:
        return (self[i] for i in range(len(self._rows)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rows):
            return self._rows == other._rows
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable rows inside: not hashable, as a list is not

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"

    def to_json(self) -> list[Row]:
        """The rows as the CLI prints them with ``--json`` (the same list: copy it before changing it)."""
        return self._rows


# A note every search prints, in every mode: the ranking of what the index has not caught up with is
# provisional (cmem_index.hybrid.unindexed words it; the CLI prints it on stderr, MCP in its notes)
INDEX_BEHIND = "the index is behind the store"


class SearchPage(Rows["Hit"]):
    """One page of search hits, best first (``cmem search``), and how they were found.

    ``mode`` is the search actually run (keyword, vector, hybrid; ``list`` without words), ``notes`` say why
    a layer was skipped (no index yet), ``total`` counts every hit above the cut-off, a lower bound when
    ``capped`` (more may exist than were counted). ``to_json()`` is what `cmem search --json` prints."""

    __slots__ = ("mode", "notes", "total", "capped")

    def __init__(self, rows: list[HitRow], mode: str, notes: Sequence[str], total: int, capped: bool = False):
        super().__init__(cast("list[Row]", rows), _hit)  # the typed rows are the page's JSON as they are
        self.mode = mode
        self.notes = list(notes)
        self.total = total
        self.capped = capped

    def __repr__(self) -> str:
        return f"SearchPage({len(self)} hits of {self.total}{'+' if self.capped else ''}, mode={self.mode!r})"


class Timeline:
    """What happened around ``anchor`` in its project, oldest first; the anchor's item has ``anchor`` True.
    ``to_json()`` is what `cmem timeline --json` prints."""

    __slots__ = ("anchor", "project", "items", "_json")

    def __init__(self, data: TimelineJson):
        self._json = cast("Row", data)  # the typed items are the JSON as they are
        self.anchor: str = data["anchor"]
        self.project: str = data["project"]
        self.items: Rows[TimelineItem] = Rows(cast("list[Row]", data["items"]), _timeline_item)

    def __repr__(self) -> str:
        return f"Timeline(anchor={self.anchor!r}, project={self.project!r}, items={len(self.items)})"

    def to_json(self) -> Row:
        return self._json


def records(rows: Sequence[Mapping[str, Any]]) -> Rows[Record]:
    """Full records (``cmem get``): observations, summaries, prompts and documents, by their ``kind``; the
    typed records of the read service are the JSON they print."""
    return Rows(cast("list[Row]", rows), _record)


def sessions(rows: list[Row]) -> Rows[Session]:
    """Sessions as `cmem session list --json` prints them."""
    return Rows(rows, _session)


def _hit(row: Row) -> Hit:
    from cmem_cli.core.results import Hit

    return Hit.from_json(row)


def _timeline_item(row: Row) -> TimelineItem:
    from cmem_cli.core.results import TimelineItem

    return TimelineItem.from_json(row)


def _record(row: Row) -> Record:
    from cmem_cli.core.results import record

    return record(row)


def _session(row: Row) -> Session:
    from cmem_cli.core.results import Session

    return Session.from_json(row)
