"""`--order newest|oldest` sorts every match by date, not the most relevant 50 of them (issue 25)."""

from __future__ import annotations

import json


def _records(count: int) -> str:
    """``count`` observations that all mention "alpha"; the oldest and the newest mention it once in a long
    narrative (weak matches), the others in their title (strong ones)."""
    filler = " ".join(f"word{i}" for i in range(200))
    lines = []
    for day in range(count):
        weak = day in (0, count - 1)
        lines.append(
            json.dumps(
                {
                    "title": f"note {day}" if weak else f"alpha alpha note {day}",
                    "narrative": f"{filler} alpha {filler}" if weak else None,
                    "project": "p",
                    "created_at": "2024-01-01T00:00:00Z"
                    if day == 0
                    else f"2024-03-{day % 28 + 1:02d}T{day % 24:02d}:00:00Z",
                }
            )
        )
    lines[-1] = lines[-1].replace('"2024-03', '"2025-03')  # the newest, whatever its day
    return "\n".join(lines) + "\n"


def test_order_oldest_finds_the_oldest_match_beyond_the_most_relevant_fifty(sh):
    assert sh("add", "--json", "-", input=_records(70)).exit_code == 0
    result = sh("search", "alpha", "--order", "oldest", "-n", "1", "--format", "ids")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["1"]  # note 0, from 2024-01-01, the weakest match


def test_order_newest_finds_the_newest_match_whatever_the_limit(sh):
    assert sh("add", "--json", "-", input=_records(70)).exit_code == 0
    for limit in ("1", "5", "60"):
        result = sh("search", "alpha", "--order", "newest", "-n", limit, "--format", "ids")
        assert result.stdout.split()[0] == "70", limit
