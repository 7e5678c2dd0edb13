"""The ``[recall]`` config section: whether cmem puts memories in front of an agent when it sends a prompt
(``prompt``) or reads or edits a file (``file``), for every agent or one (``[recall.agents.NAME]``), and the
budget each injection keeps to.

```toml
[recall]
prompt = true        # recall on each prompt
file = true          # recall when a file is read or edited
max_items = 3        # memories per injection
max_tokens = 300     # the injected text's size
bar = 0.36           # the keyword evidence a memory needs for prompt recall (0..1)
budget_ms = 2000     # a hook that has already spent this long injects nothing

[recall.agents.codex]
file = false
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from cmem_cli.core.errors import InvalidInput

POINTS = ("prompt", "file")
DEFAULT_BAR = 0.36


class RecallSettings(NamedTuple):
    prompt: bool = True
    file: bool = True
    max_items: int = 3
    max_tokens: int = 300
    bar: float = DEFAULT_BAR
    budget_ms: int = 2000

    def enabled(self, point: str) -> bool:
        return bool(self.prompt if point == "prompt" else self.file)


def _bool(section: Mapping[str, Any], name: str, default: bool, where: str) -> bool:
    value = section.get(name, default)
    if not isinstance(value, bool):
        raise InvalidInput(f"config {where} {name} must be true or false")
    return value


def _number(section: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = section.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidInput(f"config [recall] {name} must be a number from {low:g} to {high:g}")
    return value


def recall_settings(section: Mapping[str, Any] | None, agent: str | None = None) -> RecallSettings:
    """The settings for ``agent`` (its base name: ``claude-code/Explore`` is ``claude-code``)."""
    section = section or {}
    prompt = _bool(section, "prompt", True, "[recall]")
    file = _bool(section, "file", True, "[recall]")
    agents = section.get("agents", {})
    if not isinstance(agents, dict):
        raise InvalidInput("config [recall] agents must be a table of agent names")
    own = agents.get((agent or "").split("/")[0], {}) if agent else {}
    if not isinstance(own, dict):
        raise InvalidInput(f"config [recall.agents.{agent}] must be a table")
    where = f"[recall.agents.{agent}]"
    return RecallSettings(
        prompt=_bool(own, "prompt", prompt, where),
        file=_bool(own, "file", file, where),
        max_items=int(_number(section, "max_items", 3, 0, 20)),
        max_tokens=int(_number(section, "max_tokens", 300, 20, 4000)),
        bar=float(_number(section, "bar", DEFAULT_BAR, 0.0, 1.0)),
        budget_ms=int(_number(section, "budget_ms", 2000, 0, 60_000)),
    )
