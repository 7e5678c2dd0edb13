"""`cmem install AGENT` for Codex CLI, Gemini CLI, Cursor and opencode (Claude Code's own tests are
test_install_claude.py and test_install_mcp.py): the hooks and the MCP server go into each agent's own files,
installing twice changes nothing, and `--uninstall` leaves every file byte for byte as it was. HOME is a temp
dir (the `home` fixture): no real agent config is ever touched. `cmem install --detect` and `cmem doctor` read
what is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import apsw
import pytest

from cmem_cli.capture.agents import NAMES
from tests.agent_fixtures import db_rows

CODEX_TOML = """# my Codex settings
model = "gpt-5-codex"   # the fast one
approval_policy = "on-request"

[mcp_servers.github]
command = "github-mcp-server"
args = ["stdio"]

[profiles.deep]
model_reasoning_effort = "high"
"""
CODEX_HOOKS = {
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh"}]}]}
}
GEMINI_SETTINGS = {
    "theme": "GitHub",
    "mcpServers": {"github": {"command": "github-mcp-server"}},
    "hooks": {
        "BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}]
    },
}
CURSOR_HOOKS = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}
CURSOR_MCP = {"mcpServers": {"linear": {"url": "https://mcp.linear.app/sse"}}}
OPENCODE_JSON = {
    "$schema": "https://opencode.ai/config.json",
    "theme": "opencode",
    "mcp": {"jira": {"type": "remote", "url": "https://x"}},
}


QWEN_SETTINGS = {
    "ui": {"theme": "Qwen Dark"},
    "hooks": {
        "PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
    },
}
DROID_HOOKS = {
    "hooks": {
        "PostToolUse": [
            {"matcher": "Edit|Create", "hooks": [{"type": "command", "command": "prettier --write"}]}
        ]
    }
}
COPILOT_HOOKS = {"version": 1, "hooks": {"postToolUse": [{"type": "command", "bash": "./lint.sh"}]}}


def user_home() -> Path:
    return Path(os.environ["HOME"])


def existing_files(xdg: Path) -> dict[Path, str]:
    """Each agent's config as a person left it: their own layout (tabs, key order, comments), not cmem's."""
    home = user_home()
    return {
        home / ".codex" / "config.toml": CODEX_TOML,
        home / ".codex" / "hooks.json": json.dumps(CODEX_HOOKS, indent="\t"),
        home / ".gemini" / "settings.json": json.dumps(GEMINI_SETTINGS, indent=4) + "\n",
        home / ".cursor" / "hooks.json": json.dumps(CURSOR_HOOKS),
        home / ".cursor" / "mcp.json": json.dumps(CURSOR_MCP, indent=2),
        xdg / "opencode" / "opencode.json": json.dumps(OPENCODE_JSON, indent=2) + "\n",
        home / ".qwen" / "settings.json": json.dumps(QWEN_SETTINGS, indent=2),
        home / ".factory" / "hooks.json": json.dumps(DROID_HOOKS, indent=4) + "\n",
        home / ".factory" / "mcp.json": json.dumps(CURSOR_MCP),
        home / ".copilot" / "mcp-config.json": json.dumps(CURSOR_MCP, indent=2) + "\n",
        home / ".copilot" / "hooks" / "lint.json": json.dumps(COPILOT_HOOKS, indent=2),
        xdg / "kilo" / "kilo.json": json.dumps(OPENCODE_JSON, indent="\t"),
        home / ".cline" / "data" / "settings" / "cline_mcp_settings.json": json.dumps(CURSOR_MCP),
        home / "Documents" / "Cline" / "Hooks" / "PreToolUse": "#!/bin/sh\necho '{\"cancel\": false}'\n",
    }


def write_all(files: dict[Path, str]) -> None:
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes()
        for root in roots
        if root.exists()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


AGENTS = [name for name in NAMES if name != "claude-code"]


@pytest.mark.parametrize("agent", AGENTS)
def test_install_then_uninstall_leaves_every_config_byte_identical(sh, home, tmp_path, agent) -> None:
    xdg = tmp_path / "config"
    write_all(existing_files(xdg))
    before = snapshot(user_home(), xdg)
    installed = sh("install", agent)
    assert installed.exit_code == 0, installed.stderr
    assert snapshot(user_home(), xdg) != before
    again = sh("install", agent)
    assert again.exit_code == 0 and all(line.startswith("unchanged ") for line in again.stdout.splitlines())
    removed = sh("install", agent, "--uninstall")
    assert removed.exit_code == 0, removed.stderr
    after = {path: data for path, data in snapshot(user_home(), xdg).items() if ".cmem-backup-" not in path}
    assert after == before


def test_claude_code_with_its_mcp_server_round_trips_byte_for_byte(sh, home) -> None:
    claude = user_home() / ".claude"
    claude.mkdir(parents=True)
    (claude / "settings.json").write_text('{\n\t"model": "opus",\n\t"env": {"A": "1"}\n}')
    (claude / "CLAUDE.md").write_text("# Mine\n\nNo trailing newline here")
    (user_home() / ".claude.json").write_text('{"numStartups": 3, "mcpServers": {"x": {}}}')
    before = snapshot(user_home())
    assert sh("install", "claude-code", "--mcp").exit_code == 0
    assert snapshot(user_home()) != before
    assert sh("install", "claude-code", "--uninstall").exit_code == 0
    assert {k: v for k, v in snapshot(user_home()).items() if ".cmem-backup-" not in k} == before


@pytest.mark.parametrize("agent", ["claude-code", *AGENTS])
def test_install_into_an_empty_home_and_out_again_leaves_nothing(sh, home, tmp_path, agent) -> None:
    xdg = tmp_path / "config"
    assert sh("install", agent).exit_code == 0
    assert sh("install", agent, "--uninstall").exit_code == 0
    assert snapshot(user_home(), xdg) == {}


@pytest.mark.parametrize("agent", ["claude-code", *AGENTS])
def test_project_scope_round_trips_in_the_current_directory(sh, home, tmp_path, agent) -> None:
    (tmp_path / "README.md").write_text("app\n")
    before = snapshot(tmp_path)
    assert sh("install", agent, "--scope", "project").exit_code == 0
    assert sh("install", agent, "--scope", "project", "--uninstall").exit_code == 0
    assert {k: v for k, v in snapshot(tmp_path).items() if "cmem-home" not in k} == {
        k: v for k, v in before.items() if "cmem-home" not in k
    }


def test_codex_gets_its_hooks_in_hooks_json_and_the_server_as_an_appended_toml_table(
    sh, home, tmp_path
) -> None:
    write_all(existing_files(tmp_path / "config"))
    assert sh("install", "codex").exit_code == 0
    toml_text = (user_home() / ".codex" / "config.toml").read_text()
    assert toml_text.startswith(CODEX_TOML)  # every byte of the person's file stays where it was
    config = tomllib.loads(toml_text)
    assert config["mcp_servers"]["github"] == {"command": "github-mcp-server", "args": ["stdio"]}
    assert config["mcp_servers"]["cmem"]["args"] == ["mcp"]
    assert config["profiles"] == {"deep": {"model_reasoning_effort": "high"}}
    hooks = json.loads((user_home() / ".codex" / "hooks.json").read_text())["hooks"]
    assert hooks["PreToolUse"] == CODEX_HOOKS["hooks"]["PreToolUse"]
    assert sorted(hooks) == ["PostToolUse", "PreToolUse", "SessionStart", "Stop", "UserPromptSubmit"]
    assert hooks["SessionStart"][0]["hooks"][0]["command"].endswith(" hook --agent codex SessionStart")


def test_a_cmem_server_the_person_registered_in_codex_is_theirs(sh, home) -> None:
    path = user_home() / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    mine = '[mcp_servers.cmem]\ncommand = "/opt/cmem/bin/cmem"\nargs = ["mcp"]\n'
    path.write_text(mine)
    assert sh("install", "codex").exit_code == 0
    text = path.read_text()  # theirs kept; cmem's block adds only the trust of its hooks
    assert text.startswith(mine) and text.count("[mcp_servers.cmem]") == 1 and "trusted_hash" in text
    assert sh("install", "codex", "--uninstall").exit_code == 0
    assert path.read_text() == mine


def test_gemini_gets_hooks_and_server_in_settings_json(sh, home, tmp_path) -> None:
    write_all(existing_files(tmp_path / "config"))
    assert sh("install", "gemini").exit_code == 0
    settings = json.loads((user_home() / ".gemini" / "settings.json").read_text())
    assert settings["theme"] == "GitHub" and settings["mcpServers"]["github"] == {
        "command": "github-mcp-server"
    }
    assert settings["mcpServers"]["cmem"]["args"] == ["mcp"]
    assert settings["hooks"]["BeforeTool"] == GEMINI_SETTINGS["hooks"]["BeforeTool"]
    assert sorted(settings["hooks"]) == [
        "AfterAgent",
        "AfterTool",
        "BeforeAgent",
        "BeforeTool",
        "SessionEnd",
        "SessionStart",
    ]
    hook = settings["hooks"]["AfterTool"][0]
    assert hook["matcher"] == "*" and hook["hooks"][0]["timeout"] == 10_000  # milliseconds


def test_cursor_gets_version_1_hooks_and_mcp_json(sh, home, tmp_path) -> None:
    write_all(existing_files(tmp_path / "config"))
    assert sh("install", "cursor").exit_code == 0
    hooks = json.loads((user_home() / ".cursor" / "hooks.json").read_text())
    assert hooks["version"] == 1
    assert hooks["hooks"]["afterFileEdit"][0] == {"command": "./format.sh"}
    assert "beforeShellExecution" not in hooks["hooks"]  # cmem never answers a permission question
    assert hooks["hooks"]["sessionStart"][0]["command"].endswith(" hook --agent cursor sessionStart")
    mcp = json.loads((user_home() / ".cursor" / "mcp.json").read_text())
    assert mcp["mcpServers"]["linear"] == CURSOR_MCP["mcpServers"]["linear"] and "cmem" in mcp["mcpServers"]


def test_no_mcp_installs_the_hooks_alone(sh, home) -> None:
    assert sh("install", "cursor", "--no-mcp").exit_code == 0
    assert (user_home() / ".cursor" / "hooks.json").exists()
    assert not (user_home() / ".cursor" / "mcp.json").exists()


def test_dry_run_prints_the_exact_change_and_writes_nothing(sh, home, tmp_path) -> None:
    write_all(existing_files(tmp_path / "config"))
    before = snapshot(user_home())
    result = sh("install", "codex", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "+# >>> cmem (added by `cmem install codex`" in result.stdout
    assert "+[mcp_servers.cmem]" in result.stdout and "hook --agent codex SessionStart" in result.stdout
    assert snapshot(user_home()) == before


@pytest.mark.parametrize(
    ("agent", "relative", "broken"),
    [
        ("codex", ".codex/config.toml", "model = \n"),
        ("gemini", ".gemini/settings.json", "{not json"),
        ("cursor", ".cursor/hooks.json", '{"version": 2, "hooks": {}}'),
    ],
)
def test_a_config_cmem_cannot_read_is_left_alone_with_a_one_line_error(
    sh, home, agent, relative, broken
) -> None:
    path = user_home() / relative
    path.parent.mkdir(parents=True)
    path.write_text(broken)
    result = sh("install", agent)
    assert result.exit_code == 4
    assert result.stderr.startswith("cmem: ") and len(result.stderr.strip().splitlines()) == 1
    assert path.read_text() == broken
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # nothing else written either


def test_unknown_agent_and_scope_are_one_line_errors(sh, home) -> None:
    for args in (["vim"], ["codex", "--scope", "global"], []):
        result = sh("install", *args)
        assert result.exit_code == 4, args
        assert result.stderr.startswith("cmem: ") and len(result.stderr.strip().splitlines()) == 1


def test_detect_lists_agents_and_what_is_installed(sh, home, tmp_path) -> None:
    (user_home() / ".gemini").mkdir(parents=True)  # Gemini CLI has been run on this machine
    assert sh("install", "codex").exit_code == 0
    rows = sh("install", "--detect", "--json").json()
    user = {row["agent"]: row for row in rows if row["scope"] == "user"}
    assert set(user) == set(NAMES)
    assert user["codex"]["hooks"] == ["PostToolUse", "SessionStart", "Stop", "UserPromptSubmit"]
    assert user["codex"]["mcp"] is True and user["codex"]["problems"] == []
    assert (
        user["gemini"]["found"] is True and user["gemini"]["hooks"] == [] and user["gemini"]["mcp"] is False
    )
    table = sh("install", "--detect")
    assert table.exit_code == 0 and "codex" in table.stdout


def test_doctor_reports_a_broken_and_a_stale_hook_entry(sh, home) -> None:
    assert sh("install", "gemini").exit_code == 0
    assert sh("install", "cursor").exit_code == 0
    healthy = sh("doctor", "--json")
    assert healthy.exit_code == 0, healthy.stdout
    names = {c["name"]: c for c in healthy.json()["checks"]}
    assert names["agent gemini (user)"]["status"] == "ok"

    settings_path = user_home() / ".gemini" / "settings.json"
    settings = json.loads(settings_path.read_text())
    for group in settings["hooks"]["AfterTool"]:
        group["hooks"][0]["command"] = "/nowhere/bin/cmem hook --agent gemini AfterTool"  # cmem moved away
    settings_path.write_text(json.dumps(settings))
    cursor_path = user_home() / ".cursor" / "hooks.json"
    cursor = json.loads(cursor_path.read_text())
    del cursor["hooks"]["stop"]  # an older install
    cursor_path.write_text(json.dumps(cursor))

    result = sh("doctor", "--json")
    assert result.exit_code == 1
    checks = {c["name"]: c for c in result.json()["checks"]}
    assert checks["agent gemini (user)"]["status"] == "fail"
    assert "broken: /nowhere/bin/cmem cannot be run" in checks["agent gemini (user)"]["detail"]
    assert checks["agent cursor (user)"]["status"] == "fail"
    assert "stale: no entry for stop" in checks["agent cursor (user)"]["detail"]
    assert "`cmem install cursor`" in checks["agent cursor (user)"]["detail"]
    assert sh("install", "cursor").exit_code == 0  # the fix it names
    fixed = {c["name"]: c for c in sh("doctor", "--json").json()["checks"]}
    assert fixed["agent cursor (user)"]["status"] == "ok"


def test_the_installed_codex_command_captures_a_prompt(sh, home, tmp_path) -> None:
    assert sh("install", "codex").exit_code == 0
    hooks = json.loads((user_home() / ".codex" / "hooks.json").read_text())["hooks"]
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = {
        "session_id": "codex-installed",
        "transcript_path": None,
        "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "turn_id": "t1",
        "prompt": "hello from codex",
    }
    proc = subprocess.run(
        command, shell=True, input=json.dumps(payload).encode(), capture_output=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == b""
    assert db_rows(home, "SELECT agent, text FROM user_prompts") == [("codex", "hello from codex")]


def wait_for(home: Path, sql: str, expected: list[tuple]) -> list[tuple]:
    """The rows once they are there (the plugin does not wait for the hook it starts), or after 30 s."""
    deadline = time.monotonic() + 30
    rows: list[tuple] = []
    while time.monotonic() < deadline:
        try:
            rows = db_rows(home, sql) if (home / "cmem.db").exists() else []
        except (apsw.BusyError, apsw.SQLError):  # the hook is creating or writing the store right now
            rows = []
        if rows == expected:
            break
        time.sleep(0.1)
    return rows


@pytest.mark.skipif(shutil.which("node") is None, reason="node is needed to load the opencode plugin")
def test_the_opencode_plugin_runs_in_node_and_records_the_session(sh, home, tmp_path) -> None:
    """The plugin file is plain JavaScript: node loads it as it is (copied to .mjs: node 20 needs the
    extension for an ES module) and its hooks, called as opencode calls them, reach `cmem hook`."""
    assert sh("install", "opencode").exit_code == 0
    plugin = tmp_path / "config" / "opencode" / "plugins" / "cmem.js"
    module = tmp_path / "cmem-plugin.mjs"
    module.write_text(plugin.read_text())
    repo = tmp_path / "work" / "shop"
    (repo / ".git").mkdir(parents=True)
    calls = [
        (
            'hooks.event({ event: { type: "session.created", properties: { info: { id: "ses_node" } } } })',
            "SELECT agent, project FROM sessions WHERE session_id = 'ses_node'",
            [("opencode", "shop")],
        ),
        (
            'hooks["chat.message"]({ sessionID: "ses_node" }, { parts: [{ type: "text", text: "why is checkout slow" }] })',
            "SELECT agent, text FROM user_prompts WHERE session = 'ses_node'",
            [("opencode", "why is checkout slow")],
        ),
        (
            'hooks["tool.execute.after"]({ tool: "bash", sessionID: "ses_node", callID: "c1", args: { command: "npm run bench" } },'
            ' { title: "npm run bench", output: "checkout 840ms", metadata: { exit: 0 } })',
            "SELECT agent, title FROM observations WHERE session = 'ses_node'",
            [("opencode", "Ran npm run bench")],
        ),
        (  # an opencode that hands a tool's arguments to tool.execute.before only
            'await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_node", callID: "c2" }, { args: { command: "npm run lint" } });'
            ' hooks["tool.execute.after"]({ tool: "bash", sessionID: "ses_node", callID: "c2" },'
            ' { title: "npm run lint", output: "1 problem", metadata: { exit: 1 } })',
            "SELECT agent, title FROM observations WHERE session = 'ses_node' ORDER BY id",
            [("opencode", "Ran npm run bench"), ("opencode", "Command failed: npm run lint")],
        ),
    ]
    for call, sql, expected in calls:
        source = (
            f"import {{ CmemPlugin }} from {json.dumps(str(module))}\n"
            f"const hooks = await CmemPlugin({{ directory: {json.dumps(str(repo))} }})\n"
            f"await {call}\n"
        )
        proc = subprocess.run(["node", "--input-type=module", "-e", source], capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode()
        assert wait_for(home, sql, expected) == expected


def test_detect_and_doctor_report_codex_hooks_codex_will_not_run(sh, home) -> None:
    """Codex runs a hook only with its trusted_hash in config.toml: install writes it; a hook without one, or
    with one for an older command, is reported (the real client is driven in tests/agents_real)."""
    assert sh("install", "codex").exit_code == 0
    config = user_home() / ".codex" / "config.toml"
    text = config.read_text()
    assert text.count("trusted_hash = ") == 4
    codex = [r for r in sh("install", "--detect", "--json").json() if r["agent"] == "codex"][0]
    assert codex["problems"] == []
    config.write_text(text.replace('trusted_hash = "sha256:', 'trusted_hash = "sha256:0', 1))
    codex = [r for r in sh("install", "--detect", "--json").json() if r["agent"] == "codex"][0]
    assert codex["problems"] == [
        "stale: 1 of cmem's hooks changed since Codex trusted them (Codex skips them)"
    ]
    config.write_text("\n".join(line for line in text.splitlines() if "hooks.state" not in line
                                and "trusted_hash" not in line) + "\n")  # fmt: skip
    doctor = sh("doctor")
    assert (
        doctor.exit_code == 1
        and "untrusted: Codex does not run 4 of cmem's hooks" in doctor.stdout + doctor.stderr
    )
    assert sh("install", "codex").exit_code == 0  # puts the trust back
    codex = [r for r in sh("install", "--detect", "--json").json() if r["agent"] == "codex"][0]
    assert codex["problems"] == []


def test_a_project_s_codex_hooks_wait_for_the_person_to_trust_the_project_and_the_hooks(
    sh, home, tmp_path
) -> None:
    repo = tmp_path / "orders-api"
    (repo / ".git").mkdir(parents=True)
    installed = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "install", "codex", "--scope", "project"],
        cwd=repo, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert installed.returncode == 0 and "trust the folder" in installed.stderr

    def problems() -> list[str]:
        rows = subprocess.run(
            [sys.executable, "-m", "cmem_cli", "install", "--detect", "--json"],
            cwd=repo, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        [row] = [r for r in json.loads(rows.stdout) if r["agent"] == "codex" and r["scope"] == "project"]
        return row["problems"]

    assert problems() == [
        "untrusted: Codex reads this repository's .codex/ only once you trust the project in Codex"
    ]
    config = user_home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[projects.{json.dumps(str(repo))}]\ntrust_level = "trusted"\n')
    assert problems() == ["untrusted: Codex does not run 4 of cmem's hooks until they are trusted"]
