"""The types of a write's checked input and of the API's JSON objects name exactly the keys they hold.

``ObservationInput`` and its kin (``cmem_cli/store/row_types.py``) and the JSON objects of
``cmem_cli/core/json_types.py`` exist for the type checker only, so nothing at run time would notice a key
added or dropped without its type: this test reads the types from the source and the keys from real
writes and real `--json` commands.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.store.records import normalize_observation

ROOT = Path(__file__).resolve().parent.parent / "cmem_cli"
ROW_TYPES = ROOT / "store" / "row_types.py"
JSON_TYPES = ROOT / "core" / "json_types.py"
DOCTOR_TYPES = ROOT / "services" / "upkeep" / "doctor_report.py"


def declared(source: Path, name: str) -> tuple[set[str], set[str]]:
    """(required, optional) keys a TypedDict of ``source`` declares (its own, not inherited)."""
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == name:
            required, optional = set(), set()
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    text = ast.unparse(item.annotation)
                    (optional if text.startswith("NotRequired[") else required).add(item.target.id)
            return required, optional
    raise AssertionError(f"no {name} in {source}")


def assert_shape(source: Path, name: str, value: dict[str, Any]) -> None:
    """``value`` has every required key of ``name`` and no key it does not declare."""
    required, optional = declared(source, name)
    assert required <= set(value), f"{name}: {sorted(required - set(value))} missing"
    assert set(value) <= required | optional, f"{name}: {sorted(set(value) - required - optional)} undeclared"


def test_a_checked_record_holds_the_keys_its_type_names() -> None:
    bare = normalize_observation({"title": "t", "project": "p"})
    required, optional = declared(ROW_TYPES, "ObservationInput")
    assert set(bare) == required
    stated = normalize_observation(
        {"title": "t", "project": "p", "machine": "m", "author": "a", "edited_on": "m2", "edited_by": "b",
         "files_read": ["src/a.py:3-5"], "links": ["related:12"], "supersedes": "01ABC"}
    )  # fmt: skip
    assert_shape(ROW_TYPES, "ObservationInput", dict(stated))
    assert {"machine", "author", "edited_on", "edited_by", "_spans"} <= set(stated)
    for link in stated["links"]:
        assert_shape(ROW_TYPES, "LinkTarget", dict(link))


def test_the_session_writes_checks_give_the_keys_their_types_name(home: Path) -> None:
    from cmem_cli.core.config import load_config
    from cmem_cli.services.write.service import WriteService

    with WriteService.open(load_config()) as memory:
        prompt = memory.sessions.prepare_prompt_row(
            {"uid": "p1", "session": "s", "prompt_number": 1, "text": "hi", "project": "p", "agent": "a",
             "created_at": 1}
        )  # fmt: skip
        session = memory.sessions.prepare_session(
            {"session_id": "s", "agent": "a", "project": "p", "status": "active", "started_at": 1,
             "last_activity_at": 2, "completed_at": None, "prompt_counter": 0, "goal": "g"}
        )  # fmt: skip
        summary = memory.sessions.prepare_summary({"request": "r"})
    assert set(prompt) == declared(ROW_TYPES, "PromptInput")[0]
    assert set(session) == declared(ROW_TYPES, "SessionValues")[0]
    assert set(summary) == declared(ROW_TYPES, "SummaryText")[0]


@pytest.fixture
def filled(home: Path, sh: Any) -> Any:
    """A home with memories in two projects, a session with a prompt and a summary."""
    env = {"CMEM_SESSION": "s-typed", "CMEM_AGENT": "cli"}
    assert sh("add", "--project", "p1", "--title", "first", "--fact", "f", env=env).exit_code == 0
    assert sh("add", "--project", "p2", "--title", "second", env=env).exit_code == 0
    assert sh("prompt", "add", "--session", "s-typed", "what next", env=env).exit_code == 0
    assert sh("summary", "add", "--session", "s-typed", "--request", "r", env=env).exit_code == 0
    return sh


def test_stats_and_projects_print_the_keys_their_types_name(filled: Any) -> None:
    assert_shape(JSON_TYPES, "StatsJson", filled("stats", "--json").json())
    projects = filled("projects", "--json").json()
    assert len(projects) == 2
    for project in projects:
        assert_shape(JSON_TYPES, "ProjectJson", project)


def test_sessions_print_the_keys_their_type_names(filled: Any) -> None:
    [listed] = filled("session", "list", "--json").json()
    assert_shape(JSON_TYPES, "SessionJson", listed)
    shown = filled("session", "show", "s-typed", "--json").json()
    assert_shape(JSON_TYPES, "SessionJson", shown)
    assert {"prompts", "summaries", "observations", "machine"} <= set(shown)
    for prompt in shown["prompts"]:
        assert_shape(JSON_TYPES, "PromptBrief", prompt)


def test_adoption_rebuild_doctor_and_models_print_the_keys_their_types_name(filled: Any) -> None:
    assert_shape(JSON_TYPES, "AdoptJson", filled("sync", "--json").json())
    assert_shape(JSON_TYPES, "RebuildJson", filled("export", "--rebuild", "--json").json())
    report = filled("doctor", "--json").json()
    assert_shape(DOCTOR_TYPES, "DoctorReport", report)
    for check in report["checks"]:
        assert_shape(DOCTOR_TYPES, "Check", check)
    models = filled("models", "list", "--json").json()
    for model in models["configured"]:
        assert_shape(JSON_TYPES, "ModelJson", model)
    for found in models["files"]:
        assert_shape(JSON_TYPES, "ModelFileJson", found)


def test_a_reported_add_prints_candidates_of_their_type(filled: Any) -> None:
    records = [{"title": "cache lives in redis", "project": "p3"}, {"title": "cache lives in memcached",
               "project": "p3"}]  # fmt: skip
    result = filled("add", "--json", "-", "--format", "json", input=json.dumps(records))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    found = [c for row in rows for c in row["candidates"]]
    assert found, result.stderr
    for candidate in found:
        assert_shape(JSON_TYPES, "CandidateJson", candidate)
