"""A remote's URL as it may be printed: every credential in it hidden, whatever form the URL takes.

One rule for git remotes and team databases, wherever a URL is shown (`status`, `status --json`,
`sync --json`, error lines). The user part of ``scheme://user:password@host`` ends at the ``@`` before
the host, not at the first ``/``, ``?``, ``#`` or ``@``: passwords are often written unencoded. The
password becomes ``***``. The user stays when it is a plain login name, except in an http(s) URL
without a password, where the user part is where a token goes (``https://TOKEN@github.com``); a
user that looks like a token (long, or a known token prefix) is hidden everywhere. An scp-like
``user:password@host:path`` is read the same way; ``git@host:path`` names no secret and is kept.
"""

from __future__ import annotations

import re

_HOST = r"(?:[A-Za-z0-9._~%-]+|\[[0-9A-Fa-f:.%A-Za-z]*\])(?::[0-9]*)?"
_HOSTS = re.compile(rf"(?:{_HOST})?(?:,{_HOST})*")  # libpq takes a list of hosts, or none
_AFTER_HOST = re.compile(rf"(?:{_HOST})(?:,{_HOST})*(?=[/?#:]|$)")
_PLAIN_USER = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,31}")
TOKEN_PREFIXES = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "glptt-",
    "xoxb-", "xoxp-", "sk-", "akia", "hf_", "npm_", "pypi-",
)  # fmt: skip
TOKENISH_SCHEMES = ("http", "https", "ftp", "ftps")
HIDDEN = "***"
# A URL inside free text: a scheme, then everything up to white space or a quote.
URL_IN_TEXT = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<rest>[^\s\"'<>`]*)", re.I)
SCP_LIKE = re.compile(
    r"^(?P<userinfo>[^\s/]*?[^\s/]*)@(?P<host>[A-Za-z0-9._-]+|\[[^\]/]+\]):(?P<path>.*)$", re.S
)


def token_like(user: str) -> bool:
    """Could this user part be a token standing in for a login (GitHub's ``https://TOKEN@host``)?"""
    lowered = user.lower()
    return (
        len(user) >= 20
        or lowered.startswith(TOKEN_PREFIXES)
        or not _PLAIN_USER.fullmatch(user)  # %-escapes, symbols: not a login name
    )


def userinfo_end(rest: str, *, libpq: bool = False) -> int | None:
    """Where the user part of ``rest`` (a URL after ``scheme://``) ends: the index of its ``@``, or None.

    A URL whose authority (up to the first ``/``, ``?`` or ``#``) is a plain host has no user part
    (``https://host/path@v1``). Otherwise the user part ends at the last ``@`` after which a host reads:
    a password may hold ``/``, ``?``, ``#``, ``;`` or ``@`` unencoded (git stores such a URL quoted), and
    hiding too much beats showing a piece of a password. ``libpq``: what follows must read as libpq
    reads it (hosts, a database name, ``key=value`` parameters), the ordinary reading first."""
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    ordinary = authority.rindex("@") if "@" in authority else None
    if libpq:
        if readable_libpq(rest[ordinary + 1 :] if ordinary is not None else rest):
            return ordinary
        later = [i for i, c in enumerate(rest) if c == "@" and (ordinary is None or i > ordinary)]
    else:
        if ordinary is None and _HOSTS.fullmatch(authority):
            return None
        later = [i for i, c in enumerate(rest) if c == "@"]
    for at in reversed(later):
        if readable_libpq(rest[at + 1 :]) if libpq else _AFTER_HOST.match(rest[at + 1 :]):
            return at
    return ordinary


def readable(url: str) -> bool:
    """Does a PostgreSQL ``url`` (``scheme://...``) read as one URL, its password wherever it is?"""
    rest = url.split("://", 1)[1] if "://" in url else url
    end = userinfo_end(rest, libpq=True)
    return readable_libpq(rest[end + 1 :] if end is not None else rest)


def readable_libpq(after: str) -> bool:
    """Host(s), database name and ``key=value`` parameters, as libpq reads what follows the user part."""
    host, tail = re.split(r"(?=[/?#])", after, maxsplit=1) if re.search(r"[/?#]", after) else (after, "")
    if not _HOSTS.fullmatch(host) or tail.startswith("#"):
        return False
    path, _, query = tail[1:].partition("?") if tail.startswith("/") else ("", "", tail[1:])
    if "@" in path or "/" in path or "#" in query:
        return False
    return not query or all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=[^&#]*", part) for part in query.split("&"))


def _shown_userinfo(userinfo: str, scheme: str) -> str:
    user, colon, _password = userinfo.partition(":")
    keep_user = (
        bool(user) and not token_like(user) and (bool(colon) or scheme.lower() not in TOKENISH_SCHEMES)
    )
    if not keep_user:
        return HIDDEN
    return f"{user}:{HIDDEN}" if colon else user


def redact_url(url: str) -> str:
    """``url`` with every credential in it replaced by ``***`` (see the module's rule); a URL that names
    none comes back unchanged."""
    url = url.strip()
    if "://" in url:
        scheme, rest = url.split("://", 1)
        libpq = scheme.lower().startswith("postgres")
        if libpq and not readable(url):  # cannot tell where a password would end: the scheme alone
            return f"{scheme}://{HIDDEN}" if ":" in rest or "@" in rest else url
        end = userinfo_end(rest, libpq=libpq)
        if end is None:
            return url
        return f"{scheme}://{_shown_userinfo(rest[:end], scheme)}{rest[end:]}"
    found = SCP_LIKE.match(url)
    if found is None or not found["userinfo"]:
        return url
    return f"{_shown_userinfo(found['userinfo'], 'ssh')}@{found['host']}:{found['path']}"


def redact_text(text: str) -> str:
    """``text`` with the credentials of every ``scheme://`` URL in it hidden (an error line may quote one)."""
    return URL_IN_TEXT.sub(lambda m: redact_url(m[0]), text)


_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#\s]*", re.I)
_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


def hide_secrets(text: str, *secrets: str | None) -> str:
    """``text`` with every URL credential, ``password=`` setting and each of ``secrets`` replaced by
    ``***``: what anything that may quote a git or team URL passes its message through."""
    text = redact_text(text)
    text = _QUERY_PASSWORD.sub(r"\1***", text)
    text = _KV_PASSWORD.sub(r"\1***", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
