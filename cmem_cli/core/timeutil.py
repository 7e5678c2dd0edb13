"""Time handling: everything is stored as INTEGER epoch milliseconds (UTC) and shown as ISO 8601.

Showing a time uses the ``time`` module; ``datetime`` (1.5 ms to import, which every hook would pay) is
loaded only to parse an ISO date.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from cmem_cli.core.errors import InvalidInput

if TYPE_CHECKING:
    from datetime import date

_RELATIVE = r"(?i)^\s*(\d+)\s*(s|m|min|h|d|w|mo|y)\s*$"  # compiled where used (re caches it): most calls never need it
_UNIT_MS = {
    "s": 1_000,
    "min": 60_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 7 * 86_400_000,
    "mo": 30 * 86_400_000,
    "y": 365 * 86_400_000,
}


MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the last instant every date routine can show


def check_ms(value: int | float, original: object) -> int:
    """Epoch milliseconds from 1970 to the year 9999, or invalid input (NaN, infinities, 1e20 would
    fail deep inside date formatting or SQLite instead)."""
    if value != value or value in (float("inf"), float("-inf")) or not 0 <= value <= MAX_MS:
        raise InvalidInput(f"time {original!r} is out of range (epoch milliseconds from 1970 to 9999)")
    return int(value)


def now_ms() -> int:
    return int(time.time() * 1000)


def to_iso(ms: int | None) -> str | None:
    """``2026-11-22T17:12:39.123Z``: UTC, millisecond precision, sortable as text."""
    if ms is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(ms // 1000)) + f"{ms % 1000:03d}Z"


def to_date(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ms // 1000))


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip


def date_words(day: date) -> str:
    """``27 June 2023``: a date as the words a question names it by (English whatever the locale).

    Both keyword indexes carry a memory's date this way (the store's search terms, the index's keyword
    column), so "what did Melanie paint in July 2023?" matches July 2023's memories by shared words; BM25
    gives a date every document shares no weight."""
    return _words(day.day, day.month, day.year)


def _words(day: int, month: int, year: int) -> str:
    return f"{day} {_MONTHS[month - 1]} {year}"


def ms_date_words(ms: int) -> str:
    """:func:`date_words` of an epoch-ms time's UTC date (the date cmem's export files state)."""
    utc = time.gmtime(ms // 1000)
    return _words(utc.tm_mday, utc.tm_mon, utc.tm_year)


def parse_iso(text: str, *, hint: str = "") -> int:
    """An ISO 8601 date or datetime (naive means UTC) to epoch ms; ``hint`` ends the error of any other text."""
    from datetime import UTC, datetime

    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"not an ISO 8601 date or time: {text!r}{hint}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return check_ms(dt.timestamp() * 1000, text)


def parse_time(value: str | int | float, *, now: int | None = None) -> int:
    """Accept epoch ms (int), an ISO date/time, or a relative age such as ``7d``, ``2w``, ``12h``."""
    if isinstance(value, bool):
        raise InvalidInput(f"not a time: {value!r}")
    if isinstance(value, int | float):
        return check_ms(value, value)
    if not isinstance(value, str):
        raise InvalidInput(f"not a time: {value!r}")
    match = re.match(_RELATIVE, value)
    if match:
        amount, unit = int(match.group(1)), match.group(2).lower()
        age = amount * _UNIT_MS[unit]
        if age > MAX_MS:
            raise InvalidInput(f"time {value!r} is out of range (more than 9999 years ago)")
        return max(0, (now if now is not None else now_ms()) - age)
    return parse_iso(value, hint="; an age works too: 7d, 2w, 12h, 3mo")  # "last week": say what works
