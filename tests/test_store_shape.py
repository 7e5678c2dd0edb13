"""The store's shape (docs/architecture.md, "The store's repositories"): a small handle that owns one
repository per concern, each reached one way, as an attribute of the store (``store.observations.get(7)``).

Read from the code, so that the split stays: no class of ``cmem_cli/store/`` or ``cmem_cli/services/`` (its
subpackages included) grows past ``MAX_PUBLIC_METHODS``, and no function of the store is handed the store (the old second way in,
``supersession.newest_successors(store, ids)``, next to ``store.method()`` and ``store.anchors.method()``).
"""

from __future__ import annotations

import ast
from pathlib import Path

STORE = Path(__file__).resolve().parent.parent / "cmem_cli" / "store"
SERVICES = STORE.parent / "services"
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
            if first.arg == "store" or typed.strip("'\"") == "Store":
                found.append(node.name)
    return found


def _store_modules() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(STORE.glob("*.py"))}


def test_no_class_of_the_store_has_more_than_25_public_methods() -> None:
    counts = {
        f"{module}:{name}": len(methods)
        for module, source in _store_modules().items()
        for name, methods in public_methods(source).items()
    }
    assert {name: n for name, n in counts.items() if n > MAX_PUBLIC_METHODS} == {}
    # the handle and its repositories are what was counted (a rename would make the check vacuous)
    assert {
        "repository.py:Store",
        "observations.py:ObservationRepository",
        "sessions.py:SessionRepository",
    } <= set(counts)


def test_no_class_of_the_services_has_more_than_25_public_methods() -> None:
    """The write hub (31 public methods: records, links, sessions, prompts, summaries, privacy, the key rule and
    export rendering) is a handle over three services; no class of services/ grows into another hub."""
    counts = {
        f"{path.relative_to(SERVICES).as_posix()}:{name}": len(methods)
        for path in sorted(SERVICES.rglob("*.py"))
        for name, methods in public_methods(path.read_text()).items()
    }
    assert {name: n for name, n in counts.items() if n > MAX_PUBLIC_METHODS} == {}
    # the write service and its three services were counted, wherever their modules live
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
        for module, source in _store_modules().items()
        if (names := functions_handed_the_store(source))
    }
    assert handed == {}


def test_a_function_handed_the_store_is_found() -> None:
    source = (
        "def newest(store: Store, ids): ...\n"
        "def oldest(store, ids): ...\n"
        "def typed(db: 'Store'): ...\n"
        "def migrate(conn): ...\n"
    )
    assert functions_handed_the_store(source) == ["newest", "oldest", "typed"]


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
