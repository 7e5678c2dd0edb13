"""The stores' shape (docs/architecture.md, "Who runs SQL"): a small handle that owns one repository per
concern, each reached one way, as an attribute of the handle (``store.observations.get(7)`` for cmem.db,
``store.documents.location(docid)`` for index.db).

Read from the code, so that the split stays: no class of ``cmem_cli/store/``, ``index/`` or
``cmem_cli/services/`` grows past ``MAX_PUBLIC_METHODS``, and no function of a store is handed the store
(the old second way in, ``supersession.newest_successors(store, ids)``, next to ``store.method()`` and
``store.anchors.method()``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STORE = REPO / "cmem_cli" / "store"
INDEX = REPO / "index"
SERVICES = REPO / "cmem_cli" / "services"
MAX_PUBLIC_METHODS = 25


def public_methods(source: str) -> dict[str, list[str]]:
    """Class name -> the public methods (properties, class and static methods included) it defines."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            found[node.name] = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.name.startswith("_")
            ]
    return found


def functions_handed_the_store(source: str) -> list[str]:
    """Module-level functions whose first parameter is the store (``store`` or typed ``Store``)."""
    found: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.args.args:
            first = node.args.args[0]
            typed = ast.unparse(first.annotation) if first.annotation is not None else ""
            if first.arg == "store" or typed.strip("'\"") in {"Store", "IndexStore"}:
                found.append(node.name)
    return found


def _store_modules() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(STORE.glob("*.py"))}


def _modules(root: Path) -> dict[str, str]:
    """Every module under ``root`` (subpackages too) by its path from ``root``'s parent."""
    return {path.relative_to(root.parent).as_posix(): path.read_text() for path in sorted(root.rglob("*.py"))}


def _index_repository_modules() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((INDEX / "repositories").glob("*.py"))}


def test_no_class_of_the_stores_or_the_services_has_more_than_25_public_methods() -> None:
    counts = {
        f"{module}:{name}": len(methods)
        for root in (STORE, INDEX, SERVICES)
        for module, source in _modules(root).items()
        for name, methods in public_methods(source).items()
    }
    assert {name: n for name, n in counts.items() if n > MAX_PUBLIC_METHODS} == {}
    # the handles and their repositories are what was counted (a rename would make the check vacuous)
    assert {
        "store/repository.py:Store",
        "store/observations.py:ObservationRepository",
        "store/sessions.py:SessionRepository",
        "index/store.py:IndexStore",
        "index/repositories/documents.py:Documents",
        "index/repositories/retrieval.py:Retrieval",
    } <= set(counts)
    # the write service and its three services (the old 31-method hub) were counted, wherever they live
    assert {"WriteService", "RecordWrites", "SessionWrites", "Exporter"} <= {n.split(":")[1] for n in counts}


def test_the_inbound_writer_is_handed_the_export_service_not_the_write_hub() -> None:
    """What comes in (git, the team, hand edits) is written through the export service alone: the inbound
    writer's constructor names no write service, so it cannot reach sessions, records or privacy around it."""
    (writer,) = [p for p in SERVICES.rglob("writer.py") if p.parent.name == "reconcile"]
    inbound = next(
        node
        for node in ast.walk(ast.parse(writer.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "Inbound"
    )
    init = next(
        item for item in inbound.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"
    )
    annotations = [ast.unparse(arg.annotation) for arg in init.args.args[1:] if arg.annotation is not None]
    assert annotations[:2] == ["Exporter", "FileWriter"]
    assert "WriteService" not in writer.read_text()


def test_a_class_past_the_limit_is_counted() -> None:
    big = "class Big:\n" + "".join(f"    def verb_{i}(self): ...\n" for i in range(26))
    big += "    @property\n    def shown(self): ...\n    def _helper(self): ...\n"
    assert {name: len(methods) for name, methods in public_methods(big).items()} == {"Big": 27}


def test_every_concern_of_the_store_is_reached_one_way() -> None:
    handed = {
        module: names
        for module, source in {**_store_modules(), **_index_repository_modules()}.items()
        if (names := functions_handed_the_store(source))
    }
    assert handed == {}


def test_a_function_handed_the_store_is_found() -> None:
    source = (
        "def newest(store: Store, ids): ...\n"
        "def oldest(store, ids): ...\n"
        "def typed(db: 'Store'): ...\n"
        "def indexed(handle: IndexStore, uids): ...\n"
        "def migrate(conn): ...\n"
    )
    assert functions_handed_the_store(source) == ["newest", "oldest", "typed", "indexed"]


def test_the_store_reaches_each_repository_as_an_attribute(tmp_path: Path) -> None:
    """Every repository a store module defines is an attribute (or property) of the handle, and the handle
    gives a working repository for each: a write through one is read back through another."""
    from cmem_cli.store.records import normalize_observation
    from cmem_cli.store.repository import Store
    from cmem_cli.store.rows import Repository

    store = Store.open(tmp_path / "cmem.db")
    try:
        reached = {type(getattr(store, name)).__name__ for name in dir(store) if not name.startswith("_")}
        defined = {
            name
            for source in _store_modules().values()
            for node in ast.parse(source).body
            if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base) == "Repository" for base in node.bases)
            for name in [node.name]
        }
        assert defined - reached == set()
        assert all(
            isinstance(getattr(store, name), Repository) for name in ("observations", "links", "health")
        )
        with store.transaction():
            first = store.observations.insert(normalize_observation({"title": "Old target", "project": "p"}))
            second = store.observations.insert(normalize_observation({"title": "New target", "project": "p"}))
            store.links.add(second["id"], first["id"], "supersedes")
        assert store.supersession.newest_successors([first["id"]]) == {first["id"]: second["id"]}
        assert store.stats.counts()["counts"]["observations"] == 2
        assert [row["project"] for row in store.projects.activity()] == ["p"]
        assert store.health.integrity_problems() == []
    finally:
        store.close()


