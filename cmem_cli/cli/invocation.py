"""Per-invocation state shared by commands: the resolved config and output preferences."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from cmem_cli.core.config import Config, load_config

if TYPE_CHECKING:
    from cmem_cli.api import Memory


class Invocation:
    """One command's ``--home`` and the config it resolves to (loaded on first use)."""

    def __init__(self, home: str | None = None):
        self.home = home
        self._config: Config | None = None

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


@contextlib.contextmanager
def open_api(*, write: bool = False) -> Iterator[Memory]:
    """The Python API (:class:`cmem_cli.api.Memory`) over this invocation's home, closed afterwards.

    Commands stand on the API, as every front end does. It opens the store alone for reads and the write
    service (exporter, privacy filter) only when a command writes, so `cmem search` stays cheap. A command
    that writes passes ``write=True``: the write service opens at once and its reads share that connection
    rather than opening the database twice."""
    from cmem_cli.api import Memory

    memory = Memory(config=current_config())
    try:
        if write:
            memory.open_for_writes()  # so that reads before the write use it
        yield memory
    finally:
        memory.close()
