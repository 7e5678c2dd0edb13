"""What the store's repositories share about rows: column lists, new ids, decoding an observation row."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.batches import batches
from cmem_cli.core.db import Database

if TYPE_CHECKING:
    from cmem_cli.store.repository import Store
    from cmem_cli.store.row_types import ObservationRow

LIST_COLUMNS = ("facts", "concepts", "files_read", "files_modified", "tools_used")
OBS_COLUMNS = (
    "uid", "type", "title", "subtitle", "narrative", "facts", "concepts", "files_read", "files_modified",
    "tools_used", "project", "session", "agent", "prompt_number", "key", "confidence", "created_at",
    "updated_at", "tokens", "search_terms", "invalidated",
)  # fmt: skip
AUTHORSHIP = ("machine", "author")  # who wrote it: kept from its first write, never changed by an edit
EDITOR = ("edited_on", "edited_by")  # who changed it last (machine, person): None until someone edits it
INSERT_COLUMNS = (*OBS_COLUMNS, "path", *AUTHORSHIP, *EDITOR)
MAX_ROWID = 2**63 - 1

# A new row's number: past the largest held and the largest retired (schema.V10_RETIRED_IDS), so that
# no number is given to two memories, not even after the newest one was forgotten.
OBSERVATION, SUMMARY = "observation", "summary"
NEXT_ID = {
    kind: f"(SELECT max(coalesce((SELECT max(id) FROM {table}), 0), "
    f"coalesce((SELECT max(id) FROM retired_ids WHERE kind = '{kind}'), 0)) + 1)"
    for kind, table in ((OBSERVATION, "observations"), (SUMMARY, "session_summaries"))
}


def decode(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else decoded(row)


def decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A row read from the observations table, its list columns decoded."""
    for column in LIST_COLUMNS:
        if column in row and isinstance(row[column], str):
            row[column] = json.loads(row[column])
    row.pop("search_terms", None)
    return row


def observation(row: dict[str, Any] | None) -> ObservationRow | None:
    """A whole row of the observations table (``SELECT *``), decoded: the store's observation row."""
    return None if row is None else cast("ObservationRow", decoded(row))


def id_free(db: Database, kind: str, wanted: int) -> bool:
    """Whether a file's number may be given back to its record: neither held nor retired."""
    table = "observations" if kind == OBSERVATION else "session_summaries"
    return (
        db.query_one(
            f"SELECT 1 FROM {table} WHERE id = :id UNION ALL "
            "SELECT 1 FROM retired_ids WHERE kind = :kind AND id = :id",
            {"id": wanted, "kind": kind},
        )
        is None
    )


def observations_by_id(db: Database, ids: list[int]) -> dict[int, ObservationRow]:
    """The stored observations among ``ids``, decoded, by id (ids that do not exist are left out)."""
    found: dict[int, ObservationRow] = {}
    for chunk, marks in batches(ids):
        for row in db.query(f"SELECT * FROM observations WHERE id IN ({marks})", chunk):
            found[row["id"]] = cast("ObservationRow", decoded(row))
    return found


class Repository:
    """One concern's SQL over the store's connection; reached as an attribute of the store
    (``store.observations``, ``store.sessions``...), which hands it the connection and itself (for
    authorship and for another concern's rows)."""

    def __init__(self, store: Store):
        self._store = store
        self.db: Database = store.db
