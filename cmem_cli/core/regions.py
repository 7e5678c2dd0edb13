"""What a memory is about inside a file, kept compactly: the region.

A memory about a function is not made untrue by an edit forty lines further down the same file, so cmem
anchors the lines a memory concerns, not only the file's blob: a hash of each of them (stripped of the
whitespace around it, blank lines left out: re-indenting or moving code keeps it), the names of the
definitions that enclose them (``def``/``class``/``function``/``fn``/..., found by indentation, any
language), and where they were. Never the code itself. A region is intact while all its lines are still
somewhere in the file; drifted while some are gone but at least half remain; changed (stale) below half, or
when none of its enclosing definitions is defined any more.

Pure functions over text: the anchoring service (``cmem_cli.services.truth.anchor_record``) decides which lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

# Cap on the lines a region keeps: a memory about a 2,000-line rewrite is anchored by an even sample of
# them (the share still present is what decides, and a sample estimates it well), so an anchor stays a
# short line of front matter.
MAX_REGION_LINES = 64
MAX_SYMBOLS = 8
KEPT_SHARE = 0.5  # a region with fewer than half of its lines still in the file has changed

# A definition line in most languages: Python, JS/TS, Go, Rust, Ruby, PHP, Kotlin, Swift, shell, ...
_DEFINITION = (
    r"^[ \t]*(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|abstract|final|"
    r"async|unsafe|extern|override|open|sealed|data|inline|local|@\w+)[ \t]+)*"
    r"(?:def|class|function|func|fn|struct|interface|enum|trait|impl|protocol|macro_rules!)[ \t]+"
    r"(?:\([^)]*\)[ \t]*)?([A-Za-z_$][\w$]*)"
    # what follows a name being defined (prose such as "a class of objects" is not code)
    r"(?=[ \t]*(?:[(:{<\[=;]|$)|[ \t]+(?:extends|implements|for|where|<)\b)"
)
_ASSIGNED_FUNCTION = (
    r"^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s*)?(?:function\b|\()"
)
_pattern: list[re.Pattern[str]] = []  # compiled on first use: a search that checks no region never pays


def _definition() -> re.Pattern[str]:
    if not _pattern:
        _pattern.append(re.compile(f"{_DEFINITION}|{_ASSIGNED_FUNCTION}", re.MULTILINE))
    return _pattern[0]


class Region:
    """``lines``: hashes of the region's normalised lines (:func:`line_key`); ``symbols``: the names of
    the definitions enclosing them; ``start``/``end``: where they were (1-based, inclusive)."""

    __slots__ = ("lines", "symbols", "start", "end")

    def __init__(self, lines: list[str], symbols: list[str], start: int, end: int) -> None:
        self.lines, self.symbols, self.start, self.end = lines, symbols, start, end

    def to_json(self) -> dict[str, Any]:
        return {"lines": " ".join(self.lines), "symbols": self.symbols, "at": [self.start, self.end]}

    @classmethod
    def from_json(cls, value: Any) -> Region | None:
        """The region a stored or synced anchor states; None for anything malformed (ignored, not trusted)."""
        if not isinstance(value, dict):
            return None
        lines, symbols, at = value.get("lines"), value.get("symbols", []), value.get("at")
        if not isinstance(lines, str) or not isinstance(symbols, list) or not isinstance(at, list):
            return None
        if not _keys().fullmatch(lines):
            return None
        keys = lines.split(" ")
        if len(symbols) > MAX_SYMBOLS or not all(isinstance(s, str) and 0 < len(s) <= 200 for s in symbols):
            return None
        if len(at) != 2 or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in at):
            return None
        return cls(keys, list(symbols), at[0], at[1])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Region) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash((tuple(self.lines), tuple(self.symbols), self.start, self.end))

    def __repr__(self) -> str:
        return f"Region({len(self.lines)} lines, {self.symbols!r}, {self.start}-{self.end})"


_key_list: list[re.Pattern[str]] = []


def _keys() -> re.Pattern[str]:
    """1 to MAX_REGION_LINES hashes of 8 hex digits, one space apart: what a region's ``lines`` holds."""
    if not _key_list:
        _key_list.append(re.compile(f"[0-9a-f]{{8}}(?: [0-9a-f]{{8}}){{0,{MAX_REGION_LINES - 1}}}"))
    return _key_list[0]


def line_key(line: str) -> str:
    """A normalised line's hash: CRC-32 of its bytes stripped of the ASCII whitespace around them, 8 hex
    digits (a collision with one of a file's lines is a chance in millions, and the hash says nothing a
    reader could not guess anyway). :func:`file_keys` computes the same on a file's bytes."""
    from binascii import crc32

    return f"{crc32(line.encode('utf-8', 'surrogateescape').strip()):08x}"


def text_lines(data: bytes) -> list[str] | None:
    """A file's lines as git numbers them (split at ``\\n``; bytes that are not UTF-8 kept as they are),
    None for what is not text (a NUL in its first 8 KiB: git's own test)."""
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "surrogateescape").split("\n")


def _meaningful(line: str) -> bool:
    """A line that says something: a bracket or a lone ``else:`` alone is in every file."""
    return any(ch.isalnum() for ch in line)


def file_keys(data: bytes) -> set[int]:
    """The hashes (as numbers) of every line of a file's bytes, to look a region's lines up in: what a
    check does for each changed file a row cites, so it stays in C (one split, one CRC-32 a line)."""
    from binascii import crc32

    return set(map(crc32, map(bytes.strip, data.split(b"\n"))))


