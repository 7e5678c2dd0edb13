"""One self-contained HTML page from a window of memory: the data as JSON, the script and the style inline.

The page must be safe to open whatever the memories say (an agent records text from web pages, logs, other
people's code). So: the data sits in a ``<script type="application/json">`` block with every ``<``, ``>`` and
``&`` written as a JSON escape (no ``</script>`` or ``<!--`` can end or bend the block); the page's script
puts memory text on the page with ``textContent`` only; and a Content-Security-Policy allows exactly the one
script and the one style sheet of the page (by their SHA-256) and no request of any kind (``default-src
'none'``), so nothing a memory says can load, run or send anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

_SLOT = re.compile(r"\{\{(\w+)\}\}")
# What a record on the page never needs: the search layer's score, and fields with nothing in them.
_DROPPED = ("score",)


@cache
def asset(name: str) -> str:
    """``view.html``, ``view.css`` or ``view.js``, shipped beside this module."""
    return resources.files("cmem_cli.view").joinpath(name).read_text(encoding="utf-8")


def embed_json(value: Any) -> str:
    """JSON that can sit inside a ``<script>`` element: no character of it can close or comment the element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def content_security_policy(script: str, style: str) -> str:
    """Nothing may be fetched, framed, submitted or connected to; only this page's own script and style run."""
    return (
        f"default-src 'none'; script-src {sha256_source(script)}; style-src {sha256_source(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def compact(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record without empty fields (None, "", [], False): a page of thousands of records is a third smaller."""
    return {
        k: v for k, v in record.items() if k not in _DROPPED and v is not False and v not in (None, "", [])
    }


def render(window: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    """The page for ``window`` (what :meth:`cmem_cli.api.Memory.window` returns), described by ``meta``
    (``title``, ``scope``, ``note``, ``empty``, ``version``, ``generated_at`` and what else the script reads)."""
    script, style = asset("view.js"), asset("view.css")
    data = {
        "meta": meta,
        "items": [compact(item) for item in window["items"]],
        "sessions": {sid: compact(s) for sid, s in window["sessions"].items()},
        "links": window["links"],
        "others": window["others"],
    }
    slots = {
        "csp": html.escape(content_security_policy(script, style)),
        "version": html.escape(str(meta.get("version", ""))),
        "title": html.escape(str(meta.get("title", ""))),
        "style": style,
        "data": embed_json(data),
        "script": script,
    }
    # one pass over the template: text put into a slot is never scanned for slots again
    return _SLOT.sub(lambda m: slots[m.group(1)], asset("view.html"))
