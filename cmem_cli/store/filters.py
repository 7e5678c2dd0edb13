"""The store's filters: the shared filter fields (:mod:`cmem_cli.core.filters`) as SQL over ``cmem.db``'s tables."""

from __future__ import annotations

from typing import Any

from cmem_cli.core.filters import FilterFields, file_path_match


class Filters(FilterFields):
    """Filters shared by search, listing and the hybrid path, as SQL over the store's tables."""

    branch: str | None = None  # only observations recorded on this git branch (the store's own field)
    machine: str | None = None  # only what this machine wrote (the store's own field: the index has none)

    @property
    def observation_only(self) -> bool:
        """Type, concept, file and branch filters only make sense for observations."""
        return bool(self.types or self.concepts or self.files or self.branch)

    def sql(self, alias: str = "o", *, observations: bool = True) -> tuple[str, list[Any]]:
        clauses, params = self.scalar_clauses(alias)
        if self.machine is not None:
            clauses.append(f"{alias}.machine = ?")
            params.append(self.machine)
        if observations:
            if self.types:
                clauses.append(f"{alias}.type IN ({', '.join('?' * len(self.types))})")
                params.extend(self.types)
            for concept in self.concepts:
                clauses.append(
                    "EXISTS (SELECT 1 FROM observation_concepts c "
                    f"WHERE c.observation_id = {alias}.id AND c.concept = ? COLLATE NOCASE)"
                )
                params.append(concept)
            for path in self.files:
                condition, values = file_path_match("f.path", path)
                clauses.append(
                    f"EXISTS (SELECT 1 FROM observation_files f WHERE f.observation_id = {alias}.id AND {condition})"
                )
                params.extend(values)
            if self.branch is not None:
                clauses.append(
                    "EXISTS (SELECT 1 FROM observation_anchors a "
                    f"WHERE a.observation_id = {alias}.id AND a.branch = ?)"
                )
                params.append(self.branch)
        return (" AND ".join(clauses) or "1"), params
