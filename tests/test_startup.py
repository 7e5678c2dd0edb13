"""What a hot command loads: hooks and scripts start cmem constantly, so `cmem search`, `cmem add`, `cmem
context` and the hooks import the modules of what they do and no others (docs/architecture.md, "The hot
path"; docs/benchmarks.md has the whole-process timings).

Each command runs as `python -m cmem_cli ...` does (``runpy``, in a new process), and the modules it left
loaded are read when it exits: a module imported late, by name, counts too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent_fixtures import payload, tool_payload
from tests.conftest import fake_repo

# Run the real entry point, then write what was loaded (also when the command exits through SystemExit).
LOADED = (
    "import runpy, sys\n"
    "out, sys.argv = sys.argv[1], ['cmem', *sys.argv[2:]]\n"
    "try:\n"
    "    runpy.run_module('cmem_cli', run_name='__main__')\n"
    "finally:\n"
    "    open(out, 'w').write('\\n'.join(sorted(sys.modules)))\n"
)

# The store's repositories a command does not reach (each is made, and its module loaded, on first use).
STORE = "cmem_cli.store."
NOT_SEARCHED = {
    STORE + name
    for name in (
        "sessions", "prompts", "summaries", "links", "export_files", "state", "projects", "briefing", "window",
        "health", "team_outbox", "capture_log",
    )
}  # fmt: skip
NOT_WRITTEN = {
    STORE + name for name in ("keyword", "listing", "stats", "state", "summaries", "links", "health")
}
# What only the full CLI, a search, an index pass or a model needs.
HEAVY = {"typer", "click", "numpy", "llama_cpp", "watchdog", "cmem_index.indexer", "cmem_index.embedder"}
# The typed rows (the store's, a search's, the full records and the briefing's) exist for the type checker
# only: no command makes their classes (a search would pay ~1 ms) or unmarshals their bodies.
TYPES_ONLY = {
    "cmem_cli.store.row_types",
    "cmem_cli.core.hit_types",
    "cmem_cli.services.read.record_types",
    "cmem_cli.services.read.briefing_types",
}
SEARCH_ONLY = {
    "cmem_cli.core.query_fields",  # the Query's option table: `cmem search`'s parser and MCP's schema
    "cmem_cli.services.read.search_pipeline",
    "cmem_index.hybrid",
    "cmem_cli.core.bm25",
}


def loaded(tmp_path: Path, *args: str, stdin: str = "") -> set[str]:
    out = tmp_path / f"loaded-{len(list(tmp_path.glob('loaded-*')))}.txt"
    result = subprocess.run(
        [sys.executable, "-c", LOADED, str(out), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CMEM_FAST_EXIT": "off"},  # a read ends without teardown (and this finally)
    )
    assert result.returncode in (0, 10), result.stderr  # 10: a search that found nothing
    return set(out.read_text().split())


@pytest.fixture
def project(home: Path, tmp_path: Path) -> Path:
    """A git work tree with two memories of it, one written by a hook."""
    repo = fake_repo(tmp_path / "work")
    subprocess.run(
        [sys.executable, "-m", "cmem_cli", "add", "Retries back off exponentially", "--type", "decision"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    return repo


def test_a_keyword_search_loads_neither_the_writes_nor_the_repositories_it_does_not_read(tmp_path, project):
    modules = loaded(tmp_path, "search", "retry backoff", "--format", "plain")
    assert {"cmem_cli.store.keyword", "cmem_cli.services.read.search_pipeline"} <= modules  # it did search
    unexpected = (
        NOT_SEARCHED | HEAVY | TYPES_ONLY | {"cmem_cli.services.write.service", "cmem_cli.capture"}
    ) & modules
    assert unexpected == set()


def test_add_and_context_load_no_option_table_but_their_own(tmp_path, project):
    added = loaded(tmp_path, "add", "Pool size is 20", "--type", "decision", "--project", "billing-api")
    briefed = loaded(tmp_path, "context", "--project", "billing-api")
    assert "cmem_cli.store.observations" in added and "cmem_cli.services.read.briefing" in briefed
    assert (SEARCH_ONLY | HEAVY | TYPES_ONLY | {STORE + "keyword"}) & (added | briefed) == set()


@pytest.mark.parametrize(
    ("event", "data"),
    [
        (
            "PostToolUse",
            lambda cwd: tool_payload("s-1", cwd, "Bash", {"command": "pytest -q"}, {"stdout": "ok"}),
        ),
        ("Stop", lambda cwd: payload("Stop", "s-1", cwd, stop_hook_active=False)),
    ],
)
def test_a_hook_loads_no_search_and_no_cli(tmp_path, project, event, data):
    modules = loaded(tmp_path, "hook", event, stdin=json.dumps(data(project)))
    assert "cmem_cli.capture.hooks.runner" in modules  # it ran the hook
    unexpected = (
        NOT_WRITTEN | SEARCH_ONLY | HEAVY | TYPES_ONLY | {"cmem_cli.cli.options", "cmem_cli.cli.fast"}
    ) & modules
    assert unexpected == set()


def imported_before_exit(tmp_path: Path, cwd: Path, *args: str, stdin: str) -> set[str]:
    """The modules the process the agent waits for imported (``-X importtime`` writes each to stderr as it
    loads; a detached child's stderr goes nowhere)."""
    env = {**os.environ, "CMEM_HOOK_DETACH": "on"}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cmem_cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}


