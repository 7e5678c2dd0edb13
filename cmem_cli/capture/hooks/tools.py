"""Deterministic observations from tool calls: what file was edited or read, what command ran and whether it
failed, what was searched, what a subagent reported. No LLM; the same call always gives the same record.

Shared by the PostToolUse hook and transcript import (a transcript's ``tool_use`` + ``tool_result`` pair is
the same call), so both paths store identical observations.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from cmem_cli.capture.hooks.rules import HookRules

MAX_TITLE_CHARS = 160
MAX_LISTED_FILES = 10

# Commands that only look at things: a success is a discovery, not a change.
_READ_ONLY_HEADS = frozenset(
    [
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "rg",
        "ag",
        "find",
        "fd",
        "tree",
        "wc",
        "file",
        "stat",
        "du",
        "df",
        "ps",
        "top",
        "env",
        "printenv",
        "diff",
        "cmp",
        "jq",
        "yq",
        "sort",
        "uniq",
        "awk",
        "sed",
        "git-status",
        "git-log",
        "git-diff",
        "git-show",
        "git-branch",
        "git-blame",
        "git-remote",
        "ls-files",
        "pip-list",
        "pip-show",
        "npm-ls",
    ]
)
_TEST_WORDS = re.compile(
    r"\b(pytest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|unittest|test|tests|check)\b"
)
_EXIT_CODE = re.compile(r"exit(?:ed with)?(?: non-zero)?(?: status)?(?: code)?[ :]+(-?\d+)", re.IGNORECASE)


class ToolCall:
    """One tool invocation as a hook or a transcript reports it."""

    __slots__ = ("cwd", "error", "input", "interrupted", "name", "response")

    def __init__(
        self,
        name: str,
        input: dict[str, Any] | None = None,
        response: Any = None,
        error: str | None = None,
        interrupted: bool = False,
        cwd: str | None = None,
    ):
        self.name = name
        self.input = input if input is not None else {}
        self.response = response
        self.error = error
        self.interrupted = interrupted
        self.cwd = cwd


class ToolObservation:
    """The record for a tool call and, for calls merged by the rules, the key they are merged on (re-reading a
    file, re-running a search: later calls with the same key are folded into the first one); ``written``:
    the text an Edit or Write put into the file it cites (what the memory is about there: its anchor's
    region; hashed, never stored)."""

    __slots__ = ("record", "repeat_key", "written")

    def __init__(
        self,
        record: dict[str, Any],
        repeat_key: str | None = None,
        written: dict[str, str] | None = None,
    ):
        self.record = record
        self.repeat_key = repeat_key
        self.written = written


# --- small text helpers ------------------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-max(0, limit - 1) :].lstrip()


def one_line(text: str, limit: int = 100) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    more = len([line for line in text.splitlines() if line.strip()]) > 1
    return clip(first + (" …" if more else ""), limit)


def relative_path(path: str, cwd: str | None) -> str:
    """Paths inside the working directory are shown relative to it; others stay as given."""
    if not path or not cwd or not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:  # different drives on Windows
        return path
    return path if rel.startswith("..") else rel


def response_text(response: Any) -> str:
    """The human-readable part of a tool response: plain strings, stdout/stderr, text content blocks."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    if isinstance(response, list):
        return "\n".join(filter(None, (response_text(item) for item in response)))
    if isinstance(response, dict):
        text = response.get("text")
        if response.get("type") == "text" and isinstance(text, str):
            return text
        parts = []
        for key in ("stdout", "stderr", "result", "output", "content", "text", "message"):
            value = response.get(key)
            if isinstance(value, str | list) and value:
                parts.append(response_text(value))
        return "\n".join(p for p in parts if p)
    return str(response)


def _str(value: Any, *, strip: bool = True) -> str:
    if not isinstance(value, str):
        return ""
    return value.strip() if strip else value


# A Read without a limit reads this many lines (Claude Code's default); a cited range stops at line 999,999,999.
READ_DEFAULT_LINES = 2000
MAX_LINE_NUMBER = 999_999_999


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- per-tool builders -------------------------------------------------------------------------------------


