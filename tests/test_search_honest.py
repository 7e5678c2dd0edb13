"""`cmem search` admits "no match": only hits with evidence, a count of what was left out, exit 10 when empty.

Everything runs through the real CLI over a home indexed with all-MiniLM-L6-v2: in this process
(tests/runner.py), and a printed docid through bash and ``python -m cmem_cli``, as a user's shell runs it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, private_env
from tests.runner import invoke

MEMORIES = [
    ("Fix JWT expiry check", "Tokens expired one hour early because exp is in seconds, not ms.", "billing"),
    ("Database connection pool exhausted", "Raised the pool size after Postgres refused clients.", "billing"),
    ("Upgrade the CI pipeline to Node 22", "The build matrix now runs the newer runtime.", "webapp"),
    ("Dark theme colours for the settings page", "Contrast ratios checked for accessibility.", "webapp"),
    (
        "Image resizer kept every decoded bitmap",
        "A cache that was never cleared grew without bound.",
        "webapp",
    ),
    (
        "Stripe webhook retries",
        "Stripe retries a failed webhook for three days; handlers are idempotent.",
        "billing",
    ),
    (
        "Stripe invoices carry the customer id",
        "Look the customer up by the invoice's customer field.",
        "billing",
    ),
]
NOTES = {
    "guide.md": "# Deploying\n\nThe deploy script pushes the container image and restarts the service.\n",
    "papers.md": "# Reading list\n\nAttention is all you need; BERT; sentence embeddings with siamese networks.\n",
}


@pytest.fixture(scope="module")
def cmem(tmp_path_factory: pytest.TempPathFactory, minilm_gguf: Path) -> Callable[..., Result]:
    """A home with memories in two projects and a `notes` collection, indexed with vectors once."""
    root = tmp_path_factory.mktemp("honest")
    env = private_env(root, embed_model=str(minilm_gguf))

    def run(*args: str, shell: str | None = None) -> Result:
        """``cmem ARGS`` in this process (tests/runner.py: the model is loaded once, not per search), or a
        ``shell`` command line run by bash."""
        if not shell:
            return invoke(*args, env=env, replace_env=True, cwd=root)
        proc = subprocess.run(
            ["bash", "-c", shell], capture_output=True, text=True, env=env, cwd=root, timeout=300
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    for title, narrative, project in MEMORIES:
        assert run("add", "--title", title, "--narrative", narrative, "--project", project).exit_code == 0
    notes = root / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    assert run("collection", "add", str(notes), "--name", "notes").exit_code == 0
    indexed = run("index")
    assert indexed.exit_code == 0, indexed.stderr
    return run


# Nonsense the cut-off was never calibrated on: bench/cutoff.py fits it on zzzqqqxx, qwxzv bnmlk, xyzzy plugh,
# fjdksla qpwoeiru zmxncb, ooooooo and 1234567890; these are held out.
HELD_OUT_NONSENSE = [
    "vbrqk zxltp", "gwpxq", "jjjkkkll", "mnbvcxzq poiuy", "9876543210", "qqqq wwww", "plmoknijb",
    "xkqjvw zdfghy", "hhhhhhhh", "wxqzj kvbpm tgrfd",
]  # fmt: skip


@pytest.mark.parametrize("nonsense", HELD_OUT_NONSENSE)
def test_a_query_that_matches_nothing_returns_nothing_and_exits_10(cmem, nonsense):
    for mode in ("auto", "hybrid", "vector"):
        result = cmem("search", nonsense, "--mode", mode, "--json")
        assert result.exit_code == 10, (mode, result.stderr)
        assert result.json() == []
    # The cut-off is what removed them: without it the nearest neighbours come back as before.
    fillers = cmem("search", nonsense, "--min-score", "0", "--json")
    assert fillers.exit_code == 0
    assert len(fillers.json()) == len(MEMORIES) + len(NOTES)


def test_only_hits_with_evidence_are_listed(cmem):
    rows = cmem("search", "stripe webhook", "--json").json()
    titles = [r["title"] for r in rows]
    assert titles[0] == "Stripe webhook retries"
    assert "Dark theme colours for the settings page" not in titles
    assert len(rows) < len(MEMORIES) + len(NOTES)
    assert min(r["score"] for r in rows) >= 0.07


def test_the_cut_off_is_overridable(cmem):
    default = cmem("search", "stripe webhook", "--json").json()
    strict = cmem("search", "stripe webhook", "--min-score", "0.5", "--json").json()
    assert 0 < len(strict) < len(default)
    assert all(r["score"] >= 0.5 for r in strict)


def test_more_hits_than_shown_are_counted_on_stderr(cmem):
    every = cmem("search", "stripe", "--all", "--json").json()
    assert len(every) >= 2
    first = cmem("search", "stripe", "-n", "1", "--json")
    assert first.exit_code == 0
    assert len(first.json()) == 1
    assert f"showing 1 of {len(every)}" in first.stderr
    assert "showing" not in cmem("search", "stripe", "--all", "--json").stderr


def test_all_and_limit_zero_list_every_hit(cmem):
    every = cmem("search", "stripe", "--all", "--format", "ids")
    zero = cmem("search", "stripe", "-n", "0", "--format", "ids")
    big = cmem("search", "stripe", "-n", "1000", "--format", "ids")
    assert every.stdout == zero.stdout == big.stdout
    listing = cmem("search", "-n", "0", "--json").json()
    assert len(listing) == len(MEMORIES)


def test_a_listing_with_no_rows_exits_10(cmem):
    result = cmem("search", "--project", "nope", "--json")
    assert result.exit_code == 10
    assert result.json() == []


def test_collection_filters_every_row_and_rejects_unknown_names(cmem):
    notes = cmem("search", "deploy container image", "--collection", "notes", "--json").json()
    assert notes
    assert {r["kind"] for r in notes} == {"document"}
    assert {r["project"] for r in notes} == {"notes"}  # a document row's project is its collection
    memories = cmem("search", "stripe", "--collection", "memories", "--json").json()
    assert memories
    assert "document" not in {r["kind"] for r in memories}
    # billing observations match "stripe" in the store, but they are not in the notes collection
    assert cmem("search", "stripe", "--collection", "notes", "--mode", "keyword", "--json").json() == []
    unknown = cmem("search", "stripe", "--collection", "nope")
    assert unknown.exit_code == 3
    assert unknown.stderr.startswith("cmem: ") and unknown.stderr.count("\n") == 1
    assert "nope" in unknown.stderr


def test_printed_docids_work_unquoted_in_a_shell(cmem):
    ids = cmem("search", "deploy container image", "--collection", "notes", "--format", "ids").stdout.split()
    assert ids
    for docid in ids:
        # letters, digits and one colon: nothing bash, zsh or fish treat specially
        assert re.fullmatch(r"doc:[0-9a-f]{6}", docid)
        shown = cmem(shell=f"{sys.executable} -m cmem_cli get {docid} --json")
        assert shown.exit_code == 0, shown.stderr
        assert json.loads(shown.stdout)[0]["id"] == docid
