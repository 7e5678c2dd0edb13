"""The Python API (cmem_cli.api.Memory): typed results, typed errors, nothing printed, same rules as the CLI."""

from __future__ import annotations

import json
import stat

import pytest

from cmem_cli.api import (
    Briefing,
    Document,
    Hit,
    InvalidInput,
    Memory,
    NotFound,
    Observation,
    Prompt,
    Query,
    SearchPage,
    Summary,
    as_dict,
)
from cmem_cli.cli.exits import EXIT_INVALID, EXIT_NOT_FOUND, exit_code


@pytest.fixture
def memory(home):
    with Memory() as m:
        yield m


def test_add_returns_the_stored_observation_and_writes_its_file(memory, home, capsys):
    obs = memory.add(
        "Pin apsw to 3.45",
        type="decision",
        narrative="3.46 changed the tokenizer API.",
        facts=["3.46 broke FTS5 tokenizers"],
        concepts=["deps"],
        files_modified=["pyproject.toml"],
        project="demo",
    )
    assert isinstance(obs, Observation)
    assert (obs.id, obs.type, obs.project, obs.facts) == (
        1,
        "decision",
        "demo",
        ["3.46 broke FTS5 tokenizers"],
    )
    assert obs.uri == f"cmem://observation/{obs.uid}"
    path = home / "export" / obs.path
    assert "3.46 changed the tokenizer API." in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert obs.tokens > 0 and obs.retrieval_count == 0
    assert capsys.readouterr() == ("", "")  # the API prints nothing


def test_the_home_argument_is_used_instead_of_the_environment(home, tmp_path):
    other = tmp_path / "elsewhere"
    with Memory(other) as m:
        m.add("in the other home", project="p")
    assert (other / "cmem.db").exists()
    assert not (home / "cmem.db").exists()


def test_api_writes_are_what_the_cli_reads(memory, cli):
    obs = memory.add(
        "Retry the flaky upload", type="bugfix", project="demo", facts=["S3 returns 503 under load"]
    )
    result = cli("get", str(obs.id), "--json")
    assert result.exit_code == 0
    assert result.json()[0]["facts"] == ["S3 returns 503 under load"]


def test_search_returns_typed_hits_with_the_cli_rows(memory, cli):
    memory.add("Tokenizer crash on emoji", type="bugfix", project="demo")
    memory.add("Unrelated note about logging", project="demo")
    hits = memory.search("tokenizer", project="demo")
    assert isinstance(hits, SearchPage) and all(isinstance(h, Hit) for h in hits)
    assert [h.title for h in hits] == ["Tokenizer crash on emoji"]
    assert hits.mode == "keyword"  # no index in a fresh home
    cli_rows = cli("search", "tokenizer", "--project", "demo", "--json").json()
    assert [(r["id"], r["title"], r["tokens"]) for r in cli_rows] == [(h.id, h.title, h.tokens) for h in hits]


def test_search_filters_by_type_and_lists_without_a_query(memory):
    memory.add("Chose SQLite", type="decision", project="demo")
    memory.add("Fixed the lock", type="bugfix", project="demo")
    assert [h.title for h in memory.search(type="decision")] == ["Chose SQLite"]
    assert [h.title for h in memory.search(type=["decision", "bugfix"], order="oldest")] == [
        "Chose SQLite",
        "Fixed the lock",
    ]


def test_timeline_marks_the_anchor_in_time_order(memory):
    ids = [memory.add(f"step {i}", project="demo").id for i in range(5)]
    timeline = memory.timeline(ids[2], before=1, after=1)
    assert [item.id for item in timeline.items] == ids[1:4]
    assert [item.anchor for item in timeline.items] == [False, True, False]
    by_query = memory.timeline(query="step 4", before=0, after=0)
    assert [item.title for item in by_query.items] == ["step 4"]


def test_get_returns_full_records_and_counts_a_retrieval(memory):
    obs = memory.add("Cache the parsed config", narrative="Parsing took 30 ms.", facts=["f1"], project="demo")
    [record] = memory.get(obs.id)
    assert (record.narrative, record.facts, record.retrieval_count) == ("Parsing took 30 ms.", ["f1"], 1)
    [again] = memory.get(obs.id)
    assert again.retrieval_count == 2


