"""Text every layer shows: type icons and control-character escaping of stored text.

In the kernel because the briefing (a service) and the renderer (the CLI) both print stored text.
"""

from __future__ import annotations

import re

TYPE_ICONS = {
    "decision": "🧭",
    "bugfix": "🐛",
    "feature": "✨",
    "refactor": "🔧",
    "discovery": "🔎",
    "change": "📝",
    "error": "❗",
    "insight": "💡",
    "question": "❓",
    "summary": "📋",
    "prompt": "💬",
    "document": "📄",
}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile(r"[\r\n\t]")


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """Make stored text safe to print: control characters become visible escapes (``\\x1b``)."""
    if not keep_newlines:
        text = _LINE_BREAKS.sub(lambda m: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[m.group()], text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def estimate_tokens(text: str) -> int:
    """The token cost shown to agents and used by the chunker until a model's tokenizer is available:
    about four characters per token, as most tokenizers average."""
    return (len(text) + 3) // 4


def is_valid_text(value: str) -> bool:
    """False for lone surrogates (undecodable bytes smuggled in through argv or JSON escapes)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
