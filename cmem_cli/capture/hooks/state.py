"""The keys capture marks what it recorded under, so hooks and transcript import never store a thing twice.

The marks themselves are kept by the store (``cmem_cli.store.capture_log``, reached through the API's
``Memory.capture_log``): ``tool:<tool_use_id>`` for a tool call, a repeat key such as ``read:<path>`` for
calls merged by the rules, and ``<prompt_prefix(text)><n>`` for the n-th prompt with that text in a session.
"""

from __future__ import annotations

import zlib


def prompt_prefix(text: str) -> str:
    """Keys of a prompt text are ``<prefix><n>`` for its n-th occurrence in a session."""
    return f"prompt:{fingerprint(' '.join(text.split()).encode('utf-8'))}:"


def fingerprint(data: bytes) -> str:
    """64 bits from two CRC32s: enough to tell prompts (or file heads) apart, and zlib loads in no time where
    hashlib's OpenSSL binding costs a hook several milliseconds."""
    return f"{zlib.crc32(data):08x}{zlib.crc32(data, 0x9E3779B9):08x}"
