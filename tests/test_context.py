"""`cmem context`: the last session's summary and next steps, the most useful recent observations, a
drill-down reminder, and never more tokens than the budget."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmem_cli.core.config import load_config
from cmem_cli.core.text import estimate_tokens
from cmem_cli.core.timeutil import now_ms
from cmem_cli.services.read.briefing import build_context
from cmem_cli.services.write.service import WriteService

DAY = 86_400_000


def seed(sh) -> None:
    records = [
        {
            "type": "discovery",
            "title": f"Read src/module_{i}.py",
            "project": "shop",
            "tools_used": ["Read"],
            "files_read": [f"src/module_{i}.py"],
            "session": "s-old",
        }
        for i in range(60)
    ]
    records += [
        {
            "type": "decision",
            "title": "Prices are integer cents end to end",
            "project": "shop",
            "session": "s-old",
            "narrative": "Floats lost a cent on totals; every boundary converts once.",
        },
        {
            "type": "bugfix",
            "title": "Checkout total rounded each line instead of the sum",
            "project": "shop",
            "session": "s-old",
        },
        {"type": "decision", "title": "Unrelated project decision", "project": "other"},
    ]
    assert sh("add", "--json", "-", input="\n".join(json.dumps(r) for r in records)).exit_code == 0
    sh(
        "summary",
        "add",
        "--session",
        "s-old",
        "--project",
        "shop",
        "--request",
        "Fix the off-by-a-cent total",
        "--completed",
        "Totals computed in cents",
        "--next-steps",
        "Migrate stored prices to cents",
    )
    sh("session", "end", "s-old", "--next-steps", "Migrate stored prices to cents")


def test_context_shows_summary_next_steps_useful_observations_and_reminder(sh, home) -> None:
    seed(sh)
    result = sh("context", "--project", "shop")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert text.startswith("# cmem memory for shop")
    assert "## Last session" in text and "s-old" in text
    assert "Fix the off-by-a-cent total" in text and "Next steps: Migrate stored prices to cents" in text
    assert "Prices are integer cents end to end" in text
    assert "Checkout total rounded each line" in text
    assert "Unrelated project decision" not in text
    assert text.rstrip().splitlines()[-1].startswith("Drill down: `cmem search")
    assert estimate_tokens(text.rstrip("\n")) <= 1500
    # each index line: id, date, type icon, title, token cost
    line = next(li for li in text.splitlines() if "Prices are integer cents" in li)
    assert line.startswith("#") and line.endswith("t)") and "🧭" in line


def test_decisions_win_over_reads_when_the_budget_is_tight(sh, home) -> None:
    seed(sh)
    data = sh("context", "--project", "shop", "--budget", "200", "--json").json()
    titles = [o["title"] for o in data["observations"]]
    assert data["tokens"] <= 200
    assert "Prices are integer cents end to end" in titles
    assert "Checkout total rounded each line instead of the sum" in titles
    assert len(titles) < 62  # the 60 reads did not all fit


def test_the_command_reports_what_it_printed_within_the_budget(sh, home) -> None:
    """Budgets in general are the Hypothesis test's job below; this checks the CLI's own accounting."""
    seed(sh)
    data = sh("context", "--project", "shop", "--budget", "150", "--json").json()
    assert data["tokens"] == estimate_tokens(data["text"])
    assert 0 < data["tokens"] <= 150


def test_empty_project_explains_how_to_record(sh, home) -> None:
    text = sh("context", "--project", "brand-new").stdout
    assert "No memories for this project yet" in text and "cmem add" in text


def test_control_characters_in_titles_are_escaped(sh, home) -> None:
    sh("add", "--title", "evil \x1b[31mred\x1b[0m title", "--project", "p")
    assert "\x1b" not in sh("context", "--project", "p").stdout


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("ctx-home")
    import os

    old = os.environ.get("CMEM_HOME")
    os.environ["CMEM_HOME"] = str(home)
    try:
        mem = WriteService.open(load_config())
    finally:
        if old is None:
            os.environ.pop("CMEM_HOME")
        else:
            os.environ["CMEM_HOME"] = old
    types = ["decision", "bugfix", "discovery", "change", "insight", "error"]
    now = now_ms()
    records = [
        mem.records.prepare(
            {
                "type": types[i % 6],
                "title": f"Observation {i} " + "word " * (i % 17),
                "project": "big",
                "created_at": now - (i % 40) * DAY,
                "narrative": "n" * (i % 300),
            }
        )
        for i in range(300)
    ]
    mem.records.add_observations(records)
    mem.sessions.add_summary(
        "s-big", {"request": "r" * 3000, "completed": "c" * 3000, "next_steps": "n " * 900}, project="big"
    )
    yield mem
    mem.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(min_value=1, max_value=4000))
def test_any_budget_is_respected_with_long_summaries(big_store, budget: int) -> None:
    context = build_context(big_store.store, "big", budget=budget)
    assert estimate_tokens(context.text) <= budget
    if budget >= 300:
        assert "## Last session" in context.text and context.observations
        assert context.text.endswith("`cmem get ID` (full details).")


def test_the_index_is_shown_newest_first(big_store) -> None:
    context = build_context(big_store.store, "big", budget=400)
    dates = [o["created_at"] for o in context.observations]
    assert len(dates) > 3
    assert dates == sorted(dates, reverse=True)


def test_a_budget_below_one_is_a_usage_error(sh, home) -> None:
    result = sh("context", "--project", "shop", "--budget", "0")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().endswith("--budget must be at least 1 (got 0)")
