"""Session ids: a unique prefix names a session everywhere an id is taken; an ended session takes no adds."""

from __future__ import annotations

from cmem_cli.cli.short_ids import unique_prefixes


def _start(cli, session_id: str) -> str:
    result = cli("session", "start", session_id)
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


def test_unique_prefix_names_the_session_in_show_end_add_and_search(cli, sh):
    full = _start(cli, "01abcdefghjkmnpqrstvwxyz12")
    _start(cli, "01abzzzzzzzzzzzzzzzzzzzzzz")
    assert cli("session", "show", "01abc", "--json").json()["session_id"] == full
    obs = sh("add", "Prefix note", "--session", "01abcd", "-p", "web").stdout.strip()
    assert cli("get", obs, "--json").json()[0]["session"] == full
    listed = sh("search", "--session", "01abcde", "--format", "ids").stdout.split()
    assert listed == [obs]
    assert cli("prompt", "add", "hello", "--session", "01abcdef").exit_code == 0
    assert cli("session", "show", full, "--json").json()["prompt_counter"] == 1
    assert cli("session", "end", "01abc").exit_code == 0
    assert cli("session", "show", full, "--json").json()["status"] == "completed"


def test_ambiguous_prefix_is_a_one_line_error(cli):
    _start(cli, "01abcdefghjkmnpqrstvwxyz12")
    _start(cli, "01abzzzzzzzzzzzzzzzzzzzzzz")
    result = cli("session", "show", "01ab")
    assert result.exit_code == 4
    assert result.stderr.startswith("cmem: session prefix '01ab' is ambiguous")
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_exact_id_wins_over_a_longer_id_it_prefixes(cli):
    _start(cli, "abc")
    _start(cli, "abcdef")
    assert cli("session", "show", "abc", "--json").json()["session_id"] == "abc"


def test_unknown_session_prefix_is_not_found(cli):
    result = cli("session", "show", "nosuch")
    assert result.exit_code == 3 and result.stderr == "cmem: no session 'nosuch'\n"


def test_short_forms_are_unique_and_at_least_eight_characters():
    ids = ["01m841b2rx14z5y41x3mp0e8s1", "01m841b2kpqbada6y181azeb8r", "01zzzzzzzzzzzzzzzzzzzzzzzz"]
    short = unique_prefixes(ids)
    assert short == {ids[0]: "01m841b2r", ids[1]: "01m841b2k", ids[2]: "01zzzzzz"}


def test_adding_to_an_ended_session_is_refused_not_silent(sh):
    session = sh("session", "start").stdout.strip()
    assert sh("session", "end", session).exit_code == 0
    result = sh("add", "Late note", env={"CMEM_SESSION": session})
    assert result.exit_code == 4
    assert result.stderr == (
        f"cmem: session {session} is completed; start a new one (cmem session start) or unset CMEM_SESSION\n"
    )
    assert sh("search", "Late", "--format", "ids").stdout == ""


def test_add_takes_the_title_positionally(cli):
    new_id = cli("add", "Positional title works", "--type", "discovery").stdout.strip()
    assert cli("get", new_id, "--json").json()[0]["title"] == "Positional title works"
    both = cli("add", "One", "--title", "Two")
    assert both.exit_code == 4 and "give the title once" in both.stderr


def test_session_start_resumes_an_ended_session_by_prefix(sh):
    session = sh("session", "start").stdout.strip()
    sh("session", "end", session)
    resumed = sh("session", "start", session[:12])
    assert resumed.stdout == f"{session}\n"
    assert sh("session", "show", session, "--json").json()["status"] == "active"
    assert sh("add", "Back at it", env={"CMEM_SESSION": session}).exit_code == 0


def test_a_prompt_for_an_ended_session_is_refused_as_an_observation_is(sh):
    session = sh("session", "start").stdout.strip()
    assert sh("session", "end", session).exit_code == 0
    result = sh("prompt", "add", "one more question", env={"CMEM_SESSION": session})
    assert result.exit_code == 4
    assert result.stderr == (
        f"cmem: session {session} is completed; start a new one (cmem session start) or unset CMEM_SESSION\n"
    )
    assert sh("session", "show", session, "--json").json()["prompts"] == []
