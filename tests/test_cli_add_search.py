"""Recording observations and finding them again through the keyword layer."""

from __future__ import annotations

import json

import pytest


def add(cli, *args: str) -> int:
    result = cli("add", *args)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout.strip())


def test_add_prints_the_new_id_and_search_finds_it(cli):
    first = add(cli, "--title", "Fix token refresh race", "--type", "bugfix", "-p", "webapp")
    second = add(cli, "--title", "Document deploy steps", "-p", "webapp")
    assert (first, second) == (1, 2)
    result = cli("search", "token refresh", "--format", "ids")
    assert result.stdout.split() == ["1"]


@pytest.mark.parametrize(
    ("title", "query"),
    [
        ("Optimise getObservationsByIds batching", "observations"),
        ("Rotate keys in src/auth/jwt.ts", "jwt"),
        ("Rename snake_case_name helper", "case"),
        ("HTTPServer keeps parseJSONResponse alive", "json"),
    ],
)
def test_keyword_search_matches_code_the_way_developers_type_it(cli, title, query):
    add(cli, "--title", "unrelated filler note", "-p", "p")
    target = add(cli, "--title", title, "-p", "p")
    assert cli("search", query, "--format", "ids").stdout.split() == [str(target)]


def test_files_are_searchable_by_their_name(cli):
    target = add(cli, "--title", "Tighten expiry check", "--modified", "src/auth/jwt.ts", "-p", "p")
    add(cli, "--title", "Something else", "--read", "README.md", "-p", "p")
    assert cli("search", "jwt", "--format", "ids").stdout.split() == [str(target)]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "'",
        "(",
        ")",
        "*",
        "-",
        ":",
        "NEAR",
        "NEAR(a b)",
        "a AND",
        "OR",
        "^",
        "col:term",
        "é😀",
        "\\",
        "{x}",
        "a -b",
        "title:",
        "   ",
        '"unbalanced',
        "AND OR NOT",
    ],
)
def test_no_query_text_can_break_keyword_search(cli, query):
    add(cli, "--title", "NEAR the auth module", "-p", "p")
    result = cli("search", query, "--json")
    assert isinstance(result.json(), list), result.stderr
    assert result.exit_code == (0 if result.json() else 10), result.stderr  # 10: no match


def test_relevance_prefers_titles_and_all_terms(cli):
    add(cli, "--title", "Auth notes", "--narrative", "mentions bug once", "-p", "p")
    best = add(cli, "--title", "Auth bug in login", "-p", "p")
    add(cli, "--title", "Unrelated", "--narrative", "bug", "-p", "p")
    rows = cli("search", "auth bug", "--json").json()
    assert rows[0]["id"] == best
    assert all(0 <= r["score"] <= 1 for r in rows)
    assert rows == sorted(rows, key=lambda r: -r["score"])


def test_search_json_rows_carry_the_documented_fields(cli):
    add(
        cli,
        "--title",
        "Cache warmup",
        "--type",
        "feature",
        "-p",
        "svc",
        "--session",
        "s1",
        "--agent",
        "bot",
        "--key",
        "cache-policy",
    )
    (row,) = cli("search", "cache", "--json").json()
    assert set(row) >= {
        "id",
        "uid",
        "type",
        "title",
        "subtitle",
        "project",
        "session",
        "agent",
        "key",
        "created_at",
        "score",
        "tokens",
        "path",
    }
    assert (row["type"], row["project"], row["session"], row["agent"], row["key"]) == (
        "feature",
        "svc",
        "s1",
        "bot",
        "cache-policy",
    )
    assert row["created_at"].endswith("Z") and row["tokens"] > 0
    assert len(row["uid"]) == 26


def test_filters_narrow_search_and_listing(cli):
    add(
        cli,
        "-t",
        "Parser bug",
        "--type",
        "bugfix",
        "-p",
        "a",
        "--concept",
        "parsing",
        "--modified",
        "src/p.py",
    )
    add(cli, "-t", "Parser refactor", "--type", "refactor", "-p", "a", "--read", "src/lexer.py")
    add(cli, "-t", "Parser in other project", "--type", "bugfix", "-p", "b", "--agent", "claude")
    ids = lambda *a: [int(x) for x in cli("search", *a, "--format", "ids").stdout.split()]  # noqa: E731
    assert sorted(ids("parser", "--type", "bugfix")) == [1, 3]  # equal relevance: either order
    assert ids("parser", "--project", "a", "--type", "refactor") == [2]
    assert ids("--concept", "PARSING") == [1]
    assert ids("--file", "p.py") == [1]
    assert ids("--file", "src") == [2, 1]
    assert ids("--agent", "claude") == [3]
    assert ids("--type", "bugfix", "--order", "oldest") == [1, 3]
    assert ids("-n", "1", "--offset", "1") == [2]


def test_since_and_until_accept_dates_and_ages(cli):
    records = [
        {"title": "old thing", "project": "p", "created_at": "2024-01-05T10:00:00Z"},
        {"title": "new thing", "project": "p", "created_at": "2026-01-05T10:00:00Z"},
    ]
    cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in records))
    assert cli("search", "thing", "--since", "2025-01-01", "--format", "ids").stdout.split() == ["2"]
    assert cli("search", "thing", "--until", "2024-01-05", "--format", "ids").stdout.split() == ["1"]
    assert cli("search", "--since", "7d", "--format", "ids").stdout.split() == []
    bad = cli("search", "--since", "last tuesday")
    assert bad.exit_code == 4 and "ISO 8601" in bad.stderr