WRITE_PATH = {
    "apsw",
    "cmem_cli.api",
    "cmem_cli.services.write.service",
    "cmem_cli.store.repository",
    "cmem_export",
}


@pytest.mark.parametrize(
    ("event", "data"),
    [
        (
            "PostToolUse",
            lambda cwd: tool_payload("s-1", cwd, "Bash", {"command": "pytest -q"}, {"stdout": "ok"}),
        ),
        ("UserPromptSubmit", lambda cwd: payload("UserPromptSubmit", "s-1", cwd, prompt="Why retries?")),
        ("Stop", lambda cwd: payload("Stop", "s-1", cwd, stop_hook_active=False)),
    ],
)
def test_a_hook_with_nothing_to_answer_returns_before_loading_the_store(tmp_path, project, event, data):
    """A prompt has something to answer while prompt recall is on (docs/recall.md): here it is off."""
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[recall]\nprompt = false\n")
    modules = imported_before_exit(tmp_path, project, "hook", event, stdin=json.dumps(data(project)))
    assert "cmem_cli.capture.hooks.runner" in modules  # it ran the hook
    assert (WRITE_PATH | SEARCH_ONLY | HEAVY | {"cmem_cli.cli.options"}) & modules == set()


def test_a_prompt_hook_that_may_recall_loads_no_model_index_or_cli(tmp_path, project):
    """Prompt recall answers from the store's keyword index alone: no model, no vector index, no typer."""
    data = payload("UserPromptSubmit", "s-1", project, prompt="Why retries?")
    modules = imported_before_exit(tmp_path, project, "hook", "UserPromptSubmit", stdin=json.dumps(data))
    assert "cmem_cli.capture.hooks.recall" in modules  # recall was asked
    assert (HEAVY | {"cmem_cli.cli.options", "cmem_index.hybrid"}) & modules == set()


@pytest.mark.parametrize(
    ("event", "data"),
    [
        (
            "UserPromptSubmit",
            lambda cwd: payload("UserPromptSubmit", "s-2", cwd, prompt="Why do retries back off?"),
        ),
        ("SessionStart", lambda cwd: payload("SessionStart", "s-2", cwd, source="startup")),
        (
            "PreToolUse",
            lambda cwd: tool_payload(
                "s-2",
                cwd,
                "Edit",
                {"file_path": f"{cwd}/retry.py", "old_string": "a", "new_string": "b"},
                event="PreToolUse",
            ),
        ),
    ],
)
def test_a_hook_that_answers_from_the_store_opens_no_write_path_before_it_exits(
    tmp_path, project, event, data
):
    """Recall's memories and the briefing are read from the store alone; the detached child records."""
    modules = imported_before_exit(tmp_path, project, "hook", event, stdin=json.dumps(data(project)))
    assert "cmem_cli.store.repository" in modules  # it read the store
    assert {"cmem_cli.services.write.service", "cmem_export"} & modules == set()


def test_a_session_start_with_a_kept_briefing_loads_neither_sqlite_nor_the_store(tmp_path, project, home):
    """The briefing the last turn's detached child kept is read as a file (core/briefing_cache.py)."""
    import time

    from cmem_cli.core import briefing_cache

    stop = payload("Stop", "s-1", project, stop_hook_active=False)
    imported_before_exit(tmp_path, project, "hook", "Stop", stdin=json.dumps(stop))
    kept = home.joinpath(*briefing_cache.FOLDER)
    deadline = time.monotonic() + 20
    while not any(kept.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    start = payload("SessionStart", "s-2", project, source="startup")
    modules = imported_before_exit(tmp_path, project, "hook", "SessionStart", stdin=json.dumps(start))
    assert "cmem_cli.core.briefing_cache" in modules  # it read the kept briefing
    assert (WRITE_PATH | {"cmem_cli.core.db", "cmem_cli.services.read.briefing"}) & modules == set()


# What a hook that injects (prompt or file recall, answered before the event is recorded) must not load:
# it reads the store on its own (services/read/recall_read.py), not through the API.
NOT_FOR_RECALL = {
    "cmem_cli.api",
    "cmem_cli.core.query",
    "cmem_cli.store.capture_log",
    "cmem_cli.services.truth.supersession",
    "cmem_cli.services.read.search_pipeline",
    "cmem_cli.store.keyword",  # prompt recall's keyword evidence is store.recall's own read
    "cmem_cli.store.filters",
}


@pytest.mark.parametrize(
    ("event", "data"),
    [
        (
            "UserPromptSubmit",
            lambda cwd: payload("UserPromptSubmit", "s-3", cwd, prompt="Why do retries back off?"),
        ),
        (
            "PostToolUse",
            lambda cwd: tool_payload("s-3", cwd, "Read", {"file_path": f"{cwd}/README.md"}, {"type": "text"}),
        ),
    ],
)
def test_a_hook_that_recalls_loads_neither_the_api_nor_the_write_path(tmp_path, project, event, data):
    modules = imported_before_exit(tmp_path, project, "hook", event, stdin=json.dumps(data(project)))
    assert {"cmem_cli.services.read.recall_read", "cmem_cli.store.recall"} <= modules  # it recalled
    unexpected = (NOT_FOR_RECALL | WRITE_PATH - {"apsw", "cmem_cli.store.repository"} | HEAVY) & modules
    assert unexpected == set()
