"""Fresh without a daemon: what the store holds ranks by meaning as soon as it can be searched.

Through the real CLI (``python -m cmem_cli``) with all-MiniLM-L6-v2: a memory written a second before a
search ranks where it would after `cmem index`; the hooks start a detached index pass they never wait for;
kill -9 of that pass at any point converges; a pass stats the folders that changed, not every file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, private_env
from tests.runner import invoke

SEEDS = [
    ("Rate limiter uses a token bucket per client", "Each API key gets a bucket refilled every second."),
    ("Database connection pool exhausted", "Raised the pool size after Postgres refused clients."),
    ("Upgrade the CI pipeline to Node 22", "The build matrix now runs the newer runtime."),
    ("Dark theme colours for the settings page", "Contrast ratios checked for accessibility."),
    ("Session cookie marked SameSite=Lax", "Cross-site posts no longer carry the session."),
    ("Refresh tokens rotate on every use", "A reused refresh token revokes the whole family."),
    ("Stripe webhook retries", "Stripe retries a failed webhook for three days; handlers are idempotent."),
    ("Login form shows the lockout timer", "After five failures the form counts down the minutes left."),
    ("Cache invalidation on profile edits", "The profile page cache is dropped when a user saves."),
    ("Password reset emails expire after an hour", "The reset link carries a signed timestamp."),
    ("Access log rotation", "Logs rotate daily and are kept for thirty days."),
    ("Image resizer kept every decoded bitmap", "A cache that was never cleared grew without bound."),
]
DECISION = (
    "JWT expiry compared seconds to milliseconds",
    "The token expiration check compared exp (seconds) with Date.now() (milliseconds), so every token "
    "looked expired. Decided to convert exp to milliseconds before comparing.",
)
QUERIES = [
    "token expiration bug",
    "JWT expiry compared seconds to milliseconds",
    "why did every token look expired",
]


def runner(root: Path, env: dict[str, str]) -> Callable[..., Result]:
    def run(*args: str, extra: dict[str, str] | None = None, stdin: str | None = None) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "cmem_cli", *args],
            capture_output=True,
            text=True,
            env={**env, **(extra or {})},
            cwd=root,
            timeout=300,
            input=stdin,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run


def seeded(root: Path, env: dict[str, str]) -> Callable[..., Result]:
    """A home holding the seeds, indexed (made in this process: tests/runner.py); what the test runs after
    goes through real processes."""
    records = "".join(
        json.dumps({"title": t, "narrative": n, "type": "discovery", "project": "webapp"}) + "\n"
        for t, n in SEEDS
    )
    assert invoke("add", "--json", "-", input=records, env=env, replace_env=True, cwd=root).exit_code == 0
    indexed = invoke("index", env=env, replace_env=True, cwd=root)
    assert indexed.exit_code == 0, indexed.stderr
    return runner(root, env)


def ranking(run: Callable[..., Result], query: str) -> tuple[list[str], str]:
    result = run("search", query, "--json", "-n", "8")
    assert result.exit_code == 0, result.stderr
    return [row["title"] for row in result.json()], result.stderr


@pytest.mark.parametrize("query", QUERIES)
def test_a_memory_written_a_second_before_a_search_ranks_where_it_would_after_cmem_index(
    tmp_path: Path, minilm_gguf: Path, query: str
) -> None:
    run = seeded(tmp_path, private_env(tmp_path, embed_model=str(minilm_gguf)))
    assert run("add", "--title", DECISION[0], "--narrative", DECISION[1], "--type", "decision",
               "--project", "webapp").exit_code == 0  # fmt: skip
    time.sleep(1)
    before, said = ranking(run, query)
    assert "cmem: note: the index is behind the store: 1 of the memories found is not indexed yet" in said
    assert "1 embedded for this search" in said
    assert said.count("the index is behind") == 1
    assert run("index").exit_code == 0
    after, said_after = ranking(run, query)
    assert "the index is behind" not in said_after
    # where the new memory ranks, and what ranks above it (below it, the index's word statistics, which the
    # new memory joins, move rows that are close)
    place = after.index(DECISION[0])
    assert before[: place + 2] == after[: place + 2]
    assert place <= 1


@pytest.mark.parametrize("query", QUERIES)
def test_without_a_model_a_memory_written_a_second_before_ranks_where_it_would_after_cmem_index(
    tmp_path: Path, query: str
) -> None:
    # the same, where no embedding model is set up: the store's keyword list sees the new memory at once,
    # the index's does not until a pass, and must not hold that against it
    run = seeded(tmp_path, private_env(tmp_path))
    assert run("add", "--title", DECISION[0], "--narrative", DECISION[1], "--type", "decision",
               "--project", "webapp").exit_code == 0  # fmt: skip
    time.sleep(1)
    before, said = ranking(run, query)
    assert said.count("cmem: note: the index is behind the store: 1 of the memories found") == 1
    assert run("index").exit_code == 0
    after, said_after = ranking(run, query)
    assert "the index is behind" not in said_after
    assert DECISION[0] in after
    place = after.index(DECISION[0])
    assert before[: place + 1] == after[: place + 1]


def test_a_memory_indexed_by_keywords_only_is_embedded_by_the_search(
    tmp_path: Path, minilm_gguf: Path
) -> None:
    run = seeded(tmp_path, private_env(tmp_path, embed_model=str(minilm_gguf)))
    assert run("add", "--title", DECISION[0], "--narrative", DECISION[1], "--type", "decision",
               "--project", "webapp").exit_code == 0  # fmt: skip
    # a pass stopped after writing the new memory's chunks, before embedding them (as kill -9 leaves it)
    chunks_only(tmp_path, minilm_gguf)
    status = run("status", "--json").json()
    assert status["chunks_without_current_vectors"] == 1
    before, said = ranking(run, QUERIES[0])
    assert "1 embedded for this search" in said
    assert run("index").exit_code == 0
    after, _ = ranking(run, QUERIES[0])
    assert before == after


def chunks_only(root: Path, model: Path) -> None:
    """An update pass that writes chunks and stops before embedding them."""
    script = (
        "import sys\n"
        "from cmem_index.indexer import Indexer\n"
        "Indexer._embed_pending = lambda self, report: None\n"
        "from cmem_index.refresh import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = private_env(root, embed_model=str(model))
    subprocess.run(
        [sys.executable, "-c", script, "--home", str(root / "home")], env=env, check=True, timeout=300
    )


def test_memories_past_what_a_search_embeds_rank_by_their_words_not_below_every_vector(
    tmp_path: Path, minilm_gguf: Path
) -> None:
    run = seeded(tmp_path, private_env(tmp_path, embed_model=str(minilm_gguf)))
    from cmem_index.unindexed import EMBED_AT_SEARCH

    filler = "".join(
        json.dumps({"title": f"Expiry of token cache entry {i}", "narrative": "tokens expire and are dropped",
                    "project": "webapp"}) + "\n"
        for i in range(EMBED_AT_SEARCH + 8)
    )  # fmt: skip
    assert run("add", "--json", "-", stdin=filler).exit_code == 0
    titles, said = ranking(run, "expiry of token cache entry 3")
    assert f"{EMBED_AT_SEARCH} embedded for this search" in said
    assert "ranked without a vector" in said
    assert titles[0] == "Expiry of token cache entry 3"


def test_a_keyword_search_says_the_index_lags_once(tmp_path: Path) -> None:
    run = seeded(tmp_path, private_env(tmp_path))
    assert (
        run("add", "--title", DECISION[0], "--narrative", DECISION[1], "--project", "webapp").exit_code == 0
    )
    titles, said = ranking(run, "JWT expiry")
    assert titles[0] == DECISION[0]
    assert (
        said.count("cmem: note: the index is behind the store: 1 of the memories found is not indexed yet")
        == 1
    )
    assert run("index").exit_code == 0
    assert "behind" not in ranking(run, "JWT expiry")[1]


def test_search_envelope_gives_json_readers_the_notes_stderr_says(tmp_path: Path) -> None:
    run = seeded(tmp_path, private_env(tmp_path))
    assert (
        run("add", "--title", DECISION[0], "--narrative", DECISION[1], "--project", "webapp").exit_code == 0
    )
    rows = run("search", "JWT expiry", "--json")
    page = run("search", "JWT expiry", "--envelope")  # implies --json
    assert page.exit_code == 0, page.stderr
    assert isinstance(rows.json(), list)  # --json alone stays the bare list scripts read
    data = page.json()
    assert list(data) == ["mode", "notes", "total", "capped", "hits"]  # MCP search's keys, and the count
    assert data["hits"] == rows.json()
    assert data["hits"][0]["title"] == DECISION[0]
    assert data["mode"] == "keyword"
    assert data["total"] == len(rows.json())
    assert data["capped"] is False
    # the scope it used (run outside a git repository), then the lag: what stderr says, in that order
    assert data["notes"][0] == "scope: all projects (not inside a git repository); --project NAME for one"
    behind = [note for note in data["notes"] if note.startswith("the index is behind the store")]
    assert len(behind) == 1
    assert f"cmem: note: {data['notes'][0]}\n" in page.stderr
    assert f"cmem: note: {behind[0]}\n" in page.stderr
    assert run("index").exit_code == 0
    fresh = run("search", "JWT expiry", "--json", "--envelope", "--all-projects").json()
    assert fresh["notes"] == []
    nothing = run("search", "zebra quartz", "--envelope", "--all-projects")
    assert nothing.exit_code == 10
    assert nothing.json()["hits"] == []
    wrong = run("search", "JWT expiry", "--envelope", "--format", "csv")
    assert wrong.exit_code == 2
    assert wrong.stdout == ""
    assert wrong.stderr.strip().count("\n") == 0
    assert "--envelope" in wrong.stderr


# -- the background pass ---------------------------------------------------------------------------------
def hook_event(run: Callable[..., Result], event: str, cwd: Path, **fields: object) -> float:
    payload = {"session_id": "s-fresh", "cwd": str(cwd), "hook_event_name": event, **fields}
    started = time.perf_counter()
    result = run("hook", event, stdin=json.dumps(payload))
    took = time.perf_counter() - started
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    return took


def indexed_documents(home: Path) -> int:
    from cmem_cli.core.errors import NotFound
    from cmem_index.store import IndexStore
    from tests.index_helpers import index_value

    if not (home / "index.db").exists():
        return 0
    try:
        store = IndexStore.open(home / "index.db", readonly=True)
    except NotFound:  # made a moment ago: the first pass is laying it out, and has indexed nothing yet
        return 0
    try:
        return int(index_value(store, "SELECT count(*) FROM documents WHERE collection = 'memories'") or 0)
    finally:
        store.close()


def wait_for(condition: Callable[[], bool], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the background pass never finished"
        time.sleep(0.1)


def pass_running(home: Path) -> bool:
    import fcntl

    from cmem_index.lock import lock_path

    try:
        fd = os.open(lock_path(home / "index.db"), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_the_stop_hook_starts_a_pass_it_never_waits_for(tmp_path: Path) -> None:
    env = {**private_env(tmp_path), "CMEM_INDEX_BACKGROUND": "on"}
    run = runner(tmp_path, env)
    home = tmp_path / "home"
    notes = tmp_path / "notes"  # a collection large enough that the pass takes a while
    notes.mkdir()
    for i in range(3000):
        (notes / f"n{i:04d}.md").write_text(f"# Note {i}\n\nSome words about topic {i % 17}.\n")
    assert run("collection", "add", str(notes), "--name", "notes").exit_code == 0
    hook_event(run, "SessionStart", tmp_path, source="startup")
    hook_event(run, "UserPromptSubmit", tmp_path, prompt="Why does every token look expired?")
    hook_event(
        run, "PostToolUse", tmp_path, tool_name="Edit", tool_use_id="toolu_1",
        tool_input={"file_path": str(tmp_path / "auth.py"), "old_string": "exp", "new_string": "exp * 1000"},
        tool_response={},
    )  # fmt: skip
    assert not (home / "index.db").exists()  # two writes: no pass yet, the backlog is small
    hook_event(
        run, "Stop", tmp_path, last_assistant_message="Converted exp to milliseconds before comparing."
    )
    # the hook has returned (its output pipes closed: the pass holds none of them) and the pass goes on
    assert indexed_documents(home) == 0
    wait_for(lambda: indexed_documents(home) >= 2 and not pass_running(home))
    status = run("status", "--json").json()
    assert status["changed_files"] == {"added": 0, "modified": 0, "removed": 0}
    assert status["collections"][1]["documents"] == 3000
    assert not (home / "index.db.backlog").exists()
    assert not (home / "index.db.backlog.taken").exists()


def test_writes_past_a_small_backlog_start_a_pass_without_waiting_for_the_turn_to_end(tmp_path: Path) -> None:
    from cmem_index.refresh import BACKLOG

    env = {**private_env(tmp_path), "CMEM_INDEX_BACKGROUND": "on"}
    run = runner(tmp_path, env)
    home = tmp_path / "home"
    for i in range(BACKLOG - 1):
        assert run("add", "--title", f"Note number {i}", "--project", "webapp").exit_code == 0
    time.sleep(0.5)
    assert not (home / "index.db").exists()
    assert run("add", "--title", "The note that fills the backlog", "--project", "webapp").exit_code == 0
    wait_for(lambda: indexed_documents(home) == BACKLOG and not pass_running(home))
    assert "behind" not in run("search", "backlog", "--json").stderr


def test_with_the_switch_off_no_write_starts_a_pass(tmp_path: Path) -> None:
    run = runner(tmp_path, {**private_env(tmp_path), "CMEM_INDEX_BACKGROUND": "off"})
    hook_event(run, "UserPromptSubmit", tmp_path, prompt="hello")
    hook_event(run, "Stop", tmp_path, last_assistant_message="Done.")
    time.sleep(1)
    assert not (tmp_path / "home" / "index.db").exists()


def test_kill_9_of_the_background_pass_at_any_point_converges(tmp_path: Path, minilm_gguf: Path) -> None:
    env = {**private_env(tmp_path, embed_model=str(minilm_gguf)), "CMEM_INDEX_BACKGROUND": "on"}
    run = runner(tmp_path, env)
    home = tmp_path / "home"
    records = "".join(
        json.dumps(
            {"title": f"Decision {i}: {title}", "narrative": f"{narrative} (case {i})", "project": "webapp"}
        )
        + "\n"
        for i in range(25)
        for title, narrative in SEEDS
    )
    env_off = {"CMEM_INDEX_BACKGROUND": "off"}  # the test starts each pass itself, to kill it
    assert run("add", "--json", "-", stdin=records, extra=env_off).exit_code == 0
    (home / "index.db.backlog").write_bytes(b"." * 300)
    argv = [sys.executable, "-m", "cmem_index.refresh", "--home", str(home)]
    for delay in (0.3, 0.8, 1.5, 2.5, 3.5, 5.0):
        proc = subprocess.Popen(argv, env=env, cwd=tmp_path)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # until a pass has finished, what it was asked to cover stays noted (taken or not yet)
        noted = (home / "index.db.backlog.taken").exists() or (home / "index.db.backlog").exists()
        assert noted or proc.returncode == 0
        check = run("search", "token bucket rate limiter", "--json", extra=env_off)
        assert check.exit_code == 0, check.stderr  # a search between kills sees a usable index
    finished = subprocess.run(argv, env=env, cwd=tmp_path, timeout=600)
    assert finished.returncode == 0
    assert not (home / "index.db.backlog.taken").exists()
    status = run("status", "--json", extra=env_off).json()
    assert status["documents"] == len(records.splitlines())
    assert status["chunks_without_current_vectors"] == 0
    assert status["changed_files"] == {"added": 0, "modified": 0, "removed": 0}
    converged = run("search", "token bucket rate limiter", "--json", extra=env_off)
    assert "behind" not in converged.stderr
    assert run("index", "--full", extra=env_off).exit_code == 0
    rebuilt = run("search", "token bucket rate limiter", "--json", extra=env_off)
    assert [r["uid"] for r in converged.json()] == [r["uid"] for r in rebuilt.json()]
    assert run("status", "--json", extra=env_off).json()["chunks"] == status["chunks"]


# -- a pass costs what changed -----------------------------------------------------------------------------
def test_a_pass_stats_the_files_of_the_folders_that_changed_only(tmp_path: Path) -> None:
    run = runner(tmp_path, private_env(tmp_path))
    home = tmp_path / "home"
    for session in ("s1", "s2", "s3"):
        records = "".join(
            json.dumps({"title": f"{session} note {i}", "project": "webapp", "session": session}) + "\n"
            for i in range(10)
        )
        assert run("add", "--json", "-", stdin=records).exit_code == 0
    time.sleep(1.1)  # folders modified within a second of a pass are listed again by the next one
    first = run("index", "--json").json()
    assert first["scanned"] == 30
    second = run("index", "--json").json()
    assert (second["scanned"], second["read"]) == (0, 0)
    assert run("add", "--title", "s2 note 10", "--project", "webapp", "--session", "s2").exit_code == 0
    third = run("index", "--json").json()
    assert (third["scanned"], third["read"], third["chunked"]) == (11, 1, 1)
    assert "s2 note 10" in run("search", "note", "-n", "0", "--format", "plain").stdout
    # a file someone drops into the tree, a file deleted, a whole session folder deleted
    export = home / "export" / "webapp"
    (export / "s1" / "handmade.md").write_text("# A hand-written note about kiwis\n")
    victim = sorted((export / "s3").glob("*.md"))
    for path in victim:
        path.unlink()
    (export / "s3").rmdir()
    fourth = run("index", "--json").json()
    assert fourth["removed"] == 10
    assert fourth["read"] == 1
    status = run("status", "--json").json()
    assert status["documents"] == 22
    assert status["changed_files"] == {"added": 0, "modified": 0, "removed": 0}
    assert "kiwis" in run("search", "kiwis", "--format", "plain").stdout


# -- fusion: a list that could not see a key says nothing of it ---------------------------------------------
def test_a_key_the_vector_list_could_not_see_is_ranked_by_its_words_not_below_every_vector() -> None:
    from cmem_index.fusion import KEYWORD, VECTOR, Signal, fuse

    lists = {
        "store": [("obs:new", 9.0), ("obs:a", 3.0), ("obs:b", 2.0)],
        KEYWORD: [("obs:a", 6.0), ("obs:b", 4.0)],
        VECTOR: [("obs:b", 0.62), ("obs:a", 0.55), ("obs:c", 0.40)],
    }
    signals = {"store": Signal(KEYWORD, scaled=True), KEYWORD: Signal(KEYWORD, 5.0), VECTOR: Signal(VECTOR)}
    absent = [hit.key for hit in fuse(lists, signals)]
    unseen = {KEYWORD: {"obs:new"}, VECTOR: {"obs:new"}}
    unknown = fuse(lists, signals, unseen=unseen)
    assert absent.index("obs:new") > absent.index("obs:a")  # scored 0 by the lists that never saw it
    assert unknown[0].key == "obs:new"  # its words lead; the lists that could not see it say nothing
    by_key = {hit.key: hit for hit in unknown}
    # its evidence is what its words say, as a keyword search scores it (not 0.6 of it)
    assert by_key["obs:new"].score == pytest.approx(by_key["obs:new"].signals["store"].norm)
    absent_by_key = {hit.key: hit for hit in fuse(lists, signals)}
    assert absent_by_key["obs:new"].score == pytest.approx(
        0.6 * absent_by_key["obs:new"].signals["store"].norm
    )
    # the store's list is put on the index's scale by the best hit both could judge, not by one the index
    # lacks (which pulled every other hit under it): obs:a, first of the index's list, scores alike in both
    assert by_key["obs:a"].signals["store"].norm == pytest.approx(by_key["obs:a"].signals[KEYWORD].norm)
    assert by_key["obs:new"].signals["store"].norm > absent_by_key["obs:new"].signals["store"].norm
    # the keys every list could see keep their places relative to each other
    assert [k for k in absent if k != "obs:new"] == [h.key for h in unknown if h.key != "obs:new"]