def test_the_index_reaches_each_repository_as_an_attribute(tmp_path: Path) -> None:
    """Every repository of ``index/repositories/`` is an attribute of the index's handle, made once and
    kept, and the handle gives a working repository for each: a document written through one is read
    back through the others."""
    from cmem_index.repositories import Repository
    from cmem_index.repositories.chunks import NewChunk
    from cmem_index.store import IndexStore

    store = IndexStore.open(tmp_path / "index.db")
    try:
        defined = {
            node.name
            for source in _index_repository_modules().values()
            for node in ast.parse(source).body
            if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base) == "Repository" for base in node.bases)
        }
        names = ("settings", "documents", "chunks", "vectors", "folders", "retrieval")
        assert defined == {type(getattr(store, name)).__name__ for name in names}
        assert all(isinstance(getattr(store, name), Repository) for name in names)
        assert store.documents is store.documents  # kept on the handle: its caches live as long as it
        assert not hasattr(store, "rows") and not hasattr(store, "scalar")
        with store.transaction():
            doc_id = store.documents.upsert(
                collection="notes",
                path="a/retries.md",
                docid="abc123",
                size=10,
                mtime_ns=1,
                content_hash="h",
                chunked_with="v1",
                title="Retries",
                context="Retries",
                keyword_context="Retries",
                fields={"kind": "observation", "uid": "u-1"},
                concepts=["backoff"],
                files=[],
                chunks=[NewChunk(seq=0, start_line=1, hash="c1", text="Retries back off exponentially")],
                now_ms=1,
            )
            store.folders.ensure()
            store.settings.set("chunker", "v1")
        assert store.documents.location("ABC123") == ("notes", "a/retries.md")
        assert store.retrieval.documents_of_uids(["u-1", "u-2"]) == {"u-1": doc_id}
        assert list(store.folders.documents_in("notes", "a/")) == ["a/retries.md"]
        assert store.chunks.count() == 1 and store.stats()["stale_documents"] == 0
        assert store.retrieval.chunk_line_and_text(1) == (1, "Retries back off exponentially")
        assert store.retrieval.document_fields([doc_id])[doc_id]["uid"] == "u-1"
        assert store.vectors.model() is None and store.settings.get("chunker") == "v1"
    finally:
        store.close()


def test_the_architecture_lists_each_repository_of_the_index() -> None:
    """docs/architecture.md's table of index.db's repositories names each module of index/repositories/."""
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("### index.db: a handle and its repositories", 1)[1].split("\n### ", 1)[0]
    listed = {
        module: attribute
        for attribute, module in re.findall(r"^\| `store\.(\w+)` \| `(\w+\.py)` \|", section, re.M)
    }
    modules = {name for name in _index_repository_modules() if name != "__init__.py"}
    assert set(listed) == modules
    assert all(module == f"{attribute}.py" for module, attribute in listed.items())
