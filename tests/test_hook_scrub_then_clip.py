"""Hook output is scrubbed before it is clipped, fragments of private text count as private, and the
secret kinds the privacy probe found unredacted are redacted in every channel."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cmem_cli.services.write.privacy import scrub, strip_private
from tests.agent_fixtures import all_stored_bytes, tool_payload
from tests.conftest import fake_repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "work", "vault")


def _fake_key(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = ["".join(rng.choice(alphabet) for _ in range(64)) for _ in range(25)]
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n"
    return key, body


def _failed_bash(sh, project, session, command, output):
    data = tool_payload(
        session, project, "Bash", {"command": command}, {"stdout": output, "stderr": ""},
        event="PostToolUseFailure", error="Exit code 1\n" + output,
    )  # fmt: skip
    result = sh("hook", "PostToolUseFailure", input=json.dumps(data))
    assert result.exit_code == 0


def test_a_failing_cat_of_a_key_stores_no_line_of_it(sh, home, project):
    key, body = _fake_key(7)
    _failed_bash(sh, project, "s-key", "cat key.pem && false", key)
    stored = all_stored_bytes(home)
    assert b"Command failed" in stored  # the observation was recorded
    for line in body:
        assert line.encode() not in stored
        assert line[-20:].encode() not in stored


def test_a_private_span_cut_by_the_clip_is_not_stored(sh, home, project):
    output = "<private>" + "the vault combination is 31-07-44 " * 60 + "</private>\ndone"
    _failed_bash(sh, project, "s-priv", "show-vault && false", output)
    stored = all_stored_bytes(home)
    assert b"Command failed" in stored
    assert b"31-07-44" not in stored


def test_a_dangling_closing_tag_hides_what_precedes_it():
    assert strip_private("leaked 4242 secret</private> after") == " after"
    assert strip_private("keep <private>x</private> mid 77</private> end") == " end"


def test_a_key_fragment_without_its_begin_line_is_redacted():
    _, body = _fake_key(3)
    fragment = "…" + body[10][20:] + "\n" + "\n".join(body[11:]) + "\n-----END RSA PRIVATE KEY-----\n"
    out = scrub("output was:\n" + fragment)
    assert "[REDACTED:private-key-fragment]" in out
    for line in body[11:]:
        assert line not in out
    assert out.startswith("output was:\n")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("redis://:s3cretRedisPw@cache.internal:6379/0", "s3cretRedisPw"),
        (
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTA=;"
            "EndpointSuffix=core.windows.net",
            "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTA=",
        ),
        ("psql-admin --password Hunter2Horse --host db", "Hunter2Horse"),
        ("deploy --token=tk_8f9a7b6c5d4e --yes", "tk_8f9a7b6c5d4e"),
        ("mysql -u root -pW1ldHorse42 shop", "W1ldHorse42"),
        ("sshpass -p 'Tr0ub4dor&3' ssh admin@host", "Tr0ub4dor&3"),
    ],
)
def test_new_secret_kinds_are_redacted_through_add_and_the_export(cli, home, text, secret):
    result = cli("add", "-t", "ran a command", "--narrative", text, "--fact", text)
    assert result.exit_code == 0, result.stderr
    stored = all_stored_bytes(home)
    assert secret.encode() not in stored
    assert b"[REDACTED:" in stored


@pytest.mark.parametrize(
    "text",
    ["mkdir -p build/out", "gcc -pthread main.c", "http://localhost:8080/path", "--password-file ~/.pw"],
)
def test_look_alikes_are_not_redacted(text):
    assert scrub(text) == text


def test_a_secret_in_the_tail_of_a_huge_output_is_redacted_and_a_key_cut_in_the_middle_too(sh, home, project):
    key, body = _fake_key(11)
    token = "ghp_" + "Z9" * 20
    middle = "filler line without secrets\n" * 20_000  # far larger than what is scrubbed whole
    output = (
        "<private>hidden head " + middle + "</private>\n" + key[:200] + middle + key[200:] + f"\nGH={token}"
    )
    _failed_bash(sh, project, "s-huge", "huge && false", output)
    stored = all_stored_bytes(home)
    assert b"Command failed" in stored
    assert token.encode() not in stored
    for line in body:
        assert line.encode() not in stored
