"""`cmem mcp` driven as MCP clients drive it: a real server process, the official SDK's stdio client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

TOOLS = {"search", "timeline", "get", "remember", "context", "projects", "invalidate", "restore"}


def with_server(body: Callable[[Client], Awaitable[Any]], *, cwd: Path | None = None) -> Any:
    """Start `python -m cmem_cli mcp` (home from the test's CMEM_HOME), run ``body`` against it, stop it."""

    async def main() -> Any:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "cmem_cli", "mcp"], env=dict(os.environ), cwd=cwd
        )
        async with Client(params, read_timeout_seconds=60) as client:
            return await body(client)

    return anyio.run(main)


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_lists_the_tools_with_progressive_disclosure_descriptions(home):
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools, client.instructions

    tools, instructions = with_server(body)
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == TOOLS
    assert by_name["search"].description.startswith("Step 1 of 3")
    assert "`get`" in by_name["search"].description and "~tokens" in by_name["search"].description
    assert by_name["timeline"].description.startswith("Step 2 of 3")
    assert by_name["get"].description.startswith("Step 3 of 3")
    assert by_name["search"].annotations.read_only_hint is True
    assert by_name["remember"].annotations.read_only_hint is False
    assert set(by_name["search"].input_schema["properties"]) == {
        "query", "project", "all_projects", "type", "concept", "file", "agent", "session", "since", "until",
        "limit", "offset", "order", "mode", "rerank", "min_score", "collections", "explain", "branch",
        "machine", "team",
    }  # fmt: skip
    assert by_name["get"].input_schema["required"] == ["ids"]
    assert "search" in instructions and "cmem://observation/" in instructions


def test_each_tool_answers_with_text_and_structured_content(home):
    async def body(client: Client) -> dict[str, Any]:
        out = {}
        out["remember"] = await client.call_tool(
            "remember",
            {"title": "Chose WAL for the store", "type": "decision", "facts": ["readers never block"],
             "project": "demo"},
        )  # fmt: skip
        await client.call_tool("remember", {"title": "Busy timeout set to 5 s", "project": "demo"})
        out["search"] = await client.call_tool("search", {"query": "WAL", "project": "demo"})
        out["timeline"] = await client.call_tool("timeline", {"anchor": 1, "after": 1})
        out["get"] = await client.call_tool("get", {"ids": [1]})
        out["context"] = await client.call_tool("context", {"project": "demo", "budget": 300})
        uri = out["remember"].structured_content["uri"]
        out["resource"] = await client.read_resource(uri)
        return out

    out = with_server(body)
    assert not any(getattr(r, "is_error", False) for r in out.values())
    remembered = out["remember"].structured_content
    assert remembered["id"] == 1 and remembered["uri"] == f"cmem://observation/{remembered['uid']}"

    [hit] = out["search"].structured_content["hits"]
    assert (hit["id"], hit["title"], hit["uri"]) == (1, "Chose WAL for the store", remembered["uri"])
    assert (
        text_of(out["search"])
        == f"1 {hit['created_at'][:10]} decision Chose WAL for the store [demo] ~{hit['tokens']}t"
    )

    items = out["timeline"].structured_content["items"]
    assert [(i["id"], i["anchor"]) for i in items] == [(1, True), (2, False)]
    assert text_of(out["timeline"]).splitlines()[0].startswith("> 1 ")

    [record] = out["get"].structured_content["records"]
    assert record["facts"] == ["readers never block"] and record["retrieval_count"] == 1
    assert "- readers never block" in text_of(out["get"])

    assert out["context"].structured_content["tokens"] <= 300
    assert "Chose WAL for the store" in text_of(out["context"])
    assert text_of(out["context"]).splitlines()[-1].startswith("Drill down with the cmem tools: `search`")

    [contents] = out["resource"].contents
    assert contents.mime_type == "text/markdown" and "# Chose WAL for the store" in contents.text


BAD_CALLS = [
    ("search", {"query": "x", "limit": "many"}, "invalid argument limit: Input should be a valid integer"),
    (
        "search",
        {"query": "x", "limit": 0},
        "invalid argument limit: Input should be greater than or equal to 1",
    ),
    ("search", {"query": "x", "type": ["nonsense"]}, "unknown type 'nonsense'"),
    ("search", {"query": "x", "mode": "psychic"}, "unknown search mode 'psychic'"),
    ("get", {}, "invalid argument ids: Field required"),
    ("get", {"ids": ["999"]}, "no observation with id 999"),
    ("get", {"ids": ["twelve"]}, "not an id: 'twelve'"),
    ("get", {"ids": ["1\x00"]}, "not an id: '1\\x00'"),
    ("get", {"ids": ["notes/a\x00.md:1"]}, "not an id"),
    ("timeline", {"anchor": "1", "query": "x"}, "give an anchor id or a query, not both"),
    ("remember", {"title": ""}, "title"),
    ("remember", {"title": "t", "type": "gossip"}, "unknown type 'gossip'"),
    ("context", {"budget": 1}, "invalid argument budget: Input should be greater than or equal to 50"),
]


