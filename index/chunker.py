"""Markdown-aware chunking: ~900-token pieces with 15% overlap, cut where the document itself breaks.

Why this shape: an embedding model sees one chunk at a time, so a chunk should be a coherent section, not an
arbitrary window. Cuts go to the best break point near the size limit (a heading beats a code-fence boundary,
which beats a rule, a paragraph break, a list item, a plain line end, and a sentence end inside a long line).
A cut never falls inside a fenced code block: a fence larger than the budget makes one oversized chunk rather
than two halves of a program. Each chunk is an exact slice ``body[start:end]`` so nothing is lost, and
consecutive chunks overlap by at most ``overlap * max_tokens`` tokens.

Token counting is pluggable: the embedder's own tokenizer once a model is loaded, ``estimate_tokens``
(characters / 4) otherwise. Counting is done per line and summed, which keeps it linear in the document size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from cmem_cli.core.text import estimate_tokens

# Bump when chunks change for the same input (boundaries, or the context the embedder and the keyword
# column get): the index re-chunks everything on a change.
CHUNKER_VERSION = "7"
DEFAULT_MAX_TOKENS = 900
DEFAULT_OVERLAP = 0.15

TokenCounter = Callable[[str], int]

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])[\"')\]]*\s+")
_WHITESPACE = re.compile(r"\s+")

# Scores of a cut *before* a unit. Higher is a better place to cut.
_HEADING_SCORES = {1: 100.0, 2: 90.0, 3: 80.0, 4: 70.0, 5: 60.0, 6: 50.0}
_FENCE_SCORE = 80.0
_RULE_SCORE = 60.0
_PARAGRAPH_SCORE = 20.0
_LIST_SCORE = 5.0
_LINE_SCORE = 1.0
_SENTENCE_SCORE = 0.5
_WORD_SCORE = 0.1
_FORBIDDEN = -1.0

# Only cut points in the last part of the budget compete on score; nearer the limit is better.
_WINDOW = 0.4
_DECAY = 0.7


@dataclass(frozen=True)
class Chunk:
    """One chunk: the exact slice ``body[start:end]`` and where it starts in the file (1-based line)."""

    seq: int
    start: int
    end: int
    start_line: int
    text: str
    tokens: int


@dataclass
class _Unit:
    start: int
    end: int
    line: int  # 0-based line in the body
    tokens: int
    score: float  # of a cut before this unit
    blank: bool = False


def chunk_markdown(
    body: str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    overlap: float = DEFAULT_OVERLAP,
    count_tokens: TokenCounter = estimate_tokens,
    first_line: int = 1,
) -> list[Chunk]:
    """Split ``body`` into chunks; ``first_line`` is the file line where the body starts (after front matter).

    A body that is empty or only whitespace has no chunks.
    """
    if max_tokens < 8:
        raise ValueError("max_tokens must be at least 8")
    if not body.strip():
        return []
    counter = _calibrated(count_tokens)
    units = _units(body, max_tokens, counter)
    prefix = [0]
    for unit in units:
        prefix.append(prefix[-1] + unit.tokens)
    overlap_tokens = int(max_tokens * max(0.0, min(overlap, 0.5)))

    chunks: list[Chunk] = []
    start = 0
    n = len(units)
    while start < n:
        cut = _choose_cut(units, prefix, start, max_tokens)
        text = body[units[start].start : units[cut - 1].end]
        first_text = next((i for i in range(start, cut) if _is_text(units, i)), start)
        chunks.append(
            Chunk(
                seq=len(chunks),
                start=units[start].start,
                end=units[cut - 1].end,
                start_line=first_line + units[first_text].line,
                text=text,
                tokens=prefix[cut] - prefix[start],
            )
        )
        if cut >= n:
            break
        start = _overlap_start(units, prefix, start, cut, overlap_tokens)
    return chunks


def _calibrated(count_tokens: TokenCounter) -> TokenCounter:
    """Subtract what the counter reports for empty text (a BERT tokenizer's [CLS]/[SEP]) from every count."""
    base = max(0, count_tokens(""))
    if base == 0:
        return count_tokens
    return lambda text: max(0, count_tokens(text) - base)


def _is_text(units: list[_Unit], index: int) -> bool:
    return not units[index].blank


def _choose_cut(units: list[_Unit], prefix: list[int], start: int, max_tokens: int) -> int:
    """Index of the first unit of the next chunk (exclusive end of this one)."""
    n = len(units)
    limit = prefix[start] + max_tokens
    end = start + 1  # a chunk holds at least one unit
    while end < n and prefix[end + 1] <= limit:
        end += 1
    if end >= n:
        return n
    window_start = prefix[start] + max_tokens * (1 - _WINDOW)
    best, best_score = -1, 0.0
    fallback = -1
    for cut in range(start + 1, end + 1):
        score = units[cut].score
        if score <= 0:
            continue
        fallback = cut
        if prefix[cut] < window_start:
            continue
        distance = (limit - prefix[cut]) / (max_tokens * _WINDOW)
        weighted = score * (1 - min(distance, 1.0) ** 2 * _DECAY)
        if weighted >= best_score:
            best, best_score = cut, weighted
    if best > 0:
        return best
    if fallback > 0:
        return fallback
    # Inside a fence longer than the budget: keep it whole and cut at its end.
    cut = end + 1
    while cut < n and units[cut].score <= 0:
        cut += 1
    return cut


def _overlap_start(units: list[_Unit], prefix: list[int], start: int, cut: int, overlap_tokens: int) -> int:
    """Start the next chunk a few units before ``cut`` (at most ``overlap_tokens``), never inside a fence."""
    candidate = cut
    while candidate - 1 > start and prefix[cut] - prefix[candidate - 1] <= overlap_tokens:
        candidate -= 1
    while candidate < cut and units[candidate].score <= 0:
        candidate += 1
    if candidate < cut and all(not _is_text(units, i) for i in range(candidate, cut)):
        return cut  # an overlap of blank lines only repeats nothing useful
    return candidate


def _units(body: str, max_tokens: int, count: TokenCounter) -> list[_Unit]:
    """Lines (long ones split at sentences, then words) with the score of a cut before each."""
    lines = body.splitlines(keepends=True)
    fences = _fence_spans(lines)
    inside: set[int] = set()  # lines a cut may not precede: a fence's body and its closing line
    after_fence: set[int] = set()
    for opener, closer in fences.items():
        inside.update(range(opener + 1, closer + 1))
        after_fence.add(closer + 1)
    units: list[_Unit] = []
    long_line = min(max_tokens, max(16, max_tokens // 4))
    previous_blank = False
    offset = 0
    for number, line in enumerate(lines):
        stripped = line.rstrip("\r\n")
        if number in inside:
            score = _FORBIDDEN
        elif number in fences:
            score = _FENCE_SCORE
        else:
            score = _line_score(stripped, previous_blank)
        if number in after_fence:
            score = max(score, _FENCE_SCORE)
        tokens = count(line)
        if tokens > long_line and number not in inside and number not in fences:
            units.extend(_split_long(line, offset, number, score, max_tokens, count))
        else:
            units.append(_Unit(offset, offset + len(line), number, tokens, score, blank=not stripped.strip()))
        previous_blank = not stripped.strip()
        offset += len(line)
    return units


def _fence_spans(lines: list[str]) -> dict[int, int]:
    """Opening line -> closing line of each fenced block (an unclosed marker is ordinary text)."""
    spans: dict[int, int] = {}
    current: tuple[int, str, int] | None = None
    for number, line in enumerate(lines):
        stripped = line.rstrip("\r\n")
        marker = _FENCE.match(stripped)
        if marker is None:
            continue
        if current is None:
            if marker.group(1)[0] == "`" and "`" in stripped[marker.end() :]:
                continue  # not a fence: a backtick fence's info string may not contain backticks
            current = (number, marker.group(1)[0], len(marker.group(1)))
        elif _closes((current[1], current[2]), marker.group(1), stripped):
            spans[current[0]] = number
            current = None
    return spans


def _closes(fence: tuple[str, int], marker: str, line: str) -> bool:
    char, length = fence
    return marker[0] == char and len(marker) >= length and not line.strip().strip(char)


def _line_score(line: str, previous_blank: bool) -> float:
    heading = _HEADING.match(line)
    if heading:
        return _HEADING_SCORES[len(heading.group(1))]
    if _RULE.match(line):
        return _RULE_SCORE
    if previous_blank and line.strip():
        return _PARAGRAPH_SCORE
    if _LIST_ITEM.match(line):
        return _LIST_SCORE
    return _LINE_SCORE


def _split_long(
    line: str, offset: int, number: int, score: float, max_tokens: int, count: TokenCounter
) -> list[_Unit]:
    """Split one long line at sentence ends, and sentences longer than half the budget at spaces."""
    pieces: list[tuple[int, int, float]] = []  # (start, end, score before) relative to the line
    position = 0
    for match in _SENTENCE_END.finditer(line):
        if match.end() < len(line):
            pieces.append((position, match.end(), _SENTENCE_SCORE))
            position = match.end()
    pieces.append((position, len(line), _SENTENCE_SCORE))
    units: list[_Unit] = []
    half = max(4, max_tokens // 2)
    for index, (start, end, piece_score) in enumerate(pieces):
        first_score = score if index == 0 else piece_score
        text = line[start:end]
        tokens = count(text)
        if tokens <= half:
            units.append(_Unit(offset + start, offset + end, number, tokens, first_score))
            continue
        units.extend(_split_words(text, offset + start, number, first_score, half, count))
    return units


def _split_words(
    text: str, offset: int, number: int, score: float, target: int, count: TokenCounter
) -> list[_Unit]:
    """Pieces of about ``target`` tokens cut after whitespace (or anywhere, for text without spaces)."""
    units: list[_Unit] = []
    position = 0
    first = True
    while position < len(text):
        # Grow a piece by characters proportional to its measured density, cutting after whitespace.
        remaining = text[position:]
        total = count(remaining)
        if total <= target:
            end = len(text)
        else:
            end = position + max(1, int(len(remaining) * target / total))
            space = _last_space_end(text, position, end)
            if space > position:
                end = space
        piece = text[position:end]
        units.append(
            _Unit(offset + position, offset + end, number, count(piece), score if first else _WORD_SCORE)
        )
        first = False
        position = end
    return units


def _last_space_end(text: str, start: int, end: int) -> int:
    last = -1
    for match in _WHITESPACE.finditer(text, start, end):
        last = match.end()
    return last
