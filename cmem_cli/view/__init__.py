"""`cmem view`: a front end that draws what agents remembered as one self-contained HTML page.

It stands on the Python API (:meth:`cmem_cli.api.Memory.window` gives the records of a span of time) and
renders them into a page that needs nothing else: no server, no port, no request of any kind. The CLI
command (``cmem_cli.cli.commands.view``) only parses options, writes the page and opens it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.view.scope import Scope, resolve

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.api import Memory

__all__ = ["Page", "Scope", "build", "page_for", "resolve"]


class Page(NamedTuple):
    """A rendered page: its ``html``, and what it holds (``summary``: JSON-ready; ``note``: the cap, if any)."""

    html: str
    summary: dict[str, Any]
    note: str | None


def build(memory: Memory, scope: Scope) -> Page:
    """The page for ``scope``: its records read through the API, rendered with the data embedded."""
    return page_for(memory.window(scope.query, limit=scope.limit), scope)


def page_for(window: Mapping[str, Any], scope: Scope) -> Page:
    """The page for a window :meth:`cmem_cli.api.Memory.window` returned, described by ``scope``."""
    from cmem_cli.core.results import URI_PREFIX
    from cmem_cli.core.text import TYPE_ICONS
    from cmem_cli.core.version import VERSION
    from cmem_cli.view.page import render

    counts = window["observations"]
    note = cap_note(counts, window["since"], scope.limit)
    kinds = {"observation": 0, "prompt": 0, "summary": 0}
    for item in window["items"]:
        kinds[item["kind"]] += 1
    meta = {
        "title": scope.title,
        "scope": scope.describe(window["since"]),
        "note": note,
        "empty": f"Nothing recorded here ({scope.describe(window['since'])}). Widen the window: "
        "cmem view --since 90d, --all-projects, or fewer filters.",
        "version": VERSION,
        "generated_at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "icons": {name: icon for name, icon in TYPE_ICONS.items() if name != "document"},
        "uri_prefix": URI_PREFIX,
        "since": window["since"],
        "until": window["until"],
        "branch": current_branch(),
    }
    summary = {
        "project": scope.query.project,
        "session": scope.query.session,
        "machine": scope.query.machine,
        "query": scope.query.text,
        "since": window["since"],
        "until": window["until"],
        "observations": counts["shown"],
        "prompts": kinds["prompt"],
        "summaries": kinds["summary"],
        "total_observations": counts["total"],
        "total_bounded": counts["total_bounded"],
        "capped": counts["capped"],
        "limit": scope.limit,
    }
    return Page(render(window, meta), summary, note)


def cap_note(counts: Mapping[str, Any], since: str | None, limit: int) -> str | None:
    """The sentence that says the page does not show everything, and how to see the rest; None if it does."""
    if not counts["capped"]:
        return None
    total = f"more than {counts['total']:,}" if counts["total_bounded"] else f"{counts['total']:,}"
    start = f" (from {since[:16].replace('T', ' ')} UTC on)" if since else ""
    return (
        f"Showing the newest {counts['shown']:,} of {total} observations{start}, the cap of one page. "
        f"Narrow the window (--since, --type, a query) or raise --limit (now {limit:,})."
    )


def current_branch() -> str | None:
    """The branch of the git work tree the page is made in (None outside git or on a detached HEAD)."""
    import os

    from cmem_cli.core import worktree

    try:
        repo = worktree.find_repo(os.getcwd())
    except OSError:
        return None
    return worktree.head(repo).branch if repo is not None else None
