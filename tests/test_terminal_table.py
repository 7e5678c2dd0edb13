"""Tables read in a real terminal keep what the next command needs: ids are never dropped or cut."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len

from tests.terminal import run_in_terminal

LONG_TITLE = "Retry stripe webhooks with idempotency keys so that duplicated deliveries never double-charge"


@pytest.fixture
def memories(cli) -> list[str]:
    ids = []
    for number in range(12):
        result = cli(
            "add",
            "-t",
            f"{LONG_TITLE} (case {number})",
            "--type",
            "decision",
            "-p",
            "billing-service-with-a-long-name",
        )
        assert result.exit_code == 0, result.stderr
        ids.append(result.stdout.strip())
    return ids


def _row_ids(out: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\s*(?:>>)?\s*(\d+)\s{2}", out, re.MULTILINE)]


@pytest.mark.parametrize("columns", [80, 100, 140])
@pytest.mark.parametrize("explain", [False, True])
def test_search_table_keeps_every_id_whole_at_any_width(memories, columns, explain):
    args = ["search", "stripe", "-n", "50"] + (["--explain"] if explain else [])
    out = run_in_terminal(args, columns=columns)
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[0].split()[0] == "ID"
    assert sorted(_row_ids(out), key=int) == memories
    assert all(cell_len(line) <= columns for line in lines), out
    assert "Retry stripe webhooks" in out  # the title is shortened, never dropped
    assert ("WHY" in lines[0].split()) == explain  # asked for, the signals stay before project and tokens


def test_search_table_shortens_the_title_before_dropping_type_and_date(memories):
    out = run_in_terminal(["search", "stripe"], columns=80)
    header = out.splitlines()[0].split()
    assert header[:4] == ["ID", "DATE", "TYPE", "TITLE"]
    assert "…" in out and LONG_TITLE not in out


def test_wide_terminal_shows_the_whole_title(cli):
    cli("add", "-t", "Short decision about retries", "--type", "decision", "-p", "web")
    out = run_in_terminal(["search", "retries"], columns=140)
    assert "Short decision about retries" in out and "…" not in out


def test_timeline_at_80_columns_keeps_anchor_id_and_time(memories):
    anchor = memories[5]
    out = run_in_terminal(["timeline", anchor], columns=80)
    anchor_line = next(line for line in out.splitlines() if line.startswith(">>"))
    assert re.match(rf">>\s+{anchor}\s+\d\d:\d\d\s", anchor_line), anchor_line
    assert set(_row_ids(out)) == set(memories[0:11])
    assert all(cell_len(line) <= 80 for line in out.splitlines())


def test_session_list_shows_short_ids_that_work_as_arguments(cli):
    started = [
        cli("session", "start", "--label", "a rather long label " * 3).stdout.strip() for _ in range(3)
    ]
    out = run_in_terminal(["session", "list"], columns=80)
    shown = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
    assert len(shown) == 3
    for short in shown:
        assert len(short) < 26
        full = cli("session", "show", short, "--json").json()["session_id"]
        assert full in started and full.startswith(short)


def test_key_value_listings_align_on_a_terminal_and_stay_tab_separated_when_piped(cli, sh):
    session = cli("session", "start").stdout.strip()
    cli("summary", "add", "--session", session, "--learned", "retries need keys")
    cli("add", "-t", "A note", "--session", session)
    for args in (["session", "show", session], ["stats"]):
        shown = run_in_terminal(args, columns=80)
        assert "\t" not in shown and "['" not in shown
        values_start = {len(m.group(1)) for m in re.finditer(r"^(\S+(?: \d+)? +)\S", shown, re.MULTILINE)}
        assert len(values_start) == 1, shown  # every value starts in the same column
        piped = sh(*args).stdout
        assert all("\t" in line for line in piped.splitlines())
    piped_show = sh("session", "show", session).stdout
    assert "summaries\tS1\n" in piped_show and "['" not in piped_show


def test_doctor_and_status_align_on_a_terminal_and_keep_tabs_when_piped(cli, sh):
    cli("add", "A note")
    doctor = run_in_terminal(["doctor"], columns=80)
    assert doctor.splitlines()[0].split() == ["STATUS", "CHECK", "DETAIL"] and "\t" not in doctor
    assert all("\t" in line for line in sh("doctor").stdout.splitlines())
    status = run_in_terminal(["status"], columns=100)
    assert "collection  memories  " in status and "\t" not in status
    assert "collection\tmemories\t" in sh("status").stdout
