"""Keep private text and secrets out of everything cmem stores.

Every writer goes through ``Memory``, which calls :func:`scrub_record` before a record touches the database or
the export, so nothing below has to be remembered by each command. Two layers:

- ``<private>...</private>`` spans are removed (case-insensitive, across lines, nested tags counted; an unclosed
  tag hides everything after it, because a cut-off closing tag must not leak the rest).
- Secrets that look like provider keys, tokens, private keys, credentials in URLs or ``password=``-style
  assignments are replaced with ``[REDACTED:<kind>]``. Users add their own patterns in the ``[privacy]`` config
  section (``redact = ["regex", ...]``) and skip whole projects (``exclude_projects = ["glob", ...]``).

Only the standard library is imported: hooks load this on every call.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cmem_cli.core.errors import InvalidInput

REDACTED = "[REDACTED:{kind}]"


class Rule:
    """One secret pattern. Only the ``secret`` group is replaced when the pattern has one (so
    ``password=hunter2`` keeps its key); ``keep`` can veto a match that is clearly not a secret.

    A pattern given as text is compiled on first use: most texts never reach most rules (see ``hints``),
    and compiling all of them costs a short-lived hook process several milliseconds."""

    __slots__ = ("_compiled", "_flags", "_gate", "_source", "hints", "keep", "kind")

    def __init__(
        self,
        kind: str,
        pattern: str | re.Pattern[str],
        keep: Callable[[str], bool] | None = None,
        hints: tuple[str, ...] = (),
        flags: int = 0,
        gate: str | None = None,
    ):
        self.kind = kind
        self.keep = keep
        # Lower-case literals of which at least one must occur for the pattern to match: a substring test is
        # far cheaper than a regex that has to be tried at every position (``\b...`` defeats re's prefix scan).
        self.hints = tuple(hints)
        # ``gate``: a cheap regex, run on the lower-cased text, that any match of the pattern implies; it spares
        # the full pattern (slow where it must be tried at every word) on text that only mentions a hint word.
        self._gate: str | re.Pattern[str] | None = gate
        self._source = pattern
        self._flags = flags
        self._compiled = pattern if isinstance(pattern, re.Pattern) else None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def __repr__(self) -> str:
        return f"Rule({self.kind!r})"

    def may_match(self, text: str, lowered: str) -> bool:
        if self.hints and not any(hint in lowered for hint in self.hints):
            return False
        if self._gate is not None:
            if isinstance(self._gate, str):
                self._gate = re.compile(self._gate)
            if self._gate.search(lowered) is None:
                return False
        return self.pattern.search(text) is not None

    def apply(self, text: str) -> str:
        return self.pattern.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        group = "secret" if "secret" in self.pattern.groupindex else 0
        value = match.group(group)
        if value is None or "[REDACTED:" in match.group(0) or (self.keep is not None and self.keep(value)):
            return match.group(0)  # never re-redact an earlier rule's marker
        start, end = match.span(group)
        base = match.start(0)
        whole = match.group(0)
        return whole[: start - base] + REDACTED.format(kind=self.kind) + whole[end - base :]


# --- <private> spans --------------------------------------------------------------------------------------

_PRIVATE_TAG = r"(?i)<(/?)private\b[^>]*>"  # compiled where used (re caches it): most calls never need it


def strip_private(text: str) -> str:
    """Remove everything inside ``<private>`` tags, counting nesting; an unclosed tag drops the rest, and a
    closing tag without its opening drops everything before it (the text was clipped, or the opening tag
    was lost: what precedes a dangling ``</private>`` was meant to be private)."""
    if not text or "<" not in text:
        return text
    out: list[str] = []
    depth = 0
    pos = 0
    for match in re.finditer(_PRIVATE_TAG, text):
        closing = match.group(1) == "/"
        if depth == 0:
            out.append(text[pos : match.start()])
        if closing:
            if depth == 0:
                out.clear()  # a dangling closing tag: everything before it was private
            depth = max(0, depth - 1)
        else:
            depth += 1
        pos = match.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)


# --- secrets ----------------------------------------------------------------------------------------------

# Compiled where used (re caches them): only a value a credential's name was given is checked.
_IDENTIFIER_PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
_PLACEHOLDER = (
    r"(?i)(?:\$\{?|%\(|\{\{|<|\*{3,}|x{6,}$|\[REDACTED)|(?:none|null|nil|true|false|undefined|changeme)$"
)


def _not_a_secret(value: str) -> bool:
    """Assignment values that are references or placeholders, not credentials (``token=$TOKEN``,
    ``password = self.password``, ``secret: null``)."""
    return bool(re.match(_PLACEHOLDER, value) or re.fullmatch(_IDENTIFIER_PATH, value))


# Names whose value is a credential: whole words of snake/kebab/dotted names (``DB_PASSWORD``,
# ``api-key``, ``auth.token``) so that ``max_tokens`` or ``secretary`` are not caught.
_KEY_WORDS = (
    r"password|passwd|passphrase|pwd|secret|token|apikey|api[_-]key|access[_-]?key|auth[_-]?token"
    r"|private[_-]?key|client[_-]?secret|credentials?"
)
_KEY_NAME = rf"(?:[A-Za-z0-9]+[_.-])*(?:{_KEY_WORDS})(?:[_.-][A-Za-z0-9]+)*"
_CAMEL_KEY = r"[a-z][a-z0-9]*(?:Password|Passwd|Secret|Token|ApiKey|AccessKey|PrivateKey)"
_ASSIGN = r"""["']?\s*(?::=|=>|[:=])\s*"""


_HINTS: dict[str, tuple[str, ...]] = {
    "private-key": ("private key",),
    "azure-key": ("accountkey", "sharedaccesskey"),
    "cli-password": ("--pass", "--token", "--secret", "--api-key", "sshpass", "mysql", "mariadb"),
    "anthropic-key": ("sk-ant-",),
    "openai-key": ("sk-",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-",),
    "aws-access-key": ("akia", "asia", "abia", "acca"),
    "aws-secret-key": ("aws",),
    "slack-token": ("xox",),
    "slack-webhook": ("hooks.slack.com",),
    "stripe-key": ("_live_", "_test_"),
    "stripe-webhook-secret": ("whsec_",),
    "google-api-key": ("aiza",),
    "google-oauth-token": ("ya29.",),
    "npm-token": ("npm_",),
    "huggingface-token": ("hf_",),
    "sendgrid-key": ("sg.",),
    "jwt": ("eyj",),
    "authorization": ("authorization",),
    "bearer-token": ("bearer",),
    "url-password": ("://",),
    "secret": ("pass", "pwd", "secret", "token", "key", "credential"),
}


# A key word, the rest of its name, then an assignment: implied by every match of the two "secret" rules.
_GATES = {"secret": r"""(?:pass|pwd|secret|token|key|credential)[a-z0-9_.-]*["']?\s*(?::=|=>|[:=])"""}


def _rule(kind: str, pattern: str, flags: int = 0, keep: Callable[[str], bool] | None = None) -> Rule:
    return Rule(kind, pattern, keep, _HINTS.get(kind, ()), flags, _GATES.get(kind))


# A token ends where its letters and digits end: ``_`` joins it to a name (``key_AKIA...``, an MCP tool
# ``mcp__server AKIA...__get``) without making it less of a secret, so it is no boundary here.
_ALONE = r"(?<![A-Za-z0-9])"

# Order matters: specific provider formats first, generic assignments last, so a key gets its precise kind.
DEFAULT_RULES: tuple[Rule, ...] = (
    _rule(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        re.DOTALL,
    ),
    _rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    _rule("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    _rule("github-token", _ALONE + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}(?![A-Za-z0-9])"),
    _rule("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    _rule("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    _rule("aws-access-key", _ALONE + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _rule(
        "aws-secret-key",
        r"(?i:aws)[A-Za-z0-9_.-]{0,20}?(?i:secret)[A-Za-z0-9_.-]{0,20}"
        + _ASSIGN
        + r"""["']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])""",
    ),
    _rule("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    _rule("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    _rule("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _rule("stripe-webhook-secret", r"\bwhsec_[A-Za-z0-9]{24,}"),
    _rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    _rule("google-oauth-token", r"\bya29\.[0-9A-Za-z_-]{20,}"),
    _rule("npm-token", _ALONE + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _rule("huggingface-token", _ALONE + r"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])"),
    _rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    _rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _rule(
        "authorization",
        r"(?i:authorization|proxy-authorization)"
        + _ASSIGN
        + r"""["']?(?i:bearer|basic|token|digest)?\s*(?P<secret>[A-Za-z0-9._~+/=-]{8,})""",
    ),
    _rule("bearer-token", r"(?i:\bbearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"),
    _rule("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:(?P<secret>[^\s@/]+)@"),
    _rule("azure-key", r"(?i:\b(?:Shared)?AccountKey|\bSharedAccessKey)=(?P<secret>[A-Za-z0-9+/=]{16,})"),
    _rule(
        "cli-password",
        r"(?<!\S)--(?i:password|passwd|pass|token|secret|api-key)(?:=|[^\S\n]+)(?P<secret>[^\s\-][^\s]*)",
        keep=_not_a_secret,
    ),
    _rule(
        "cli-password",
        r"\b(?:sshpass|mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?(?<!\S)-p[^\S\n]*(?P<secret>[^\s\-]\S*)",
        keep=_not_a_secret,
    ),
    _rule(
        "secret",
        rf"(?i:\b{_KEY_NAME}\b|\b{_CAMEL_KEY}\b){_ASSIGN}(?P<q>[\"'])(?P<secret>[^\"'\n]{{4,}})(?P=q)",
        keep=_not_a_secret,
    ),
    _rule(
        "secret",
        rf"(?i:\b{_KEY_NAME}\b|\b{_CAMEL_KEY}\b){_ASSIGN}(?P<secret>[^\s\"',;&()<>{{}}\[\]]{{6,}}+)(?!\()",
        keep=_not_a_secret,
    ),
)


def redact_secrets(text: str, rules: Iterable[Rule] | None = None) -> str:
    """Replace every secret the rules recognise with ``[REDACTED:<kind>]``."""
    if not text:
        return text
    lowered = text.lower()
    for rule in DEFAULT_RULES if rules is None else rules:
        if rule.hints and not any(hint in lowered for hint in rule.hints):
            continue
        text = rule.apply(text)
    return redact_key_fragments(text)


# Compiled where used (re caches them): only a text that says PRIVATE KEY is walked.
_DANGLING_KEY_END = r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_KEY_BODY_LINE = r"[^\S\n]*…?[A-Za-z0-9+/=]+[^\S\n]*\r?"


def redact_key_fragments(text: str) -> str:
    """A private key whose BEGIN line was clipped off: its END line and the body lines just above it.

    Runs after the rules, which replace every whole key, so any END line left is dangling. Walks back line
    by line from each END line (linear: a regex doing this backtracks quadratically on long base64 text)."""
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    pos = 0
    body_line = re.compile(_KEY_BODY_LINE)
    for match in re.finditer(_DANGLING_KEY_END, text):
        start = match.start()
        newline = text.rfind("\n", pos, start)
        line_start = newline + 1 if newline != -1 else pos
        if not text[line_start:start].strip(" \t…"):
            start = line_start
            while start > pos:
                previous = text.rfind("\n", pos, start - 1)
                previous_start = previous + 1 if previous != -1 else pos
                if not body_line.fullmatch(text, previous_start, start - 1):
                    break
                start = previous_start
        out.append(text[pos:start])
        out.append(REDACTED.format(kind="private-key-fragment"))
        pos = match.end()
    out.append(text[pos:])
    return "".join(out)


def scrub(text: str, rules: Iterable[Rule] | None = None, *, config: Any = None) -> str:
    """Private spans first (they may contain secrets that must not even be redacted-in-place), then secrets.

    ``config`` (a :class:`cmem_cli.core.config.Config`) adds the user's ``[privacy] redact`` rules."""
    if rules is None and config is not None:
        rules = rules_for(config)
    return redact_secrets(strip_private(text), rules)


def scrub_record(
    record: Mapping[str, Any], rules: Iterable[Rule] | None = None, *, config: Any = None
) -> dict[str, Any]:
    """A copy of ``record`` with every string, in lists and nested objects too, scrubbed: the objects' keys
    as well (a payload's ``tool_input`` may name a secret in a key, and a spooled event keeps it whole)."""
    if rules is None and config is not None:
        rules = rules_for(config)
    rules = tuple(DEFAULT_RULES if rules is None else rules)
    # Most records hold no secret: one search per rule over all the record's text picks the rules worth
    # running field by field (a rule that matches no field alone cannot match the joined text less).
    joined = "\n".join(_strings(record))
    lowered = joined.lower()
    rules = tuple(rule for rule in rules if rule.may_match(joined, lowered))
    return {scrub(key, rules): _scrub_value(value, rules) for key, value in record.items()}


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)


def _scrub_value(value: Any, rules: tuple[Rule, ...]) -> Any:
    if isinstance(value, str):
        return scrub(value, rules)
    if isinstance(value, list | tuple):
        return [_scrub_value(item, rules) for item in value]
    if isinstance(value, Mapping):
        return {
            scrub(key, rules) if isinstance(key, str) else key: _scrub_value(item, rules)
            for key, item in value.items()
        }
    return value


# --- configuration ----------------------------------------------------------------------------------------


def rules_from_config(section: Mapping[str, Any] | None) -> tuple[Rule, ...]:
    """Default rules plus ``[privacy] redact``: strings (kind ``custom``) or tables ``{pattern, kind}``."""
    extra = (section or {}).get("redact") or []
    if isinstance(extra, str | Mapping):
        extra = [extra]
    if not isinstance(extra, list):
        raise InvalidInput("config [privacy] redact must be a list of regular expressions")
    rules = list(DEFAULT_RULES)
    for item in extra:
        pattern, kind = (
            (item.get("pattern"), item.get("kind", "custom"))
            if isinstance(item, Mapping)
            else (item, "custom")
        )
        if not isinstance(pattern, str) or not pattern or not isinstance(kind, str):
            raise InvalidInput(f"config [privacy] redact: invalid entry {item!r}")
        try:
            rules.append(Rule(kind, re.compile(pattern)))
        except re.error as exc:
            raise InvalidInput(
                f"config [privacy] redact: bad regular expression {pattern!r}: {exc}"
            ) from None
    return tuple(rules)


_RULES_CACHE: dict[int, tuple[Any, tuple[Rule, ...]]] = {}


def rules_for(config: Any) -> tuple[Rule, ...]:
    """The rules for a Config (``config.section("privacy")``), compiled once per config object."""
    cached = _RULES_CACHE.get(id(config))
    if cached is not None and cached[0] is config:
        return cached[1]
    rules = rules_from_config(config.section("privacy"))
    _RULES_CACHE[id(config)] = (config, rules)
    return rules


def excluded_projects(section: Mapping[str, Any] | None) -> list[str]:
    value = (section or {}).get("exclude_projects") or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput("config [privacy] exclude_projects must be a list of project names or globs")
    return value


def is_excluded_project(
    project: str | None, section: Mapping[str, Any] | None, extra: Iterable[str] = ()
) -> bool:
    """True when ``project`` matches a name or glob in ``exclude_projects`` (or ``extra``, e.g. a CLI flag)."""
    if not project:
        return False
    patterns = [*excluded_projects(section), *extra]
    return any(fnmatch.fnmatchcase(project, pattern) for pattern in patterns)


__all__ = [
    "DEFAULT_RULES",
    "Rule",
    "excluded_projects",
    "is_excluded_project",
    "redact_key_fragments",
    "redact_secrets",
    "rules_for",
    "rules_from_config",
    "scrub",
    "scrub_record",
    "strip_private",
]
