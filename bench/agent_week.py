"""An agent's week replayed through the hooks, then the questions a developer asks a week later.

Three small git projects (real code, written below), nine Claude Code sessions sent to `cmem hook EVENT` as
Claude Code sends them (a new process per event, the JSON payload on stdin): SessionStart with
``CLAUDE_ENV_FILE``, prompts, reads with the file's text, edits applied to the files, test runs that pass
and fail, searches, commits made with git, scratch commands, the agent's own ``cmem add`` notes from its
Bash tool (the env file sourced first, as Claude Code does), Stop and SessionEnd. Then 14 questions, each
written before any search was run, each with the memory that answers it, asked with `cmem search` from the
project's folder (its default scope).

found@1 and found@3 (the answering memory first, in the first three) are reported for:

- ``hooks``: the index as the hooks leave it (the background pass on, as installed; the bench waits for the
  last pass to end);
- ``no-pass``: a second home replayed with ``CMEM_INDEX_BACKGROUND=off`` and searched at once, never
  indexed (what search embeds for itself is all it has);
- ``indexed``: after a full `cmem index` of the first home;
- ``keyword``: the first home with ``--mode keyword``.

Not a test: it prints a table (``--json`` for the per-question ranks). Needs an embedding model:

    python -m bench.agent_week --model /path/to/all-MiniLM-L6-v2.gguf [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.hooks import command

# -- the projects: small, real code ------------------------------------------------------------------------
PROJECTS: dict[str, dict[str, str]] = {
    "invoices": {
        "src/money.py": '''"""Amounts of money."""
from decimal import Decimal


def to_cents(amount: str) -> int:
    return int(Decimal(amount) * 100)


def format_cents(cents: int, currency: str = "EUR") -> str:
    return f"{cents // 100}.{cents % 100:02d} {currency}"
''',
        "src/tax.py": '''"""VAT by country."""
RATES = {"DE": 19, "FR": 20, "NL": 21}


def vat_for(net_cents: int, country: str) -> int:
    return net_cents * RATES[country] // 100
''',
        "src/invoice.py": '''"""Invoice totals."""
from src.money import to_cents
from src.tax import vat_for


def total(lines: list[dict], country: str) -> int:
    cents = 0
    for line in lines:
        net = to_cents(line["price"]) * line["qty"]
        cents += net + vat_for(net, country)
    return cents
''',
        "src/db.py": '''"""The invoice database."""
import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, number TEXT UNIQUE, total INTEGER);
"""


def connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path)


def migrate(conn: sqlite3.Connection) -> None:
    conn.executescript(SCHEMA)
''',
        "tests/test_invoice.py": """from src.invoice import total


def test_total_adds_vat():
    assert total([{"price": "10.00", "qty": 1}], "DE") == 1190


def test_reduced_rate():
    assert total([{"price": "0.35", "qty": 3}], "DE") == 125
""",
        "tests/conftest.py": """import pytest

from src.db import connect


@pytest.fixture
def conn(tmp_path):
    return connect(str(tmp_path / "test.db"))
""",
    },
    "authsvc": {
        "src/tokens.py": '''"""Access tokens (JWT, HS256)."""
import time

import jwt

SECRET = "change-me"


def issue(user_id: str, ttl: int = 900) -> str:
    return jwt.encode({"sub": user_id, "exp": int(time.time()) + ttl}, SECRET, algorithm="HS256")


def is_expired(claims: dict) -> bool:
    return claims["exp"] < time.time() * 1000
''',
        "src/ratelimit.py": '''"""Per-key request limits: a token bucket per API key."""
import time