def test_a_question_naming_a_month_ranks_that_months_memory_first(cli):
    # Same words, so the store's keyword list ties them; only the index has the dates (as words).
    records = [
        {"title": "Went camping with the kids", "project": "p", "created_at": "2023-05-20T10:00:00Z"},
        {"title": "Went camping with the kids", "project": "p", "created_at": "2023-06-27T10:00:00Z"},
    ]
    cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in records))
    assert cli("index").exit_code == 0
    assert cli("search", "camping in June 2023", "--format", "ids").stdout.split() == ["2", "1"]


def test_search_covers_summaries_and_prompts(cli):
    cli("prompt", "add", "please migrate the billing tables", "--session", "s1", "-p", "p")
    cli("summary", "add", "--session", "s1", "--learned", "billing uses a ledger table", "-p", "p")
    rows = cli("search", "billing", "--json").json()
    assert {r["kind"] for r in rows} == {"prompt", "summary"}
    assert {str(r["id"])[0] for r in rows} == {"P", "S"}


def test_keyed_memory_replaces_the_previous_value(cli):
    first = add(cli, "-t", "Deploy target is staging", "--key", "deploy-target", "-p", "p")
    again = add(cli, "-t", "Deploy target is production", "--key", "deploy-target", "-p", "p")
    other = add(cli, "-t", "Deploy target elsewhere", "--key", "deploy-target", "-p", "q")
    assert first == again and other != first
    (row,) = cli("search", "--project", "p", "--json").json()
    assert row["title"] == "Deploy target is production"


def test_plain_output_is_tab_separated_and_stable(cli):
    records = [
        {
            "title": "First\tnote",
            "type": "decision",
            "project": "alpha",
            "created_at": "2026-03-01T09:00:00Z",
        },
        {
            "title": "Second note \x1b[31mred",
            "type": "error",
            "project": "alpha",
            "created_at": "2026-03-02T09:00:00Z",
        },
    ]
    cli("add", "--json", "-", input=json.dumps(records))
    out = cli("search", "--project", "alpha").stdout
    assert out == (
        "2\t2026-03-02\terror\tSecond note \\x1b[31mred\talpha\t~64\n"  # file token cost (files carry no id)
        "1\t2026-03-01\tdecision\tFirst\\tnote\talpha\t~59\n"
    )


def test_other_formats(cli):
    cli(
        "add",
        "--json",
        "-",
        input=json.dumps({"title": "Only, one", "project": "alpha", "created_at": "2026-03-01T09:00:00Z"}),
    )
    assert cli("search", "--format", "csv").stdout.splitlines() == [
        "id,created_at,type,title,project,tokens",
        '1,2026-03-01T09:00:00.000Z,change,"Only, one",alpha,58',  # machine values
    ]
    (line,) = cli("search", "--format", "ndjson").stdout.splitlines()
    assert json.loads(line)["title"] == "Only, one"
    assert (
        cli("search", "--format", "md").stdout.splitlines()[2]
        == "| 1 | 2026-03-01 | change | Only, one | alpha | ~58 |"
    )
    assert cli("search", "--format", "yaml").exit_code == 2


def test_a_relative_home_keeps_its_export_in_home_export_whatever_the_spelling(sh, tmp_path):
    """`--home rel` and `--home /abs/rel` are one home: its files go to rel/export (not rel/rel/export), so a
    later `cmem sync` given the absolute path does not take every file for deleted and forget them all."""
    relative = sh("--home", "rel", "add", "--title", "Written with a relative home", "--project", "web")
    assert relative.exit_code == 0, relative.stderr
    assert [p.relative_to(tmp_path).parts[:2] for p in tmp_path.joinpath("rel").rglob("*.md")] == [
        ("rel", "export")
    ]
    synced = sh("--home", str(tmp_path / "rel"), "sync", "--json")
    assert synced.exit_code == 0 and synced.json()["forgotten"] == []
    found = sh("--home", "rel", "search", "relative", "--format", "ids")
    assert found.stdout.split() == ["1"]


@pytest.mark.parametrize("window_ids", [0, 50_000])
def test_a_time_window_finds_the_same_rows_whatever_order_ids_are_in(cli, monkeypatch, window_ids):
    from cmem_cli.store import keyword

    monkeypatch.setattr(keyword, "WINDOW_IDS", window_ids)  # 0: no id range, every match looked at
    days = [5, 1, 9, 3, 7, 2, 8]  # ids 1..7, dates out of order (an import of older records)
    records = [
        {"title": f"deploy note {d}", "project": "p", "created_at": f"2026-03-0{d}T12:00:00Z"} for d in days
    ]
    records.append({"title": "unrelated", "project": "p", "created_at": "2026-03-04T12:00:00Z"})
    cli("add", "--json", "-", input="\n".join(json.dumps(r) for r in records))

    def titles(*window: str) -> set[str]:
        rows = cli("search", "deploy", "--project", "p", *window, "--json").json()
        return {r["title"] for r in rows}

    assert titles("--since", "2026-03-07") == {"deploy note 7", "deploy note 8", "deploy note 9"}
    assert titles("--until", "2026-03-02") == {"deploy note 1", "deploy note 2"}
    assert titles("--since", "2026-03-03", "--until", "2026-03-05") == {"deploy note 3", "deploy note 5"}
    assert titles("--since", "2026-04-01") == set()
