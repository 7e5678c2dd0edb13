"""Per-invocation state shared by commands: the resolved config and output preferences."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from cmem_cli.core.config import Config, load_config


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
def open_memory() -> Iterator[Any]:
    """The write service for this invocation's home, closed afterwards."""
    from cmem_cli.services.writes import Memory

    memory = Memory.open(current_config())
    try:
        yield memory
    finally:
        memory.close()


class Reader:
    """What the read commands use of a home: its config and its store (no write service, no exporter)."""

    def __init__(self, config: Config, store: Any):
        self.config = config
        self.store = store


@contextlib.contextmanager
def open_reader() -> Iterator[Reader]:
    """The store for this invocation's home, for commands that only read (search, timeline, get).

    Cheaper to start than :func:`open_memory`: the markdown exporter and the privacy filter are not
    imported, which matters to a search that hooks and scripts run many times a minute."""
    from cmem_cli.store.repository import Store

    config = current_config()
    config.ensure_home()
    store = Store.open(config.db_path, config.export_dir)
    try:
        yield Reader(config, store)
    finally:
        store.close()
