"""A small, realistic home for `cmem view`: two sessions of agent work, links, a summary, a deploy script's
note, a hostile record, and records outside the default window (another project, 40 days ago).

The browser tests, the page tests and scripts/view_screenshot.py (the README's picture) use it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

DAY_MS = 86_400_000
PROJECT = "webapp"
HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1">Hostile <script>window.__pwned=2</script> title'
HOSTILE_NARRATIVE = (
    "</script><script>window.__pwned=3</script><!-- <svg onload=window.__pwned=4> "
    '<a href="javascript:window.__pwned=5">link</a> & &amp; \u2028 end'
)


def day_start(days_ago: int) -> int:
    """Midnight UTC ``days_ago`` days ago, in epoch milliseconds."""
    now = int(time.time() * 1000)
    return now - now % DAY_MS - days_ago * DAY_MS


def fill_home(home: Path, *, hostile: bool = True) -> dict[str, Any]:
    """Write the records into the cmem home ``home``; returns their ids by name. ``hostile`` False gives
    the hostile record a plain title and text (the README's picture)."""
    from cmem_cli.api import Memory

    two, one = day_start(2), day_start(1)
    hour = 3_600_000
    ids: dict[str, Any] = {}
    with Memory(home) as memory:
        login = "01login0session0webapp0000a"
        ids["prompt"] = memory.recorder.add_prompt(
            "why do users get logged out after an hour?", session=login, project=PROJECT,
            agent="claude-code", created_at=two + 9 * hour,
        )  # fmt: skip
        memory.recorder.label_sessions({login: "Fix early logouts"})
        first, second, deploy, decision, hostile, older, elsewhere = memory.add_many(
            [
                {
                    "type": "discovery", "title": "Cookie max-age was set in seconds twice",
                    "subtitle": "sessions expired after an hour instead of a day",
                    "narrative": "The auth middleware multiplied max-age by 1000 and the cookie helper did it again.",
                    "facts": ["max-age is in seconds", "the helper multiplies by 1000"],
                    "concepts": ["auth", "cookies"], "files_read": ["src/auth/cookie.ts", "src/auth/session.ts"],
                    "session": login, "agent": "claude-code", "created_at": two + 9 * hour + 300_000,
                },
                {
                    "type": "bugfix", "title": "JWT expiry compared seconds to milliseconds",
                    "facts": ["exp is in seconds"], "concepts": ["auth", "jwt"],
                    "files_modified": ["src/auth/jwt.ts"], "tools_used": ["Edit"],
                    "session": login, "agent": "claude-code", "created_at": two + 10 * hour,
                },
                {
                    "type": "change", "title": "Deployed 4f1c2d9 to production", "agent": "deploy",
                    "created_at": two + 15 * hour,
                },
                {
                    "type": "decision", "title": "Use Postgres advisory locks for the job queue",
                    "narrative": "Redis locks expired under load; advisory locks live as long as the session.",
                    "concepts": ["queue"], "files_modified": ["src/jobs/queue.ts"],
                    "session": "02queue0session0webapp0000b", "agent": "codex", "created_at": one + 11 * hour,
                },
                {
                    "type": "insight", "title": HOSTILE_TITLE, "subtitle": "<b onmouseover=window.__pwned=6>sub</b>",
                    "narrative": HOSTILE_NARRATIVE, "facts": ["<iframe src=javascript:window.__pwned=7>"],
                    "files_read": ["<img src=y onerror=window.__pwned=8>.md"],
                    "session": "02queue0session0webapp0000b", "agent": "codex", "created_at": one + 12 * hour,
                }
                if hostile
                else {
                    "type": "insight", "title": "A lock held across an await blocks every worker",
                    "subtitle": "release before awaiting the network", "files_read": ["src/jobs/worker.ts"],
                    "session": "02queue0session0webapp0000b", "agent": "codex", "created_at": one + 12 * hour,
                },
                {"type": "decision", "title": "Ancient decision outside the window",
                 "created_at": day_start(40) + 8 * hour},
                {"type": "feature", "title": "Another project's feature", "project": "billing",
                 "created_at": one + 9 * hour},
            ],
            project=PROJECT,
        )  # fmt: skip
        ids.update(
            discovery=first, bugfix=second, deploy=deploy, decision=decision, hostile=hostile,
            older=older, elsewhere=elsewhere,
        )  # fmt: skip
        memory.link(decision, "caused_by", second)
        memory.link(second, "related", first)
        memory.link(second, "led_to", older)  # to a record outside the window
        ids["summary"] = memory.recorder.add_summary(
            login,
            {"learned": "max-age was multiplied twice", "next_steps": "add a regression test for the cookie"},
            project=PROJECT, agent="claude-code", created_at=two + 10 * hour + 600_000,
        )  # fmt: skip
        memory.recorder.label_sessions({"02queue0session0webapp0000b": "Job queue locking"})
    return ids