class Bucket:
    def __init__(self, rate: float = 10, burst: int = 20):
        self.rate, self.burst = rate, burst
        self.tokens, self.stamp = float(burst), time.monotonic()

    def allow(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
''',
        "src/refresh.py": '''"""Refresh tokens: long-lived, stored hashed."""
import hashlib
import secrets


def new_refresh_token(store: dict, user_id: str) -> str:
    token = secrets.token_urlsafe(32)
    store[hashlib.sha256(token.encode()).hexdigest()] = {"user": user_id}
    return token


def use_refresh_token(store: dict, token: str) -> str | None:
    entry = store.get(hashlib.sha256(token.encode()).hexdigest())
    return entry["user"] if entry else None
''',
        "tests/test_tokens.py": """import time

from src.tokens import is_expired


def test_fresh_token_is_not_expired():
    assert not is_expired({"exp": int(time.time()) + 60})
""",
    },
    "etl": {
        "etl/loader.py": '''"""Load the suppliers' nightly CSV exports."""
import csv
from pathlib import Path


def read_rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter=";"))
''',
        "etl/schedule.py": '''"""When the nightly jobs run."""
from datetime import datetime, timedelta, timezone

RUN_AT_HOUR = 2


def next_run(now: datetime) -> datetime:
    run = now.replace(hour=RUN_AT_HOUR, minute=0, second=0, microsecond=0, tzinfo=timezone.utc)
    return run if run > now else run + timedelta(days=1)
''',
        "etl/dedupe.py": '''"""Drop rows the suppliers sent twice."""