def test_bad_arguments_give_a_one_line_tool_error_and_the_server_keeps_serving(home):
    async def body(client: Client) -> Any:
        bad = [await client.call_tool(tool, arguments) for tool, arguments, _ in BAD_CALLS]
        after = await client.call_tool("remember", {"title": "still serving", "project": "demo"})
        return bad, after

    bad, after = with_server(body)
    for (tool, arguments, reason), result in zip(BAD_CALLS, bad, strict=True):
        message = text_of(result)
        assert result.is_error is True, (tool, arguments)
        assert reason in message, (tool, arguments, message)
        assert "\n" not in message and "Traceback" not in message, message
    assert after.is_error is False and after.structured_content["id"] == 1
    assert len(list((home / "export").rglob("*.md"))) == 1  # only the good call wrote a file


def test_unknown_uid_resource_is_not_found_not_an_internal_error(home):
    """The MCP revision the SDK speaks answers a missing resource with -32602 (SEP-2164; the older -32002
    is retired); -32603 would say the server broke."""

    async def body(client: Client) -> Any:
        from mcp.shared.exceptions import MCPError

        failures = []
        for uri in ("cmem://observation/01ABCDEFGHJKMNPQRSTVWXYZ00", "cmem://observation/not..a/uid"):
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                failures.append((exc.code, str(exc)))
        return failures, await client.call_tool("search", {})

    failures, after = with_server(body)
    assert [code for code, _ in failures] == [-32602, -32602]
    assert "no observation with uid 01ABCDEFGHJKMNPQRSTVWXYZ00" in failures[0][1]
    assert after.is_error is False


def test_every_tool_parameter_is_described(home):
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    undescribed = [
        f"{tool.name}.{name}"
        for tool in with_server(body)
        for name, schema in tool.input_schema["properties"].items()
        if not schema.get("description")
    ]
    assert undescribed == []


def test_list_parameters_take_a_plain_string_as_a_list_of_one(home):
    async def body(client: Client) -> Any:
        await client.call_tool(
            "remember", {"title": "Pin apsw", "type": "decision", "facts": "3.46 broke it", "project": "demo"}
        )
        await client.call_tool("remember", {"title": "Fix the pool", "type": "bugfix", "project": "demo"})
        return await client.call_tool("search", {"type": "decision", "project": "demo"})

    found = with_server(body)
    assert found.is_error is False
    assert [hit["title"] for hit in found.structured_content["hits"]] == ["Pin apsw"]


def test_outside_a_repository_the_server_lists_projects_and_asks_which(home, tmp_path):
    """Desktop clients start the server in `/`: no repository names a project there, so `remember` needs
    one, `projects` says which exist, and `context` briefs on every project (and says so)."""

    async def body(client: Client) -> Any:
        await client.call_tool("remember", {"title": "Chose WAL", "project": "web"})
        await client.call_tool("remember", {"title": "Pool size 20", "project": "api"})
        await client.call_tool("remember", {"title": "Busy timeout", "project": "api"})
        return (
            await client.call_tool("projects", {}),
            await client.call_tool("context", {}),
            await client.call_tool("remember", {"title": "Where does this go?"}),
        )

    projects, context, remember = with_server(body, cwd=Path("/"))
    listed = projects.structured_content["projects"]
    assert [(p["project"], p["observations"]) for p in listed] == [("api", 2), ("web", 1)]
    assert text_of(projects).splitlines()[0].startswith("api: 2 observations")
    assert remember.is_error is True
    assert text_of(remember).endswith(
        ": no project: the server runs outside a git repository; pass project (known: api, web)"
    )
    assert context.is_error is False
    assert text_of(context).startswith("# cmem memory, all projects\n")
    assert all(title in text_of(context) for title in ("Chose WAL", "Pool size 20", "Busy timeout"))
    assert context.structured_content["project"] is None
    assert context.structured_content["notes"] == [
        "scope: all projects (not inside a git repository); pass project for one"
    ]


