"""How much of a hook event's long strings is scrubbed and kept: enough past what capture stores that no
kept secret is cut, so that a 5 MB tool output costs the waiting agent what a 50 KB one does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MAX_PROMPT_CHARS = 20_000  # a prompt is stored up to this many characters, from its start
MAX_SUMMARY_CHARS = 4_000  # a summary's request and answer, likewise
MARGIN = 8_000  # reach past what is stored, so a secret or key block across the cut is still recognised


def output_half(max_output_chars: int) -> int:
    """Characters kept from each end of a tool's input or output (``[hooks] max_output_chars`` or 2,000
    are the most any observation keeps from either end)."""
    return 2 * max(max_output_chars, 2_000) + MARGIN


def bounded(value: Any, half: int, strip_private: Callable[[str], str]) -> Any:
    """``value`` with every string longer than ``2 * half`` cut to its first and last ``half`` characters.

    Private spans are stripped from the whole string first (cheap, and a span opened in the dropped middle
    must still hide the tail); what the rules then see reaches well past anything the builder keeps, so no
    secret is cut where it is kept, and a key whose BEGIN line was dropped is caught as a fragment. Cutting a
    cut string again gives the same string."""
    if isinstance(value, str):
        if len(value) > 2 * half:
            value = strip_private(value)
        if len(value) > 2 * half:
            value = value[:half] + "\n…\n" + value[-half:]
        return value
    if isinstance(value, list):
        return [bounded(item, half, strip_private) for item in value]
    if isinstance(value, dict):
        return {key: bounded(item, half, strip_private) for key, item in value.items()}
    return value


def bounded_event(
    raw: Mapping[str, Any], hooks: Mapping[str, Any], strip_private: Callable[[str], str]
) -> dict[str, Any]:
    """A hook's payload cut as capture will read it, before it is scrubbed and spooled (``hooks``: the
    config's ``[hooks]`` section): a prompt keeps all that is stored of it, every other field what a tool
    call or a summary keeps."""
    from cmem_cli.capture.hooks.rules import rules_from_config

    max_output_chars = rules_from_config(hooks).max_output_chars
    other = max(output_half(max_output_chars), MAX_SUMMARY_CHARS + MARGIN)
    return {
        key: bounded(value, MAX_PROMPT_CHARS + MARGIN if key == "prompt" else other, strip_private)
        for key, value in raw.items()
    }
