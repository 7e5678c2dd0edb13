"""One title for a session summary, wherever it is shown: search rows, timeline, `get` and its file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

# The first of these a summary has names it; a summary with none is just "Session summary".
TITLE_FIELDS = ("request", "completed", "learned", "investigated", "next_steps", "notes")


def summary_title(record: Mapping[str, Any]) -> str:
    text = next((record[f] for f in TITLE_FIELDS if record.get(f) and record[f].strip()), None)
    return f"Session summary: {' '.join(text.split())[:120]}" if text else "Session summary"