def test_get_returns_summaries_and_prompts_typed(memory):
    memory.start_session("s1", project="demo")
    prompt = memory.add_prompt("please fix the build", session="s1")
    summary = memory.add_summary("s1", learned="the cache was stale", next_steps="add a test")
    assert isinstance(prompt, Prompt) and (prompt.prompt_number, prompt.project) == (1, "demo")
    records = memory.get(summary.id, prompt.id)
    assert isinstance(records[0], Summary) and records[0].learned == "the cache was stale"
    assert isinstance(records[1], Prompt) and records[1].text == "please fix the build"
    assert [s.id for s in memory.summaries(session="s1")] == [summary.id]
    assert [p.text for p in memory.prompts("s1")] == ["please fix the build"]


def test_edit_link_and_forget(memory, home):
    cause = memory.add("Disk full", type="error", project="demo")
    fix = memory.add("Rotate logs", type="bugfix", project="demo")
    edited = memory.edit(fix.id, title="Rotate logs daily", facts=["logrotate.d/app"], subtitle=None)
    assert (edited.title, edited.facts) == ("Rotate logs daily", ["logrotate.d/app"])
    linked = memory.link(fix.id, "caused_by", cause.id)
    assert [(link.type, link.id) for link in linked.links] == [("caused_by", cause.id)]
    assert memory.forget(cause.id) == [cause.id]
    assert memory.find(fix.uid).links == []
    assert not (home / "export" / cause.path).exists()
    with pytest.raises(NotFound):
        memory.get(cause.id)


def test_context_returns_the_briefing_within_budget(memory):
    memory.add("Chose WAL mode", type="decision", project="demo")
    briefing = memory.context("demo", budget=200)
    assert isinstance(briefing, Briefing)
    assert briefing.text.startswith("# cmem memory for demo")
    assert "Chose WAL mode" in briefing.text
    assert briefing.tokens <= 200
    assert [o["title"] for o in briefing.observations] == ["Chose WAL mode"]


def test_sessions_start_end_and_list(memory):
    started = memory.start_session("s9", project="demo", label="refactor")
    assert (started.session_id, started.status) == ("s9", "active")
    ended = memory.end_session("s9", outcome="done")
    assert (ended.status, ended.outcome) == ("completed", "done")
    assert [s.session_id for s in memory.sessions(project="demo")] == ["s9"]
    assert memory.session("s9").observations == 0


def test_index_status_reports_a_missing_index(memory):
    status = memory.index.status()
    assert status["exists"] is False
    assert status["documents"] == 0


def test_bad_input_raises_typed_errors_and_writes_nothing(memory, home):
    with pytest.raises(InvalidInput) as bad_type:
        memory.add("x", type="nonsense", project="demo")
    assert exit_code(bad_type.value) == EXIT_INVALID
    with pytest.raises(InvalidInput):
        memory.add("x", facts="not a list", project="demo")
    with pytest.raises(InvalidInput):
        memory.add("x" * 501, project="demo")
    with pytest.raises(NotFound) as missing:
        memory.timeline(42)
    assert exit_code(missing.value) == EXIT_NOT_FOUND
    with pytest.raises(InvalidInput):
        memory.search("x", type="nonsense")
    with pytest.raises(InvalidInput):
        memory.edit(1)
    assert memory.search() == []
    assert not list((home / "export").rglob("*.md"))


def test_private_text_is_stripped_as_by_the_cli(memory, home):
    obs = memory.add("Deploy notes", narrative="key is <private>hunter2</private> here", project="demo")
    assert "hunter2" not in (obs.narrative or "")
    assert "hunter2" not in (home / "export" / obs.path).read_text()


def test_results_convert_to_json(memory):
    obs = memory.add("Linked", project="demo")
    other = memory.add("Target", project="demo", links=[f"related:{obs.id}"])
    data = json.loads(json.dumps(as_dict(memory.get(other.id))))
    assert data[0]["links"] == [{"type": "related", "id": obs.id, "uid": obs.uid, "title": "Linked"}]


