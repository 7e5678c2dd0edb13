"""This home's memories as the server's rows: what a push sends, and what a seeded base holds.

One rendering (:func:`cmem_cli.team.records.observation_out`: links by uid, the code anchor as the
memory's export file states it, the machine that wrote it) for both, so a base seeded from this home's row
compares with the server's row exactly as a pushed row does.
"""

from __future__ import annotations

from typing import Any

from cmem_cli.services.truth.anchor_files import exported
from cmem_cli.services.write.service import WriteService
from cmem_cli.team.records import observation_out, summary_out


def observations(memory: WriteService, uids: list[str], machine: str) -> dict[str, dict[str, Any]]:
    """uid -> the server's row for each of ``uids`` this home holds (``machine``: this home's name, for
    rows that do not record one)."""
    store = memory.store
    rows = store.observations.by_uids(uids)
    anchors = store.anchors.for_ids([row["id"] for row in rows.values()])
    scrub = memory.scrub_text
    return {
        uid: observation_out(
            row, store.links.outgoing(row["id"]), machine, exported(anchors.get(row["id"]), scrub)
        )
        for uid, row in rows.items()
    }


def summaries(memory: WriteService, uids: list[str], machine: str) -> dict[str, dict[str, Any]]:
    """uid -> the server's row for each of ``uids`` this home holds."""
    found = {}
    for uid in uids:
        row = memory.store.summaries.by_uid(uid)
        if row is not None:
            found[uid] = summary_out(row, machine)
    return found
