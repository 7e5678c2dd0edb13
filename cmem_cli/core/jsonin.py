"""Parsing JSON that came from outside (command lines, hook payloads, transcripts) with bounded nesting."""

from __future__ import annotations

import json
from typing import Any

from cmem_cli.core.errors import InvalidInput

MAX_JSON_DEPTH = 64  # cmem's records nest three levels; anything far deeper is hostile or broken input


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads`` that turns nesting deeper than MAX_JSON_DEPTH into invalid input: Python's parser
    (and every recursive walk over the result afterwards) would otherwise die of a RecursionError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidInput(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if _nested_deeper_than(value, MAX_JSON_DEPTH):
        raise InvalidInput(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def _nested_deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False
