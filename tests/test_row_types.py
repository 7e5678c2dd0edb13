"""The store's row types (``cmem_cli/store/row_types.py``) name exactly the columns of their tables.

The types exist for the type checker only, so nothing at run time would notice a migration that adds a
column the type lacks: this test reads the types from the source and the columns from a new store.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cmem_cli.store.repository import Store

ROW_TYPES = Path(__file__).resolve().parent.parent / "cmem_cli" / "store" / "row_types.py"

# type -> (table, columns its readers leave out)
WHOLE_ROWS = {
    "ObservationRow": ("observations", {"search_terms"}),  # rows.decoded drops it
    "SummaryRow": ("session_summaries", set()),
    "PromptRow": ("user_prompts", set()),
    "SessionRow": ("sessions", set()),
}


def declared_fields(name: str) -> set[str]:
    """The keys a TypedDict of row_types.py declares (its own, not inherited)."""
    for node in ast.walk(ast.parse(ROW_TYPES.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    raise AssertionError(f"no {name} in {ROW_TYPES}")


@pytest.fixture(scope="module")
def columns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    store = Store.open(tmp_path_factory.mktemp("rows") / "cmem.db")
    try:
        return {
            table: {row["name"] for row in store.db.query(f"PRAGMA table_info({table})")}
            for table, _ in WHOLE_ROWS.values()
        }
    finally:
        store.close()


@pytest.mark.parametrize("name", sorted(WHOLE_ROWS))
def test_a_whole_row_type_names_every_column_of_its_table(name: str, columns: dict[str, set[str]]) -> None:
    table, left_out = WHOLE_ROWS[name]
    assert declared_fields(name) == columns[table] - left_out
