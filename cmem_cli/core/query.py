"""One search as it was asked: the words and every option, declared once for every front end.

The API (``Memory.search``), the search service, the CLI (`cmem search`), the MCP ``search`` tool and the
team search all take a :class:`Query`; its constructor is the one place the search options are named,
typed, defaulted and checked. It is frozen (a query is a value: pass it on, compare it, ``replace`` one
field) and cheap: a plain class with slots, no dataclass machinery on the hot path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from cmem_cli.core.errors import InvalidInput
from cmem_cli.core.fields import MODES, ORDERS
from cmem_cli.core.filters import FILTERS, FilterFields

__all__ = ["DEFAULTS", "LIST_FIELDS", "MODES", "ORDERS", "Query"]


class Query:
    """A search: ``text`` (None or blank: list by the filters) and its options.

    The filters (``project``, ``type``, ``concept``, ``file``, ``agent``, ``machine``, ``session``, ``since``,
    ``until``: declared once in :data:`cmem_cli.core.filters.FILTERS`, which every reader offers) mean what
    `cmem search`'s options mean; ``type``, ``concept``, ``file`` and ``collections`` take one
    string or several. ``limit`` 0 is every hit; ``order`` is relevance, newest or oldest; ``mode`` auto,
    keyword, vector or hybrid; ``rerank`` None: when a reranker is configured; ``min_score`` None: the
    calibrated cut-off; ``collections``: only these (``memories`` is cmem's own); ``explain`` adds each
    row's signals; ``branch`` None weighs memories of unmerged branches lower, ``"all"`` does not, a name keeps
    that branch's only; ``team`` searches the team database this home joined instead of this home (every
    member's memories; the same stages and row fields). ``text`` may itself be a Query: the result is a copy
    of it with every argument that
    is not at its default changed (``Query(base, limit=5)``); an argument at its default keeps the base's
    value, so a copy cannot set a field back to its default (make a new Query for that).

    Constructing one checks what can be checked without a home (known types, order and mode, no negative
    paging) and raises :class:`InvalidInput`; dates are parsed by :meth:`filter_fields`.
    """

    text: str | None
    project: str | None
    type: tuple[str, ...]
    concept: tuple[str, ...]
    file: tuple[str, ...]
    agent: str | None
    machine: str | None
    session: str | None
    since: str | None
    until: str | None
    limit: int
    offset: int
    order: str
    mode: str
    rerank: bool | None
    min_score: float | None
    collections: tuple[str, ...]
    explain: bool
    branch: str | None
    team: bool

    def __init__(
        self,
        text: str | Query | None = None,
        *,
        project: str | None = None,
        type: str | Iterable[str] | None = None,
        concept: str | Iterable[str] | None = None,
        file: str | Iterable[str] | None = None,
        agent: str | None = None,
        machine: str | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 20,
        offset: int = 0,
        order: str = "relevance",
        mode: str = "auto",
        rerank: bool | None = None,
        min_score: float | None = None,
        collections: str | Iterable[str] | None = None,
        explain: bool = False,
        branch: str | None = None,
        team: bool = False,
    ):
        given: dict[str, object] = dict(locals())  # the arguments, named once: by the signature above
        del given["self"], given["text"]
        if isinstance(text, Query):  # a copy of ``text``, with the arguments that are not their default
            given = {k: getattr(text, k) if v == DEFAULTS[k] else v for k, v in given.items()}
            text = text.text
        for name in LIST_FIELDS:
            given[name] = _strings(given[name])  # type: ignore[arg-type]
        _check(given)
        set_field = object.__setattr__
        set_field(self, "text", text)
        for name, value in given.items():
            set_field(self, name, value)

    # the fields are __init__'s parameters, in order: named by its signature alone
    __slots__ = __init__.__code__.co_varnames[1 : 2 + __init__.__code__.co_kwonlyargcount]

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"a Query is frozen: use Query(query, {name}=...) for a changed copy")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("a Query is frozen")

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self.__slots__))

    def __repr__(self) -> str:
        changed = [
            f"{k}={v!r}"
            for k, v in self.as_dict().items()
            if k == "text" or v != (_strings(None) if k in LIST_FIELDS else DEFAULTS[k])
        ]
        return f"Query({', '.join(changed)})"

    @property
    def listing(self) -> bool:
        """No words to match: the observations the filters keep, by date."""
        return not self.text or not self.text.strip()

    def filter_fields(self) -> FilterFields:
        """The filters, parsed: dates as epoch milliseconds (a bare ``until`` date includes that whole day)."""
        from cmem_cli.core.timeutil import parse_time

        given: dict[str, object] = {}
        for f in FILTERS:
            value = getattr(self, f.name)
            if f.many:
                value = list(value)
            elif f.sql in ("since", "until"):  # a date or an age, as epoch milliseconds
                text = str(value or "")
                value = parse_time(text) if text else None
                if f.sql == "until" and len(text.strip()) == 10 and value is not None:
                    value += 86_400_000 - 1
            given[f.field] = value
        return FilterFields(**given)


def _strings(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """One string or several as a tuple (a bare string is one value, not its characters)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _check(given: dict[str, object]) -> None:
    from cmem_cli.core.fields import OBSERVATION_TYPES

    for obs_type in given["type"]:  # type: ignore[attr-defined]
        if obs_type not in OBSERVATION_TYPES:
            raise InvalidInput(f"unknown type {obs_type!r} (expected one of: {', '.join(OBSERVATION_TYPES)})")
    if given["order"] not in ORDERS:
        raise InvalidInput(f"unknown order {given['order']!r} (expected one of: {', '.join(ORDERS)})")
    if given["mode"] not in MODES:
        raise InvalidInput(f"unknown search mode {given['mode']!r} (expected one of: {', '.join(MODES)})")
    limit, offset = given["limit"], given["offset"]
    if not isinstance(limit, int) or not isinstance(offset, int) or isinstance(limit, bool):
        raise InvalidInput("limit and offset must be whole numbers")
    if limit < 0 or offset < 0:
        raise InvalidInput("--limit and --offset must not be negative")


# the fields that take one string or several: the list filters (core/filters.py) and the collections
LIST_FIELDS = (*(f.name for f in FILTERS if f.many), "collections")
DEFAULTS: dict[str, object] = dict(Query.__init__.__kwdefaults__ or {})  # from the signature, not restated