def dedupe(rows: list[dict]) -> list[dict]:
    seen = set()
    out = []
    for row in rows:
        key = tuple(sorted(row.items()))
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out
''',
        "tests/test_loader.py": """from pathlib import Path

from etl.loader import read_rows


def test_reads_semicolon_csv(tmp_path: Path):
    path = tmp_path / "a.csv"
    path.write_text("sku;qty\\nA1;3\\n", encoding="utf-8")
    assert read_rows(path) == [{"sku": "A1", "qty": "3"}]
""",
    },
}


# -- the week: what the agent did, event by event -----------------------------------------------------------
# Each step: ("prompt", text) | ("read", path) | ("edit", path, old, new) | ("test", command, output, failed)
# | ("grep", pattern, files) | ("run", command, stdout) | ("commit", message) | ("note", type, title, text)
# | ("stop", last message)
SESSIONS: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("invoices", [
        ("prompt", "Add a reduced VAT rate for food and make the invoice totals right"),
        ("read", "src/invoice.py"), ("read", "src/tax.py"), ("read", "src/money.py"),
        ("note", "decision", "Money is kept as integer cents end to end",
         "Floats never hold an amount: to_cents parses the price string with Decimal, totals are ints, "
         "format_cents is the only place that shows a decimal point."),
        ("edit", "src/tax.py", 'RATES = {"DE": 19, "FR": 20, "NL": 21}',
         'RATES = {"DE": 19, "FR": 20, "NL": 21}\nREDUCED = {"DE": 7, "FR": 5, "NL": 9}'),
        ("test", "pytest tests/test_invoice.py -q",
         "FAILED tests/test_invoice.py::test_reduced_rate - assert 124 == 125\n1 failed, 1 passed in 0.03s",
         True),
        ("grep", "vat_for", ["src/invoice.py", "src/tax.py"]),
        ("edit", "src/invoice.py",
         "        cents += net + vat_for(net, country)\n    return cents",
         "        cents += net\n    return cents + vat_for(cents, country)"),
        ("edit", "src/tax.py", "    return net_cents * RATES[country] // 100",
         "    return (net_cents * RATES[country] + 50) // 100"),
        ("test", "pytest tests/test_invoice.py -q", "2 passed in 0.02s", False),
        ("note", "decision", "VAT is computed once on the invoice's net total, rounded half up",
         "Per-line VAT rounded each line down and the totals came out a cent short of the tax office's "
         "figure (test_reduced_rate: 124 against 125). Now vat_for runs once on the summed net and rounds "
         "half up."),
        ("commit", "Invoice VAT once on the net total, rounded half up; reduced rates table"),
        ("stop", "VAT is now computed once per invoice and rounded half up; tests pass."),
    ]),
    ("invoices", [
        ("prompt", "The tests fail on a fresh checkout, fix it"),
        ("test", "pytest -q",
         "E   sqlite3.OperationalError: no such table: invoices\nFAILED tests/test_invoice.py::test_saved "
         "- sqlite3.OperationalError: no such table: invoices\n1 failed, 2 passed in 0.05s", True),
        ("read", "src/db.py"), ("read", "tests/conftest.py"),
        ("edit", "tests/conftest.py", '    return connect(str(tmp_path / "test.db"))',
         '    conn = connect(str(tmp_path / "test.db"))\n    migrate(conn)\n    return conn'),
        ("edit", "tests/conftest.py", "from src.db import connect", "from src.db import connect, migrate"),
        ("test", "pytest -q", "3 passed in 0.04s", False),
        ("note", "bugfix", "The test database was never migrated",
         "The conn fixture opened an empty SQLite file and the first query failed; the fixture now runs "
         "migrate() before handing the connection out."),
        ("run", "python -c 'import sqlite3; print(sqlite3.sqlite_version)'", "3.45.1"),
        ("commit", "Tests: migrate the fixture's database"),
        ("stop", "Fresh checkouts pass: the fixture migrates its database."),
    ]),
    ("authsvc", [
        ("prompt", "Users get logged out right after signing in"),
        ("read", "src/tokens.py"), ("read", "tests/test_tokens.py"),
        ("grep", "exp", ["src/tokens.py", "tests/test_tokens.py"]),
        ("test", "pytest tests/test_tokens.py -q", "1 passed in 0.01s", False),
        ("run", "python -c 'import time; print(time.time())'", "1780000000.123"),
        ("edit", "src/tokens.py", '    return claims["exp"] < time.time() * 1000',
         '    return claims["exp"] < time.time()'),
        ("test", "pytest -q", "1 passed in 0.01s", False),
        ("note", "bugfix", "Access tokens looked expired the moment they were issued",
         "is_expired compared the exp claim, in seconds since the epoch, with time.time() * 1000 (milliseconds); "
         "the test only checked the other direction. Compare seconds with seconds."),
        ("commit", "Tokens: compare exp in seconds"),
        ("stop", "Sessions survive again: exp is compared in seconds."),
    ]),
    ("authsvc", [
        ("prompt", "Partners hit 429s during their nightly sync, raise the limit"),
        ("read", "src/ratelimit.py"),
        ("edit", "src/ratelimit.py", "def __init__(self, rate: float = 10, burst: int = 20):",
         "def __init__(self, rate: float = 20, burst: int = 40):"),
        ("test", "pytest -q", "1 passed in 0.01s", False),
        ("note", "decision", "Each API key may send 20 requests a second, bursts up to 40",
         "Partners' nightly syncs were throttled at 10/s; the bucket now refills at 20 per second and holds "
         "40. Agreed with ops; the limit is per key, not per IP."),
        ("commit", "Rate limit: 20/s per key, burst 40"),
        ("stop", "Limit raised to 20 requests a second per key."),
    ]),
    ("authsvc", [
        ("prompt", "Rotate refresh tokens and catch stolen ones"),
        ("read", "src/refresh.py"),
        ("edit", "src/refresh.py",
         '    entry = store.get(hashlib.sha256(token.encode()).hexdigest())\n'
         '    return entry["user"] if entry else None',
         '    entry = store.pop(hashlib.sha256(token.encode()).hexdigest(), None)\n'
         '    if entry is None or entry.get("used"):\n'
         '        revoke_family(store, entry)\n'
         '        return None\n'
         '    return entry["user"]'),
        ("test", "pytest -q", "E   NameError: name 'revoke_family' is not defined\n1 failed in 0.02s", True),
        ("edit", "src/refresh.py", "def use_refresh_token(",
         "def revoke_family(store: dict, entry: dict | None) -> None:\n"
         "    if entry:\n"
         "        for key in [k for k, v in store.items() if v.get(\"family\") == entry.get(\"family\")]:\n"
         "            del store[key]\n\n\ndef use_refresh_token("),
        ("test", "pytest -q", "2 passed in 0.02s", False),
        ("note", "decision", "A refresh token works once; reusing one revokes its whole family",
         "Rotation: every use hands out a new refresh token and retires the old one. A retired token "
         "presented again means it was stolen, so every token descended from the same login is revoked."),
        ("commit", "Refresh tokens rotate; reuse revokes the family"),
        ("stop", "Refresh tokens rotate on use; a replayed one logs the family out."),
    ]),
    ("etl", [
        ("prompt", "Last night's import crashed on the Müller file"),
        ("test", "python -m etl.loader data/mueller.csv",
         "Traceback (most recent call last):\n  File \"etl/loader.py\", line 8, in read_rows\n"
         "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xfc in position 14: invalid start byte",
         True),
        ("read", "etl/loader.py"),
        ("run", "file data/mueller.csv", "data/mueller.csv: ISO-8859 text, with CRLF line terminators"),
        ("edit", "etl/loader.py", '    with open(path, encoding="utf-8", newline="") as fh:\n'
         '        return list(csv.DictReader(fh, delimiter=";"))',
         '    raw = path.read_bytes()\n    try:\n        text = raw.decode("utf-8-sig")\n'
         '    except UnicodeDecodeError:\n        text = raw.decode("cp1252")\n'
         '    return list(csv.DictReader(text.splitlines(), delimiter=";"))'),
        ("test", "pytest -q", "1 passed in 0.01s", False),
        ("note", "discovery", "Supplier CSV exports come in Windows-1252, not UTF-8",
         "Müller's and two other suppliers' ERP exports are cp1252 with CRLF; read_rows tries utf-8-sig "
         "first and falls back to cp1252."),
        ("commit", "Loader: fall back to cp1252"),
        ("stop", "The loader reads cp1252 exports now."),
    ]),
    ("etl", [
        ("prompt", "The nightly import ran at 3 am after the clocks changed"),
        ("read", "etl/schedule.py"),
        ("run", "python -c 'from etl.schedule import next_run; import datetime; "
                "print(next_run(datetime.datetime.now(datetime.timezone.utc)))'",
         "2026-03-30 02:00:00+00:00"),
        ("edit", "etl/schedule.py", "from datetime import datetime, timedelta, timezone",
         "from datetime import datetime, timedelta\nfrom zoneinfo import ZoneInfo\n\nLOCAL = ZoneInfo(\"Europe/Berlin\")"),
        ("edit", "etl/schedule.py", "tzinfo=timezone.utc)", "tzinfo=LOCAL)"),
        ("test", "pytest -q", "1 passed in 0.01s", False),
        ("note", "decision", "Job times are Berlin wall-clock times, not UTC",
         "RUN_AT_HOUR meant 02:00 UTC, so the job moved by an hour at each daylight saving change; the "
         "schedule now builds the run time in Europe/Berlin with zoneinfo."),
        ("commit", "Schedule in Europe/Berlin"),
        ("stop", "Nightly jobs run at 02:00 Berlin time, summer or winter."),
    ]),
    ("etl", [
        ("prompt", "Stock counts are doubled for some SKUs"),
        ("read", "etl/dedupe.py"),
        ("run", "python -c 'import csv; rows=list(csv.DictReader(open(\"data/day.csv\"), delimiter=\";\")); "
                "print(len(rows), len({r[\"sku\"] for r in rows}))'", "1840 920"),
        ("grep", "dedupe", ["etl/dedupe.py"]),
        ("edit", "etl/dedupe.py",
         "        key = tuple(sorted(row.items()))", '        key = (row["supplier_id"], row["sku"])'),
        ("test", "pytest -q", "1 passed in 0.01s", False),
        ("note", "discovery", "Suppliers resend the whole day's file after a failed upload",
         "The doubled stock came from the same rows arriving twice with a different export timestamp column; "
         "dedupe keys on (supplier_id, sku) and keeps the later row."),
        ("commit", "Dedupe by supplier and SKU"),
        ("stop", "Duplicates dropped by supplier and SKU."),
    ]),
    ("invoices", [
        ("prompt", "Give invoices proper numbers for the tax audit"),
        ("read", "src/db.py"),
        ("edit", "src/db.py",
         'CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, number TEXT UNIQUE, total INTEGER);',
         'CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, number TEXT UNIQUE, total INTEGER);\n'
         'CREATE TABLE IF NOT EXISTS invoice_numbers (year INTEGER PRIMARY KEY, last INTEGER NOT NULL);'),
        ("test", "pytest -q", "3 passed in 0.04s", False),
        ("note", "decision", "Invoice numbers are gapless per year, INV-2026-000123",
         "The auditor requires numbers without gaps: a row per year in invoice_numbers is incremented in "
         "the same transaction that inserts the invoice; a rolled-back invoice does not use a number."),
        ("commit", "Invoices: gapless yearly numbers"),
        ("stop", "Invoice numbers come from a per-year counter in the same transaction."),
    ]),
]  # fmt: skip


@dataclass
class Question:
    project: str
    text: str
    answers: list[str]  # the answering memory: a title prefix (an agent's note, a hook's record), any one
    narrative: str = ""  # and a word of its text, where titles repeat (commands run more than once)


# Written before any search was run (the memory that answers each named with them).
QUESTIONS = [
    Question("invoices", "how do we round the VAT on an invoice",
             ["VAT is computed once on the invoice's net total"]),
    Question("invoices", "should amounts be floats or decimals", ["Money is kept as integer cents"]),
    Question("invoices", "sqlite3.OperationalError: no such table: invoices",
             ["Command failed: pytest -q", "The test database was never migrated"], "no such table"),
    Question("invoices", "why did the test suite fail on a clean clone", ["The test database was never migrated"]),
    Question("invoices", "which test failed when the reduced rate was added",
             ["Command failed: pytest tests/test_invoice.py"], "test_reduced_rate"),
    Question("invoices", "how are invoice numbers assigned", ["Invoice numbers are gapless per year"]),
    Question("authsvc", "token expiration bug", ["Access tokens looked expired the moment they were issued"]),
    Question("authsvc", "why were users logged out right after login",
             ["Access tokens looked expired the moment they were issued"]),
    Question("authsvc", "what is the request limit for an API key",
             ["Each API key may send 20 requests a second"]),
    Question("authsvc", "what happens when a stolen refresh token is replayed",
             ["A refresh token works once; reusing one revokes its whole family"]),
    Question("etl", "which character encoding do the supplier files use",
             ["Supplier CSV exports come in Windows-1252"]),
    Question("etl", "UnicodeDecodeError in the loader",
             ["Command failed: python -m etl.loader", "Supplier CSV exports come in Windows-1252"]),
    Question("etl", "what time zone is the nightly job scheduled in", ["Job times are Berlin wall-clock times"]),
    Question("etl", "where do the duplicate stock rows come from",
             ["Suppliers resend the whole day's file"]),
]  # fmt: skip


# -- replaying ----------------------------------------------------------------------------------------------
@dataclass
class Replay:
    root: Path
    env: dict[str, str]
    model: str
    hook_ms: list[float] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.root / "home"

    def repo(self, project: str) -> Path:
        return self.root / "work" / project

    def cmem(
        self, *args: str, cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*command(), *args], capture_output=True, text=True, env=self.env,
                              cwd=cwd or self.root, timeout=600)  # fmt: skip
        if check and proc.returncode not in (0, 10):
            raise SystemExit(f"cmem {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return proc

    def git(self, repo: Path, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, env=self.env, check=True, capture_output=True,
                              text=True).stdout  # fmt: skip

    def hook(self, event: str, data: dict[str, Any], env: dict[str, str] | None = None) -> None:
        started = time.perf_counter()
        proc = subprocess.run([*command(), "hook", event], input=json.dumps(data), capture_output=True,
                              text=True, env=env or self.env, timeout=120)  # fmt: skip
        self.hook_ms.append((time.perf_counter() - started) * 1000)
        if proc.returncode != 0:
            raise SystemExit(f"hook {event} exited {proc.returncode}: {proc.stderr[-2000:]}")

    def projects(self) -> dict[str, dict[str, str]]:
        """The week's repositories: path -> text, per project."""
        return PROJECTS

    def setup(self) -> None:
        for project, files in self.projects().items():
            repo = self.repo(project)
            for rel, text in files.items():
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                (repo / rel).write_text(text, encoding="utf-8")
            self.git(repo, "init", "-q", "-b", "main")
            self.git(repo, "remote", "add", "origin", f"git@example.com:acme/{project}.git")
            self.git(repo, "add", "-A")
            self.git(repo, "commit", "-q", "-m", "Initial import")

    def session(self, number: int, project: str, steps: list[tuple[Any, ...]]) -> None:
        repo = self.repo(project)
        sid = str(uuid.UUID(int=number + 1))
        env_file = self.root / f"claude-env-{number}.sh"
        env_file.write_text("")

        def base(event: str, **fields: Any) -> dict[str, Any]:
            return {"session_id": sid, "transcript_path": f"{self.root}/transcripts/{sid}.jsonl",
                    "cwd": str(repo), "permission_mode": "default", "hook_event_name": event, **fields}  # fmt: skip

        def tool(name: str, tool_input: dict[str, Any], response: Any, failed: str | None = None) -> None:
            fields = {
                "tool_name": name,
                "tool_input": tool_input,
                "tool_use_id": f"toolu_{uuid.uuid4().hex[:20]}",
            }
            if failed is None:
                self.hook("PostToolUse", base("PostToolUse", **fields, tool_response=response))
            else:
                self.hook("PostToolUseFailure", base("PostToolUseFailure", **fields, error=failed,
                                                     is_interrupt=False))  # fmt: skip

        self.hook("SessionStart", base("SessionStart", source="startup"),
                  env={**self.env, "CLAUDE_ENV_FILE": str(env_file)})  # fmt: skip
        for step in steps:
            kind = step[0]
            if kind == "prompt":
                self.hook("UserPromptSubmit", base("UserPromptSubmit", prompt=step[1]))
            elif kind == "read":
                path = repo / step[1]
                text = path.read_text(encoding="utf-8")
                lines = text.count("\n")
                tool("Read", {"file_path": str(path)}, {"type": "text", "file": {
                    "filePath": str(path), "content": text, "numLines": lines, "startLine": 1,
                    "totalLines": lines}})  # fmt: skip
            elif kind == "edit":
                path, old, new = repo / step[1], step[2], step[3]
                text = path.read_text(encoding="utf-8")
                if old not in text:
                    raise SystemExit(f"bench script: {step[1]} has no {old!r}")
                path.write_text(text.replace(old, new, 1), encoding="utf-8")
                tool("Edit", {"file_path": str(path), "old_string": old, "new_string": new},
                     {"filePath": str(path), "oldString": old, "newString": new, "originalFile": text,
                      "structuredPatch": [], "userModified": False, "replaceAll": False})  # fmt: skip
            elif kind == "test":
                cmd, output, failed = step[1], step[2], step[3]
                tool_input = {"command": cmd, "description": "Run the tests"}
                if failed:
                    tool("Bash", tool_input, None, failed=f"Exit code 1\n{output}")
                else:
                    tool("Bash", tool_input, {"stdout": output, "stderr": "", "interrupted": False,
                                              "isImage": False})  # fmt: skip
            elif kind == "grep":
                tool("Grep", {"pattern": step[1], "path": str(repo), "output_mode": "files_with_matches"},
                     {"mode": "files_with_matches", "filenames": [str(repo / f) for f in step[2]],
                      "numFiles": len(step[2])})  # fmt: skip
            elif kind == "run":
                tool("Bash", {"command": step[1]}, {"stdout": step[2], "stderr": "", "interrupted": False,
                                                    "isImage": False})  # fmt: skip
            elif kind == "commit":
                self.git(repo, "add", "-A")
                out = self.git(repo, "commit", "-q", "-m", step[1]) or ""
                head = self.git(repo, "rev-parse", "--short", "HEAD").strip()
                cmd = f"git add -A && git commit -m {shlex.quote(step[1])}"
                tool("Bash", {"command": cmd, "description": "Commit"},
                     {"stdout": out or f"[main {head}] {step[1]}", "stderr": "", "interrupted": False,
                      "isImage": False})  # fmt: skip
            elif kind == "note":  # the agent's own note, from its Bash tool: the env file sourced first
                _, obs_type, title, text = step
                cmd = f"cmem add --type {obs_type} -t {shlex.quote(title)} --narrative {shlex.quote(text)}"
                cli = " ".join(shlex.quote(part) for part in command())
                proc = subprocess.run(["bash", "-c", f'. "{env_file}" && {cli} {cmd[5:]}'], cwd=repo,
                                      env=self.env, capture_output=True, text=True, timeout=120)  # fmt: skip
                if proc.returncode != 0:
                    raise SystemExit(f"agent note failed: {proc.stderr[-2000:]}")
                tool("Bash", {"command": cmd, "description": "Record a memory"},
                     {"stdout": proc.stdout, "stderr": "", "interrupted": False, "isImage": False})  # fmt: skip
            elif kind == "stop":
                self.hook("Stop", base("Stop", stop_hook_active=False, last_assistant_message=step[1]))
            else:
                raise SystemExit(f"bench script: unknown step {kind}")
        self.hook("SessionEnd", base("SessionEnd", reason="prompt_input_exit"))

    def replay(self) -> None:
        self.setup()
        for number, (project, steps) in enumerate(SESSIONS):
            self.session(number, project, steps)

    def wait_for_passes(self, seconds: float = 900) -> float:
        """Until no background pass holds the index's lock and no backlog waits; seconds waited."""
        from cmem_index.refresh import backlog_path

        index = self.home / "index.db"
        taken = index.with_name(index.name + ".backlog.taken")
        started = time.monotonic()
        quiet = 0
        while quiet < 5:  # half a second with nothing running or waiting
            busy = _lock_held(index) or backlog_path(index).exists() or taken.exists()
            quiet = 0 if busy else quiet + 1
            if time.monotonic() - started > seconds:
                raise SystemExit("the background pass never finished")
            time.sleep(0.1)
        return time.monotonic() - started

    def answer_ids(self) -> dict[str, list[int]]:
        """Each answer (title prefix, narrative word) -> the ids of the memories that carry it."""
        rows = json.loads(self.cmem("search", "--all-projects", "--all", "--json").stdout)
        ids = [str(r["id"]) for r in rows if r.get("kind", "observation") == "observation"]
        full = {r["id"]: r for r in json.loads(self.cmem("get", *ids, "--json").stdout)} if ids else {}
        out: dict[str, list[int]] = {}
        for q in QUESTIONS:
            found = [
                obs_id for obs_id, r in full.items()
                if any(r["title"].startswith(a) for a in q.answers)
                and (not q.narrative or q.narrative in (r.get("narrative") or "") + r["title"])
            ]  # fmt: skip
            if not found:
                raise SystemExit(f"no memory answers {q.text!r}: the replay did not record {q.answers}")
            out[q.text] = found
        return out

    def ask(self, answers: dict[str, list[int]], *mode: str) -> list[int | None]:
        """The rank (1-based) of each question's first answering memory, None past the tenth."""
        ranks: list[int | None] = []
        for q in QUESTIONS:
            proc = self.cmem("search", q.text, "--json", "-n", "10", *mode, cwd=self.repo(q.project))
            got = [r["id"] for r in json.loads(proc.stdout or "[]")]
            ranks.append(next((i + 1 for i, obs in enumerate(got) if obs in answers[q.text]), None))
        return ranks


def _lock_held(index: Path) -> bool:
    import fcntl

    from cmem_index.lock import lock_path

    try:
        fd = os.open(lock_path(index), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def environment(root: Path, model: str, background: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMEM_", "CLAUDE_", "GIT_"))}
    env.update({
        "CMEM_HOME": str(root / "home"), "HOME": str(root / "user"), "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_CACHE_HOME": str(root / "cache"), "CMEM_EMBED_MODEL": model, "CMEM_MACHINE": "bench",
        "NO_COLOR": "1", "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
    })  # fmt: skip
    if not background:
        env["CMEM_INDEX_BACKGROUND"] = "off"
    (root / "user").mkdir(parents=True, exist_ok=True)
    return env


def found(ranks: list[int | None]) -> dict[str, int]:
    return {
        "found@1": sum(1 for r in ranks if r == 1),
        "found@3": sum(1 for r in ranks if r is not None and r <= 3),
    }


def run(model: str, root: Path) -> dict[str, Any]:
    hooked = Replay(root / "hooks", environment(root / "hooks", model, background=True), model)
    started = time.perf_counter()
    hooked.replay()
    replay_seconds = time.perf_counter() - started
    waited = hooked.wait_for_passes()
    answers = hooked.answer_ids()
    ranks = {"hooks": hooked.ask(answers)}
    ranks["keyword"] = hooked.ask(answers, "--mode", "keyword")
    hooked.cmem("index")
    ranks["indexed"] = hooked.ask(answers)
    bare = Replay(root / "no-pass", environment(root / "no-pass", model, background=False), model)
    bare.replay()
    ranks["no-pass"] = bare.ask(bare.answer_ids())
    events = len(hooked.hook_ms)
    hook_ms = sorted(hooked.hook_ms)
    return {
        "questions": len(QUESTIONS),
        "sessions": len(SESSIONS),
        "hook_events": events,
        "memories": len({i for ids in answers.values() for i in ids}),
        "replay_seconds": round(replay_seconds, 1),
        "waited_for_passes_seconds": round(waited, 1),
        "hook_ms_median": round(hook_ms[events // 2], 1),
        "modes": {mode: found(r) for mode, r in ranks.items()},
        "ranks": {q.text: {mode: r[i] for mode, r in ranks.items()} for i, q in enumerate(QUESTIONS)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="GGUF embedding model (all-MiniLM-L6-v2)")
    parser.add_argument("--keep", help="build the homes here and keep them (default: a temporary folder)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    model = str(Path(args.model).resolve())
    if args.keep:
        root = Path(args.keep)
        if root.exists() and any(root.iterdir()):
            parser.error(f"{root} is not empty")
        report = run(model, root)
    else:
        with tempfile.TemporaryDirectory(prefix="cmem-agent-week-") as tmp:
            report = run(model, Path(tmp))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    n = report["questions"]
    print(f"{report['sessions']} sessions, {report['hook_events']} hook events (median {report['hook_ms_median']} "
          f"ms), replayed in {report['replay_seconds']} s; waited {report['waited_for_passes_seconds']} s "
          f"for the background passes; {n} questions")  # fmt: skip
    print(f"{'':10}{'found@1':>9}{'found@3':>9}")
    for mode in ("hooks", "indexed", "keyword", "no-pass"):
        row = report["modes"][mode]
        print(f"{mode:10}{row['found@1']:>6}/{n:<2}{row['found@3']:>6}/{n:<2}")
    print("\nrank of the answering memory (- past 10): hooks / indexed / keyword / no-pass")
    for text, by_mode in report["ranks"].items():
        cells = " / ".join(str(by_mode[m] or "-") for m in ("hooks", "indexed", "keyword", "no-pass"))
        print(f"  {cells:16} {text}")


if __name__ == "__main__":
    main()
