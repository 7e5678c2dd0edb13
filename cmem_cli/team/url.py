"""A team database's URL without its password: what cmem keeps, prints and logs.

A password written in a ``postgresql://user:secret@host/db`` URL is used for the command it was given
to and never kept: the stored URL has none, and every later connection lets libpq find the password its
own ways (``PGPASSWORD``, ``PGPASSFILE`` or ``~/.pgpass``, a ``service=`` in ``pg_service.conf``).
Anything printed that could contain a URL goes through :func:`mask` first.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import parse_qsl, unquote, urlencode

from cmem_cli.core.errors import UsageError

SCHEMES = ("postgresql://", "postgres://")
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#\s]*", re.I)
_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


def is_team_url(url: str) -> bool:
    """Does ``url`` name a PostgreSQL database (a team remote) rather than a git remote?"""
    return url.strip().lower().startswith(SCHEMES)


class TeamURL(NamedTuple):
    """``url``: the URL as stored and shown (no password); ``password``: the one given, for this run only."""

    url: str
    password: str | None


def split_password(url: str) -> TeamURL:
    """The URL without its password (in the user part or a ``password=`` parameter), and that password.

    A password is often written unencoded (``postgresql://alice:pa?ss/w@rd@db/memory``): the user part
    ends at the ``@`` before the host (:func:`userinfo_end`), not at the first ``/``, ``?`` or ``@``."""
    url = url.strip()
    if not is_team_url(url):
        raise UsageError("not a PostgreSQL URL (postgresql://...)")
    if any(c in url for c in "\r\n\x00"):
        raise UsageError("the URL contains control characters")
    scheme, rest = url.split("://", 1)
    password = None
    end = userinfo_end(rest)
    if not readable(url):
        raise UsageError(
            f"cannot read the URL {scheme}://***: percent-encode its password (or give it in ~/.pgpass)"
        )
    if end is not None:
        userinfo, rest = rest[:end], rest[end + 1 :]
        user, colon, secret = userinfo.partition(":")
        if colon:
            password = unquote(secret) or None
        rest = f"{user}@{rest}" if user else rest
    netloc, sep, tail = _split_netloc(rest)
    path, qmark, query = tail.partition("?")
    if qmark:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k.lower() != "password"]
        for k, v in pairs:
            if k.lower() == "password":
                password = v or password
        query = urlencode(kept, safe="/:,")
        qmark = "?" if query else ""
    return TeamURL(f"{scheme}://{netloc}{sep}{path}{qmark}{query}", password)


_NAME = r"(?:[A-Za-z0-9._~%-]*|\[[0-9A-Fa-f:.%A-Za-z]*\])(?::[0-9]*)?"
_HOST = re.compile(rf"{_NAME}(?:,{_NAME})*")  # host[:port], a list of them, an IPv6 literal, or none
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[^&#]*")


def userinfo_end(rest: str) -> int | None:
    """Where the user part of ``rest`` (a URL after ``scheme://``) ends: the index of its ``@``, or None.

    The ordinary reading first: the authority runs to the first ``/``, ``?`` or ``#``, and the user part
    to the last ``@`` in it. When what follows does not read as a URL libpq takes (a host, then a
    database name, then ``key=value`` parameters), the password holds one of those characters: the user
    part then ends at the last ``@`` after which the rest does read so."""
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    ordinary = authority.rindex("@") if "@" in authority else None
    if _readable(rest[ordinary + 1 :] if ordinary is not None else rest):
        return ordinary
    later = [i for i, c in enumerate(rest) if c == "@" and (ordinary is None or i > ordinary)]
    for at in reversed(later):
        if _readable(rest[at + 1 :]):
            return at
    return ordinary


def readable(url: str) -> bool:
    """Does ``url`` (``scheme://...``) read as one URL, its password wherever it is?"""
    rest = url.split("://", 1)[1] if "://" in url else url
    end = userinfo_end(rest)
    return _readable(rest[end + 1 :] if end is not None else rest)


def _readable(after: str) -> bool:
    """Host, database name and parameters, as libpq reads what follows the user part."""
    host, tail = re.split(r"(?=[/?#])", after, maxsplit=1) if re.search(r"[/?#]", after) else (after, "")
    if not _HOST.fullmatch(host) or tail.startswith("#"):
        return False
    path, _, query = tail[1:].partition("?") if tail.startswith("/") else ("", "", tail[1:])
    if "@" in path or "/" in path or "#" in query:
        return False
    return not query or all(_PARAM.fullmatch(part) for part in query.split("&"))


def _split_netloc(rest: str) -> tuple[str, str, str]:
    """(netloc, "/" or "", what follows), ``rest`` holding no password any more: the host part ends at
    the first ``/`` or ``?`` after the user part's ``@``."""
    at = rest.find("@")
    at = at if at >= 0 and not re.search(r"[/?#]", rest[:at]) else -1
    cuts = [i for i in (rest.find("/", at + 1), rest.find("?", at + 1)) if i >= 0]
    if not cuts:
        return rest, "", ""
    cut = min(cuts)
    if rest[cut] == "/":
        return rest[:cut], "/", rest[cut + 1 :]
    return rest[:cut], "", rest[cut:]


_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<rest>[^\s\"'<>`]*)", re.I)


def _mask_url(m: re.Match[str]) -> str:
    scheme, rest = m["scheme"], m["rest"]
    if "@" not in rest and not scheme.lower().startswith("postgres"):
        return m[0]  # no user part, so no password (a download's address stays whole); libpq's is checked
    if not readable(rest):  # cannot tell where a password would end: the scheme alone
        return f"{scheme}***" if ":" in rest or "@" in rest else m[0]
    end = userinfo_end(rest)
    if end is None:
        return m[0]
    user, colon, _ = rest[:end].partition(":")
    return f"{scheme}{user}:***{rest[end:]}" if colon else m[0]


def mask(text: str, *secrets: str | None) -> str:
    """``text`` with every URL password, ``password=`` setting and each of ``secrets`` replaced by ``***``."""
    text = _URL.sub(_mask_url, text)
    text = _QUERY_PASSWORD.sub(r"\1***", text)
    text = _KV_PASSWORD.sub(r"\1***", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
