"""Every event a hook records after answering is written here first, durably, before the agent gets its
answer: the detached child then replays its own file, and if it dies first (``kill -9``, a reboot) the next
hook replays it instead. A hook that finds the database locked longer than it may wait leaves its event here
too; the next hook that gets through replays what was left (oldest first), so nothing is dropped silently.

Spooled events are scrubbed (``<private>`` spans and secrets removed) before they touch the disk, like
everything else cmem keeps, and an excluded project's are never written (:func:`keep`). An event may carry
``marks``: capture-log keys of its session (what recall gave the agent) that its replay records with it;
until then a later recall of the session reads them here (:func:`marks_in_flight`). Each file is claimed by an atomic rename, so concurrent hooks never replay the
same event twice. A claim whose process died (``kill -9`` mid-replay) is taken over by the next hook, and
the replay records the event's name in the same transaction as its effect, so it counts exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.processes import is_running

if TYPE_CHECKING:
    from cmem_cli.capture.hooks.payload import HookPayload
    from cmem_cli.core.config import Config

SPOOL_DIR = "spool"
SUFFIX = ".json"


def spool_dir(home: Path) -> Path:
    return home / SPOOL_DIR


def keep(config: Config, payload: HookPayload, at_ms: int, marks: Sequence[str] = ()) -> Path | None:
    """Spool one hook event, scrubbed, with the ``marks`` its replay records; None (nothing written) for
    an event of a project ``[privacy] exclude_projects`` names. The privacy filter is loaded on its own:
    the API behind it would cost a hook that answers at once several milliseconds."""
    from cmem_cli.core.config import default_project
    from cmem_cli.services.write.privacy import is_excluded_project

    if is_excluded_project(default_project(payload.cwd), config.section("privacy")):
        return None
    return save(config.home, payload.event, scrubbed(payload.raw, config), at_ms, marks)


def scrubbed(raw: Mapping[str, Any], config: Config) -> dict[str, Any]:
    """A hook's payload as it may touch the disk or the store: cut to what capture can keep, then every
    string scrubbed (a spooled event and a foreground hook's record see the same)."""
    from cmem_cli.capture.hooks.bounds import bounded_event
    from cmem_cli.services.write.privacy import scrub_record, strip_private

    return scrub_record(bounded_event(raw, config.section("hooks"), strip_private), config=config)


def save(home: Path, event: str, payload: dict[str, Any], at_ms: int, marks: Sequence[str] = ()) -> Path:
    """Write one event atomically and durably (0600, fsync before the rename) and return its path."""
    directory = spool_dir(home)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = f"{time.time_ns():020d}-{os.getpid()}"
    tmp = directory / f".{name}.tmp"
    final = directory / f"{name}{SUFFIX}"
    data: dict[str, Any] = {"event": event, "at": at_ms, "payload": payload}
    if marks:
        data["marks"] = list(marks)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


def marks_in_flight(home: Path, session: str) -> frozenset[str]:
    """The marks of ``session``'s spooled events that no replay has committed yet (pending or claimed).
    Read before the store: a replay commits its marks before it deletes its file, so a mark is always in
    one place or the other; a file renamed by a claim while being read is looked for again."""
    found: set[str] = set()
    directory = spool_dir(home)
    for _ in range(3):
        try:
            names = [n for n in os.listdir(directory) if n.endswith((SUFFIX, ".claimed"))]
        except FileNotFoundError:
            break
        moved = False
        for name in names:
            try:
                data = json.loads(_read_regular(directory / name))
            except FileNotFoundError:
                moved = True  # claimed (renamed) or replayed (then its marks are in the store)
                continue
            except (OSError, ValueError):
                continue
            marks = data.get("marks") if isinstance(data, dict) else None
            payload = data.get("payload") if isinstance(data, dict) else None
            if marks and isinstance(payload, dict) and payload.get("session_id") == session:
                found.update(m for m in marks if isinstance(m, str))
        if not moved:
            break
    return frozenset(found)


def pending(home: Path) -> list[Path]:
    directory = spool_dir(home)
    try:
        return sorted(
            p for p in directory.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith(".")
        )
    except FileNotFoundError:
        return []


def claim(path: Path) -> Path | None:
    """Take a spooled event for this process; None when another process took it first."""
    claimed = path.with_name(f".{path.name}.{os.getpid()}.claimed")
    try:
        os.replace(path, claimed)
    except FileNotFoundError:
        return None
    with contextlib.suppress(OSError):
        os.utime(claimed)  # the claim's age is how long it has been held (see abandoned_claims)
    return claimed


STALE_CLAIM_SECONDS = 600  # a replay takes milliseconds: a claim this old belongs to a recycled pid


def abandoned_claims(home: Path) -> list[tuple[Path, Path]]:
    """Claims (``.<name>.<pid>.claimed``) whose process is gone: a hook killed while replaying. Returns
    (claim, original path) pairs, oldest event first; the original name is what a re-claim restores.
    A killed hook's half-written temporary file is removed on the way (:func:`_clear_half_written`)."""
    directory = spool_dir(home)
    try:
        hidden = [n for n in os.listdir(directory) if n.startswith(".")]
    except FileNotFoundError:
        return []
    _clear_half_written(directory, [n for n in hidden if n.endswith(".tmp")])
    names = [n for n in hidden if n.endswith(".claimed")]
    found = []
    for name in sorted(names):
        original, _, pid_text = name[1 : -len(".claimed")].rpartition(".")
        if not original.endswith(SUFFIX) or not pid_text.isdigit():
            continue
        path = directory / name
        if is_running(int(pid_text)) and not _older_than(path, STALE_CLAIM_SECONDS):
            continue
        found.append((path, directory / original))
    return found


def _clear_half_written(directory: Path, names: list[str]) -> None:
    """Remove the temporary files (``.<time>-<pid>.tmp``) of hooks killed while spooling: their event was
    never answered, so it is no one's to replay, and the file would stay for ever."""
    for name in names:
        pid_text = name[1 : -len(".tmp")].rpartition("-")[2]
        path = directory / name
        if pid_text.isdigit() and is_running(int(pid_text)) and not _older_than(path, STALE_CLAIM_SECONDS):
            continue
        with contextlib.suppress(OSError):
            path.unlink()


def reclaim(claimed: Path, original: Path) -> Path | None:
    """Take over an abandoned claim (atomically: of several hooks noticing it, one wins)."""
    mine = original.with_name(f".{original.name}.{os.getpid()}.claimed")
    if mine == claimed:
        return claimed
    try:
        os.replace(claimed, mine)
    except FileNotFoundError:
        return None
    return mine


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False


def release(claimed: Path, original: Path) -> None:
    """Put an event back (the database is still busy)."""
    with contextlib.suppress(OSError):
        os.replace(claimed, original)


def load(claimed: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(_read_regular(claimed))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("payload"), dict)
        or not isinstance(data.get("event"), str)
    ):
        return None
    return data


def _read_regular(path: Path) -> str:
    """A spool file's text, read only from a regular file: a link is not followed and a FIFO is not
    waited on (opened without blocking, checked, then read), so nothing put in the folder hangs a hook."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path.name}: not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")
