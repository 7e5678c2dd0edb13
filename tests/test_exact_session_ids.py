"""Session prefixes are for ids people type; an id a program passes is taken exactly (issue 25).

Claude Code names sessions itself, and a script may name its runs `run-1`, `run-2`, ..., `run-10`: a hook or
an API call for `run-1` must never land in `run-10` because one id starts with the other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmem_cli.api import Memory, NotFound
from cmem_cli.capture.hooks import spool
from tests.agent_fixtures import db_rows, payload


def _hook(sh, event: str, session: str, project: Path, **fields) -> None:
    sh("hook", event, input=json.dumps(payload(event, session, project, **fields)))  # a hook always exits 0


def test_hooks_of_run_1_never_land_in_run_10(sh, home: Path, project: Path) -> None:
    _hook(sh, "SessionStart", "run-10", project, source="startup")
    _hook(sh, "UserPromptSubmit", "run-10", project, prompt="the tenth run's question")
    _hook(sh, "UserPromptSubmit", "run-1", project, prompt="the first run's question")
    _hook(sh, "SessionEnd", "run-1", project)
    sessions = dict(db_rows(home, "SELECT session_id, status FROM sessions"))
    assert sessions == {"run-10": "active", "run-1": "completed"}
    prompts = db_rows(home, "SELECT session, text FROM user_prompts ORDER BY id")
    assert prompts == [("run-10", "the tenth run's question"), ("run-1", "the first run's question")]


def test_a_replayed_event_is_filed_under_its_own_session_not_the_replaying_hooks(sh, home, project):
    data = payload("UserPromptSubmit", "c-3", project, prompt="spooled while the store was busy")
    spool.save(home, "UserPromptSubmit", data, 1_700_000_000_000)
    _hook(sh, "UserPromptSubmit", "c-30", project, prompt="the thirtieth hook's prompt")  # replays the spool
    prompts = sorted(db_rows(home, "SELECT session, text FROM user_prompts"))
    assert prompts == [("c-3", "spooled while the store was busy"), ("c-30", "the thirtieth hook's prompt")]


def test_the_api_takes_session_ids_exactly(home: Path) -> None:
    with Memory() as memory:
        memory.start_session("run-10", project="p", agent="script")
        memory.add("Tenth run's note", project="p", session="run-10")
        memory.add_prompt("first run's question", session="run-1")
        assert [p.text for p in memory.prompts("run-1")] == ["first run's question"]
        assert [p.text for p in memory.prompts("run-10")] == []
        assert memory.session("run-10").observations == 1
        assert memory.session("run-1").observations == 0
        with pytest.raises(NotFound):
            memory.session("run")  # a prefix names no session in the API
        assert memory.resolve_session("run-1") == "run-1"  # the one door for an id a person typed
        memory.start_session("abcdef", project="p", agent="script")
        assert memory.resolve_session("abcd") == "abcdef"
