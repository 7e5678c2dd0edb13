"""What the hooks captured, folded: one line for a session's file reads, one for its searches, one for its
edits, one for its test runs and one for its other commands, instead of a line per call.

An agent that read 25 files leaves 25 observations ("Read src/orders/a.ts", ...). They are worth keeping
(search finds which session touched a file) but not worth 25 lines of the briefing a new session reads:
"read 25 files under src/orders/" says the same in one, as "ran the tests 8 times, last run failed:
tests/test_reset.py" does for eight test runs and "3 commits, 4 scratch commands" for seven commands. A
test run folds whether it passed or failed (the line says how the last one ended); any other call that
failed stays single (an error is news), and so does anything an agent or a person recorded on purpose.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

R = TypeVar("R", bound=Mapping[str, Any])  # the observations folded (the briefing's candidates)

if TYPE_CHECKING:
    from cmem_cli.services.read.briefing_types import ActivityLine, CommandsFold, TestsFold


# Which hook-captured tool calls fold, and into what.
FOLDS = {
    "Read": "read",
    "NotebookRead": "read",
    "Grep": "search",
    "Glob": "search",
    "WebSearch": "search",
    "WebFetch": "search",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
}
MIN_FOLD = 2  # a single read stays one line of its own
SHOWN_QUERIES = 4
SHOWN_COMMANDS = 3
SHOWN_FILES = 3  # files named one by one when they share no folder; more are counted by top folder
SHOWN_FAILURES = 2
_QUOTED = re.compile(r"`([^`]+)`|'([^']+)'|\"([^\"]+)\"")

# The hook's titles of a Bash call (cmem_cli.capture.hooks.tools): "Ran CMD", "Command failed: CMD".
_BASH_TITLE = re.compile(r"^(?:Ran|Command failed:|Command interrupted:) (.*)$", re.S)
# A command that runs a test suite (the first command of a pipeline or a chain that runs one counts).
_TEST_RUN = re.compile(
    r"(?:^|[\s;&|(/])(?:pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest)(?=[\s;&|)]|$)"
    r"|-m\s+(?:pytest|unittest)\b"
    r"|\b(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test\b"
    r"|\b(?:go|cargo|dotnet|mix|deno|zig|swift|mvn|gradle|\./gradlew)\s+test\b"
    r"|\bmake\s+(?:test|check)\b"
)
_COMMIT = re.compile(r"^(?:\S+=\S*\s+)*git(?:\s+-[cC]\s+\S+)*\s+commit\b")
# Throwaway code run inline: `python -c ...`, `python - <<EOF`, `node -e ...`.
_SCRATCH = re.compile(
    r"^(?:\S+=\S*\s+)*(?:\S*/)?(?:python[\d.]*|node|ruby|perl|php|deno|bun|bash|sh|zsh)\s+(?:-[ceE]\b|-\s|-$)"
)
# Where a failing test run names what failed: pytest's "FAILED path::test", jest's "FAIL path", go's
# "--- FAIL: TestName", a traceback's "path:line: Error".
_FAILED_TEST = re.compile(
    r"^(?:FAILED|ERROR)\s+([^\s:]+)(?:::|\s|$)|^FAIL\s+(\S+)|^--- FAIL: (\S+)|^([\w./-]+\.\w+):\d+: \w*Error",
    re.M,
)
_TEST_TARGET = re.compile(r"(?:^|\s)((?:[\w.-]+/)*[\w.-]*test[\w.-]*\.\w+)(?:::\S+)?(?=\s|$)")


def command_of(row: Mapping[str, Any]) -> str | None:
    """The command of a hook-captured Bash call, from its title (None for anything else)."""
    if (row.get("tools_used") or []) != ["Bash"]:
        return None
    match = _BASH_TITLE.match(row.get("title") or "")
    return match.group(1).strip() if match else None


def command_kind(command: str) -> str:
    """``test``, ``commit``, ``scratch`` or ``other`` for a shell command."""
    if _TEST_RUN.search(command.split("|")[0]):
        return "test"
    if _COMMIT.search(command):
        return "commit"
    if _SCRATCH.search(command):
        return "scratch"
    return "other"


def fold_kind(row: Mapping[str, Any]) -> str | None:
    """``read``, ``search``, ``edit``, ``test`` or ``command`` for a hook-captured call that folds; None for
    anything else (recorded on purpose, a failed call that is not a test run)."""
    tools = row.get("tools_used") or []
    if len(tools) != 1:
        return None
    command = command_of(row)
    if command is not None:
        if command_kind(command) == "test":
            return "test"  # a failing run folds too: the line says how the last one ended
        return None if row.get("type") == "error" else "command"
    if row.get("type") == "error":
        return None
    return FOLDS.get(tools[0])


def fold(
    rows: Sequence[R], output_of: Callable[[int], str] | None = None
) -> tuple[list[ActivityLine], list[R]]:
    """``rows`` (newest first) split into folded lines, one per session and kind with at least
    ``MIN_FOLD`` calls (newest session first), and the rows left single. ``output_of(id)``: the stored
    narrative of a call (read only for the last test run of a session that failed, to say what failed)."""
    groups: dict[tuple[str, str], list[R]] = {}
    for row in rows:
        kind = fold_kind(row)
        if kind is not None:
            groups.setdefault((row.get("session") or "", kind), []).append(row)
    folded_ids: set[int] = set()
    lines: list[ActivityLine] = []
    for (session, kind), members in groups.items():
        if len(members) < MIN_FOLD:
            continue
        folded_ids.update(r["id"] for r in members)
        lines.append(_line(session, kind, members, output_of))
    lines.sort(key=lambda line: line["last_at"], reverse=True)
    return lines, [r for r in rows if r["id"] not in folded_ids]


def _line(
    session: str, kind: str, members: Sequence[Mapping[str, Any]], output_of: Callable[[int], str] | None
) -> ActivityLine:
    ids = sorted(r["id"] for r in members)
    entry: ActivityLine = {"session": session or None, "kind": kind, "count": len(members), "ids": ids,
                             "first_at": min(r["created_at"] for r in members),
                             "last_at": max(r["created_at"] for r in members)}  # fmt: skip
    if kind == "test":
        cast("dict[str, object]", entry).update(_tests(members, output_of))  # its keys, in their order
    elif kind == "command":
        cast("dict[str, object]", entry).update(_commands(members))
    elif kind == "search":
        queries = list(dict.fromkeys(_query(r.get("title") or "") for r in reversed(members)))
        entry["queries"] = queries
        shown = ", ".join(f"`{q}`" for q in queries[:SHOWN_QUERIES])
        more = f" and {len(queries) - SHOWN_QUERIES} more" if len(queries) > SHOWN_QUERIES else ""
        entry["text"] = f"searched {len(members)} times: {shown}{more}"
    else:
        field = "files_read" if kind == "read" else "files_modified"
        files = list(dict.fromkeys(f for r in members for f in r.get(field) or []))
        entry["files"] = len(files)
        verb = "read" if kind == "read" else "edited"
        count = len(files) or len(members)
        place = where(files)
        entry["text"] = f"{verb} {count} file{'s' if count != 1 else ''}" + (
            f" {place}" if place.startswith("under") else place
        )
    return entry


def _tests(members: Sequence[Mapping[str, Any]], output_of: Callable[[int], str] | None) -> TestsFold:
    """``ran the tests 8 times, 3 failed, last run failed: tests/test_reset.py``"""
    ordered = sorted(members, key=lambda r: (r["created_at"], r["id"]))
    failed = [r for r in ordered if r.get("type") == "error"]
    last = ordered[-1]
    last_failed = last.get("type") == "error"
    text = f"ran the tests {len(members)} times"
    if failed and not (last_failed and len(failed) == 1):
        text += f", {len(failed)} failed"
    what: list[str] = []
    if last_failed:
        what = failed_tests(command_of(last) or "", output_of(last["id"]) if output_of else "")
        text += ", last run failed" + (f": {', '.join(what)}" if what else "")
    else:
        text += ", last run passed"
    return {"failed": len(failed), "last_failed": last_failed, "failing": what, "text": text}


def failed_tests(command: str, output: str) -> list[str]:
    """What a failed test run names as failing (its output's test files or tests, else the test file its
    command ran), at most ``SHOWN_FAILURES``; empty when neither says."""
    found: list[str] = []
    for match in _FAILED_TEST.finditer(output or ""):
        name = next(g for g in match.groups() if g)
        if name not in found:
            found.append(name)
    if not found:
        found = list(dict.fromkeys(m.group(1) for m in _TEST_TARGET.finditer(command)))
    shown = [f[:80] for f in found[:SHOWN_FAILURES]]
    if len(found) > SHOWN_FAILURES:
        shown[-1] += f" and {len(found) - SHOWN_FAILURES} more"
    return shown


def _commands(members: Sequence[Mapping[str, Any]]) -> CommandsFold:
    """``3 commits, 4 scratch commands, 2 other commands (`npm install`, `make build`)``"""
    kinds: dict[str, list[str]] = {"commit": [], "scratch": [], "other": []}
    for row in sorted(members, key=lambda r: (r["created_at"], r["id"])):
        command = command_of(row) or ""
        kinds[command_kind(command)].append(command)
    parts = []
    for kind, noun in (("commit", "commit"), ("scratch", "scratch command"), ("other", "other command")):
        count = len(kinds[kind])
        if count:
            parts.append(f"{count} {noun}{'s' if count != 1 else ''}")
    others = list(dict.fromkeys(" ".join(c.split()[:2]) for c in kinds["other"]))
    if others:
        shown = ", ".join(f"`{c}`" for c in others[:SHOWN_COMMANDS])
        parts[-1] += f" ({shown}{', ...' if len(others) > SHOWN_COMMANDS else ''})"
    return {
        "commits": len(kinds["commit"]),
        "scratch": len(kinds["scratch"]),
        "other": len(kinds["other"]),
        "text": ", ".join(parts),
    }


def where(files: Sequence[str]) -> str:
    """``under src/orders/`` for files sharing a folder; else where they are, every file counted: the files
    themselves when there are few (``: README.md, tests/test_x.py``), else how many in each top folder
    (``: 18 under src/, 5 under tests/, 2 in the top folder``; past three folders, ``, 4 elsewhere``)."""
    paths = [f.replace("\\", "/") for f in files]
    folders = [posixpath.dirname(p) for p in paths]
    if not folders:
        return ""
    try:
        common = posixpath.commonpath(folders)
    except ValueError:  # absolute and relative paths mixed
        common = ""
    if common and common != "/" and all(folders):
        return f"under {common.rstrip('/')}/"
    if len(paths) <= SHOWN_FILES:
        return ": " + ", ".join(paths)
    tops: dict[str, int] = {}
    for path, folder in zip(paths, folders, strict=True):
        top = path.strip("/").split("/")[0] + "/" if folder.strip("/") else "."
        tops[top] = tops.get(top, 0) + 1
    ranked = sorted(tops.items(), key=lambda item: -item[1])
    shown = [f"{n} in the top folder" if top == "." else f"{n} under {top}" for top, n in ranked[:3]]
    rest = sum(n for _, n in ranked[3:])
    return ": " + ", ".join(shown) + (f", {rest} elsewhere" if rest else "")


def _query(title: str) -> str:
    """What a search looked for: the quoted part of its title ("Searched code for `round(`")."""
    match = _QUOTED.search(title)
    text = next((g for g in match.groups() if g), "") if match else title
    return " ".join(text.split())[:60]
