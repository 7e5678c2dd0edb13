"""The memories whose code changed under them, as search rows (`cmem verify --stale`, ``Memory.stale``).

Its own module: it stands on the anchors (which the search stages use) and on the search rows, so neither
of those needs to import the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmem_cli.services.read.search_pipeline import observation_row
from cmem_cli.services.truth.anchor_check import check_anchors
from cmem_cli.store.repository import Store

if TYPE_CHECKING:
    from cmem_cli.core.hit_types import ObservationHit


def stale_rows(store: Store, *, project: str | None = None, cwd: str | None = None) -> list[ObservationHit]:
    """Every observation (of ``project``) whose cited files changed or vanished, as search rows, oldest first."""
    states = check_anchors(store, store.anchors.with_files(project), cwd=cwd)
    stale = {obs_id: state for obs_id, state in states.items() if state.stale}
    if not stale:
        return []
    rows: list[ObservationHit] = []
    for row in store.observations.oldest_first(stale):
        out = observation_row(row)
        out["stale"] = stale[row["id"]].stale
        out["drifted"] = stale[row["id"]].drifted
        out["behind"] = stale[row["id"]].behind
        out["branch"] = stale[row["id"]].anchor.branch
        rows.append(out)
    return rows