def test_indexed_documents_come_back_as_typed_hits_and_documents(memory, cli, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text("# Deploying\n\nThe canary rollout waits ten minutes per stage.\n")
    assert cli("collection", "add", str(notes), "--name", "notes").exit_code == 0
    assert cli("index").exit_code == 0
    hits = memory.search("canary rollout", mode="keyword")
    [doc_hit] = [h for h in hits if h.kind == "document"]
    assert doc_hit.path == "notes:deploy.md" and str(doc_hit.id).startswith("doc:")
    [document] = memory.get(doc_hit.id)
    assert isinstance(document, Document)
    assert (document.collection, document.path) == ("notes", "deploy.md")
    assert "ten minutes per stage" in document.text
    status = memory.index.status()
    assert status["exists"] is True and status["documents"] >= 1


def test_importing_the_api_loads_no_cli_framework_database_or_model_runtime():
    import subprocess
    import sys

    probe = (
        "import sys, cmem_cli.api\n"
        "heavy = ('typer', 'click', 'rich', 'apsw', 'numpy', 'llama_cpp', 'mcp', 'export', 'index')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


# -- the row methods the CLI stands on ------------------------------------------------------------------------


def test_a_search_page_is_what_cmem_search_json_prints_with_the_total(memory, cli):
    for n in range(3):
        memory.add(f"Flaky upload retry {n}", type="bugfix", project="demo")
    page = memory.search("upload", project="demo", limit=2)
    assert len(page) == 2 and page.total == 3 and page.capped is False
    printed = cli("search", "upload", "--project", "demo", "-n", "2", "--json").json()
    assert [row["id"] for row in printed] == [row["id"] for row in page.to_json()]
    assert [hit.id for hit in page] == [row["id"] for row in printed]
    assert [h.to_json()["title"] for h in page] == [row["title"] for row in printed]


def test_search_takes_a_session_id_exactly_and_a_person_s_prefix_resolved_first(memory):
    session = memory.start_session("abcdef123456", project="demo")
    memory.add("In the session", project="demo", session=session.session_id)
    memory.add("Outside it", project="demo")
    assert memory.search(project="demo", session="abcdef").to_json() == []
    page = memory.search(project="demo", session=memory.resolve_session("abcdef"))
    assert [hit.title for hit in page] == ["In the session"]


def test_one_query_object_is_what_search_takes_and_its_arguments_are_its_fields(memory):
    memory.add("Chose SQLite", type="decision", project="demo")
    memory.add("Fixed the lock", type="bugfix", project="demo")
    ask = Query(type="decision", project="demo")
    assert [h.title for h in memory.search(ask)] == ["Chose SQLite"]
    assert memory.search(ask).to_json() == memory.search(type=["decision"], project="demo").to_json()
    wider = Query(ask, type=["decision", "bugfix"], order="oldest")  # a changed copy; ask is unchanged
    assert [h.title for h in memory.search(wider)] == ["Chose SQLite", "Fixed the lock"]
    assert ask.type == ("decision",) and wider.project == "demo"
    assert Query(Query("x", limit=5), limit=20).limit == 5  # an argument at its default keeps the base's
    assert Query("x", type="bugfix") == Query("x", type=["bugfix"]) and len({ask, Query(ask)}) == 1
    with pytest.raises(AttributeError):
        ask.limit = 5  # type: ignore[misc]
    with pytest.raises(InvalidInput):
        Query(type="gossip")
    with pytest.raises(InvalidInput):
        Query(order="sideways")


def test_timeline_and_get_give_the_cli_json(memory, cli):
    first = memory.add("First step", project="demo")
    memory.add("Second step", project="demo")
    timeline = memory.timeline(first.id, after=1)
    assert timeline.to_json() == cli("timeline", str(first.id), "-a", "1", "--json").json()
    assert [item.title for item in timeline.items] == ["First step", "Second step"]
    got = memory.get(first.id, absolute_paths=True)
    assert got[0].path == str(memory.export_dir / first.path)
    [record] = got.to_json()
    assert record["path"] == str(memory.export_dir / first.path)
    printed = cli("get", str(first.id), "--json").json()[0]
    assert (record["retrieval_count"], printed["retrieval_count"]) == (1, 2)
    counted = ("retrieval_count", "last_retrieved_at")
    assert {k: v for k, v in record.items() if k not in counted} == {
        k: v for k, v in printed.items() if k not in counted
    }


def test_observation_counts_no_retrieval(memory):
    obs_id = memory.add("Cache the tokenizer", project="demo", facts=["saves 30 ms"]).id
    assert memory.observation(obs_id).facts == ["saves 30 ms"]
    assert memory.observation(obs_id).retrieval_count == 0
    with pytest.raises(NotFound):
        memory.observation(obs_id + 1)


def test_add_many_is_all_or_none_and_names_the_bad_record(memory, home):
    from cmem_cli.api import InvalidRecord

    good = {"title": "fine", "type": "change"}
    with pytest.raises(InvalidRecord) as raised:
        memory.add_many([good, good, {"title": "bad", "type": "gossip"}], project="demo")
    assert raised.value.index == 2
    assert exit_code(raised.value) == EXIT_INVALID
    assert "unknown type 'gossip'" in raised.value.reason
    assert memory.stats()["counts"]["observations"] == 0
    assert list((home / "export").rglob("*.md")) == []
    ids = memory.add_many([good, {"title": "also fine", "type": "bugfix"}], project="demo")
    assert [memory.observation(i).title for i in ids] == ["fine", "also fine"]


def test_edit_appends_facts_after_replacing_them(memory):
    obs = memory.add("Facts", project="demo", facts=["one"])
    assert memory.edit(obs.id, add_facts=["two"]).facts == ["one", "two"]
    assert memory.edit(obs.id, facts=["new"], add_facts=["three"]).facts == ["new", "three"]


def test_sessions_give_the_cli_json_and_their_status(memory, cli):
    session = memory.start_session("feedbeef0001", project="demo", label="try")
    memory.add_prompt("why?", session=session.session_id)
    summary = memory.add_summary(session.session_id, {"learned": "because", "notes": None}, completed="yes")
    assert (summary.learned, summary.completed, summary.notes) == ("because", "yes", None)
    assert memory.session_status("feedbeef0001") == "active"
    assert memory.session_status("feedbeef") is None  # ids are exact; a prefix goes through resolve_session
    assert memory.resolve_session("feedbeef") == "feedbeef0001"
    assert memory.session_status("nothing-like-it") is None
    shown = memory.session("feedbeef0001")
    assert shown.to_json() == cli("session", "show", "feedbeef", "--json").json()
    assert [p["text"] for p in shown.prompts or []] == ["why?"] and shown.summaries == [summary.id]
    listed = memory.sessions(project="demo")
    assert listed.to_json() == cli("session", "list", "--project", "demo", "--json").json()
    assert [(s.session_id, s.label, s.observations) for s in listed] == [("feedbeef0001", "try", 0)]
    assert "prompts" not in listed[0].to_json()
    assert memory.session_ids() == ["feedbeef0001"]
    memory.end_session(session.session_id)
    assert memory.session_status("feedbeef0001") == "completed"
    with pytest.raises(InvalidInput):
        memory.add_summary(session.session_id, {"feelings": "fine"})


def test_the_read_methods_open_neither_the_write_service_nor_the_result_types(home):
    """`cmem search/get/timeline` run through these methods many times a minute: they must not pay for the
    markdown exporter and privacy filter (the write service) or for defining the named tuples."""
    import subprocess
    import sys

    with Memory() as m:
        obs_id = m.add("Probe", project="demo").id
    probe = (
        "import sys\nfrom cmem_cli.api import Memory\n"
        "with Memory() as m:\n"
        "    m.search('probe').to_json(); m.timeline(%d).to_json(); m.get(%d).to_json(); m.stats()\n"
        "print(sorted(n for n in ('cmem_cli.services.write.service', 'cmem_cli.core.results') if n in sys.modules))\n"
    ).replace("%d", str(obs_id))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


def test_markdown_is_what_cmem_get_prints(memory, cli):
    from cmem_cli.api import markdown

    obs = memory.add("Render me", project="demo", facts=["one fact"])
    [printed] = memory.get(obs.id, absolute_paths=True).to_json()  # the CLI prints where the file is
    assert markdown(printed) == cli("get", str(obs.id)).stdout
    [record] = memory.get(obs.id)
    assert "- one fact" in markdown(record)
    assert markdown(record) == markdown(as_dict(record))


def test_adopt_edits_and_doctor(memory, home):
    obs = memory.add("Before the edit", project="demo")
    path = home / "export" / obs.path
    assert memory.doctor()["ok"] is True
    path.write_text(path.read_text().replace("Before the edit", "After the edit"))
    report = memory.adopt_edits()
    assert report.adopted == [obs.path]
    edited = memory.observation(obs.id)
    assert edited.title == "After the edit"
    (home / "export" / edited.path).unlink()
    assert memory.doctor()["ok"] is False


# -- capture's writes ------------------------------------------------------------------------------------


def test_a_failed_transaction_leaves_no_row_no_file_and_no_bookkeeping(memory):
    rec = memory.recorder
    sid = rec.ensure_session("cap-1", project="demo", agent="claude-code")
    with pytest.raises(InvalidInput), rec.transaction():
        rec.capture_log.mark(sid, "tool:1")
        rec.add_prompt("first", session=sid)
        rec.add_record({"type": "change", "title": "kept?", "project": "demo", "session": sid})
        rec.add_record({"type": "gossip", "title": "bad", "project": "demo", "session": sid})
    assert rec.prompt_counter(sid) is None
    assert memory.search(project="demo").__len__() == 0
    assert list(memory.export_dir.rglob("*.md")) == []
    assert not rec.capture_log.seen(sid, "tool:1")
    assert not rec.in_transaction


def test_add_record_keeps_the_given_uid_and_time_and_updates_on_a_second_write(memory):
    rec = memory.recorder
    uid = "01HQ0000000000000000000000"
    first = rec.add_record(
        {"type": "change", "title": "Read a.py", "project": "demo", "agent": "a", "uid": uid,
         "created_at": 1_700_000_000_000}
    )  # fmt: skip
    again = rec.add_record({"type": "change", "title": "Read a.py twice", "project": "demo", "uid": uid})
    obs = memory.find(uid)
    assert (first, again, obs.id) == (obs.id, obs.id, obs.id)
    assert obs.title == "Read a.py twice" and obs.created_at.startswith("2023-11-14T22:13:20")
    assert rec.has_uid(uid) and not rec.has_uid("01HQ0000000000000000000001")


def test_capture_prompts_and_summaries_take_their_time_and_return_ids(memory):
    rec = memory.recorder
    sid = rec.ensure_session("cap-2", project="demo", agent="claude-code")
    prompt_id = rec.add_prompt("why <private>secret</private>?", session=sid, created_at=1_700_000_000_000)
    summary_id = rec.add_summary(sid, {"completed": "done", "learned": None}, created_at=1_700_000_001_000)
    [prompt] = memory.prompts(sid)
    [summary] = memory.summaries(session=sid)
    assert (prompt.id, summary.id) == (prompt_id, summary_id)
    assert prompt.text == "why ?" and prompt.created_at.startswith("2023-11-14T22:13:20")
    assert summary.created_at.startswith("2023-11-14T22:13:21") and summary.learned is None
    assert rec.latest_prompt(sid) == "why ?" and rec.prompt_counter(sid) == 1
    rec.close_session(sid, status="abandoned")
    assert memory.session(sid).status == "abandoned"


def test_memory_keeps_one_typed_member_per_concept_and_capture_writes_on_its_recorder(memory):
    """No typed/raw twins (``to_json()`` is the raw form) and no hook-only writes on the API scripts read."""
    public = {name for name in dir(Memory) if not name.startswith("_")}
    gone = {"search_page", "search_filters", "timeline_rows", "records", "add_id", "session_rows",
            "session_record", "add_summary_fields", "add_prompt_id", "add_summary_id", "ensure_session",
            "close_session", "briefing_text", "add_record", "transaction", "database", "tune"}  # fmt: skip
    assert not public & gone
    recorder = {name for name in dir(type(memory.recorder)) if not name.startswith("_")}
    assert {"transaction", "add_record", "add_prompt", "add_summary", "ensure_session", "tune"} <= recorder
