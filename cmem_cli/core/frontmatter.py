"""Reading a YAML front matter block that anyone may have written, with limits.

Export files travel between machines (git sync) and collections hold anybody's markdown, so a front
matter block is untrusted input. PyYAML's safe loader still builds whatever the text describes: anchors
and aliases share one list many times over (a "billion laughs" block is a few lines that walk to 10^9
items, and any later ``str()`` of it spins for hours, deaf to signals), a ten-thousand-deep ``[[[...]]]``
overflows Python's recursion, ``0000-01-01`` or a 5,000-digit number raise ValueError from inside the
constructor. :func:`load_yaml` refuses all of these with a :class:`FrontMatterError` that says why, in
time linear in the block's size; :func:`check_values` applies the same limits to values the fast
(JSON-per-line) reader produced. Both the export reader and the indexer use them, so the two never
disagree about which block is readable.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_FRONT_MATTER_CHARS = 256_000  # far above any front matter cmem writes by hand-editable means
MAX_DEPTH = 8  # cmem's deepest value is a list of link mappings (depth 3)
MAX_INT = 2**63 - 1  # what SQLite stores


class FrontMatterError(ValueError):
    """The front matter block cannot be read safely; the message is the reason, for a one-line report."""


def load_yaml(block: str) -> Any:
    """The YAML value of ``block`` (None for an empty one), or FrontMatterError: no anchors or aliases,
    nesting at most :data:`MAX_DEPTH`, numbers within 64 bits, dates a calendar can hold."""
    if len(block) > MAX_FRONT_MATTER_CHARS:
        raise FrontMatterError(
            f"front matter too large ({len(block)} characters, limit {MAX_FRONT_MATTER_CHARS})"
        )
    import yaml  # lazy: only hand-edited front matter needs a YAML parser

    loader = _bounded_loader()
    try:
        _check_events(yaml.parse(block, Loader=loader))
        value = yaml.load(block, Loader=loader)  # noqa: S506 - a safe loader with limits
    except FrontMatterError:
        raise
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise FrontMatterError(f"broken front matter ({problem})") from None
    except (ValueError, OverflowError, TypeError, RecursionError) as exc:  # constructors of odd scalars
        raise FrontMatterError(f"broken front matter ({exc})") from None
    check_values(value)
    return value


PLAIN_WORDS = re.compile(r"^[A-Za-z_][A-Za-z0-9_ ./-]*$")  # a value cmem writes unquoted
YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "none", "~", "y", "n"}
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")  # no exponent: YAML 1.1 reads "1e-05" as text
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def fast_front_matter(block: str) -> dict[str, Any] | None:
    """Read front matter as cmem writes it (one ``key: value`` line each, values JSON or plain words)
    without a YAML parser, which costs milliseconds a file (half of a first index's time); None when any
    line needs real YAML. Its values still go through :func:`check_values`."""
    meta: dict[str, Any] = {}
    for line in block.split("\n"):
        key, sep, value = line.partition(": ")
        if not sep or not _KEY.fullmatch(key) or key in meta or value != value.strip() or not value:
            return None
        if value[0] in '"[{' or value in ("true", "false", "null") or _NUMBER.fullmatch(value):
            try:
                meta[key] = json.loads(value)
            except (ValueError, RecursionError):  # RecursionError: [[[[...]]]] deeper than Python recurses
                return None
        elif PLAIN_WORDS.match(value) and value.lower() not in YAML_WORDS:
            meta[key] = value
        else:
            return None
    return meta


def check_values(value: Any) -> None:
    """FrontMatterError unless ``value`` is plain data within the limits (depth, 64-bit integers,
    finite floats, string keys)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise FrontMatterError(f"front matter exceeds the maximum nesting depth ({MAX_DEPTH} levels)")
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        raise FrontMatterError(f"front matter key {str(key)[:40]!r} is not text")
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not -MAX_INT - 1 <= item <= MAX_INT:
                raise FrontMatterError("front matter number out of range (more than 64 bits)")
        elif isinstance(item, float) and not math.isfinite(item):
            raise FrontMatterError("front matter number out of range (infinite or not a number)")


def _check_events(events: Any) -> None:
    """Walk the parser's events (no objects are built): refuse anchors, aliases and deep nesting before
    the constructor could expand or recurse into them."""
    import yaml

    depth = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise FrontMatterError("front matter uses YAML anchors or aliases (not allowed)")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise FrontMatterError(f"front matter exceeds the maximum nesting depth ({MAX_DEPTH} levels)")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


_LOADER: Any = None


def _bounded_loader() -> Any:
    """PyYAML's safe loader (the C one when present) whose dates and integers fail with a reason."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class BoundedLoader(base):  # type: ignore[misc, valid-type]
        pass

    def timestamp(loader: Any, node: Any) -> Any:
        try:
            return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
        except (ValueError, OverflowError):
            raise FrontMatterError(f"date {node.value[:40]!r} is out of range") from None

    def integer(loader: Any, node: Any) -> Any:
        if len(node.value) > 40:  # 64 bits are 20 digits; a longer one is refused before int() reads it
            raise FrontMatterError("front matter number out of range (more than 64 bits)")
        return yaml.SafeLoader.construct_yaml_int(loader, node)

    BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    BoundedLoader.add_constructor("tag:yaml.org,2002:int", integer)
    _LOADER = BoundedLoader
    return BoundedLoader
