"""The published record schema matches what the store accepts, and docs/agents.md's examples are real."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from cmem_cli.capture.hooks.rules import HookRules, rules_from_config
from cmem_cli.store.records import (
    INPUT_FIELDS,
    MAX_LIST_ITEMS,
    MAX_NARRATIVE,
    MAX_SHORT,
    MAX_TITLE,
    OUTPUT_ONLY_FIELDS,
)
from cmem_cli.store.schema import LINK_TYPES, OBSERVATION_TYPES

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "schema" / "observation.schema.json").read_text())
DOC = (REPO / "docs" / "agents.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, re.DOTALL)


def test_schema_lists_exactly_the_fields_the_store_accepts() -> None:
    assert set(SCHEMA["properties"]) == set(INPUT_FIELDS) | set(OUTPUT_ONLY_FIELDS)
    assert SCHEMA["required"] == ["title"] and SCHEMA["additionalProperties"] is False
    assert SCHEMA["properties"]["type"]["enum"] == list(OBSERVATION_TYPES)
    link_variants = SCHEMA["properties"]["links"]["items"]["oneOf"]
    assert all(
        v["properties"]["type"]["enum"] == list(LINK_TYPES) for v in link_variants if "properties" in v
    )


def test_schema_limits_are_the_stores_limits() -> None:
    props = SCHEMA["properties"]
    assert props["title"]["maxLength"] == MAX_TITLE
    assert props["narrative"]["maxLength"] == MAX_NARRATIVE
    assert props["subtitle"]["maxLength"] == MAX_SHORT
    array = next(v for v in props["facts"]["oneOf"] if v["type"] == "array")
    assert array["maxItems"] == MAX_LIST_ITEMS and array["items"]["maxLength"] == MAX_SHORT


def test_the_documented_json_record_is_accepted(sh, home) -> None:
    records = [json.loads(b) for b in blocks("json") if '"title"' in b]
    assert records
    for record in records:
        result = sh("add", "--json", "-", input=json.dumps(record))
        assert result.exit_code == 0, result.stderr
        stored = sh("get", result.stdout.strip(), "--json").json()
        stored = stored[0] if isinstance(stored, list) else stored
        assert stored["title"] == record["title"] and stored["type"] == record["type"]


def test_the_documented_hooks_config_shows_the_defaults() -> None:
    snippet = next(b for b in blocks("toml") if "[hooks]" in b)
    section = tomllib.loads(snippet)["hooks"]
    documented = rules_from_config({k: v for k, v in section.items() if not k.startswith("also_")})
    assert documented == HookRules()


def test_the_documented_settings_entries_are_what_install_writes() -> None:
    from cmem_cli.capture.install_claude import HOOK_EVENTS, merge_settings

    documented = json.loads(next(b for b in blocks("json") if '"hooks"' in b))
    written = merge_settings({}, uninstall=False, executable="/home/me/.local/bin/cmem")
    assert documented == written
    assert set(documented["hooks"]) == set(HOOK_EVENTS)


def test_every_command_in_the_instruction_block_runs(sh, home) -> None:
    """The block Claude reads names real commands: each one, with its placeholders filled in, succeeds."""
    import re
    import shlex

    from cmem_cli.capture.install_claude import INSTRUCTIONS

    assert len(INSTRUCTIONS.strip().splitlines()) <= 12
    first = sh("add", "--type", "decision", "--title", "Use integer cents", "--fact", "floats lose cents")
    assert first.exit_code == 0, first.stderr
    fill = {
        "QUERY": "integer cents",
        "ID": first.stdout.strip(),
        "PATH": "src/money.py",
        "decision|bugfix|discovery|insight|feature": "insight",
        "...": "cents are integers",
    }
    body = INSTRUCTIONS.strip().splitlines()[1:-1]  # inside the BEGIN/END markers
    commands = re.findall(r"`cmem ([^`]+)`", " ".join(" ".join(body).split()))
    assert [c.split()[0] for c in commands] == ["search", "timeline", "get", "add"]
    for command in commands:
        words = [fill.get(w, w) for w in shlex.split(command)]
        result = sh(*words)
        assert result.exit_code == 0, (command, result.stderr)
        assert result.stdout.strip(), command
