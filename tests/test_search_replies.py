"""A bare question found by search is preceded by the next memory of its session, the reply that answers it,
when that reply is a hit of its own."""

from __future__ import annotations

import pytest


@pytest.fixture
def chat(cli):
    """Two sessions of a chat kept turn by turn."""
    turns = [
        ("s-one", "Tim: Congrats on the new contract! Which team did you sign with?"),
        ("s-one", "John: The Wolves signed me as a shooting guard. The opener is next week."),
        ("s-one", "Tim: Amazing, good luck with the opener, and with the team!"),
        ("s-two", "John: Did you sign up for the marathon? Which team will you run with?"),
        ("s-two", "Tim: Not yet, my knee still hurts."),
    ]
    ids = []
    for session, title in turns:
        result = cli("add", title, "-p", "chat", "--session", session, "--type", "discovery")
        assert result.exit_code == 0, result.stderr
        ids.append(int(result.stdout))
    return ids


def _ids(cli, *args):
    result = cli("search", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return [row["id"] for row in result.json()]


def test_a_reply_found_further_down_moves_up_to_just_before_its_question(cli, chat):
    plain = _ids(cli, "which team did you sign with", "--order", "newest")
    assert chat[1] in plain  # the reply matches "sign" (signed) only: found, but far down by relevance
    ids = _ids(cli, "which team did you sign with")
    first_question = min(ids.index(chat[0]), ids.index(chat[3]))
    assert ids.index(chat[1]) + 1 == ids.index(chat[0])
    assert ids.index(chat[1]) <= first_question
    assert len(ids) == len(set(ids)) == len(plain)  # moved, not added


def test_a_reply_that_is_no_hit_is_not_brought_in(cli, chat):
    ids = _ids(cli, "which team did you sign with")
    assert chat[4] not in ids  # the answer to the other question shares nothing with the query


def test_only_a_bare_question_in_a_session_brings_its_reply(cli):
    first = cli(
        "add", "Why does the hook time out?", "-p", "p", "--session", "s", "--narrative", "Lock held."
    )
    second = cli("add", "Raised the hook's limit", "-p", "p", "--session", "s")
    assert {first.exit_code, second.exit_code} == {0}
    assert _ids(cli, "why does the hook time out") == [int(first.stdout), int(second.stdout)]


def test_the_reply_must_match_the_filters(cli):
    asked = cli("add", "Tim: Which city do they play in?", "-p", "chat", "--session", "s-three")
    reply = cli(
        "add", "John: That city is Minneapolis.", "-p", "chat", "--session", "s-three", "--type", "bugfix"
    )
    assert {asked.exit_code, reply.exit_code} == {0}
    assert _ids(cli, "which city do they play in") == [int(reply.stdout), int(asked.stdout)]
    assert _ids(cli, "which city do they play in", "--type", "change") == [int(asked.stdout)]


def test_explain_says_which_question_a_reply_precedes(cli, chat):
    result = cli("search", "which team did you sign with", "--explain", "--json")
    rows = result.json()
    at = [row["id"] for row in rows].index(chat[1])
    question = rows[at + 1]
    assert rows[at]["signals"]["reply"] == {
        "rank": at + 2,
        "score": question["evidence"],  # its own; the row shows no more than the reply above it
        "norm": question["evidence"],
    }
    assert question["score"] <= rows[at]["score"]
    assert rows[at]["signals"]["store"]["rank"] > question["signals"]["store"]["rank"]  # a hit of its own


def test_a_listing_by_date_moves_no_replies(cli, chat):
    ids = _ids(cli, "which team did you sign with", "--order", "newest")
    assert ids == sorted(ids, reverse=True)


def test_replies_first_moves_each_present_reply_once_and_keeps_every_key():
    from cmem_cli.services.read.search_pipeline import replies_first

    keys = ["q1", "x", "q2", "r1", "r2"]
    assert replies_first(keys, {"q1": "r1", "q2": "r2"}) == ["r1", "q1", "x", "r2", "q2"]
    assert replies_first(keys, {"q1": "absent"}) == keys  # nothing is brought in
    assert replies_first(["r1", "q1"], {"q1": "r1"}) == ["r1", "q1"]  # already above its question
