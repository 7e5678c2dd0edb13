"""Per-invocation state shared by commands: the resolved config and output preferences."""

from __future__ import annotations

from dataclasses import dataclass

from cmem_cli.config import Config, load_config


@dataclass
class Invocation:
    home: str | None = None
    _config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.home)
        return self._config


_current = Invocation()


def set_home(home: str | None) -> None:
    global _current
    _current = Invocation(home=home)


def current_config() -> Config:
    """The config for this invocation (``--home`` from the root callback, else the environment)."""
    return _current.config
