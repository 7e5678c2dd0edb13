"""What the record and session services are handed of the write service: its store, its write transaction,
its privacy filter and its export service (:class:`cmem_cli.services.write.service.WriteService` is one), so that
neither service imports the write service that makes it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from cmem_cli.services.write.exporter import Exporter, FileWriter
    from cmem_cli.store.repository import Store


class WriteHome(Protocol):
    """What a write service is handed of the home (:class:`cmem_cli.services.write.service.WriteService`)."""

    store: Store

    @property
    def export_root(self) -> Path: ...

    @property
    def export(self) -> Exporter: ...

    def write_transaction(
        self, *, fsync: bool = True, skip_identical: bool = False
    ) -> contextlib.AbstractContextManager[FileWriter]: ...

    def scrub_text(self, text: str | None) -> str | None: ...

    def scrub_record(self, record: Mapping[str, Any]) -> dict[str, Any]: ...
