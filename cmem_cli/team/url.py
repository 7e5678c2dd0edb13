"""A team database's URL without its password: what cmem keeps, prints and logs.

A password written in a ``postgresql://user:secret@host/db`` URL is used for the command it was given
to and never kept: the stored URL has none, and every later connection lets libpq find the password its
own ways (``PGPASSWORD``, ``PGPASSFILE`` or ``~/.pgpass``, a ``service=`` in ``pg_service.conf``).
Anything printed that could contain a URL goes through :func:`mask` first: the one rule for git and team
URLs (:mod:`cmem_cli.core.urls`), and ``password=`` settings besides.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import parse_qsl, unquote, urlencode

from cmem_cli.core import urls
from cmem_cli.core.errors import UsageError
from cmem_cli.core.urls import readable

SCHEMES = ("postgresql://", "postgres://")


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


def userinfo_end(rest: str) -> int | None:
    """Where the user part of ``rest`` (a URL after ``scheme://``) ends, as libpq reads it
    (:func:`cmem_cli.core.urls.userinfo_end`)."""
    return urls.userinfo_end(rest, libpq=True)


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


mask = urls.hide_secrets  # the one rule for what is printed (kept here under its old name)
