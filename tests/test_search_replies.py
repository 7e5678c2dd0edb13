"""A bare question found by search brings the next memory of its session, the reply that answers it, just
before it."""

from __future__ import annotations

import pytest


@pytest.fixture
def chat(cli):
    """Two sessions of a chat kept turn by turn, and a question written down as a memory of its own."""
    turns = [
        ("s-one", "Tim: Congrats on the new contract! Which team did you sign with?"),
        ("s-one", "John: The Wolves, as a shooting guard. The season opener is next week."),
        ("s-one", "Tim: Amazing, good luck with the opener."),
        ("s-two", "John: My knee is better, thanks for asking."),
    ]
    ids = []
    for session, title in turns:
        result = cli("add", title, "-p", "chat", "--session", session, "--type", "discovery")
        assert result.exit_code == 0, result.stderr
        ids.append(int(result.stdout))
    return ids


def _search(cli, *args):
    result = cli("search", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


def test_the_reply_to_a_found_question_comes_just_before_it(cli, chat):
    rows = _search(cli, "which team did Tim sign with")
    assert [r["id"] for r in rows[:2]] == [chat[1], chat[0]]
    assert rows[0]["score"] == rows[1]["score"]  # the reply shares no word with the question
    assert chat[3] not in [r["id"] for r in rows]  # another session's next turn is not a reply


def test_a_reply_found_on_its_own_is_listed_once(cli, chat):
    ids = [r["id"] for r in _search(cli, "Wolves shooting guard team")]  # the question matches "team" only
    assert ids[:2] == [chat[1], chat[0]]
    assert ids.count(chat[1]) == 1


def test_only_a_bare_question_in_a_session_brings_its_reply(cli):
    asked = cli(
        "add", "Why does the hook time out?", "-p", "p", "--session", "s", "--narrative", "Lock held."
    )
    after = cli("add", "Unrelated: bumped the linter", "-p", "p", "--session", "s")
    alone = cli("add", "Where do the nightly backups go?", "-p", "p")
    assert {asked.exit_code, after.exit_code, alone.exit_code} == {0}
    assert [r["id"] for r in _search(cli, "hook time out")] == [int(asked.stdout)]
    assert [r["id"] for r in _search(cli, "nightly backups")] == [int(alone.stdout)]


def test_the_reply_must_match_the_filters(cli, chat):
    assert cli("add", "Tim: Which city do they play in?", "-p", "chat", "--session", "s-three").exit_code == 0
    assert (
        cli("add", "John: Minneapolis.", "-p", "chat", "--session", "s-three", "--type", "bugfix").exit_code
        == 0
    )
    titles = [r["title"] for r in _search(cli, "which city", "--type", "change")]
    assert titles == ["Tim: Which city do they play in?"]
    titles = [r["title"] for r in _search(cli, "which city")]
    assert titles == ["John: Minneapolis.", "Tim: Which city do they play in?"]


def test_explain_says_which_question_a_reply_follows(cli, chat):
    rows = _search(cli, "which team did Tim sign with", "--explain")
    assert rows[0]["signals"] == {"reply": {"rank": 2, "score": rows[1]["score"], "norm": rows[1]["score"]}}


def test_a_listing_by_date_brings_no_replies(cli, chat):
    rows = _search(cli, "which team did Tim sign with", "--order", "newest")
    assert [r["id"] for r in rows] == [chat[2], chat[0]]  # both name Tim; the reply names neither
