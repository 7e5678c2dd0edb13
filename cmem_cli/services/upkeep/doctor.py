"""`cmem doctor`: is the database sound, and does the export tree match it?

``--fix`` never deletes or overwrites what a person wrote: files edited by hand and markdown files no row
accounts for are adopted into the store (``cmem_cli.services.inbound.adopt``); only files that are missing, or that cmem
wrote and a newer rendering changes, are rewritten; interrupted writes are rolled back first. A lost store
(missing, or empty while the export holds cmem's files) is rebuilt from the markdown.

Doctor is where every other command sends people when the store is lost or damaged, so it must work on
exactly those stores: it never lets a store error escape, it says what is wrong and what to do, and it never
rewrites the export from a store whose integrity check failed (that would spread the damage).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import CmemError, DatabaseCorrupt
from cmem_cli.core.files import read_regular
from cmem_cli.services.inbound.sync_repo import GIT_DIR_NAME
from cmem_cli.services.upkeep.debris import find_debris
from cmem_cli.services.upkeep.debris import remove as remove_debris
from cmem_cli.services.upkeep.doctor_report import Check, DoctorReport
from cmem_cli.services.upkeep.git_checks import git_checks
from cmem_cli.store.presence import REPAIR_ADVICE, lost_store_problem
from cmem_export import atomic, digest, layout
from cmem_export.journal import pending
from cmem_export.reading import MAX_FILE_BYTES

if TYPE_CHECKING:
    from cmem_cli.services.write.service import WriteService


DAMAGED_ADVICE = (
    "restore cmem.db from a backup, or move it aside (mv cmem.db cmem.db.damaged) and rebuild it from the "
    "export with `cmem doctor --fix`"
)


def diagnose(config: Any, *, fix: bool = False, full: bool = True) -> DoctorReport:
    """The whole doctor run for one home: the store's presence, opening it, then :func:`run_checks`
    (``full``: every memory rendered and compared with its file; ``fix`` always checks in full)."""
    from cmem_cli.services.write.service import WriteService

    problem = lost_store_problem(config.db_path, config.export_dir)
    if problem is not None:
        if not fix:
            return _failed("store", f"{problem}; {REPAIR_ADVICE}")
        return _rebuild_lost_store(config, problem)
    try:
        memory = WriteService.open(config)
    except DatabaseCorrupt as exc:  # busy, unreadable home: nothing doctor can say better than the error
        message = _without_pointer(exc.message)
        advice = "" if message.endswith("upgrade cmem") else f"; {DAMAGED_ADVICE}"
        return _failed("store", message + advice)
    try:
        return run_checks(memory, fix=fix, full=full or fix)
    finally:
        memory.close()


def _rebuild_lost_store(config: Any, problem: str) -> DoctorReport:
    """`doctor --fix` on a lost store: a new store, then every file of the export adopted into it."""
    from cmem_cli.services.write.service import WriteService
    from cmem_cli.store.repository import Store

    config.ensure_home()
    memory = WriteService(config, Store.open(config.db_path))  # no presence check: this is the rebuild
    try:
        report = run_checks(memory, fix=True)
    finally:
        memory.close()
    report["checks"].insert(
        0, {"name": "store", "status": "fixed", "detail": f"{problem}; rebuilt from the export"}
    )
    return report


def _failed(name: str, detail: str) -> DoctorReport:
    return {"ok": False, "checks": [{"name": name, "status": "fail", "detail": detail}]}


def _without_pointer(message: str) -> str:
    for tail in ("; see `cmem doctor`", " see `cmem doctor`"):
        message = message.removesuffix(tail)
    return message.rstrip(";")


def _guarded(checks: list[Check], name: str, check: Callable[[], tuple[bool, str]]) -> bool:
    """Run one check; a store error while running it is that check failing, not doctor crashing (the
    store's health checks raise only cmem errors)."""
    try:
        ok, detail = check()
    except CmemError as exc:
        ok, detail = False, f"{getattr(exc, 'message', exc)}"
    checks.append({"name": name, "status": "ok" if ok else "fail", "detail": detail})
    return ok


def run_checks(memory: WriteService, *, fix: bool = False, full: bool = True) -> DoctorReport:
    """Every check, in the order doctor shows them. Without ``full`` the export tree is checked by stat: a
    file whose size and modification time are still those cmem recorded when it wrote the file is taken as
    written, and only the others are rendered and compared (a million memories: seconds, not minutes)."""

    store = memory.store
    checks: list[Check] = []

    def integrity() -> tuple[bool, str]:
        problems = store.health.integrity_problems()
        return not problems, "; ".join(problems) or "ok"

    def foreign_keys() -> tuple[bool, str]:
        count = store.health.foreign_key_violations()
        return count == 0, f"{count} violation(s)"

    def keyword_index() -> tuple[bool, str]:
        same = store.health.keyword_index_in_sync()
        return same, "in sync" if same else "row counts differ"

    def schema() -> tuple[bool, str]:
        missing = store.health.missing_schema_objects()
        return not missing, "complete" if not missing else "missing: " + ", ".join(missing)

    sound = _guarded(checks, "database integrity", integrity)
    sound = _guarded(checks, "schema", schema) and sound
    sound = _guarded(checks, "foreign keys", foreign_keys) and sound
    sound = _guarded(checks, "keyword index", keyword_index) and sound
    if not sound:
        checks.append(
            {
                "name": "export tree",
                "status": "fail",
                "detail": f"not checked: the store is damaged; {DAMAGED_ADVICE}",
            }
        )
        return {"ok": False, "checks": checks}

    checks += team_checks(memory)
    # a tree synced through git: what a killed sync left is settled first (doctor --fix must not restore a
    # file another machine forgot because the sync that brought the forget died before adopting it)
    checks += git_checks(memory, fix=fix)
    checks.append(_supersedes_loops(memory, fix=fix))
    before = export_problems(memory, full=full)
    if fix:
        if any(before[name] for name in _REBUILT_BY_FIX):
            from cmem_cli.services.upkeep import export_upkeep

            export_upkeep.rebuild_export(memory)
        remove_debris([memory.config.home / p for p, _ in before["crash debris"]])
        tighten_modes([memory.config.home / p for p, _ in before["private modes"]])
        after = export_problems(memory)  # "fixed" only for what is gone now: what the next doctor sees
    else:
        after = before
    for name, items in after.items():
        was = before[name]
        status = "fail" if items else ("fixed" if was else "ok")
        shown = items if items else (was if status == "fixed" else [])
        described = [f"{path}: {why}" if why else path for path, why in shown]
        separator = "; " if name == NOT_ADOPTED else ", "
        check: Check = {
            "name": name,
            "status": status,
            "detail": f"{len(shown)}" + (": " + separator.join(described[:5]) if shown else ""),
            "paths": [path for path, _ in shown],
        }
        if name == NOT_ADOPTED:
            check["reasons"] = [why for _, why in shown]
        checks.append(check)
    checks.append(bytecode_check(fix=fix))
    ok = all(c["status"] in ("ok", "fixed", "warn") for c in checks)
    return {"ok": ok, "full": full, "checks": checks}


def bytecode_check(*, fix: bool = False) -> Check:
    """Whether every start-up pays for compiling cmem: Python never writes bytecode where
    ``PYTHONDONTWRITEBYTECODE`` is set, so an editable install then compiles its modules on every run. A
    warning, not a failure (nothing is wrong with the memory); ``--fix`` compiles them."""
    import sys

    from cmem_cli.core.bytecode import compile_packages, stale_modules

    stale = stale_modules()
    if not stale:
        return {"name": "bytecode", "status": "ok", "detail": "cmem's modules are compiled"}
    if fix and not compile_packages() and not stale_modules():
        return {"name": "bytecode", "status": "fixed", "detail": f"compiled {len(stale)} module(s)"}
    if not sys.dont_write_bytecode:
        detail = f"{len(stale)} module(s) not compiled yet; Python writes their bytecode on their next import"
        return {"name": "bytecode", "status": "ok", "detail": detail}
    return {
        "name": "bytecode",
        "status": "warn",
        "detail": f"{len(stale)} of cmem's modules have no current bytecode and PYTHONDONTWRITEBYTECODE is "
        "set: every start-up compiles them (about twice as slow); run `cmem doctor --fix` or `cmem install`",
    }


def team_checks(memory: WriteService) -> list[Check]:
    """A member of a team database: the rows of it this home refused (cmem_cli.team.inbound) and has not
    taken since. Only the server's side can repair them (or a later edit of them by cmem)."""

    if not memory.store.team_outbox.is_installed():
        return []
    rows = memory.store.team_outbox.skipped()
    described = [f"{r.kind} {r.uid} (written by {r.machine}): {r.reason}" for r in rows]
    detail = f"{len(rows)}" + (": " + "; ".join(described[:5]) if rows else "")
    if rows:
        detail += "; repair or delete them on the server, or edit them with cmem on a machine that has them"
    return [
        {
            "name": "team rows not taken",
            "status": "fail" if rows else "ok",
            "detail": detail,
            "uids": [r.uid for r in rows],
        },
        _queued_writes(memory),
    ]


def _queued_writes(memory: WriteService) -> Check:
    """Local writes waiting for the team database: an ordinary queue goes at the next sync; one a read-only
    role's push was refused can never go until the role's grants change (each sync says so, once)."""
    from cmem_cli.services.inbound.remote_state import last_refusal

    queued = memory.store.team_outbox.pending_count()
    writes = f"{queued} write{'s' if queued != 1 else ''}"
    refusal = last_refusal(memory.store)
    if queued and refusal is not None and refusal.get("read_only"):
        detail = (
            f"{writes} can never be pushed: this role is read-only on the team database, so they stay on "
            "this home; to share them, the administrator makes this role a writer (docs/team.md, 'Setting up "
            "the team database') and the next `cmem sync` pushes them"
        )
        return {"name": "team writes queued", "status": "fail", "detail": detail, "queued": queued}
    if queued and refusal is not None:
        detail = f"{writes} wait: the last push was refused ({refusal.get('reason')})"
    elif queued:
        detail = f"{writes} {'waits' if queued == 1 else 'wait'} for the next sync"
    else:
        detail = "0"
    return {"name": "team writes queued", "status": "ok", "detail": detail, "queued": queued}


def _supersedes_loops(memory: WriteService, *, fix: bool) -> Check:
    """Loops of ``supersedes`` links the store took before arrivals broke them (every memory of one counts
    as replaced and is left out of the briefing); ``--fix`` breaks them as arrivals do, files included."""
    from cmem_cli.services.truth import supersession

    store = memory.store
    loops = supersession.held_loops(store)
    shown = [" -> ".join(f"#{i}" for i in (*loop, loop[0])) for loop in loops]
    if not loops:
        return {"name": "supersedes loops", "status": "ok", "detail": "0"}
    if not fix:
        return {
            "name": "supersedes loops",
            "status": "fail",
            "detail": f"{len(loops)}: " + ", ".join(shown[:5]),
        }
    with memory.write_transaction() as files:
        broken = supersession.break_held_loops(store)
        for obs_id in sorted({b.rewrite for b in broken if b.rewrite is not None}):
            memory.export.export_observation(store.observations.get(obs_id), files)
    return {
        "name": "supersedes loops",
        "status": "fixed",
        "detail": f"{len(loops)}: " + "; ".join(b.note for b in broken[:5]),
    }


# What `doctor --fix` repairs by adopting and regenerating the export (``WriteService.rebuild_export``).
_REBUILT_BY_FIX = (
    "missing files", "changed files", "changed, to adopt", "new files, to adopt", "interrupted writes",
)  # fmt: skip
NOT_ADOPTED = "files not adopted"


Findings = dict[str, list[tuple[str, str | None]]]


def export_problems(memory: WriteService, *, full: bool = True) -> Findings:
    """Every export check's findings as (path, reason or None), by check name, in the order doctor shows
    them. A file adoption would refuse is listed once, under :data:`NOT_ADOPTED` with its reason, not as a
    file to adopt. Without ``full``, only the files whose stat differs from cmem's record are rendered
    (:func:`_changed_since_written`)."""
    import os
    from stat import S_ISREG

    from cmem_cli.services.inbound.adopt import refused_files
    from cmem_cli.services.inbound.arrivals import still_rejected
    from cmem_cli.services.upkeep import export_upkeep
    from cmem_cli.services.upkeep.export_upkeep import written_as

    records = memory.store.export_files.records()
    expected: set[str] = set()
    missing, changed, edited = [], [], []
    stated: dict[str, int] = {}  # the quick check's files it read the stat of: their modes
    rendered = (
        export_upkeep.iter_expected_files(memory)
        if full
        else _changed_since_written(memory, records, expected, stated)
    )
    for relpath, text in rendered:
        expected.add(relpath)
        path = layout.resolve_inside(memory.export_root, relpath)
        if written_as(path, records.get(relpath), text):
            continue  # untouched since cmem wrote it, and that was this text: no need to read it
        try:
            data = read_regular(path, max(len(text.encode("utf-8")), MAX_FILE_BYTES))
        except FileNotFoundError:
            missing.append(relpath)
            continue
        except OSError:
            data = b""
        if data == text.encode("utf-8"):
            continue
        if relpath in records and digest.bytes_hash(data) != records[relpath][0]:
            edited.append(relpath)  # a person changed what cmem wrote: adopt it, never overwrite it
        else:
            changed.append(relpath)
    new = [p.relative_to(memory.export_root).as_posix() for p in export_upkeep.orphan_files(memory, expected)]
    # files git brought that no sync could adopt (a teammate's root TEAM.md: a file of this tree is the
    # user's own, one that arrived through git is not), until they are fixed or removed, with the reason
    # sync gave (it names the memory and the machine that wrote it), whatever a local adoption would say
    arrived = still_rejected(memory, prune=False)
    arrived_paths = {p for p, _ in arrived}
    refused = refused_files(memory, [p for p in [*edited, *new] if p not in arrived_paths])
    refused_paths = {path for path, _ in refused} | arrived_paths
    interrupted = [str(file.name) for file, _ in pending(memory.journal_dir)]
    home = memory.config.home
    debris = [_display(p, home) for p in find_debris(home, memory.export_root)]
    # older versions left 0755 folders and 0644 models in cmem's own cache
    cache = memory.config.own_cache_dir
    # git's folder is git's: its files follow the umask of whoever ran git, and nobody else can enter the
    # 0700 folder; only the folder itself is checked
    opaque = {home / GIT_DIR_NAME, memory.export_root / ".git"}
    root = f"{memory.export_root}{os.sep}"
    loose = loose_modes(
        [home, memory.export_root, *([cache] if cache else [])],
        opaque=opaque,
        seen=lambda path: path.startswith(root) and path[len(root) :] in stated,
    )
    loose += [memory.export_root / p for p, mode in stated.items() if S_ISREG(mode) and mode & 0o077]
    found = {
        "missing files": missing,
        "changed files": changed,
        "changed, to adopt": [p for p in edited if p not in refused_paths],
        "new files, to adopt": [p for p in new if p not in refused_paths],
        "interrupted writes": interrupted,
        "crash debris": debris,
        "private modes": [_display(p, home) for p in sorted(loose)],
    }
    findings: Findings = {name: [(path, None) for path in paths] for name, paths in found.items()}
    findings[NOT_ADOPTED] = sorted([*refused, *arrived])
    return findings


def _changed_since_written(
    memory: WriteService,
    records: dict[str, tuple[str, tuple[int, int] | None]],
    expected: set[str],
    stated: dict[str, int],
) -> Iterator[tuple[str, str]]:
    """The quick check's files to compare: each row's file is expected, and only those whose (size, mtime)
    differ from what cmem recorded when it wrote them (or that it has no record of, or rows without a path)
    are rendered. What it cannot see: a store row changed while its file was not rewritten (an interrupted
    write is seen by the journal), or a new version rendering differently; `doctor --full` sees both.
    ``stated`` gets the mode of each file whose stat it read, for the check of private modes."""
    import os
    import time

    from cmem_cli.services.upkeep import export_upkeep

    root = os.fspath(memory.export_root)
    store = memory.store
    # a file written since then may hide a same-size edit in its clock tick: it is rendered
    racy_after = time.time_ns() - atomic.RACY_NS
    observation_ids: list[int] = []
    summary_ids: list[int] = []
    for relpath, (kind, row_id) in store.export_files.record_paths().items():
        expected.add(relpath)
        record = records.get(relpath)
        if record is not None and record[1] is not None and record[1][1] < racy_after and _plain(relpath):
            try:
                info = os.lstat(os.path.join(root, relpath))
            except OSError:
                info = None
            if info is not None:
                stated[relpath] = info.st_mode
            if info is not None and (info.st_size, info.st_mtime_ns) == record[1]:
                continue
        (observation_ids if kind == "observation" else summary_ids).append(row_id)
    observation_ids += store.observations.ids_without_path()
    summary_ids += store.summaries.ids_without_path()
    return export_upkeep.expected_files_of(memory, sorted(observation_ids), sorted(summary_ids))


def _plain(relpath: str) -> bool:
    """A relative path that cannot leave the export root (else the file is rendered, and its path refused
    there as the full check refuses it)."""
    return not (relpath.startswith("/") or "\\" in relpath or ".." in relpath.split("/"))


def _display(path: Path, home: Path) -> str:
    try:
        return path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


def loose_modes(
    roots: list[Path],
    *,
    opaque: AbstractSet[Path] = frozenset(),
    seen: Callable[[str], bool] | None = None,
) -> list[Path]:
    """Folders and files under cmem's roots that group or others may use (older versions made intermediate
    folders 0755); stricter modes (git's read-only 0400 objects) are fine; symlinks are neither followed
    nor reported; an ``opaque`` folder (git's) is checked itself but not entered. One ``lstat`` per entry
    and no path objects: a synced tree holds a million files. A regular file ``seen`` says the caller read
    the mode of already is not read again (the quick doctor's one ``lstat`` a file)."""
    import os
    import stat

    closed = {os.fspath(p) for p in opaque}
    found: set[str] = set()
    for root in roots:
        if not root.is_dir() or root.is_symlink():
            continue
        if stat.S_IMODE(root.stat().st_mode) & 0o077:
            found.add(str(root))
        stack = [os.fspath(root)]
        while stack:
            try:
                with os.scandir(stack.pop()) as entries:
                    for entry in entries:
                        if seen is not None and entry.is_file(follow_symlinks=False) and seen(entry.path):
                            continue
                        try:
                            info = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        if stat.S_ISLNK(info.st_mode):
                            continue
                        if stat.S_IMODE(info.st_mode) & 0o077:
                            found.add(entry.path)
                        if stat.S_ISDIR(info.st_mode) and entry.path not in closed:
                            stack.append(entry.path)
            except OSError:
                continue
    return sorted(Path(p) for p in found)


def tighten_modes(paths: list[Path]) -> None:
    import contextlib
    import os

    for path in paths:
        with contextlib.suppress(OSError):
            mode = path.lstat().st_mode & 0o7777
            os.chmod(path, mode & ~0o077, follow_symlinks=False)  # group and others lose every bit