def test_remember_is_seen_by_cmem_search(home, sh):
    async def body(client: Client) -> Any:
        return await client.call_tool(
            "remember", {"title": "Flaky test was a timezone bug", "type": "bugfix", "project": "demo"}
        )

    result = with_server(body)
    assert result.is_error is False
    found = sh("search", "timezone", "--json")
    assert found.exit_code == 0, found.stderr
    assert [(r["id"], r["title"], r["agent"]) for r in found.json()] == [
        (1, "Flaky test was a timezone bug", "mcp")
    ]


def test_remember_strips_private_text_like_cmem_add(home):
    async def body(client: Client) -> Any:
        await client.call_tool(
            "remember",
            {"title": "Deploy", "narrative": "token <private>s3cr3t</private> rotated", "project": "p"},
        )
        return await client.call_tool("get", {"ids": ["1"]})

    record = with_server(body).structured_content["records"][0]
    assert "s3cr3t" not in record["narrative"]
    assert not [p for p in (home / "export").rglob("*.md") if "s3cr3t" in p.read_text()]


def test_searches_while_another_process_adds_see_every_committed_write(home, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(
        "from cmem_cli.__main__ import main\n"
        "for i in range(40):\n"
        "    assert main(['add', '--title', f'concurrent note {i}', '--project', 'load']) == 0\n"
    )

    async def body(client: Client) -> Any:
        writer = subprocess.Popen([sys.executable, str(script)], env=os.environ, stderr=subprocess.PIPE)
        counts, errors = [], []
        while writer.poll() is None:
            result = await client.call_tool("search", {"query": "concurrent", "limit": 200})
            errors += [text_of(result)] if result.is_error else []
            counts.append(len(result.structured_content["hits"]) if not result.is_error else -1)
        final = await client.call_tool("search", {"query": "concurrent", "limit": 200})
        return writer.returncode, writer.stderr.read(), counts, errors, final

    code, stderr, counts, errors, final = with_server(body)
    assert code == 0, stderr
    assert errors == []
    assert len(counts) >= 2  # the searches did overlap the writes
    assert counts == sorted(counts)  # a search never loses what an earlier one saw
    assert len(final.structured_content["hits"]) == 40


def test_the_server_opens_no_network_socket_and_loads_no_model_runtime(home, tmp_path):
    """After a search, the server process holds no socket and has not imported numpy or llama.cpp."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys, os, anyio\n"
        "from mcp import Client\n"
        "from cmem_cli.core.config import load_config\n"
        "from cmem_cli.mcp.server import build_server\n"
        "server, tools = build_server(load_config())\n"
        "async def main():\n"
        "    async with Client(server) as client:\n"
        "        r = await client.call_tool('search', {'query': 'anything'})\n"
        "        assert not r.is_error, r\n"
        "anyio.run(main)\n"
        "fds = [os.readlink(f'/proc/self/fd/{fd}') for fd in os.listdir('/proc/self/fd')\n"
        "       if os.path.exists(f'/proc/self/fd/{fd}')]\n"
        "inet = [l for name in ('tcp', 'tcp6', 'udp', 'udp6') for l in open(f'/proc/net/{name}').read().splitlines()[1:]]\n"
        "print(sorted({'numpy', 'llama_cpp', 'watchdog'} & set(sys.modules)))\n"
        "inodes = {f.split('[')[1].rstrip(']') for f in fds if f.startswith('socket:[')}\n"
        "print(sorted(i for i in inodes if any(l.split()[9] == i for l in inet)))\n"
    )
    proc = subprocess.run(
        [sys.executable, str(probe)], capture_output=True, text=True, env=os.environ, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "[]"]


def test_a_crash_inside_a_tool_is_one_line_for_the_client_and_on_stderr(home, monkeypatch, capsys):
    from cmem_cli.core.config import load_config
    from cmem_cli.mcp.server import build_server

    server, tools = build_server(load_config())

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("cmem_cli.api.Memory.search", broken)

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("search", {"query": "x"}), await client.call_tool("context", {})

    crashed, after = anyio.run(main)
    tools.close()
    assert crashed.is_error is True
    assert text_of(crashed) == "search failed inside cmem (details on the server's stderr)"
    assert after.is_error is False
    err = capsys.readouterr().err
    assert err == "cmem: mcp tool search failed: RuntimeError: disk on fire\n"


def test_timeline_keeps_one_machines_items_around_the_anchor(sh, home):
    for machine, title in (
        ("laptop", "Chose WAL"),
        ("desk", "Cache in redis"),
        ("laptop", "Busy timeout 5 s"),
    ):
        assert sh("add", title, "--project", "demo", env={"CMEM_MACHINE": machine}).exit_code == 0

    async def body(client: Client) -> Any:
        return await client.call_tool("timeline", {"anchor": 1, "machine": "laptop"})

    items = with_server(body).structured_content["items"]
    assert [(i["title"], i["machine"]) for i in items] == [
        ("Chose WAL", "laptop"),
        ("Busy timeout 5 s", "laptop"),
    ]


def test_the_input_schema_states_exactly_what_each_tool_accepts(home):
    """A value the schema forbids is refused by the tool, and a value the tool takes the schema allows: a
    plain string for a list (a list of one), but no boolean or text for a number and no number for a flag."""
    import jsonschema

    probes: list[Any] = ["decision", ["decision"], 3, 2.5, True, "3", None, {"a": 1}]

    async def body(client: Client) -> list[tuple[str, str, Any, bool, bool]]:
        await client.call_tool("remember", {"title": "Pin apsw", "type": "decision", "project": "demo"})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        found = []
        bases: dict[str, dict[str, Any]] = {
            "search": {"project": "demo"},
            "timeline": {"anchor": 1},
            "get": {"ids": [1]},
            "remember": {"title": "t", "project": "demo"},
            "context": {"project": "demo"},
            "invalidate": {"id": 1},
            "restore": {"id": 1},
        }
        for name, base in bases.items():
            schema = tools[name].input_schema
            for argument in schema["properties"]:
                for value in probes:
                    arguments = {**base, argument: value}
                    allowed = jsonschema.Draft202012Validator(schema).is_valid(arguments)
                    result = await client.call_tool(name, arguments)
                    text = " ".join(getattr(block, "text", "") for block in result.content)
                    refused = bool(result.is_error) and text.startswith("invalid argument")
                    found.append((name, argument, value, allowed, not refused))
        return found

    disagree = [(n, a, v, allowed) for n, a, v, allowed, taken in with_server(body) if allowed != taken]
    assert disagree == [], "\n".join(map(repr, disagree))


def test_invalidate_and_restore_take_a_memory_out_of_search_and_back(home):
    async def body(client: Client) -> dict[str, Any]:
        out = {}
        await client.call_tool(
            "remember", {"title": "Bcrypt cost is 10", "type": "decision", "project": "demo"}
        )
        out["invalidate"] = await client.call_tool("invalidate", {"id": 1, "reason": "raised to 12"})
        out["gone"] = await client.call_tool("search", {"query": "bcrypt", "project": "demo"})
        out["get"] = await client.call_tool("get", {"ids": [1]})
        out["restore"] = await client.call_tool("restore", {"id": 1})
        out["back"] = await client.call_tool("search", {"query": "bcrypt", "project": "demo"})
        out["unknown"] = await client.call_tool("invalidate", {"id": 99})
        return out

    out = with_server(body)
    assert out["invalidate"].structured_content["invalidated"] == "raised to 12"
    assert out["gone"].structured_content["hits"] == []
    [record] = out["get"].structured_content["records"]
    assert record["invalidated"] == "raised to 12"
    assert text_of(out["get"]).startswith("<!-- invalidated: raised to 12.")
    assert out["restore"].structured_content["invalidated"] is None
    assert [h["id"] for h in out["back"].structured_content["hits"]] == [1]
    assert out["unknown"].is_error and "99" in text_of(out["unknown"])


def test_the_handshake_is_answered_without_waiting_for_the_sdk(home, tmp_path):
    """An SDK that never finishes importing (a stand-in `mcp` package that sleeps) does not hold up
    `initialize`, `tools/list` or `ping`: their answers are the SDK's own, recorded (handshake.json)."""
    from cmem_cli.mcp.handshake import load

    slow = tmp_path / "slow-sdk" / "mcp"
    slow.mkdir(parents=True)
    (slow / "__init__.py").write_text("import time\ntime.sleep(120)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(slow.parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    client = {"name": "test", "version": "1"}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]  # fmt: skip
    try:
        answers = []
        for request in requests:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            if "id" in request:
                answers.append(json.loads(proc.stdout.readline()))
    finally:
        proc.kill()
        proc.wait()
    recorded = load()["2025-06-18"]
    assert answers == [
        {"jsonrpc": "2.0", "id": 1, "result": recorded["initialize"]},
        {"jsonrpc": "2.0", "id": "two", "result": recorded["tools/list"]},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
    ]
    assert recorded["initialize"]["protocolVersion"] == "2025-06-18"
    assert {tool["name"] for tool in recorded["tools/list"]["tools"]} == TOOLS