def defined(text: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` the file (its decoded ``text``) still defines: each name is found as text
    first, and only the lines holding it are tried as a definition (a check must not run the pattern
    over every line of a large file)."""
    pattern = _definition()
    found: set[str] = set()
    for name in names:
        at = text.find(name)
        while at != -1:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end == -1 else end
            match = pattern.match(text, start, end)
            if match and (match.group(1) or match.group(2)) == name:
                found.add(name)
                break
            at = text.find(name, end)
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def enclosing(lines: Sequence[str], numbers: Iterable[int]) -> list[str]:
    """The innermost definition enclosing each of the 1-based line ``numbers`` (a definition line
    encloses itself): the nearest definition line above with less indentation."""
    pattern = _definition()
    names: dict[str, None] = {}
    for number in sorted(set(numbers)):
        if not 1 <= number <= len(lines):
            continue
        line = lines[number - 1]
        if not line.strip():
            continue
        if len(names) >= MAX_SYMBOLS:
            break  # only the first MAX_SYMBOLS are kept
        match = pattern.match(line)
        if match:
            names[match.group(1) or match.group(2)] = None
            continue
        depth = _indent(line)
        for above in range(number - 2, -1, -1):
            text = lines[above]
            if not text.strip() or _indent(text) >= depth:
                continue
            match = pattern.match(text)
            if match:
                names[match.group(1) or match.group(2)] = None
                break
            depth = _indent(text)
            if text.lstrip()[:1] in (")", "]", "}"):
                depth += 1  # the end of a signature over several lines: its definition is at this depth
            elif depth == 0:
                break
    return list(names)[:MAX_SYMBOLS]


def region_of(lines: Sequence[str], numbers: Iterable[int]) -> Region | None:
    """The region made of these 1-based line numbers of the file (blank ones left out); None when no
    line says anything."""
    picked = sorted({n for n in numbers if 1 <= n <= len(lines) and lines[n - 1].strip()})
    if not picked:
        return None
    sampled = _sample(picked)
    keys = [line_key(lines[n - 1]) for n in sampled]
    # the definitions around the lines the hashes stand for: a long region (a Read of 2,000 lines) is
    # looked up at its sample, not at every line (each lookup walks up to its definition)
    meaningful = [n for n in sampled if _meaningful(lines[n - 1])] or sampled
    return Region(keys, enclosing(lines, meaningful), picked[0], picked[-1])


def _sample(numbers: list[int]) -> list[int]:
    if len(numbers) <= MAX_REGION_LINES:
        return numbers
    step = len(numbers) / MAX_REGION_LINES
    return [numbers[int(i * step)] for i in range(MAX_REGION_LINES)]


def hunk_lines(lines: Sequence[str], hunks: Iterable[tuple[int, int]]) -> list[int]:
    """The line numbers a diff's hunks (``start``, ``count`` on the new side) name: the non-blank lines
    added; when the change added none (it only deleted, or added blank lines), the nearest non-blank line
    above and below each hunk: what the change sat between."""
    spans = list(hunks)
    added = [
        n
        for start, count in spans
        for n in range(start, start + count)
        if 1 <= n <= len(lines) and lines[n - 1].strip()
    ]
    if added:
        return added
    numbers: list[int] = []
    for start, count in spans:
        above, below = (start - 1, start + count) if count else (start, start + 1)
        above = min(above, len(lines))
        while above >= 1 and not lines[above - 1].strip():
            above -= 1
        if above >= 1:
            numbers.append(above)
        while below <= len(lines) and not lines[below - 1].strip():
            below += 1
        if 1 <= below <= len(lines):
            numbers.append(below)
    return numbers


def written_region(lines: Sequence[str], text: str) -> Region | None:
    """The region of ``text`` written into the file (an edit's new text, a whole file written): where
    its lines are now. The text may differ from the file where a privacy filter masked part of it: the
    lines found are what the region keeps."""
    wanted = [line.strip() for line in text.splitlines() if line.strip()]
    if not wanted:
        return None
    stripped = [line.strip() for line in lines]
    first = wanted[0]
    for start, line in enumerate(stripped):
        if line != first:
            continue
        numbers, at = [], start
        for want in wanted:  # the text's lines in order from here, blank lines skipped
            while at < len(stripped) and not stripped[at]:
                at += 1
            if at >= len(stripped) or stripped[at] != want:
                break
            numbers.append(at + 1)
            at += 1
        else:
            return region_of(lines, numbers)
    index: dict[str, int] = {}
    for number, line in enumerate(stripped, 1):
        index.setdefault(line, number)
    return region_of(lines, [index[w] for w in wanted if w in index])


INTACT, DRIFTED, CHANGED = "intact", "drifted", "changed"


def standing(region: Region, keys: set[int], names: Callable[[list[str]], set[str]]) -> str:
    """How the region stands in a file whose line hashes are ``keys`` (:func:`file_keys`): ``changed``
    when fewer than half of its lines are there, or none of its enclosing definitions is (``names`` says
    which of some names the file defines: :func:`defined`, usually remembered per file); else ``drifted``
    when some line is gone (a partial change is never silent); else ``intact``."""
    kept = sum(1 for key in region.lines if int(key, 16) in keys)
    if kept < KEPT_SHARE * len(region.lines):
        return CHANGED
    if region.symbols and not names(region.symbols):
        return CHANGED
    return INTACT if kept == len(region.lines) else DRIFTED


def holds(region: Region, keys: set[int], names: Callable[[list[str]], set[str]]) -> bool:
    """Whether the region is not stale there (:func:`standing`: intact or drifted)."""
    return standing(region, keys, names) != CHANGED
