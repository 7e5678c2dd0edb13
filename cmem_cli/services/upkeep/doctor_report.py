"""What `cmem doctor` reports: one typed check per line, and the report `cmem doctor --json` prints.

Apart from :mod:`cmem_cli.services.upkeep.doctor` so that the checks kept in other modules (git's) can
name the type without importing doctor, which imports them.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Check(TypedDict):
    """One line of `cmem doctor`: what was checked, how it went (``ok``, ``fail``, ``fixed`` or ``warn``),
    and what it found; some checks name what they found for scripts."""

    name: str
    status: str
    detail: str
    paths: NotRequired[list[str]]  # the export tree's and git's checks: the files concerned
    reasons: NotRequired[list[str | None]]  # files not adopted: why, one per path
    uids: NotRequired[list[str]]  # team rows not taken
    queued: NotRequired[int]  # team writes queued


class DoctorReport(TypedDict):
    """`cmem doctor --json`: whether every check passed, whether the export tree was compared in full."""

    ok: bool
    full: NotRequired[bool]  # left out when doctor stopped before the export tree
    checks: list[Check]
