"""One registry of agents (cmem_cli/capture/agents/): help, `cmem install`, `cmem install --detect`,
`cmem doctor`, `cmem hook --agent` and docs/agents.md all list the same agents, each from its own module."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cmem_cli.capture.agents import NAMES, spec, specs
from tests.hook_log import hook_log

DOC = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text()


def documented_rows() -> dict[str, str]:
    """docs/agents.md's install table (the one that names each agent's events): agent -> its row."""
    table = DOC.split("| agent | user scope | project scope | events hooked |", 1)[1].split("\n\n", 1)[0]
    return {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z-]+)` \|.*$", table, re.MULTILINE)}


def test_every_agent_is_one_module_with_its_own_spec() -> None:
    assert [s.name for s in specs()] == list(NAMES)
    for agent in specs():
        assert agent.events, agent.name
        assert agent.reference and agent.title and agent.program
        for scope in ("user", "project"):
            where = agent.files(scope, Path("/work/app"))
            assert where.hooks.is_absolute() and where.mcp.is_absolute()


def test_help_names_every_agent(sh, home) -> None:
    install = sh("install", "--help").stdout
    hook = sh("hook", "--help").stdout
    for name in NAMES:
        assert re.search(rf"\b{re.escape(name)}\b", install), name
    for agent in specs():
        if agent.adapter:
            assert re.search(rf"\b{re.escape(agent.name)}\b", hook), agent.name


def test_docs_table_lists_every_agent_and_the_events_it_hooks() -> None:
    rows = documented_rows()
    assert list(rows) == list(NAMES)
    for agent in specs():
        for event in agent.events:
            if event != "plugin":
                assert event in rows[agent.name], (agent.name, event)


def test_docs_name_the_version_each_agent_was_written_against() -> None:
    for agent in specs():
        if agent.name in ("claude-code", "codex", "gemini", "cursor", "opencode"):
            continue  # their sections predate the registry and name their sources in prose
        section = DOC.split(f"### {agent.title}\n", 1)
        assert len(section) == 2, agent.title
        assert re.search(r"\d+\.\d+\.\d+", section[1].split("\n### ", 1)[0]), agent.title


def test_detect_and_doctor_list_every_agent_installed(sh, home) -> None:
    for name in NAMES:
        assert sh("install", name, "--no-mcp").exit_code == 0, name
    rows = sh("install", "--detect", "--json").json()
    user = {row["agent"]: row for row in rows if row["scope"] == "user"}
    assert list(user) == list(NAMES)
    for name in NAMES:
        assert sorted(user[name]["hooks"]) == sorted(spec(name).events), name
        assert user[name]["problems"] == [], (name, user[name]["problems"])
    checks = {c["name"]: c for c in sh("doctor", "--json").json()["checks"]}
    for name in NAMES:
        assert checks[f"agent {name} (user)"]["status"] == "ok", checks.get(f"agent {name} (user)")


@pytest.mark.parametrize("name", [n for n in NAMES if spec(n).adapter])
def test_every_agent_with_an_adapter_answers_its_hook(sh, home, tmp_path, name) -> None:
    """`cmem hook --agent NAME` reaches the adapter the registry names (an unknown event is answered too)."""
    result = sh(
        "hook", "--agent", name, "NoSuchEvent", input=json.dumps({"session_id": "s", "cwd": str(tmp_path)})
    )
    assert result.exit_code == 0 and result.stderr == ""
    assert "unknown agent" not in hook_log(home) and "bug" not in hook_log(home)


def test_an_unknown_agent_lists_the_registry(sh, home) -> None:
    result = sh("install", "vim")
    assert result.exit_code != 0
    assert all(name in result.stderr for name in NAMES)


@pytest.mark.parametrize("name", [n for n in NAMES if spec(n).instructions is not None])
def test_every_agent_with_an_instructions_file_is_told_to_record(sh, home, tmp_path, name) -> None:
    """The agent's own instructions file gets cmem's section (marked as installed for it); --no-instructions
    leaves the file alone, and uninstalling takes the section out."""
    path = spec(name).instructions("user", tmp_path)  # type: ignore[misc]
    assert sh("install", name, "--no-mcp", "--no-instructions").exit_code == 0
    assert not path.exists()
    assert sh("install", name, "--no-mcp").exit_code == 0
    text = path.read_text()
    assert f"added by `cmem install {name}`; `cmem install {name} --uninstall` removes it" in text
    assert "search" in text and "add --type" in text
    assert sh("install", name, "--uninstall").exit_code == 0
    assert not path.exists()
