"""Merge bases for a home that joined before they were kept.

A push merges a memory both homes changed against the server's row this home last pulled or pushed
(``team_revs.base``, outbox migration ``m005_base_rows``). A home that joined before that migration has
the revisions but no bases, so a disjoint edit (the title here, a fact there) made a conflict copy until
the memory travelled again. Outbox migration ``m006_seed_bases`` marks such a home, and :func:`seed`, at
its next `cmem sync` or `cmem watch` (before adopting hand edits or pushing), gives every memory that has
no local change queued the base it would have had: this home's row, which is then exactly what it last
pulled or pushed. A memory with a queued change gets none (its row holds the change, which taken as the
base would look unchanged here and lose to the other machine's edit); it has one once it travels.

Seeded here, not in the migration: a base is the server's row (links by uid, the code anchor as the export
file states it), which the team remote renders (:mod:`cmem_cli.team.outgoing`) and the store cannot.
"""

from __future__ import annotations

from cmem_cli.services.write.service import WriteService
from cmem_cli.store import team_outbox as outbox
from cmem_cli.team import outgoing


def seed(memory: WriteService, machine: str) -> int:
    """Seed the bases this home lacks, once (``machine``: this home's name); returns how many."""
    local = memory.store.team_outbox
    if outbox.SEED_BASES not in local.settings():
        return 0
    seeded = 0
    with memory.store.transaction():
        for kind, render in (
            (outbox.OBSERVATION, outgoing.observations),
            (outbox.SUMMARY, outgoing.summaries),
        ):
            revs = local.without_base(kind)
            for uid, row in render(memory, sorted(revs), machine).items():
                local.set_rev(kind, uid, revs[uid], row)
                seeded += 1
        local.put(**{outbox.SEED_BASES: None})
    return seeded
