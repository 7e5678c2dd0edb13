"""The layer rules of docs/architecture.md, checked by import-linter's contracts in pyproject.toml."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command as c; c()",
]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [*LINT_IMPORTS, "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _copy_tree(dest: Path) -> Path:
    """The packages under their import names (the wheel maps export/ and index/ to cmem_export/cmem_index)."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "cmem_cli", dest / "cmem_cli", ignore=ignore)
    shutil.copytree(REPO / "index", dest / "cmem_index", ignore=ignore)
    shutil.copytree(REPO / "export", dest / "cmem_export", ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_the_layer_contracts_hold(tmp_path: Path) -> None:
    result = _lint(_copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "8 kept, 0 broken" in result.stdout


def test_a_store_that_imports_the_index_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    repository = root / "cmem_cli" / "store" / "repository.py"
    repository.write_text(repository.read_text() + "\nimport cmem_index.hybrid  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "cmem_cli.store.repository -> cmem_index.hybrid" in result.stdout


def test_the_index_may_not_import_the_services(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    chunker = root / "cmem_index" / "chunker.py"
    chunker.write_text(chunker.read_text() + "\nimport cmem_cli.services.write.service  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "The index and the export import only cmem's kernel BROKEN" in result.stdout


def test_a_cli_command_that_imports_the_store_breaks_the_contracts(tmp_path: Path) -> None:
    """The CLI reads and writes through cmem_cli.api; reaching for the store directly is refused."""
    root = _copy_tree(tmp_path)
    body = root / "cmem_cli" / "cli" / "read_bodies.py"
    body.write_text(body.read_text() + "\nimport cmem_cli.store.repository  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "The CLI, capture, MCP, view and sync front ends never import the store BROKEN" in result.stdout
    assert "cmem_cli.cli.read_bodies -> cmem_cli.store.repository" in result.stdout


def test_a_hook_that_imports_the_store_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    runner = root / "cmem_cli" / "capture" / "hooks" / "runner.py"
    runner.write_text(runner.read_text() + "\nfrom cmem_cli.store import records  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "cmem_cli.capture.hooks.runner -> cmem_cli.store" in result.stdout


def test_a_cli_command_that_calls_a_service_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    body = root / "cmem_cli" / "cli" / "write_bodies.py"
    body.write_text(
        body.read_text() + "\nfrom cmem_cli.services.write.service import WriteService as _Service  # noqa\n"
    )
    result = _lint(root)
    assert result.returncode == 1
    assert "CLI, capture, MCP and view reach the services only through the API BROKEN" in result.stdout
    assert "cmem_cli.cli.write_bodies -> cmem_cli.services.write.service" in result.stdout


def test_a_cli_command_that_drives_a_remote_itself_breaks_the_contracts(tmp_path: Path) -> None:
    """`cmem sync` reaches git and the team database through the API's one face (``memory.remote``):
    importing git sync or the team remote from a command is refused."""
    root = _copy_tree(tmp_path)
    body = root / "cmem_cli" / "cli" / "commands" / "sync.py"
    body.write_text(body.read_text() + "\nfrom cmem_cli.team import teamsync  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "The CLI reaches a remote only through the API (memory.remote)" in result.stdout
    assert "cmem_cli.cli.commands.sync -> cmem_cli.team.teamsync" in result.stdout


def test_the_cli_never_takes_the_write_service_from_the_api() -> None:
    """``Memory.service`` is the API's own: a command that took it would call the services past the API
    (an import contract cannot see an attribute)."""
    found = []
    for path in sorted((REPO / "cmem_cli" / "cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "service":
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == []


def test_a_cli_command_that_opens_the_index_breaks_the_contracts(tmp_path: Path) -> None:
    """The CLI builds, drops and lists the index through the API's face (``memory.index``): opening the
    index's database (and taking its lock, deleting its documents) from a command is refused."""
    root = _copy_tree(tmp_path)
    body = root / "cmem_cli" / "cli" / "commands" / "index_cmds.py"
    body.write_text(body.read_text() + "\nfrom cmem_index.store import IndexStore  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "Front ends reach the index only through the API (memory.index) BROKEN" in result.stdout
    assert "cmem_cli.cli.commands.index_cmds -> cmem_index.store" in result.stdout


def test_a_hook_that_calls_a_service_breaks_the_contracts(tmp_path: Path) -> None:
    """Capture (hooks, transcript import) writes through cmem_cli.api, never the write service itself."""
    root = _copy_tree(tmp_path)
    capture = root / "cmem_cli" / "capture" / "hooks" / "capture.py"
    capture.write_text(
        capture.read_text()
        + "\nfrom cmem_cli.services.write.service import WriteService as _Service  # noqa\n"
    )
    result = _lint(root)
    assert result.returncode == 1
    assert "CLI, capture, MCP and view reach the services only through the API BROKEN" in result.stdout
    assert "cmem_cli.capture.hooks.capture -> cmem_cli.services.write.service" in result.stdout


# -- SQL lives in the stores ---------------------------------------------------------------------------------
# The store (cmem_cli/store/) owns the SQL of cmem.db, the kernel (core/db.py, core/migrations.py) the
# connection and the migration bookkeeping, and the full-text statistics (core/bm25.py) that the store and
# the index both read; the index's handle (index/store.py: the schema, opening, transactions) and its
# repositories (index/repositories/) own index.db's; the team remote owns the SQL of its PostgreSQL server
# (these modules of cmem_cli/team/ talk to it, never to SQLite). Everything else asks a store by name.
SQL_OWNERS = ("store/", "core/db.py", "core/migrations.py", "core/bm25.py")
INDEX_SQL_OWNERS = ("store.py", "repositories/")
POSTGRES_MODULES = (  # the team repository, and the modules whose SQL has not moved there yet
    "team/repository.py",
    "team/push.py",
    "team/source.py",
    "team/server.py",
)
QUERY_METHODS = {"execute", "executemany", "query", "query_one", "scalar", "rows", "cursor"}
CONNECTION_ATTRIBUTES = {"db", "conn", "database"}
SQL_TEXT = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|TRIGGER)|PRAGMA\s+\w+)\b",
    re.S,
)


def sql_outside_the_store(root: Path, owners: tuple[str, ...] = SQL_OWNERS) -> list[str]:
    """Every place under ``root`` (a cmem_cli, index or export tree) that runs SQL or holds a connection but
    is none of ``owners`` (paths from ``root``)."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(owners):
            continue
        postgres = relative in POSTGRES_MODULES
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{relative}:{getattr(node, 'lineno', 0)}"
            if postgres:
                # its connection is PostgreSQL's; this home's SQLite is reached only through the store
                if isinstance(node, ast.Attribute) and node.attr in {"db", "database"}:
                    found.append(f"{where} .{node.attr}")
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in QUERY_METHODS:
                    found.append(f"{where} .{node.func.attr}()")
            elif isinstance(node, ast.Attribute) and node.attr in CONNECTION_ATTRIBUTES:
                found.append(f"{where} .{node.attr}")
            elif (
                isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_TEXT.search(node.value)
            ):
                found.append(f"{where} SQL text {node.value[:40]!r}")
    return found


def test_sql_runs_only_in_the_store() -> None:
    assert sql_outside_the_store(REPO / "cmem_cli") == []


def test_the_index_runs_its_sql_only_in_its_handle_and_repositories() -> None:
    """The retrievers, the indexer, the watcher and the search ask ``store.retrieval``, ``store.documents``...
    by name; the export has no database at all."""
    assert sql_outside_the_store(REPO / "index", INDEX_SQL_OWNERS) == []
    assert sql_outside_the_store(REPO / "export", ()) == []


def test_a_retriever_that_runs_its_own_sql_is_found(tmp_path: Path) -> None:
    (tmp_path / "repositories").mkdir()
    (tmp_path / "retrieve.py").write_text(
        "def chunk_texts(store, ids):\n"
        "    return store.conn.execute('SELECT text FROM chunks WHERE id = ?', ids).fetchall()\n"
    )
    (tmp_path / "repositories" / "retrieval.py").write_text(
        "def texts(self, ids):\n    return self.conn.execute('SELECT text FROM chunks WHERE id = ?', ids)\n"
    )
    assert sorted(sql_outside_the_store(tmp_path, INDEX_SQL_OWNERS)) == [
        "retrieve.py:2 .conn",
        "retrieve.py:2 .execute()",
        "retrieve.py:2 SQL text 'SELECT text FROM chunks WHERE id = ?'",
    ]


def test_a_service_that_runs_its_own_sql_is_found(tmp_path: Path) -> None:
    services = tmp_path / "services"
    services.mkdir()
    (services / "recap.py").write_text(
        "def last(store):\n"
        "    return store.db.query('SELECT * FROM sessions ORDER BY last_activity_at DESC LIMIT 1')\n"
    )
    (services / "fine.py").write_text("def last(store):\n    return store.latest_session()\n")
    assert sorted(sql_outside_the_store(tmp_path)) == [
        "services/recap.py:2 .db",
        "services/recap.py:2 .query()",
        "services/recap.py:2 SQL text 'SELECT * FROM sessions ORDER BY last_act'",
    ]


def test_a_service_or_team_module_that_opens_sqlite_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    doctor = root / "cmem_cli" / "services" / "upkeep" / "doctor.py"
    doctor.write_text(doctor.read_text() + "\nimport apsw  # noqa\n")
    pull = root / "cmem_cli" / "team" / "pull.py"
    pull.write_text(pull.read_text() + "\nfrom cmem_cli.store.repository import Store as _Store  # noqa\n")
    result = _lint(root)
    assert result.returncode == 1
    assert "Only the store and the index open SQLite" in result.stdout
    assert "cmem_cli.services.upkeep.doctor -> apsw" in result.stdout
    assert "The team remote reaches this home's store only through its outbox and the write" in result.stdout
    assert "cmem_cli.team.pull -> cmem_cli.store.repository" in result.stdout


# -- the write service's public surface ------------------------------------------------------------------
WRITE_SERVICE_NAMES = {"memory", "service", "store"}  # how sync, team sync and adoption name it and its store


def private_reaches(root: Path) -> list[str]:
    """Every ``memory._x`` / ``self.memory._x`` / ``service._x`` / ``store._x`` under ``root`` (a cmem_cli tree)
    outside the API and the write service's own module: callers use the write service's public surface."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(("api/", "store/")) or relative == "services/write/service.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                continue
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
            if name in WRITE_SERVICE_NAMES:
                found.append(f"{relative}:{node.lineno} {name}.{node.attr}")
    return found


def test_sync_team_and_adoption_use_the_write_services_public_surface(tmp_path: Path) -> None:
    assert private_reaches(REPO / "cmem_cli") == []
    (tmp_path / "sync").mkdir()
    (tmp_path / "sync" / "gitsync.py").write_text(
        "def run(self):\n    with self.memory._write(fsync=False) as files:\n        return files\n"
    )
    assert private_reaches(tmp_path) == ["sync/gitsync.py:2 memory._write"]


# -- one way in: the store's records are written by the write service and reconcile --------------------------
# A memory, summary, prompt, session or link reaches the store through the write service (a local write:
# its record and session services, services/write/records.py and services/write/sessions.py) or the way in (services/inbound/reconcile/: what git, the team database or a hand edit brings;
# its upsert, key rule and inbound writer). The supersedes rule (services/truth/supersession.py) adds and removes
# the links both of them ask it to.
RECORD_WRITES = {  # repository -> its methods that write records
    "observations": {"insert", "insert_new", "update", "delete"},  # (a file's name is export upkeep's)
    "summaries": {"insert", "update", "delete"},
    "prompts": {"insert"},
    "sessions": {"put"},
    "links": {"add", "remove", "add_pending", "clear_pending_from", "take_pending_to"},
}
RECORD_WRITERS = (
    "store/",
    "services/write/records.py",
    "services/write/sessions.py",
    "services/inbound/reconcile/",
    "services/truth/supersession.py",
)


def record_writes_outside_the_way_in(root: Path) -> list[str]:
    """Every call under ``root`` (a cmem_cli tree) of a store repository's record write
    (``….observations.insert(…)``), outside the write service, reconcile and the store itself."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(RECORD_WRITERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            repository = owner.attr if isinstance(owner, ast.Attribute) else None
            if repository in RECORD_WRITES and node.func.attr in RECORD_WRITES[repository]:
                found.append(f"{relative}:{node.lineno} .{repository}.{node.func.attr}()")
    return found


def test_records_are_written_only_by_the_write_service_and_reconcile(tmp_path: Path) -> None:
    assert record_writes_outside_the_way_in(REPO / "cmem_cli") == []
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "apply.py").write_text(
        "def take(store, record):\n    return store.observations.insert(record)\n"
    )
    assert record_writes_outside_the_way_in(tmp_path) == ["team/apply.py:2 .observations.insert()"]


# -- one link pass: what arrives (git, the team database, a hand edit) has its links settled in one place --
LINK_WRITES = {"add", "remove", "add_pending", "clear_pending_from", "take_pending_to"}
LINK_PASS = "services/inbound/reconcile/writer.py"
LINK_RULES = (
    "store/",
    "services/write/records.py",
    "services/truth/supersession.py",
)  # local writes; the supersedes rule


def link_settlers(root: Path) -> list[str]:
    """Every module under ``root`` (a cmem_cli tree) that writes links (``….links.add(…)``, …) or adds a
    link that arrived (``add_arrived_link``), besides the local write service, the supersedes rule and the
    store: each ``path:line``. The inbound writer should be the only one."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(LINK_RULES):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            owner = func.value if isinstance(func, ast.Attribute) else None
            link_write = (
                isinstance(func, ast.Attribute)
                and func.attr in LINK_WRITES
                and getattr(owner, "attr", None) == "links"
            )
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if link_write or name in ("add_arrived_link", "settle_links"):
                found.append(f"{relative}:{node.lineno}")
    return found


def test_the_links_of_what_comes_in_are_settled_by_the_inbound_writer_alone(tmp_path: Path) -> None:
    """Adoption, git arrivals and team pulls hand their links to ``reconcile.writer.Inbound``: adoption
    keeps no link pass of its own."""
    assert {m.split(":")[0] for m in link_settlers(REPO / "cmem_cli")} == {LINK_PASS}
    adopt = (REPO / "cmem_cli" / "services" / "inbound" / "adopt.py").read_text()
    assert "Inbound(" in adopt and "links.outgoing" not in adopt
    (tmp_path / "services").mkdir()
    (tmp_path / "services" / "hand_edits.py").write_text(
        "def settle(store, obs_id, target):\n    store.links.add(obs_id, target, 'related')\n"
        "    add_arrived_link(store, obs_id, target, 'supersedes')\n"
    )
    assert link_settlers(tmp_path) == ["services/hand_edits.py:2", "services/hand_edits.py:3"]


def import_cycles(package: str) -> list[list[str]]:
    """The import cycles among ``package``'s modules (imports inside functions count: a cycle is a cycle
    whenever it closes), each as the modules around it."""
    import grimp

    graph = grimp.build_graph(package.split(".")[0], cache_dir=None)
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    edges = {
        m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n in modules) for m in modules
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in edges[module]:
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in modules:
        if module not in state:
            visit(module)
    return cycles


def test_the_services_import_no_circle() -> None:
    """The write service no longer upkeeps the export (services/upkeep/export_upkeep.py does), so adoption and
    the write service stop importing each other; no other circle may take its place."""
    assert import_cycles("cmem_cli.services") == []


def test_one_function_makes_conflict_copies() -> None:
    """A conflict copy is made in one place, with one uid rule (derived: made twice, it is one memory):
    cmem_cli/services/inbound/reconcile/rule.py. Nothing else names a copy or derives a uid."""
    makers = []
    for path in sorted((REPO / "cmem_cli").rglob("*.py")):
        relative = path.relative_to(REPO / "cmem_cli").as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            named = isinstance(node, ast.Constant) and node.value == " (conflict copy)"
            derives = isinstance(node, ast.Call) and getattr(node.func, "id", "") == "derived_uid"
            defines = isinstance(node, ast.FunctionDef) and "copy" in node.name and "conflict" in node.name
            if named or derives or defines:
                makers.append(f"{relative}:{node.lineno}")  # type: ignore[attr-defined]
    assert [m.split(":")[0] for m in makers] == ["services/inbound/reconcile/rule.py"] * 3, makers
