"""The store's filters: the one filter set (:mod:`cmem_cli.core.filters`) in ``cmem.db``'s SQL dialect."""

from __future__ import annotations

from typing import Any

from cmem_cli.core.filters import FilterFields, SqlDialect


class Filters(FilterFields):
    """Filters shared by search, listing and the hybrid path, as SQL over the store's tables."""

    def sql(self, alias: str = "o", *, observations: bool = True) -> tuple[str, list[Any]]:
        dialect = StoreSql(alias)
        return (" AND ".join(self.clauses(dialect, observations=observations)) or "1"), dialect.params


class StoreSql(SqlDialect):
    """The filters over ``cmem.db``: concepts, files and the branch in their own tables, by observation."""

    def concept(self, value: str) -> str:
        return (
            "EXISTS (SELECT 1 FROM observation_concepts c "
            f"WHERE c.observation_id = {self.alias}.id AND c.concept = {self.bind(value)} COLLATE NOCASE)"
        )

    def file(self, path: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM observation_files f WHERE f.observation_id = {self.alias}.id "
            f"AND {self.path_match('f.path', path)})"
        )

    def branch(self, name: str) -> str:
        return (
            "EXISTS (SELECT 1 FROM observation_anchors a "
            f"WHERE a.observation_id = {self.alias}.id AND a.branch = {self.bind(name)})"
        )
