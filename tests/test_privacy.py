"""Private spans and secrets never survive scrubbing; ordinary code and prose do.

The secrets are generated here with the providers' real shapes (prefixes, lengths, alphabets) from a seeded
random generator: realistic enough to prove the rules, never real credentials.
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cmem_cli.core.errors import InvalidInput
from cmem_cli.services.write.privacy import (
    is_excluded_project,
    redact_secrets,
    rules_from_config,
    scrub,
    scrub_record,
    strip_private,
)

RNG = random.Random(20240611)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def fake_pem() -> str:
    body = "\n".join(rand(ALNUM + "+/", 64) for _ in range(6))
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"


# (kind expected in the marker, the secret, a realistic line that carries it)
def corpus() -> list[tuple[str, str, str]]:
    openai = "sk-proj-" + rand(ALNUM + "_-", 48) + "7"
    anthropic = "sk-ant-api03-" + rand(ALNUM + "_-", 93) + "AA"
    ghp = "ghp_" + rand(ALNUM, 36)
    gho = "gho_" + rand(ALNUM, 36)
    pat = "github_pat_11" + rand(UPPER_DIGITS, 20) + "_" + rand(ALNUM, 59)
    akia = "AKIA" + rand(UPPER_DIGITS, 16)
    aws_secret = rand(ALNUM + "/+", 40)
    slack = "xoxb-" + rand(string.digits, 12) + "-" + rand(string.digits, 13) + "-" + rand(ALNUM, 24)
    stripe = "sk_live_" + rand(ALNUM, 24)
    google = "AIza" + rand(ALNUM + "_-", 35)
    jwt = ".".join(
        [
            b64url({"alg": "HS256", "typ": "JWT"}),
            b64url({"sub": "1234567890", "name": "Ada"}),
            rand(ALNUM + "_-", 43),
        ]
    )
    pem = fake_pem()
    password = rand(ALNUM + "!#%", 14)
    quoted = "correct horse " + rand(ALNUM, 8)
    bearer = rand(ALNUM + "._-", 40)
    url_pass = rand(ALNUM, 12)
    env_token = rand(ALNUM, 32)
    npm = "npm_" + rand(ALNUM, 36)
    hf = "hf_" + rand(string.ascii_letters, 34)
    glpat = "glpat-" + rand(ALNUM + "_-", 20)
    camel = rand(ALNUM, 24)
    return [
        ("openai-key", openai, f"export OPENAI_API_KEY={openai}"),
        ("anthropic-key", anthropic, f'client = Anthropic(api_key="{anthropic}")'),
        ("github-token", ghp, f"git clone https://{ghp}@github.com/acme/app.git"),
        ("github-token", gho, f"gh auth status shows token {gho}"),
        ("github-token", pat, f"GH_TOKEN: {pat}"),
        ("aws-access-key", akia, f"aws_access_key_id = {akia}"),
        ("aws-secret-key", aws_secret, f"aws_secret_access_key = {aws_secret}"),
        ("slack-token", slack, f"SLACK_BOT={slack} was posted in the log"),
        ("stripe-key", stripe, f"stripe.api_key = '{stripe}'"),
        ("google-api-key", google, f"https://maps.googleapis.com/maps/api/geocode/json?key={google}"),
        ("jwt", jwt, f"cookie session={jwt}; Path=/"),
        ("private-key", pem, f"cat ~/.ssh/id_ed25519\n{pem}\n"),
        ("secret", password, f"DB_PASSWORD={password} ./manage.py migrate"),
        ("secret", quoted, f'secret: "{quoted}"'),
        ("authorization", bearer, f"curl -H 'Authorization: Bearer {bearer}' https://api.example.com/v1"),
        ("url-password", url_pass, f"DATABASE_URL=postgres://app:{url_pass}@db.internal:5432/app"),
        ("secret", env_token, f'{{"auth_token": "{env_token}"}}'),
        ("npm-token", npm, f"//registry.npmjs.org/:_authToken={npm}"),
        ("huggingface-token", hf, f"huggingface-cli login --token {hf}"),
        ("gitlab-token", glpat, f"PRIVATE-TOKEN: {glpat}"),
        ("secret", camel, f"const config = {{ clientSecret: '{camel}' }}"),
    ]


CORPUS = corpus()


@pytest.mark.parametrize(
    ("kind", "secret", "line"), CORPUS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CORPUS)]
)
def test_every_corpus_secret_is_redacted(kind: str, secret: str, line: str) -> None:
    out = redact_secrets(line)
    assert secret not in out
    assert "[REDACTED:" in out
    # The precise kind is reported for provider formats (generic rules may win on assignments).
    if kind not in ("secret", "authorization"):
        assert f"[REDACTED:{kind}]" in out


def test_whole_corpus_in_one_text_leaves_no_secret_fragment() -> None:
    text = "\n".join(line for _, _, line in CORPUS)
    out = scrub(text)
    for _, secret, _ in CORPUS:
        # not even a long piece of it survives
        for piece in (secret[:12], secret[-12:]):
            assert piece not in out, piece


def test_assignment_keeps_the_name_and_hides_the_value() -> None:
    assert redact_secrets("DB_PASSWORD=hunter2hunter2") == "DB_PASSWORD=[REDACTED:secret]"
    assert (
        redact_secrets("postgres://app:pw12345@db:5432/x")
        == "postgres://app:[REDACTED:url-password]@db:5432/x"
    )


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=150000 and num_tokens: 42",
        "password = self.settings.password",
        "token=$GITHUB_TOKEN",
        "secret: null",
        "api_key = os.environ.get('API_KEY')",
        "git diff src/auth/password_reset.py",
        "task-runner-configuration-2024 scikit-learn tokenizer secretary",
        "def check_password(password: str) -> bool:",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "uuid 8c35adc1-3b4f-4a2e-9a51-0f6c2d1e7b90",
    ],
)
def test_ordinary_code_and_prose_are_not_redacted(text: str) -> None:
    assert redact_secrets(text) == text


def test_private_span_removed_case_insensitive_and_multiline() -> None:
    text = "keep this <PRIVATE>my home address\nis 1 Main St</Private> and this"
    assert strip_private(text) == "keep this  and this"


def test_unclosed_private_tag_drops_everything_after_it() -> None:
    assert strip_private("visible <private>secret plans\nmore secret") == "visible "


def test_nested_private_tags_do_not_leak_the_outer_tail() -> None:
    text = "a <private>x <private>y</private> still private</private> b"
    assert strip_private(text) == "a  b"


def test_stray_closing_tag_hides_the_text_before_it() -> None:
    # its opening tag was clipped off or lost: what precedes it was meant to be private (issue 8, item 3)
    assert strip_private("a </private> b") == " b"


def test_private_secret_is_removed_before_redaction_sees_it() -> None:
    out = scrub("note <private>token=abcdefgh12345</private> done")
    assert out == "note  done"


@given(
    before=st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=40),
    hidden=st.text(max_size=40),
    after=st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=40),
)
def test_private_content_never_survives(before: str, hidden: str, after: str) -> None:
    # Whatever the hidden text is (even tag-like), the result is exactly the text outside the outer span,
    # unless the hidden text itself closes the span early: then nothing of it after that point leaks either.
    out = strip_private(f"{before}<private>{hidden}</private>{after}")
    assert out.startswith(before)
    if "<" not in hidden:
        assert out == before + after


@given(st.text(max_size=200))
def test_scrub_is_idempotent(text: str) -> None:
    once = scrub(text)
    assert scrub(once) == once


def test_scrub_record_reaches_every_text_field_and_list() -> None:
    stripe = "sk_live_" + rand(ALNUM, 24)
    record = {
        "type": "change",
        "title": f"Set key {stripe}",
        "narrative": "ok <private>do not keep</private>",
        "facts": [f"uses {stripe}", "plain fact"],
        "files_modified": ["src/app.py"],
        "meta": {"nested": [f"deep {stripe}"]},
        "prompt_number": 3,
        "confidence": 0.5,
    }
    out = scrub_record(record)
    assert stripe not in json.dumps(out)
    assert "do not keep" not in json.dumps(out)
    assert out["facts"][1] == "plain fact"
    assert out["prompt_number"] == 3 and out["confidence"] == 0.5
    assert record["title"].endswith(stripe)  # the input is not mutated


def test_config_rules_add_custom_patterns() -> None:
    rules = rules_from_config({"redact": [r"ACME-[0-9]{6}", {"pattern": r"emp#\d+", "kind": "employee"}]})
    out = redact_secrets("ticket ACME-123456 for emp#42", rules)
    assert out == "ticket [REDACTED:custom] for [REDACTED:employee]"
    # defaults still apply
    assert "[REDACTED:stripe-key]" in redact_secrets("sk_live_" + "a1" * 12, rules)


def test_bad_config_regex_is_a_one_line_invalid_input() -> None:
    with pytest.raises(InvalidInput) as info:
        rules_from_config({"redact": ["(unclosed"]})
    assert "\n" not in info.value.message


def test_excluded_projects_match_names_and_globs() -> None:
    section = {"exclude_projects": ["secret-client", "scratch-*"]}
    assert is_excluded_project("secret-client", section)
    assert is_excluded_project("scratch-42", section)
    assert not is_excluded_project("cmem", section)
    assert is_excluded_project("cmem", {}, extra=["cmem"])


def test_config_object_supplies_the_users_rules() -> None:
    class FakeConfig:
        def section(self, name: str) -> dict:
            return {"redact": [r"INTERNAL-\d{4}"]} if name == "privacy" else {}

    config = FakeConfig()
    assert scrub("see INTERNAL-1234", config=config) == "see [REDACTED:custom]"
    assert scrub_record({"facts": ["INTERNAL-9999"]}, config=config) == {"facts": ["[REDACTED:custom]"]}


def test_every_default_rule_compiles() -> None:
    # Rules compile lazily (a hook should not pay for patterns its text never needs): check them all here.
    from cmem_cli.services.write.privacy import DEFAULT_RULES

    assert all(rule.pattern.pattern for rule in DEFAULT_RULES)


@pytest.mark.parametrize(
    "text",
    [
        "mcp__github AKIAIOSFODNN7EXAMPLE__get_issue",
        "key_AKIAIOSFODNN7EXAMPLE",
        "token ghp_123456789012345678901234567890123456_old",
        "npm_123456789012345678901234567890123456_ci",
    ],
)
def test_a_secret_joined_to_a_name_by_an_underscore_never_reaches_the_store(sh, text: str) -> None:
    """An agent's adapter joins an MCP server's and tool's names with `__`: a key next to `_` is a key."""
    note = sh("add", "-t", f"Deploy with {text}").stdout.strip()
    shown = sh("get", note, "--json").stdout
    assert [s for s in ("AKIAIOSFODNN7EXAMPLE", "ghp_1234567890", "npm_1234567890") if s in shown] == []
