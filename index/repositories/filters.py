"""The index's filters: the one filter set (:mod:`cmem_cli.core.filters`) in ``index.db``'s SQL dialect, plus
the collections a search is limited to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cmem_cli.core.filters import FILTER_FIELDS, Filter, FilterFields, SqlDialect


class DocFilters(FilterFields):
    """Metadata filters (the store's ``Filters`` fields, plus collections) as SQL over the index's documents;
    documents lacking a filtered field are excluded, except for the project: a project scopes memories, and a
    collection's documents (no project) belong to none, so a search scoped to the repository it runs in
    still finds the user's notes (`--collection memories` leaves them out). Concepts match
    case-insensitively."""

    def __init__(self, *args: Any, collections: list[str] | None = None, **fields: Any):
        super().__init__(*args, **fields)
        self.collections = list(collections or [])

    @classmethod
    def coerce(cls, value: Any, collections: Sequence[str] | None = None) -> DocFilters:
        """From None, a DocFilters, a mapping, or any object with the store ``Filters`` attributes."""
        if value is None:
            result = cls()
        elif isinstance(value, cls):
            result = cls(**value.fields(), collections=value.collections)
        else:
            get = (
                value.get
                if isinstance(value, dict)
                else lambda name, default=None: getattr(value, name, default)
            )
            given = {name: get(name) for name in FILTER_FIELDS}
            for name in ("types", "concepts", "files"):
                given[name] = _as_list(given[name])
            given["types"] = given["types"] or _as_list(get("type"))
            result = cls(**given, collections=_as_list(get("collections")))
        if collections:
            result.collections = list(collections)
        return result

    def sql(self, alias: str = "d") -> tuple[str, list[Any]]:
        dialect = _IndexSql(alias)
        clauses = self.clauses(dialect)
        if self.collections:
            clauses.append(f"{alias}.collection IN ({','.join(dialect.bind(c) for c in self.collections)})")
        return (" AND ".join(clauses) or "1"), dialect.params

    @property
    def active(self) -> bool:
        return self.sql()[0] != "1"

    def without_machine(self) -> DocFilters:
        """These filters less the machine: for an index built before it kept machines (the search then
        checks the machine on the store's rows)."""
        return DocFilters(**{**self.fields(), "machine": None}, collections=self.collections)


class _IndexSql(SqlDialect):
    """The filters over the index's ``documents``: a document without a project (a collection's) passes a
    project filter; concepts are stored lower-cased; the machine is the one the memory's file states (a
    collection's documents have none). No branch: a file states its anchor's only when the repository has
    a name, so the search checks the branch on the store's rows."""

    def lacks(self, f: Filter) -> bool:
        return not f.indexed

    def project(self, names: tuple[str, ...]) -> str:
        return f"({super().project(names)} OR {self.alias}.project IS NULL)"

    def concept(self, value: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM concepts k WHERE k.doc_id = {self.alias}.id "
            f"AND k.concept = {self.bind(value.strip().lower())})"
        )

    def file(self, path: str) -> str:
        return f"EXISTS (SELECT 1 FROM doc_files f WHERE f.doc_id = {self.alias}.id AND {self.path_match('f.path', path)})"

    def branch(self, name: str) -> str:
        return ""


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]
