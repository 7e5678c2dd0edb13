"""A scripted model on 127.0.0.1 that the real agent clients talk to instead of their provider.

It speaks the four streaming APIs the harness's clients use: Anthropic Messages (Claude Code,
``ANTHROPIC_BASE_URL``), OpenAI Responses (Codex, a ``[model_providers.X]`` with ``wire_api = "responses"``),
Gemini ``streamGenerateContent`` (Gemini CLI, ``GOOGLE_GEMINI_BASE_URL``) and OpenAI chat completions
(opencode's ``@ai-sdk/openai-compatible`` provider, and the five clients configured with an
OpenAI-compatible endpoint: Kilo Code, Qwen Code, Cline, Copilot CLI, Factory Droid). Each agent turn is replayed from a :class:`Script`: the
n-th request carrying tools after n tool results gets the script's n-th step, so side requests (titles,
routing, token counts) never move the script on. Every request is recorded for the tests to read (the
briefing a client sent, the output a tool returned).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    """One model turn: a tool call (``tool`` one of read, edit, shell) or the final ``answer``."""

    tool: str  # "read" | "edit" | "shell" | "answer"
    path: str = ""
    old: str = ""
    new: str = ""
    command: str = ""
    text: str = ""


def read(path: str) -> Step:
    return Step("read", path=path)


def edit(path: str, old: str, new: str) -> Step:
    return Step("edit", path=path, old=old, new=new)


def shell(command: str) -> Step:
    return Step("shell", command=command)


def answer(text: str) -> Step:
    return Step("answer", text=text)


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    api: str


@dataclass
class ModelServer:
    """The server and the script it plays; ``steps`` is set before each session."""

    steps: list[Step] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ModelServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner._get(self)

            def do_POST(self) -> None:
                owner._post(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def play(self, steps: list[Step]) -> None:
        """The script of the next session; the requests recorded so far are forgotten."""
        with self._lock:
            self.steps = list(steps)
            self.requests = []

    def main_requests(self) -> list[Recorded]:
        """The requests that offered the model tools (the agent's turns, not its side requests)."""
        return [r for r in self.requests if _tools(r)]

    # -- HTTP --------------------------------------------------------------------------------------------

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        if handler.path.rstrip("/").endswith("/models"):
            return _json(handler, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        _json(handler, {}, status=404)

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        if handler.headers.get("Content-Encoding") == "zstd":
            _json(handler, {"error": "zstd not supported"}, status=415)
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = handler.path
        if "count_tokens" in path or ":countTokens" in path:
            return _json(handler, {"input_tokens": 10, "totalTokens": 10})
        api = (
            "anthropic"
            if "/messages" in path
            else "responses"
            if path.rstrip("/").endswith("/responses")
            else "gemini"
            if ":streamGenerateContent" in path or ":generateContent" in path
            else "chat"
            if "/chat/completions" in path
            else "?"
        )
        record = Recorded(path, body, api)
        with self._lock:
            self.requests.append(record)
            step = self._step(record)
        writer: Callable[[BaseHTTPRequestHandler, Recorded, Step | None], None] = {
            "anthropic": _anthropic,
            "responses": _responses,
            "gemini": _gemini,
            "chat": _chat,
        }.get(api, _unknown)
        writer(handler, record, step)

    def _step(self, record: Recorded) -> Step | None:
        """The script's step for a request with tools (None for a side request)."""
        if not _tools(record):
            return None
        done = tool_results(record)
        return self.steps[done] if done < len(self.steps) else answer("Done.")


# -- what a request holds, per API ---------------------------------------------------------------------------


def _tools(record: Recorded) -> list[str]:
    """The names of the tools a request offers."""
    tools = record.body.get("tools") or []
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        if record.api == "gemini":
            names += [d.get("name", "") for d in tool.get("functionDeclarations") or []]
        elif record.api == "chat":
            names.append((tool.get("function") or {}).get("name", ""))
        else:
            names.append(tool.get("name", ""))
    return names


def tool_results(record: Recorded) -> int:
    body = record.body
    if record.api == "anthropic":
        return sum(
            1
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
    if record.api == "responses":
        items = body.get("input") or []
        return sum(
            1
            for i in items
            if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
        )
    if record.api == "gemini":
        return sum(
            1
            for c in body.get("contents") or []
            for p in c.get("parts") or []
            if isinstance(p, dict) and "functionResponse" in p
        )
    if record.api == "chat":
        return sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
    return 0


def request_text(record: Recorded) -> str:
    """Everything a request says to the model, as one string (system prompt, messages, tool results)."""
    return json.dumps(record.body, ensure_ascii=False)


# -- writing answers -------------------------------------------------------------------------------------------


def _json(handler: BaseHTTPRequestHandler, data: Any, status: int = 200) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def _sse(handler: BaseHTTPRequestHandler, events: list[tuple[str | None, Any]]) -> None:
    chunks = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        chunks.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    raw = "".join(chunks).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
    handler.wfile.flush()


def _unknown(handler: BaseHTTPRequestHandler, record: Recorded, step: Step | None) -> None:
    _json(handler, {"error": f"the scripted model does not serve {record.path}"}, status=404)


def _call_id() -> str:
    return uuid.uuid4().hex[:24]


def _side_text(record: Recorded) -> str:
    return "Scripted session"


# Anthropic Messages (Claude Code) ---------------------------------------------------------------------------


def _claude_call(step: Step) -> tuple[str, dict[str, Any]]:
    if step.tool == "read":
        return "Read", {"file_path": step.path}
    if step.tool == "edit":
        return "Edit", {"file_path": step.path, "old_string": step.old, "new_string": step.new}
    return "Bash", {"command": step.command, "description": "Run a command"}


def _anthropic(handler: BaseHTTPRequestHandler, record: Recorded, step: Step | None) -> None:
    model = record.body.get("model", "scripted")
    msg_id = f"msg_{_call_id()}"
    if step is None or step.tool == "answer":
        text = step.text if step is not None else _side_text(record)
        block: dict[str, Any] = {"type": "text", "text": text}
        deltas = [{"type": "text_delta", "text": text}]
        stop = "end_turn"
        start_block: dict[str, Any] = {"type": "text", "text": ""}
    else:
        name, args = _claude_call(step)
        block = {"type": "tool_use", "id": f"toolu_{_call_id()}", "name": name, "input": args}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(args)}]
        stop = "tool_use"
        start_block = {**block, "input": {}}
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if not record.body.get("stream"):
        return _json(
            handler,
            {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [block],
             "stop_reason": stop, "stop_sequence": None, "usage": usage},
        )  # fmt: skip
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start_block}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    _sse(handler, events)


