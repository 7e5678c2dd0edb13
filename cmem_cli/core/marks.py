"""The short marks a listing puts before a memory's title when what it says may no longer hold.

One place for the words, so a terminal table, the plain output, MCP's text lines and the briefing say the
same. Rows without the fields (summaries, prompts, documents) get no mark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def title_marks(row: Mapping[str, Any]) -> str:
    """``[stale] `` when what the memory is about in its cited files changed since (docs/truth.md),
    ``[behind] `` when this checkout lacks the commit it was recorded at; ``[drifted] `` when some of
    those lines changed but most still hold; ``[replaced by #12] `` for a
    memory a newer one superseded (an explicit link), ``[maybe replaced by #12] `` when a newer hit only
    states an update of the same subject; empty when none applies."""
    marks = (
        "[stale] "
        if row.get("stale")
        else "[behind] "
        if row.get("behind")
        else "[drifted] "
        if row.get("drifted")
        else ""
    )
    if row.get("invalidated") is not None:
        marks += "[invalidated] "
    if row.get("superseded_by") is not None:
        marks += f"[replaced by #{row['superseded_by']}] "
    elif row.get("possibly_superseded_by") is not None:
        marks += f"[maybe replaced by #{row['possibly_superseded_by']}] "
    return marks
