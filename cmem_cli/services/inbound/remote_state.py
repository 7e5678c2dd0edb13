"""What this home knows of its remote without reaching it: which one, when it last synced, what waits to be
pushed and why the last push was refused. `cmem status` and `cmem doctor` read it (fast, off the network);
git sync, team sync and `cmem watch` record it as they go, in the store's ``state`` table.

A read-only team member's sync pulls and then has its push refused, every time: only `sync` said so, and
`status` and `doctor` reported all clear (issue 32).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypedDict, cast

from cmem_cli.core.timeutil import now_ms, to_iso

if TYPE_CHECKING:
    from cmem_cli.core.sync_report import RemoteStatus
    from cmem_cli.services.read.search_pipeline import Reader
    from cmem_cli.store.repository import Store

SYNCED_AT = "remote.synced_at"  # epoch ms of the last sync that ended without an error
PULLED_AT = "remote.pulled_at"  # epoch ms of the last time what others pushed came in (a refused push too)
REFUSED = "remote.refused"  # JSON {"at", "reason", "read_only"}: the last push refused, until one succeeds


def synced(store: Store) -> None:
    """A sync ended well: it pulled, pushed what was queued, and any earlier refusal is over."""
    at = str(now_ms())
    with store.transaction():
        store.state.set(SYNCED_AT, at)
        store.state.set(PULLED_AT, at)
        store.state.set(REFUSED, None)


def pulled(store: Store) -> None:
    """What others pushed came in (`cmem watch`'s pulls; a sync whose push was refused)."""
    with store.transaction():
        store.state.set(PULLED_AT, str(now_ms()))


def pushed(store: Store) -> None:
    """A push went through: an earlier refusal is over."""
    if store.state.get(REFUSED) is not None:
        with store.transaction():
            store.state.set(REFUSED, None)


def refused(store: Store, reason: str, *, read_only: bool) -> None:
    """The remote refused this home's push (``read_only``: the role may never write, so what is queued
    stays here until its grants change)."""
    value = json.dumps({"at": now_ms(), "reason": reason, "read_only": read_only})
    with store.transaction():
        store.state.set(REFUSED, value)


class RefusalRecord(TypedDict, total=False):
    """The last refused push as :func:`refused` records it (read back with distrust: any key may lack)."""

    at: int  # epoch ms
    reason: str
    read_only: bool


def last_refusal(store: Store) -> RefusalRecord | None:
    """The last refused push, as :func:`refused` recorded it, or None once a push went through."""
    text = store.state.get(REFUSED)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return cast("RefusalRecord", value) if isinstance(value, dict) else None


def shown_url(url: str) -> str:
    """A URL as it may be printed: every credential hidden, by the one rule for git and team URLs
    (:func:`cmem_cli.core.urls.redact_url`)."""
    from cmem_cli.core.urls import redact_url

    return redact_url(url)


def remote_status(memory: Reader) -> RemoteStatus | None:
    """This home's remote as `cmem status` shows it, or None without one (reads local state only)."""
    from cmem_cli.core.sync_report import Refusal, RemoteStatus

    store = memory.store
    settings = store.team_outbox.settings()
    machine: str | None
    if settings.get("url"):
        # stored without its password (cmem_cli.team.url); the role is no secret and says who syncs
        kind, url, machine = "team", shown_url(settings["url"]), settings.get("machine") or ""
        queued: int | None = store.team_outbox.pending_count()
    else:
        from cmem_cli.services.inbound.sync_repo import connected_git_dir, remote_url

        config = memory.config
        git_dir = connected_git_dir(config.home, config.export_dir)
        if git_dir is None:
            return None
        kind, url, machine, queued = "git", shown_url(remote_url(git_dir) or ""), None, None
    refusal = last_refusal(store)
    return RemoteStatus(
        kind=kind,
        url=url,
        machine=machine,
        last_sync=_time(store, SYNCED_AT),
        last_pull=_time(store, PULLED_AT),
        queued=queued,
        refused=None
        if refusal is None
        else Refusal(
            at=to_iso(int(refusal.get("at") or 0)) or "",
            reason=str(refusal.get("reason") or ""),
            read_only=bool(refusal.get("read_only")),
        ),
    )


def _time(store: Store, key: str) -> str | None:
    value = store.state.get(key)
    return to_iso(int(value)) if value and value.isdigit() else None