# OpenAI Responses (Codex) -------------------------------------------------------------------------------------


def _codex_item(record: Recorded, step: Step) -> dict[str, Any]:
    tools = _tools(record)
    call_id = f"call_{_call_id()}"
    if step.tool == "edit":
        patch = (
            f"*** Begin Patch\n*** Update File: {step.path}\n@@\n-{step.old}\n+{step.new}\n*** End Patch\n"
        )
        kinds = {t.get("name"): t.get("type") for t in record.body.get("tools") or [] if isinstance(t, dict)}
        if kinds.get("apply_patch") == "custom":
            return {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": call_id}
        if "apply_patch" in tools:
            return _function("apply_patch", {"input": patch}, call_id)
        step = shell(f"apply_patch <<'EOF'\n{patch}EOF")
    command = step.command if step.tool == "shell" else f"cat {step.path}"
    if "exec_command" in tools:
        return _function("exec_command", {"cmd": command}, call_id)
    if "shell_command" in tools:
        return _function("shell_command", {"command": command}, call_id)
    return _function("shell", {"command": ["bash", "-lc", command]}, call_id)


def _function(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": call_id}


def _responses(handler: BaseHTTPRequestHandler, record: Recorded, step: Step | None) -> None:
    resp_id = f"resp_{_call_id()}"
    if step is None or step.tool == "answer":
        text = step.text if step is not None else _side_text(record)
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{_call_id()}",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    else:
        item = _codex_item(record, step)
    usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
             "output_tokens_details": None, "total_tokens": 15}  # fmt: skip
    _sse(
        handler,
        [
            ("response.created", {"type": "response.created", "response": {"id": resp_id}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": {"id": resp_id, "usage": usage}}),
        ],
    )  # fmt: skip


# Gemini streamGenerateContent (Gemini CLI) ------------------------------------------------------------------------


def _gemini_call(step: Step) -> tuple[str, dict[str, Any]]:
    if step.tool == "read":
        return "read_file", {"file_path": step.path}
    if step.tool == "edit":
        return "replace", {"file_path": step.path, "old_string": step.old, "new_string": step.new,
                           "instruction": "Apply the scripted edit"}  # fmt: skip
    return "run_shell_command", {"command": step.command, "description": "Run a command"}


def _schema_answer(schema: Any) -> Any:
    """A value matching a JSON schema (Gemini CLI's side requests ask for JSON: routing, next speaker)."""
    if not isinstance(schema, dict):
        return "scripted"
    kind = str(schema.get("type", "")).lower()
    if "enum" in schema:
        enum = schema["enum"]
        return "user" if "user" in enum else enum[0]
    if kind == "object":
        return {k: _schema_answer(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    return "scripted"


def _gemini(handler: BaseHTTPRequestHandler, record: Recorded, step: Step | None) -> None:
    if step is not None and step.tool != "answer":
        name, args = _gemini_call(step)
        parts: list[dict[str, Any]] = [{"functionCall": {"name": name, "args": args, "id": _call_id()}}]
    else:
        config = record.body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if step is None and schema:
            text = json.dumps(_schema_answer(schema))
        else:
            text = step.text if step is not None else _side_text(record)
        parts = [{"text": text}]
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "scripted",
    }
    if ":streamGenerateContent" in record.path:
        _sse(handler, [(None, chunk)])
    else:
        _json(handler, chunk)


# OpenAI chat completions (opencode, Kilo Code, Qwen Code, Cline, Copilot CLI, Factory Droid) -------------------

# The tool each step calls, by the names the clients offer (the first one a request offers is called).
_CHAT_TOOLS = {
    "read": ("read", "read_file", "view", "Read", "read_files"),
    "edit": ("edit", "replace", "Edit", "editor", "str_replace_editor"),
    "shell": ("bash", "run_shell_command", "Execute", "shell", "run_commands", "Bash"),
}
_PATH = ("filePath", "file_path", "absolute_path", "path")
_OLD = ("oldString", "old_string", "old_str", "old_text")
_NEW = ("newString", "new_string", "new_str", "new_text")


def _schemas(record: Recorded) -> dict[str, dict[str, Any]]:
    """Each offered tool's parameter schema, by name."""
    found: dict[str, dict[str, Any]] = {}
    for tool in record.body.get("tools") or []:
        function = tool.get("function") or {} if isinstance(tool, dict) else {}
        found[function.get("name", "")] = function.get("parameters") or {}
    return found


def _key(props: dict[str, Any], names: tuple[str, ...]) -> str:
    return next((n for n in names if n in props), names[0])


def _chat_call(record: Recorded, step: Step) -> tuple[str, dict[str, Any]]:
    """The offered tool for a step and its arguments, named as that tool's schema names them; other
    required arguments (a description, a risk level) get a plain value of their type."""
    schemas = _schemas(record)
    name = next((n for n in _CHAT_TOOLS[step.tool] if n in schemas), _CHAT_TOOLS[step.tool][0])
    schema = schemas.get(name) or {}
    props: dict[str, Any] = schema.get("properties") or {}
    args: dict[str, Any]
    if name == "read_files":
        args = {"files": [{"path": step.path}]}
    elif name == "run_commands":
        args = {"commands": [step.command]}
    elif step.tool == "read":
        args = {_key(props, _PATH): step.path}
    elif step.tool == "edit":
        args = {_key(props, _PATH): step.path, _key(props, _OLD): step.old, _key(props, _NEW): step.new}
        if name == "str_replace_editor":
            args["command"] = "str_replace"
    else:
        args = {"command": step.command}
    for required in schema.get("required") or []:
        if required not in args:
            value = _schema_answer(props.get(required))
            args[required] = "Run the scripted step" if value == "scripted" else value
    return name, args


def _chat(handler: BaseHTTPRequestHandler, record: Recorded, step: Step | None) -> None:
    chunk_id = f"chatcmpl-{_call_id()}"
    base = {"id": chunk_id, "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
    if step is not None and step.tool != "answer":
        name, args = _chat_call(record, step)
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": f"call_{_call_id()}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]}  # fmt: skip
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": step.text if step is not None else _side_text(record)}
        finish = "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if not record.body.get("stream"):
        message = {k: v for k, v in delta.items() if k != "tool_calls" or v}
        for call in message.get("tool_calls") or []:
            call.pop("index", None)
        return _json(handler, {**base, "object": "chat.completion", "usage": usage,
                               "choices": [{"index": 0, "message": message, "finish_reason": finish}]})  # fmt: skip
    _sse(
        handler,
        [
            (None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            (None, {**base, "choices": [], "usage": usage}),
            (None, "[DONE]"),
        ],
    )