def _record(obs_type: str, title: str, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": obs_type, "title": clip(title, MAX_TITLE_CHARS)}
    for key, value in fields.items():
        if value:
            record[key] = value
    return record


def _edit(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    path = _str(call.input.get("file_path") or call.input.get("path"))
    rel = relative_path(path, call.cwd) or "a file"
    edits = call.input.get("edits")
    if isinstance(edits, list):  # MultiEdit
        pairs = [e for e in edits if isinstance(e, dict)]
        title = f"Edited {rel} ({len(pairs)} edit{'s' if len(pairs) != 1 else ''})"
    else:
        pairs = [call.input]
        title = f"Edited {rel}"
    lines: list[str] = []
    written: list[str] = []
    for pair in pairs:
        old, new = _str(pair.get("old_string")), _str(pair.get("new_string"))
        lines += [f"- {line}" for line in old.splitlines()] + [f"+ {line}" for line in new.splitlines()]
        written.append(new)
    facts = ["replaced every occurrence"] if any(p.get("replace_all") is True for p in pairs) else []
    narrative = clip("\n".join(lines), rules.max_output_chars) if rules.max_output_chars else ""
    return ToolObservation(
        _record("change", title, files_modified=[rel] if path else [], facts=facts, narrative=narrative),
        written={rel: "\n".join(written)} if path and any(w.strip() for w in written) else None,
    )


def _write(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    path = _str(call.input.get("file_path"))
    rel = relative_path(path, call.cwd) or "a file"
    created = isinstance(call.response, dict) and call.response.get("type") == "create"
    content = _str(call.input.get("content"), strip=False)
    facts = [f"{len(content.splitlines())} lines"] if content else []
    narrative = clip(content, rules.max_output_chars) if rules.max_output_chars else ""
    return ToolObservation(
        _record(
            "change",
            f"{'Created' if created else 'Wrote'} {rel}",
            files_modified=[rel] if path else [],
            facts=facts,
            narrative=narrative,
        ),
        written={rel: content} if path and content.strip() else None,
    )


def _notebook(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    path = _str(call.input.get("notebook_path"))
    rel = relative_path(path, call.cwd) or "a notebook"
    mode = _str(call.input.get("edit_mode")) or "replace"
    cell = _str(call.input.get("cell_id")) or str(call.input.get("cell_number", "") or "")
    subtitle = f"{mode} cell {cell}".strip()
    source = _str(call.input.get("new_source"))
    narrative = clip(source, rules.max_output_chars) if rules.max_output_chars else ""
    return ToolObservation(
        _record(
            "change",
            f"Edited notebook {rel}",
            subtitle=subtitle,
            files_modified=[rel] if path else [],
            narrative=narrative,
        )
    )


_PATCH_FILE = r"(?m)^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"  # compiled where used (re caches it): most calls never need it


def _apply_patch(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    """Codex's (and opencode's) ``apply_patch``: the patch names the files it adds, updates and deletes."""
    patch = _str(call.input.get("command") or call.input.get("patch") or call.input.get("input"), strip=False)
    files: list[str] = []
    for match in re.finditer(_PATCH_FILE, patch):
        rel = relative_path(match.group(2) or match.group(3), call.cwd)
        if rel not in files:
            files.append(rel)
    if not files:
        title = "Applied a patch"
    elif len(files) == 1:
        title = f"Patched {files[0]}"
    else:
        title = f"Patched {len(files)} files: {', '.join(files[:3])}" + (" …" if len(files) > 3 else "")
    narrative = clip(patch, rules.max_output_chars) if rules.max_output_chars else ""
    return ToolObservation(_record("change", title, files_modified=files, narrative=narrative))


def _read(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    if not rules.capture_reads:
        return None
    path = _str(call.input.get("file_path") or call.input.get("notebook_path") or call.input.get("path"))
    if not path:
        return None
    rel = relative_path(path, call.cwd)
    offset, limit = _int(call.input.get("offset")), _int(call.input.get("limit"))
    subtitle, cited = "", rel
    if offset is not None or limit is not None:
        start = offset or 1
        subtitle = f"lines {start}-{start + limit - 1}" if limit else f"from line {start}"
        end = start + (limit or READ_DEFAULT_LINES) - 1
        if 1 <= start <= end <= MAX_LINE_NUMBER:
            cited = f"{rel}:{start}-{end}"  # the lines read are what the memory is about (its region)
    facts = []
    info = call.response.get("file") if isinstance(call.response, dict) else None
    if isinstance(info, dict) and _int(info.get("totalLines")) is not None:
        facts.append(f"{info['totalLines']} lines")
    return ToolObservation(
        _record("discovery", f"Read {rel}", subtitle=subtitle, files_read=[cited], facts=facts),
        repeat_key=f"read:{path}",
    )


def exit_status(call: ToolCall) -> int | None:
    """The command's exit status when the response or error says so."""
    response = call.response if isinstance(call.response, dict) else {}
    for key in ("exit_code", "exitCode", "returnCode", "return_code", "returncode", "code"):
        value = _int(response.get(key))
        if value is not None:
            return value
    for text in (call.error or "", _str(response.get("stderr"))[:200]):
        match = _EXIT_CODE.search(text)
        if match:
            return int(match.group(1))
    return None


def _command_kind(command: str) -> str:
    words = [w for w in command.split() if "=" not in w or w.startswith("-")]
    head = os.path.basename(words[0]) if words else ""
    pair = f"{head}-{words[1]}" if len(words) > 1 else head
    if head in _READ_ONLY_HEADS or pair in _READ_ONLY_HEADS or _TEST_WORDS.search(command.split("|")[0]):
        return "discovery"
    return "change"


def _bash(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    command = _str(call.input.get("command"))
    if not command:
        return None
    response = call.response if isinstance(call.response, dict) else {}
    status = exit_status(call)
    interrupted = call.interrupted or response.get("interrupted") is True
    failed = bool(call.error) or interrupted or (status is not None and status != 0)
    if not failed and rules.skips_command(command):
        return None
    short = one_line(command, 100)
    description = _str(call.input.get("description"))
    facts = [f"command: {clip(command, 500)}"]
    if status is not None:
        facts.append(f"exit status {status}")
    if interrupted:
        facts.append("interrupted")
    if call.input.get("run_in_background") is True:
        facts.append("run in background")
    stdout = _str(response.get("stdout")) if response else response_text(call.response)
    stderr = _str(response.get("stderr"))
    if failed:
        title = f"Command failed: {short}" if not interrupted else f"Command interrupted: {short}"
        output = "\n".join(p for p in (call.error or "", stderr, stdout) if p)
        obs_type = "error"
    else:
        title = f"Ran {short}"
        output = "\n".join(p for p in (stdout, stderr) if p)
        obs_type = _command_kind(command)
    narrative = f"$ {clip(command, 2_000)}"
    if output and rules.max_output_chars:
        narrative += "\n\n" + tail(output, rules.max_output_chars)
    return ToolObservation(_record(obs_type, title, subtitle=description, facts=facts, narrative=narrative))


def _listed_files(call: ToolCall) -> tuple[list[str], int | None]:
    response = call.response if isinstance(call.response, dict) else {}
    names = response.get("filenames")
    files = (
        [relative_path(n, call.cwd) for n in names if isinstance(n, str)] if isinstance(names, list) else []
    )
    return files, _int(response.get("numFiles"))


def _search_facts(call: ToolCall) -> list[str]:
    files, count = _listed_files(call)
    facts = []
    if count is not None:
        facts.append(f"{count} file{'s' if count != 1 else ''} matched")
    facts += [f"match: {name}" for name in files[:MAX_LISTED_FILES]]
    return facts


def _grep(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    pattern = _str(call.input.get("pattern"))
    path = relative_path(_str(call.input.get("path")), call.cwd)
    where = f" in {path}" if path not in ("", ".") else ""
    glob = _str(call.input.get("glob")) or _str(call.input.get("type"))
    subtitle = f"files: {glob}" if glob else ""
    narrative = ""
    if not _listed_files(call)[0] and rules.max_output_chars:
        narrative = clip(response_text(call.response), rules.max_output_chars)
    return ToolObservation(
        _record(
            "discovery",
            f"Searched code for `{clip(pattern, 80)}`{where}",
            subtitle=subtitle,
            facts=_search_facts(call),
            narrative=narrative,
        ),
        repeat_key=f"grep:{pattern}:{path}:{glob}",
    )


def _glob(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    pattern = _str(call.input.get("pattern"))
    path = relative_path(_str(call.input.get("path")), call.cwd)
    where = f" in {path}" if path else ""
    return ToolObservation(
        _record(
            "discovery", f"Listed files matching `{clip(pattern, 80)}`{where}", facts=_search_facts(call)
        ),
        repeat_key=f"glob:{pattern}:{path}",
    )


def _web_search(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    query = _str(call.input.get("query"))
    facts: list[str] = []
    results = call.response.get("results") if isinstance(call.response, dict) else None
    for item in results if isinstance(results, list) else []:
        for hit in item.get("content", []) if isinstance(item, dict) else []:
            if isinstance(hit, dict) and isinstance(hit.get("url"), str):
                facts.append(f"{clip(_str(hit.get('title')), 120)} <{hit['url']}>".strip())
    narrative = "" if facts else clip(response_text(call.response), rules.max_output_chars)
    return ToolObservation(
        _record(
            "discovery",
            f"Searched the web for {clip(query, 100)!r}",
            facts=facts[:MAX_LISTED_FILES],
            narrative=narrative,
        ),
        repeat_key=f"websearch:{query}",
    )


def _web_fetch(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    url = _str(call.input.get("url"))
    prompt = _str(call.input.get("prompt"))
    narrative = clip(response_text(call.response), rules.max_output_chars) if rules.max_output_chars else ""
    return ToolObservation(
        _record(
            "discovery",
            f"Fetched {clip(url, 140)}",
            subtitle=clip(prompt, 300),
            narrative=narrative,
            facts=[f"url: {url}"] if url else [],
        ),
        repeat_key=f"fetch:{url}:{prompt}",
    )


def _task(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    agent = _str(call.input.get("subagent_type")) or "subagent"
    description = _str(call.input.get("description")) or one_line(_str(call.input.get("prompt")), 80)
    result = response_text(call.response)
    parts = []
    if _str(call.input.get("prompt")):
        parts.append("Task: " + clip(_str(call.input.get("prompt")), rules.max_output_chars))
    if result:
        parts.append("Result: " + clip(result, rules.max_output_chars * 2))
    return ToolObservation(
        _record(
            "discovery",
            f"Delegated to {agent}: {description}",
            narrative="\n\n".join(parts) if rules.max_output_chars else "",
        )
    )


def _plan(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    plan = _str(call.input.get("plan"))
    if not plan:
        return None
    return ToolObservation(
        _record(
            "decision",
            f"Plan: {one_line(plan.lstrip('# '), 120)}",
            narrative=clip(plan, max(rules.max_output_chars * 4, 1)),
        )
    )


def _question(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    questions = call.input.get("questions")
    texts = (
        [_str(q.get("question")) for q in questions if isinstance(q, dict)]
        if isinstance(questions, list)
        else [_str(call.input.get("question"))]
    )
    texts = [t for t in texts if t]
    if not texts:
        return None
    answer = response_text(call.response)
    return ToolObservation(
        _record(
            "question",
            f"Asked: {one_line(texts[0], 140)}",
            facts=texts[1:],
            narrative=clip(answer, rules.max_output_chars),
        )
    )


def _input_summary(data: dict[str, Any]) -> str:
    for key in ("query", "url", "file_path", "path", "name", "command", "prompt", "title", "id"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return one_line(value, 80)
    return ""


def _generic(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    name = call.name
    if name.startswith("mcp__"):
        _, _, rest = name.partition("__")
        server, _, tool = rest.partition("__")
        label = f"Called {server} {tool}".strip() if tool else f"Called {server}"
    elif name == "SlashCommand":
        label = "Ran slash command"
    elif name == "Skill":
        label = "Used skill"
    else:
        label = f"Used {name}"
    summary = _input_summary(call.input)
    title = f"{label}: {summary}" if summary else label
    parts = []
    if call.input and rules.max_output_chars:
        parts.append(
            "Input: " + clip(json.dumps(call.input, ensure_ascii=False, default=str), rules.max_output_chars)
        )
    output = response_text(call.response)
    if output and rules.max_output_chars:
        parts.append("Output: " + clip(output, rules.max_output_chars))
    return ToolObservation(_record("discovery", title, narrative="\n\n".join(parts)))


BUILDERS: dict[str, Callable[[ToolCall, HookRules], ToolObservation | None]] = {
    "Edit": _edit,
    "MultiEdit": _edit,
    "Write": _write,
    "NotebookEdit": _notebook,
    "apply_patch": _apply_patch,
    "Read": _read,
    "NotebookRead": _read,
    "Bash": _bash,
    "Grep": _grep,
    "Glob": _glob,
    "WebSearch": _web_search,
    "WebFetch": _web_fetch,
    "Task": _task,
    "Agent": _task,
    "ExitPlanMode": _plan,
    "AskUserQuestion": _question,
}


def _mark_failed(obs: ToolObservation, call: ToolCall, rules: HookRules) -> ToolObservation:
    """A non-Bash tool that failed (an Edit whose old text no longer matched...) is an error observation."""
    record = dict(obs.record)
    record["type"] = "error"
    record["title"] = clip(f"{call.name} failed: {record['title']}", MAX_TITLE_CHARS)
    detail = call.error or response_text(call.response) or ("interrupted" if call.interrupted else "")
    if detail:
        record["facts"] = [*record.get("facts", []), f"error: {one_line(detail, 300)}"]
        record["narrative"] = clip(detail, rules.max_output_chars or 300)
    # A failed edit modified nothing.
    record.pop("files_modified", None)
    return ToolObservation(record, repeat_key=None)


# cmem's own MCP tools (the server `cmem install` registers is named "cmem"): a lookup in memory is not
# something to remember, and recorded it became the top hit for the next question ("Called cmem search:
# jwt"). Skipped whatever the [hooks] rules say, as `cmem` commands in Bash are by default.
OWN_MCP_TOOLS = "mcp__cmem__"


def build_observation(call: ToolCall, rules: HookRules) -> ToolObservation | None:
    """The observation for one tool call, or None when the rules say it is noise (or it is cmem's own)."""
    if not call.name or call.name.startswith(OWN_MCP_TOOLS) or rules.skips_tool(call.name):
        return None
    builder = BUILDERS.get(call.name, _generic)
    obs = builder(call, rules)
    if obs is None:
        return None
    if call.name != "Bash" and (call.error or call.interrupted):
        obs = _mark_failed(obs, call, rules)
    obs.record["tools_used"] = [call.name]
    if obs.repeat_key is not None and rules.merge_repeats == "off":
        obs.repeat_key = None
    return obs
